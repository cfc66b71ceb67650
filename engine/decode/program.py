"""Program decoder: FSM-constrained decoding of an edit program over a KV cache (one model, one doc).

Public entry::

    decode_program(loaded, document, instruction, *, token_level=False, max_new_tokens=512,
                   monotonic=False, speculative_headers=True, ride_along=True, gen_strategy=None,
                   forced=None, cancel=None, progress=None, mode="clipped") -> DecodeResult

``loaded`` is an ``engine.backends.model.LoadedModel`` (``model``, ``tokenizer``, ``context_length``).
Every forward goes through ``engine.backends.kv.KVRunner`` (one ``feed`` = one forward).

Forward schedule (what the speed is won on):

* Masked steps only at decision points of ``engine.guide.fsm``; forced literal tokens and tokens the FSM
  allows alone are never a forward of their own: they are committed to ``pending`` and ride
  along in the next forward (the one that produces the next decision's logits). A copy's splice
  payload rides with the tag's last tokens: ONE parallel-prefill forward per copy span.
* Speculative op headers (``speculative_headers=True``): at an op boundary the guessed next op(s)
  (``engine.decode.headers``) are fed together with the pending ids in one forward; the longest prefix
  equal to the model's own masked greedy choices is kept, the rest is cropped. Lossless.
* Gen bodies: free greedy decoding; ``gen_strategy`` (an ``engine.drafters.base.DraftProposer``)
  may propose drafts, verified in one forward (longest greedy-matching prefix + bonus token).
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
``progress(DecodeProgress)`` is called after every forward.
"""
from __future__ import annotations

import threading
import time
from typing import Callable

import torch

from engine.decode.types import DecodeProgress, DecodeResult, DecodeStats, OpRecord
from engine.errors import ContextOverflowError, EditCancelled, ForcedProgramError
from engine.guide.fsm import ProgramFSM, op_token_ids, program_token_ids, token_table
from engine.decode.gen_end import decode, find_gen_end
from engine.decode.headers import GEN_OPEN_GUESS, guess_next_ops
from engine.backends.kv import DecodeCancelled, KVRunner
from engine.prompt import render_prompt
from engine.decode.repetition import repeating_unit
from engine.program.resolver import resolve

ANSWER_RESERVE = 16  # tokens kept free beyond a full copy of the document when checking the prompt


class _Chooser:
    """Greedy masked argmax, or the forced program's token at the current output position."""

    def __init__(self, target: list[int] | None, op_starts: list[int] | None = None):
        self.target = target
        self.op_starts = op_starts or []

    def choose(self, row: torch.Tensor, allowed: torch.Tensor | None, pos: int) -> int:
        if self.target is None:
            if allowed is None:
                return int(torch.argmax(row))
            return int(allowed[torch.argmax(row.index_select(0, allowed))])
        if pos >= len(self.target):
            raise ForcedProgramError(f"forced program ended at output token {pos} but the grammar expects more")
        tok = self.target[pos]
        if allowed is not None and not bool((allowed == tok).any()):
            op = sum(1 for s in self.op_starts if s <= pos) - 1
            raise ForcedProgramError(
                f"forced program op #{op} is not allowed by the grammar at output token {pos} "
                f"(token {tok} not in the FSM mask): an index out of the document's bounds, or a "
                f"non-monotonic copy with monotonic=True")
        return tok


class _ProgramDecoder:
    """One decode: the FSM, the KV runner and the schedule state.

    Invariant: ``runner.ids + pending == prompt_ids + out``. ``pending`` holds committed tokens
    not yet fed (they ride along in the next forward); ``ready`` is the logits row predicting
    the token after ``out`` when nothing is pending (from the last forward), else None.
    """

    def __init__(self, loaded, prompt, *, token_level, max_new_tokens, monotonic, speculative_headers,
                 ride_along, gen_strategy, forced, cancel, progress):
        self.tok = loaded.tokenizer
        self.table = token_table(self.tok)
        self.view = prompt.view
        self.prompt_ids = list(prompt.ids)
        self.context_length = int(loaded.context_length)
        self.token_level = token_level
        self.max_new = max_new_tokens
        self.spec = speculative_headers
        self.ride = ride_along
        self.strategy = gen_strategy
        self.progress = progress
        self.fsm = ProgramFSM(self.table, self.view, token_level=token_level, monotonic=monotonic)
        self.runner = KVRunner(loaded.model, cancel=cancel)
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
        self.chooser = _Chooser(target, starts)
        self.out: list[int] = []
        self.pending: list[int] = list(self.prompt_ids)
        self.ready: torch.Tensor | None = None
        self.stats = DecodeStats(prompt_tokens=len(self.prompt_ids))
        self.records: list[OpRecord] = []
        self._tick = time.perf_counter()
        self._rows: tuple[int, list] | None = None  # last verify forward: (out position of row 0, rows)

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
    def _feed(self, ids: list[int], keep: int) -> torch.Tensor:
        self._charge_time()
        try:
            logits = self.runner.feed(ids, keep=keep)
        except DecodeCancelled as exc:
            raise EditCancelled(
                f"edit cancelled after {self.runner.log.forwards} forwards ({len(self.fsm.ops)} ops decoded)"
            ) from exc
        self._op().forwards += 1
        self.stats.forwards += 1
        self._charge_time()
        if self.progress is not None:
            s = self.stats
            self.progress(DecodeProgress(s.decoded_tokens, s.copied_tokens, s.forced_tokens, s.forwards,
                                         len(self.fsm.ops)))
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
            if self.fsm.state not in ("DONE", "GEN_BODY") and (self._spent() >= self.max_new or self._room() <= 1):
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
                    if self.spec and self.fsm.state in ("AWAIT_OP", "AFTER_LT") and self._speculate():
                        continue
                    self._flush()
                t0 = time.perf_counter()
                tok = self.chooser.choose(self.ready, st.allowed, len(self.out))
                self.stats.mask_ms += (time.perf_counter() - t0) * 1000.0
                self.stats.masked_steps += 1
                self._commit([tok], "decoded")
                self.fsm_advance_tracked(tok)
                if not self.ride:
                    self._flush()
                continue
            self._gen()
        self._charge_time()

    def fsm_advance_tracked(self, tok: int) -> None:
        before = len(self.fsm.ops)
        rec = self._op()
        self.fsm.advance(tok)
        if len(self.fsm.ops) > before:
            rec.kind = type(self.fsm.ops[-1]).__name__
        elif self.fsm.state == "DONE":
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
            else:
                toks.extend(op_token_ids(self.table, self.view, item, token_level=self.token_level))
        consumed = fsm._pos
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
        self._ensure_pending()
        base, npend = self.runner.length, len(self.pending)
        logits = self._feed(self.pending + guess, keep=len(guess) + 1)
        self.pending = []
        self._verify_guess(list(logits), guess, base + npend)
        return True

    def _verify_guess(self, rows: list, guess: list[int], fed_base: int) -> None:
        """Walk the FSM over a fed guess: keep the prefix equal to the model's masked choices.

        ``rows[k]`` predicts ``guess[k]`` (``rows[len(guess)]`` the token after it); the cache holds
        the guess from position ``fed_base``. On the first differing choice the rest is cropped
        and the model's own choice becomes the pending token.
        """
        self.stats.guess_tokens += len(guess)
        logits = rows
        k = 0
        while k < len(guess):
            st = self.fsm.step()
            if st.kind == "force":
                seg = guess[k:k + len(st.ids)]
                if list(st.ids[:len(seg)]) != seg:  # pragma: no cover - guesses are built on a clone
                    raise AssertionError("speculative guess diverged from the FSM's forced tokens")
                self._commit(seg, "copied" if st.copy else "forced", fed=True)
                for t in seg:
                    self.fsm_advance_tracked(t)
                k += len(seg)
                continue
            if st.kind != "choose":
                break
            t0 = time.perf_counter()
            tok = self.chooser.choose(logits[k], st.allowed, len(self.out))
            self.stats.mask_ms += (time.perf_counter() - t0) * 1000.0
            self.stats.masked_steps += 1
            if tok == guess[k]:
                self._commit([tok], "decoded", fed=True)
                self.fsm_advance_tracked(tok)
                k += 1
                continue
            self.runner.crop(fed_base + k)
            self._commit([tok], "decoded")
            self.fsm_advance_tracked(tok)
            self.stats.guess_accepted += k
            return
        self.stats.guess_accepted += k
        if k < len(guess):  # pragma: no cover - guesses stop at free/done states
            self.runner.crop(fed_base + k)
            self.ready = None
        else:
            self.ready = logits[k]

    # ---- gen bodies ---------------------------------------------------------------------------
    def _gen(self) -> None:
        start = len(self.out)
        while True:
            body = self.out[start:]
            if self._spent() >= self.max_new or self._room() <= 2:
                self._op().kind = "Gen"
                self.fsm.truncate(decode(self.tok, body))
                self.stats.truncated = True
                return
            draft = []
            if self.strategy is not None:
                draft = list(self.strategy.propose(self.prompt_ids + self.out, body))
            if not draft and self.pending:
                ended = self._close_then_header(start, body)
                if ended is not None:
                    if ended:
                        return
                    continue
            if not draft:
                draft = self._close_draft(body)
                draft = draft[:max(0, min(self.max_new - self._spent() - 1, self._room() - 3))]
            pos0 = len(self.out)
            new = self._gen_round(draft)
            if self._detect(start, pos0, new):
                return
            if self.forced is None and repeating_unit(self.out[start:]) is not None:
                self._op().kind = "Gen"
                self.fsm.truncate(decode(self.tok, self.out[start:]))
                self.stats.truncated = self.stats.repeating = True
                return

    def _detect(self, start: int, pos0: int, new: list[int]) -> bool:
        """End-of-gen / EOS detection over tokens just committed at ``pos0``; closes the gen if found."""
        for i, tok in enumerate(new):
            pos = pos0 + i
            if tok in self.table.stop_ids:
                text = decode(self.tok, self.out[start:pos])
                dropped, added = self._rewind(self.out[:pos] + list(self.table.gen_close))
                self._count(-dropped, "decoded")
                self._count(added, "forced")
                self._op().kind = "Gen"
                self.fsm.finish_gen(text, eos=True)
                return True
            end = find_gen_end(self.tok, self.out[start:pos + 1], self.table.gen_close)
            if end is not None:
                dropped, added = self._rewind(self.out[:start] + end.canonical_ids)
                self._count(-dropped, "decoded")
                self._count(added, "forced")
                self._reuse_row()
                self._op().kind = "Gen"
                self.fsm.finish_gen(end.body_text)
                return True
        return False

    def _close_then_header(self, start: int, body: list[int]) -> bool | None:
        """Draft ``</gen>`` (its remaining tokens) plus the guessed next op header in ONE forward.

        Tried when the body ends with a proper prefix of ``</gen>``'s tokens, or (line mode) with a
        newline. The close tokens are verified by unmasked greedy choice (they are gen text); if
        all match, the gen ends and the header part is verified under the FSM's masks exactly as a
        speculative header. Returns None when no such draft applies (nothing was fed); True when
        this round's forward ran and the gen ended; False when it ran and the gen goes on.
        """
        if not self.spec:
            return None
        close = list(self.table.gen_close)
        rest = self._close_draft(body)
        if rest:
            body_part = body[:len(body) - (len(close) - len(rest))]
        elif not self.token_level and body and decode(self.tok, body[-1:]).endswith("\n"):
            rest, body_part = close, body
        else:
            return None
        clone = self.fsm.clone()
        clone.finish_gen(decode(self.tok, body_part))
        header = self._guess_ids(clone)
        draft = rest + header
        draft = draft[:max(0, min(self.max_new - self._spent() - 1, self._room() - 3))]
        if len(draft) <= len(rest):
            return None
        header = draft[len(rest):]  # the budget may have cut the guessed header short
        base, npend = self.runner.length, len(self.pending)
        logits = self._feed(self.pending + draft, keep=len(draft) + 1)
        self.pending = []
        self.stats.draft_tokens += len(rest)
        rows = list(logits)
        pos0 = len(self.out)
        for i, want in enumerate(rest):
            tok = self.chooser.choose(rows[i], None, pos0 + i)
            if tok != want:
                self.runner.crop(base + npend + i)
                self.stats.draft_accepted += i
                self._commit(rest[:i], "decoded", fed=True)
                self._commit([tok], "decoded")
                self._rows = (pos0, rows[:i + 1])
                return self._detect(start, pos0, rest[:i] + [tok])
        self.stats.draft_accepted += len(rest)
        self._commit(rest, "decoded", fed=True)
        end = find_gen_end(self.tok, self.out[start:], self.table.gen_close)
        if end is None or end.canonical_ids != self.out[start:]:  # pragma: no cover - odd byte splits
            self.runner.crop(base + npend + len(rest))
            self._rows = (pos0, rows[:len(rest) + 1])
            return self._detect(start, pos0, rest)
        self._op().kind = "Gen"
        self.fsm.finish_gen(end.body_text)
        self._verify_guess(rows[len(rest):], header, base + npend + len(rest))
        return True

    def _close_draft(self, body: list[int]) -> list[int]:
        """Draft the rest of ``</gen>`` when the body ends with a proper prefix of its tokens."""
        close = list(self.table.gen_close)
        for j in range(len(close) - 1, 0, -1):
            if len(body) >= j and body[-j:] == close[:j]:
                return close[j:]
        return []

    def _reuse_row(self) -> None:
        """After a gen end, reuse the verify forward's row that already predicts the next token."""
        if self.pending or self._rows is None:
            return
        pos0, rows = self._rows
        i = len(self.out) - pos0
        if 0 <= i < len(rows) and rows[i] is not None and self.runner.length == len(self.prompt_ids) + len(self.out):
            self.ready = rows[i]

    def _gen_round(self, draft: list[int]) -> list[int]:
        """One forward (or none): commit the accepted draft prefix + the model's next token."""
        self.stats.draft_tokens += len(draft)
        if self.ready is not None and not self.pending:
            first = self.chooser.choose(self.ready, None, len(self.out))
            self.ready = None
            if not draft or first != draft[0]:
                if self.strategy is not None and draft:
                    self.strategy.update(0)
                self._commit([first], "decoded")
                return [first]
            base, npend = self.runner.length, 0
            logits = self._feed(draft, keep=len(draft))
            rows = [None, *logits]
            accepted, i = [first], 1
        else:
            self._ensure_pending()
            base, npend = self.runner.length, len(self.pending)
            logits = self._feed(self.pending + draft, keep=len(draft) + 1)
            self.pending = []
            rows, accepted, i = list(logits), [], 0
        pos0 = len(self.out)  # rows[i] predicts output position pos0 + i
        self._rows = (pos0, rows)
        bonus = None
        while i <= len(draft):
            tok = self.chooser.choose(rows[i], None, pos0 + i)
            if i < len(draft) and tok == draft[i]:
                accepted.append(tok)
                i += 1
                continue
            bonus = tok
            break
        self.runner.crop(base + npend + len(accepted))
        if self.strategy is not None and draft:
            self.strategy.update(len(accepted))
        self.stats.draft_accepted += len(accepted)
        self._commit(accepted, "decoded", fed=True)
        self._commit([bonus], "decoded")
        if not self.ride:
            self._flush()
        return accepted + [bonus]


def check_context(prompt_tokens: int, document_tokens: int, context_length: int) -> None:
    """Raise ContextOverflowError if the prompt plus a full copy of the document cannot fit."""
    reserve = document_tokens + ANSWER_RESERVE
    if prompt_tokens + reserve > context_length:
        raise ContextOverflowError(prompt_tokens, context_length, reserve)


def decode_program(loaded, document: str, instruction: str, *, token_level: bool = False,
                   max_new_tokens: int = 512, monotonic: bool = False, speculative_headers: bool = True,
                   ride_along: bool = True, gen_strategy=None, forced=None,
                   cancel: threading.Event | None = None,
                   progress: Callable[[DecodeProgress], None] | None = None,
                   mode: str = "clipped") -> DecodeResult:
    """Decode (or, with ``forced``, replay) an edit program for ``document`` (see module doc)."""
    t0 = time.perf_counter()
    prompt = render_prompt(document, instruction, loaded.tokenizer, token_level=token_level,
                           profile=getattr(loaded, "prompt_profile", "teach"))
    check_context(len(prompt.ids), prompt.view.n_tokens, int(loaded.context_length))
    dec = _ProgramDecoder(loaded, prompt, token_level=token_level, max_new_tokens=max_new_tokens,
                          monotonic=monotonic, speculative_headers=speculative_headers, ride_along=ride_along,
                          gen_strategy=gen_strategy, forced=forced, cancel=cancel, progress=progress)
    dec.run()
    program = tuple(dec.fsm.ops)
    stats = dec.stats
    stats.per_op = [r.as_dict() for r in dec.records]
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


__all__ = ["decode_program", "DecodeResult", "DecodeStats", "DecodeProgress", "OpRecord", "check_context",
           "program_token_ids"]
