"""Program decoder: FSM-constrained decoding of an edit program over a KV cache (one model, one doc).

Public entry::

    decode_program(loaded, document, instruction, *, token_level=False, max_new_tokens=512,
                   monotonic=False, speculative_headers=True, ride_along=True, drafter="none",
                   forced=None, cancel=None, progress=None, mode="clipped",
                   guess_payload_cap=GUESS_PAYLOAD_CAP) -> DecodeResult

``loaded`` is a backend (``engine.backends.base.Backend``; in process: ``engine.backends.model.LoadedModel``).
Every forward goes through the backend's session (``engine.backends.base.Session``: one ``feed`` = one forward).

Forward schedule (what the speed is won on):

* Masked steps only at decision points of ``engine.guide.fsm``; forced literal tokens and tokens the FSM
  allows alone are never a forward of their own: they are committed to ``pending`` and ride
  along in the next forward (the one that produces the next decision's logits). A copy's splice
  payload rides with the tag's last tokens: ONE parallel-prefill forward per copy span.
* Speculative op headers (``speculative_headers=True``): at an op boundary the guessed next op(s)
  (``engine.decode.headers``) are fed together with the pending ids in one forward; the longest prefix
  equal to the model's own masked greedy choices is kept, the rest is cropped. Lossless. A guessed
  copy's payload is fed with it only when short (``guess_payload_cap``, ``GUESS_PAYLOAD_CAP``).
  A guess that opens a gen also carries the gen's first draft when the drafter can draft ahead
  (``drafts_ahead``, e.g. the replaced lines): the forward that verifies ``<gen>`` verifies the
  body's first round too (``GenBodies._ahead_round``), one forward less per gen.
* Gen bodies: free greedy decoding; ``drafter`` (a name from the drafter registry ``engine.drafters``,
  built with the document's token ids, or a ``DraftProposer``) may propose drafts, verified in one
  forward (longest greedy-matching prefix + bonus token).
  End of gen per ``engine.decode.gen_end``; EOS inside a gen closes the gen and the program.
* ``ride_along=False`` reproduces the seed's schedule (every committed token / literal is fed at
  once, in its own forward) for comparison.

Forced mode (``forced=program``): the same code path with every choice replaced by the program's
canonical token (``engine.guide.fsm.program_token_ids``), so it costs exactly the forwards free decoding
would cost if the model had chosen that program. A program the grammar does not allow for this
document (indices out of bounds, non-monotonic with ``monotonic=True``) raises
``ForcedProgramError``.

Budget: ``max_new_tokens`` bounds decoded + forced tokens (copied payload tokens are not
counted). Reaching it, or filling the context window, ends the program cleanly with
``truncated=True`` (an open gen keeps its text). The prompt is checked BEFORE decoding:
``ContextOverflowError`` if the prompt plus room for a full copy of the document does not fit.
Cancellation (``cancel`` event) is checked before every forward and raises ``EditCancelled``.
``progress(Progress)`` is called after every forward.
"""
from __future__ import annotations

import threading
import time
from typing import Callable

import torch

from engine.decode.choosers import Chooser
from engine.decode.gen_body import GenBodies
from engine.decode.gen_end import decode
from engine.decode.headers import GEN_OPEN_GUESS, guess_next_ops
from engine.decode.types import DecodeResult, DecodeStats, OpRecord
from engine.decode.verify import accept_prefix
from engine.drafters import make_proposer
from engine.drafters.base import begin_gen, drafts_ahead, propose_candidates
from engine.errors import ForcedProgramError
from engine.guide.fsm import DONE, GEN_BODY, ProgramFSM
from engine.guide.tokens import op_token_ids, op_token_parts, token_table
from engine.program.resolver import resolve
from engine.prompt import check_context, render_prompt
from engine.types import Progress

_NO_CHOICE = -1      # a guess reached a state with no structural choice (gen body, done)
# A guessed copy header carries its splice payload into the verify forward only when the payload has at
# most this many tokens; a longer one is verified as a header alone and its payload rides along with the
# next forward. On a compute-bound device a wrong guess wastes the payload's whole prefill (a guessed
# whole-document copy before the first op costs a second prefill of the document), while a right one
# saves one forward. On 2 CPU cores a 1-token forward costs 50-60 ms and each further token 2-4.5 ms
# (benchmarks/results/kernel_cpu_quiet.md: 340 ms for 64 tokens after a 1,024-token prefix), so at 64
# tokens the two are even at a guess accuracy of about 70-85%. Measured with and without the cap:
# benchmarks/results/speculative_payload_cap.md.
GUESS_PAYLOAD_CAP = 64


class ProgramDecoder(GenBodies):
    """One decode: the FSM, the KV runner and the schedule state.

    Invariant: ``runner.ids + pending == prompt_ids + out``. ``pending`` holds committed tokens
    not yet fed (they ride along in the next forward); ``ready`` is the logits row predicting
    the token after ``out`` when nothing is pending (from the last forward), else None.
    """

    def __init__(self, loaded, prompt, *, token_level, max_new_tokens, monotonic, speculative_headers,
                 ride_along, drafter, forced, cancel, progress, guess_payload_cap=GUESS_PAYLOAD_CAP):
        self.tok = loaded.tokenizer
        self.table = token_table(self.tok)
        self.view = prompt.view
        self.prompt_ids = list(prompt.ids)
        self.context_length = int(loaded.context_length)
        self.token_level = token_level
        self.max_new = max_new_tokens
        self.spec = speculative_headers
        self.guess_payload_cap = guess_payload_cap
        self.ride = ride_along
        self.drafter = make_proposer(drafter, document_ids=self.view.token_ids, draft=getattr(loaded, "draft", None))
        self.progress = progress
        self.fsm = ProgramFSM(self.table, self.view, token_level=token_level, monotonic=monotonic)
        self.runner = loaded.session(cancel=cancel)  # engine.backends.base.Session
        target, starts = None, None
        if forced is not None:
            target, starts = [], []
            for i, op in enumerate(forced):
                starts.append(len(target))
                try:
                    target.extend(op_token_ids(self.table, self.view, op, token_level=token_level))
                except (ValueError, TypeError) as exc:
                    raise ForcedProgramError(f"forced program op #{i} {op!r} cannot be spelled for this "
                                             f"document: {exc}") from exc
            starts.append(len(target))
            target.extend(self.table.program_close)
        self.forced = forced
        self.chooser = Chooser(target, starts)
        self.out: list[int] = []
        self.pending: list[int] = list(self.prompt_ids)
        self.ready: torch.Tensor | None = None
        self.stats = DecodeStats(prompt_tokens=len(self.prompt_ids))
        self.records: list[OpRecord] = []
        self._tick = time.perf_counter()
        self._rows: tuple[int, list] | None = None  # last verify forward: (out position of row 0, rows)
        self._ahead: tuple[list, list[int], int] | None = None  # a gen's first draft fed with <gen>: (rows, draft, cache base)

    # ---- accounting ---------------------------------------------------------------------------
    def _op(self) -> OpRecord:
        idx = self.fsm.current_op
        while len(self.records) <= idx:
            self.records.append(OpRecord())
        return self.records[idx]

    def _charge_time(self) -> None:
        now = time.perf_counter()
        self._op().ms += (now - self._tick) * 1000.0
        self._tick = now

    def _count(self, n: int, kind: str) -> None:
        rec = self._op()
        rec.tokens += n
        setattr(rec, kind, getattr(rec, kind) + n)
        setattr(self.stats, f"{kind}_tokens", getattr(self.stats, f"{kind}_tokens") + n)

    def _spent(self) -> int:
        return self.stats.decoded_tokens + self.stats.forced_tokens

    def _room(self) -> int:
        return self.context_length - self.runner.length - len(self.pending)

    # ---- forwards -----------------------------------------------------------------------------
    def _feed(self, ids: list[int], keep: int, forward=None) -> torch.Tensor:
        self._charge_time()
        # forward: the session's feed, or a screened verify forward of a gen body (engine.decode.screened)
        logits = (forward or self.runner.feed)(ids, keep=keep)  # raises EditCancelled once the cancel event is set
        self._op().forwards += 1
        self.stats.forwards += 1
        self._charge_time()
        if self.progress is not None:
            self.progress(self.stats.progress(len(self.fsm.ops)))
        return logits

    def _ensure_pending(self) -> None:
        """Logits are needed but every committed token is cached: re-feed the last one (rare)."""
        if not self.pending:
            last = self.runner.ids[-1]
            self.runner.crop(self.runner.length - 1)
            self.pending = [last]

    def _flush(self) -> None:
        self._ensure_pending()
        logits = self._feed(self.pending, keep=1)
        self.pending = []
        self.ready = logits[0]

    def _commit(self, ids: list[int], kind: str, *, fed: bool = False) -> None:
        self._count(len(ids), kind)
        self.out.extend(ids)
        if not fed:
            self.pending.extend(ids)
            self.ready = None

    def _rewind(self, target_out: list[int]) -> tuple[int, int]:
        """Make the committed output ``target_out``; returns (tokens dropped, tokens added)."""
        common = 0
        limit = min(len(self.out), len(target_out))
        while common < limit and self.out[common] == target_out[common]:
            common += 1
        dropped, added = len(self.out) - common, len(target_out) - common
        if dropped == 0 and added == 0:
            return 0, 0
        full = self.prompt_ids + target_out
        keep = min(self.runner.length, len(self.prompt_ids) + common)
        self.runner.crop(keep)
        self.pending = full[keep:]
        self.out = list(target_out)
        self.ready = None
        return dropped, added

    # ---- main loop ----------------------------------------------------------------------------
    def run(self) -> None:
        while True:
            if self.fsm.state not in (DONE, GEN_BODY) and (self._spent() >= self.max_new or self._room() <= 1):
                self.fsm.truncate()
                self.stats.truncated = True
            st = self.fsm.step()
            if st.kind == "done":
                break
            if st.kind == "force":
                if len(st.ids) >= self._room():  # a splice that would overflow the context window
                    self.fsm.truncate()
                    self.stats.truncated = True
                    continue
                self._commit(list(st.ids), "copied" if st.copy else "forced")
                for t in st.ids:
                    self.fsm_advance_tracked(t)
                if not self.ride:
                    self._flush()
                continue
            if st.kind == "choose":
                if self.ready is None:
                    if self.spec and self.fsm.choosing_op and self._speculate():
                        continue
                    self._flush()
                tok = self._choose(self.ready, st.allowed)
                self._commit([tok], "decoded")
                self.fsm_advance_tracked(tok)
                if not self.ride:
                    self._flush()
                continue
            self._gen()
        self._charge_time()

    def _choose(self, row: torch.Tensor, allowed) -> int:
        """A masked choice at the current output position (timed and counted as a masked step)."""
        t0 = time.perf_counter()
        tok = self.chooser.choose(row, allowed, len(self.out))
        self.stats.mask_ms += (time.perf_counter() - t0) * 1000.0
        self.stats.masked_steps += 1
        return tok

    def fsm_advance_tracked(self, tok: int) -> None:
        before = len(self.fsm.ops)
        rec = self._op()
        self.fsm.advance(tok)
        if len(self.fsm.ops) > before:
            rec.kind = type(self.fsm.ops[-1]).__name__
        elif self.fsm.state == DONE:
            rec.kind = "close"

    # ---- speculative headers ------------------------------------------------------------------
    def _guess_ids(self, fsm: ProgramFSM | None = None) -> list[int]:
        """Tokens of the guessed next op(s) that are legal from ``fsm``'s state (default: the live FSM)."""
        fsm = self.fsm if fsm is None else fsm
        items = guess_next_ops(
            fsm.ops, self.view.n_lines, self.view.n_tokens, self.view.lines, token_level=self.token_level,
            gen_token_count=lambda text: len(self.tok.encode(text, add_special_tokens=False)))
        toks: list[int] = []
        for item in items:
            if item == GEN_OPEN_GUESS:
                toks.extend(self.table.gen_open)
                continue
            parts = op_token_parts(self.table, self.view, item)
            payload = [t for label, ids in parts if label == "payload" for t in ids]
            if len(payload) > self.guess_payload_cap:  # verify the header alone; its payload rides along next
                toks.extend(t for label, ids in parts if label == "tag" for t in ids)
                break
            toks.extend(t for _, ids in parts for t in ids)
        consumed = fsm.literal_pos
        if consumed:
            if self.out[-consumed:] != toks[:consumed]:
                return []
            toks = toks[consumed:]
        clone, guess = fsm.clone(), []
        budget = max(0, self._room() - 2)
        for t in toks:
            if len(guess) >= budget or clone.step().kind in ("free", "done") or not clone.allows(t):
                break
            clone.advance(t)
            guess.append(t)
        return guess

    def _speculate(self) -> bool:
        guess = self._guess_ids()
        if not guess:
            return False
        ahead = self._draft_ahead(guess)
        self._ensure_pending()
        base, npend = self.runner.length, len(self.pending)
        logits = self._feed(self.pending + guess + ahead, keep=len(guess) + len(ahead) + 1)
        self.pending = []
        rows = list(logits)
        self._verify_guess(rows[:len(guess) + 1], guess, base + npend)
        if ahead:  # a rejected guess token cropped the draft with it; else the gen's first round is verified
            opened = base + npend + len(guess)
            if self.runner.length == opened + len(ahead) and self.fsm.state == GEN_BODY:
                self._ahead, self.ready = (rows[len(guess):], ahead, opened), None
            else:
                if self.runner.length > opened:  # pragma: no cover - a kept guess ends in the gen body
                    self.runner.crop(opened)
                self.drafter.update(0)
        return True

    def _draft_ahead(self, guess: list[int]) -> list[int]:
        """The first draft of the gen ``guess`` opens ([] when it opens none, or the drafter cannot
        draft before the forward: ``engine.drafters.base.drafts_ahead``)."""
        if not self.ride or not drafts_ahead(self.drafter):
            return []
        clone = self.fsm.clone()
        for t in guess:
            clone.step()
            clone.advance(t)
        if clone.state != GEN_BODY:
            return []
        room = min(self.max_new - self._spent() - len(guess) - 1, self._room() - len(guess) - 3)
        if room <= 0:
            return []
        begin_gen(self.drafter, lambda: self._replaced_ids(clone.ops))
        drafts = propose_candidates(self.drafter, self.prompt_ids + self.out + guess, [], 1)
        return drafts[0][:room] if drafts else []

    def _verify_guess(self, rows: list, guess: list[int], fed_base: int) -> None:
        """Walk the FSM over a fed guess: keep the prefix equal to the model's masked choices.

        ``rows[k]`` predicts ``guess[k]`` (``rows[len(guess)]`` the token after it); the cache holds
        the guess from position ``fed_base``. The acceptance rule is ``engine.decode.verify.accept_prefix``
        (the one every verify forward uses): forced literal and splice tokens are the FSM's own, a
        choice is the chooser's masked pick. On the first differing choice the rest is cropped and
        the model's own choice becomes the pending token; a fully kept guess leaves its last row ready.
        """
        self.stats.guess_tokens += len(guess)

        def pick(k: int, row) -> int:
            st = self.fsm.step()
            if st.kind == "force":
                tok, kind = st.ids[0], "copied" if st.copy else "forced"
                if tok != guess[k]:  # pragma: no cover - guesses are built on a clone
                    raise AssertionError("speculative guess diverged from the FSM's forced tokens")
            elif st.kind == "choose":
                tok, kind = self._choose(row, st.allowed), "decoded"
            else:  # pragma: no cover - guesses stop at free/done states
                return _NO_CHOICE
            if tok == guess[k]:
                self._commit([tok], kind, fed=True)
                self.fsm_advance_tracked(tok)
            return tok

        kept, tok = accept_prefix(rows, guess, pick, bonus=False)
        k = len(kept)
        self.stats.guess_accepted += k
        if tok is None:
            self.ready = rows[k]
            return
        self.runner.crop(fed_base + k)
        if tok == _NO_CHOICE:  # pragma: no cover - guesses stop at free/done states
            self.ready = None
            return
        self._commit([tok], "decoded")
        self.fsm_advance_tracked(tok)



def decode_program(loaded, document: str, instruction: str, *, token_level: bool = False,
                   max_new_tokens: int = 512, monotonic: bool = False, speculative_headers: bool = True,
                   ride_along: bool = True, drafter="none", forced=None,
                   cancel: threading.Event | None = None,
                   progress: Callable[[Progress], None] | None = None,
                   mode: str = "clipped", guess_payload_cap: int = GUESS_PAYLOAD_CAP) -> DecodeResult:
    """Decode (or, with ``forced``, replay) an edit program for ``document`` (see module doc)."""
    t0 = time.perf_counter()
    prompt = render_prompt(document, instruction, loaded.tokenizer, token_level=token_level,
                           profile=getattr(loaded, "prompt_profile", "teach"))
    check_context(len(prompt.ids), prompt.view.n_tokens, int(loaded.context_length))
    dec = ProgramDecoder(loaded, prompt, token_level=token_level, max_new_tokens=max_new_tokens,
                          monotonic=monotonic, speculative_headers=speculative_headers, ride_along=ride_along,
                          drafter=drafter, forced=forced, cancel=cancel, progress=progress,
                          guess_payload_cap=guess_payload_cap)
    dec.run()
    program = tuple(dec.fsm.ops)
    stats = dec.stats
    stats.per_op = [r.as_dict() for r in dec.records]
    stats.prompt_reused = dec.runner.reused
    stats.confidence = dec.chooser.confidence(dec.out)
    text, warnings, error = None, [], None
    try:
        res = resolve(program, document, mode, token_ids=prompt.view.token_ids,
                      decode_tokens=lambda ids: decode(loaded.tokenizer, ids),
                      granularity="tokens" if token_level else "lines")
        text, warnings = res.text, list(res.warnings)
    except ValueError as exc:  # ResolveError: only reachable in strict mode on odd programs
        error = str(exc)
    stats.wall_ms = (time.perf_counter() - t0) * 1000.0
    return DecodeResult(program=program, text=text, warnings=warnings, stats=stats,
                        output_ids=list(dec.out), resolve_error=error)


__all__ = ["decode_program", "ProgramDecoder", "DecodeResult", "DecodeStats", "OpRecord", "check_context"]
