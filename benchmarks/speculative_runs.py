"""Per-case runs of the lossless-decoding comparison (`benchmarks.speculative`).

One *row* (`Row`) is one way of producing a model's greedy output:

* ``AR``: greedy full regeneration, no draft (`engine.decode.regen.regenerate(drafter="none")`);
* ``HF pld N``: Hugging Face ``model.generate(prompt_lookup_num_tokens=N, do_sample=False)`` on the same
  regen prompt ids (free-run only: it cannot be teacher-forced). Its budget is AR's output length (plus
  one token when AR stopped at EOS), so it stops where AR did; forwards are counted by a forward hook;
* ``<drafter>``: full regeneration drafted by a registry drafter (``spec-edit W=64`` for "spec-edit");
* ``cad+<drafter>``: the Copy-as-Decode program decoder (`engine.decode.program.decode_program`, the
  ``cad`` strategy) with that drafter in gen bodies; ``cad+none uncapped``: ``cad+none`` with every
  guessed copy payload fed with its header (``guess_payload_cap`` unbounded: the decoder before the
  cap), the ablation of ``engine.decode.program.GUESS_PAYLOAD_CAP``.

Every engine drafter is wrapped in `CountingProposer`, built exactly as the decoder would build it
(same ``document_ids`` and options), which counts rounds (``propose`` calls), drafted rounds (a
non-empty draft that reached a verify), proposed and accepted draft tokens. A drafter may expose more
counters (``probe_*`` attributes, a ``probe_stats()`` dict such as precision/recall of a probe, or a
``counts`` dict such as switchsd's matched / gated_out); they are copied into the record as they are.
``useful_rounds`` counts drafted rounds that kept at least one draft token: useful / drafted is the
precision of the decision to draft (a gate's precision); its recall would need the gated-out drafts
verified too, which no loop does. Records carry a hash of the output ids and text for the
lossless check (`benchmarks.speculative`), never the ids themselves.
"""
from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass

SPEC_EDIT_WINDOW = 64
UNCAPPED = 1 << 30   # a guess_payload_cap no payload exceeds (the decoder before the cap: every guessed payload fed)


@dataclass(frozen=True)
class Case:
    """One edit: HumanEvalPack-Fix pair or long document, with its corpus name."""

    corpus: str
    case_id: str
    document: str
    instruction: str
    gold: str


@dataclass(frozen=True)
class Row:
    """One strategy row: ``kind`` is "regen", "hf" or "cad"; ``drafter`` a registry name (or N for hf)."""

    name: str
    kind: str
    drafter: str = "none"
    window: int | None = None
    lookup: int = 0
    payload_cap: int | None = None   # cad rows: the decoder's guess_payload_cap (None: its default)

    @property
    def reference(self) -> str:
        """The row whose output this one must equal: AR for regeneration rows, cad+none for CaD."""
        return "cad+none" if self.kind == "cad" else "AR"


def rows(drafters, hf_lookup: int = 10) -> list[Row]:
    """Every row for the registry's drafters (iterated, never hard-coded), AR and cad+none first."""
    out = [Row("AR", "regen", "none")]
    if hf_lookup:
        out.append(Row(f"HF pld N={hf_lookup}", "hf", lookup=hf_lookup))
    for name in drafters:
        if name == "none":
            continue
        if name == "spec-edit":
            out.append(Row(f"spec-edit W={SPEC_EDIT_WINDOW}", "regen", name, window=SPEC_EDIT_WINDOW))
        else:
            out.append(Row(name, "regen", name))
    out += [Row(f"cad+{name}", "cad", name) for name in ["none", *[d for d in drafters if d != "none"]]]
    out.append(Row("cad+none uncapped", "cad", "none", payload_cap=UNCAPPED))  # guessed payloads always fed
    return out


def humaneval_cases(n: int | None) -> list[Case]:
    """The first ``n`` held-out HumanEvalPack-Fix pairs per language, split as the other benchmarks
    split them (`evaluation.corpus.split`, seed 0), python and js alternating (a run cut short
    still covers both)."""
    from evaluation.corpus import load_pairs, split

    per_lang = []
    for lang in ("python", "js"):
        _, held = split(load_pairs(lang))
        per_lang.append([Case(f"humanevalfix-{lang}", p.task_id, p.document,
                              getattr(p, "instruction", None) or f"Fix bugs in {p.entry_point}.", p.gold)
                         for p in held[:n]])
    return [c for pair in zip(*per_lang) for c in pair]


def long_cases(n: int, tokenizer, context_length: int, margin: int = 256, max_tokens: int | None = None) -> list[Case]:
    """The first ``n`` long documents (`benchmarks.longdocs`) whose full regeneration fits the
    context window (regen prompt + document + margin) and, with ``max_tokens``, that have at most that
    many tokens; the others are skipped, not truncated. The corpus is deterministic per venv only (its
    documents are the venv's site-packages), so records carry each document's hash (``doc_sha``)."""
    from engine.decode.regen import regen_framing
    from benchmarks.longdocs import long_document_cases

    out = []
    for c in long_document_cases():
        doc_tokens = len(tokenizer.encode(c.gold, add_special_tokens=False))
        prompt = len(regen_framing(tokenizer, c.document, c.instruction).prompt_ids)
        if prompt + doc_tokens + margin > context_length or (max_tokens and doc_tokens > max_tokens):
            continue
        out.append(Case("longdocs", c.case_id, c.document, c.instruction, c.gold))
        if len(out) == n:
            break
    return out


class CountingProposer:
    """Wraps a registry drafter; counts rounds, drafted rounds, proposed and accepted draft tokens.
    Optional drafter methods (``propose_many``, ``attach``, ``screen_depth``: `engine.drafters.base`)
    pass through, so the loops treat the wrapper exactly as the drafter."""

    def __init__(self, inner):
        self.inner = inner
        self.rounds = self.drafted = self.proposed = self.accepted = self.useful = 0
        self._last = 0

    def __getattr__(self, name):  # attach, screen_depth, ...: the drafter's own (AttributeError if absent)
        return getattr(self.__dict__["inner"], name)

    def _count(self, drafts: list[list[int]]) -> None:
        self.rounds += 1
        self._last = sum(map(len, drafts))

    def propose(self, context_ids, generated):
        draft = list(self.inner.propose(context_ids, generated))
        self._count([draft])
        return draft

    def propose_many(self, context_ids, generated, limit):
        many = getattr(self.inner, "propose_many", None)
        drafts = [list(d) for d in many(context_ids, generated, limit)] if many is not None else \
            [list(self.inner.propose(context_ids, generated))]
        self._count(drafts)
        return drafts

    def update(self, accepted: int) -> None:
        if self._last:
            self.drafted += 1
            self.proposed += self._last
            self.accepted += accepted
            self.useful += accepted > 0
        self._last = 0
        self.inner.update(accepted)

    def counters(self) -> dict:
        extra = {k: v for k, v in vars(self.inner).items()
                 if k.startswith("probe_") and isinstance(v, (int, float))}
        if callable(getattr(self.inner, "probe_stats", None)):
            extra.update(self.inner.probe_stats())
        if isinstance(getattr(self.inner, "counts", None), dict):  # e.g. switchsd: rounds, matched, gated_out
            extra.update({f"drafter_{k}": v for k, v in self.inner.counts.items() if isinstance(v, (int, float))})
        if isinstance(getattr(self.inner, "reanchors", None), int):
            extra["reanchors"] = self.inner.reanchors
        return {"rounds": self.rounds, "drafted_rounds": self.drafted, "draft_proposed": self.proposed,
                "draft_accepted": self.accepted, "useful_rounds": self.useful, **extra}


def digest(ids) -> str:
    return hashlib.sha1(",".join(map(str, ids)).encode()).hexdigest()[:16]


def budget(tokenizer, case: Case, free_extra: int = 0) -> int:
    """The engine's automatic budget (`engine.edit`): the edited text's tokens + 256; with
    ``free_extra``: the gold's tokens + free_extra (`benchmarks.e2e --free`'s budget)."""
    from engine.edit import AUTO_BUDGET_MARGIN

    if free_extra:
        return len(tokenizer.encode(case.gold, add_special_tokens=False)) + free_extra
    return len(tokenizer.encode(case.document, add_special_tokens=False)) + AUTO_BUDGET_MARGIN


def _regen(row: Row, loaded, case: Case, forced: bool, max_new: int) -> dict:
    from engine.decode.regen import regen_framing, regenerate
    from engine.drafters import make_proposer

    framing = regen_framing(loaded.tokenizer, case.document, case.instruction)
    window = row.window or 32  # regenerate's (and EditEngine's) default window
    draft_ids = loaded.tokenizer.encode(framing.draft_text, add_special_tokens=False)
    proposer = CountingProposer(make_proposer(row.drafter, document_ids=draft_ids, window=window,
                                              draft=getattr(loaded, "draft", None)))
    t0 = time.perf_counter()
    r = regenerate(loaded, case.document, case.instruction, drafter=proposer, window=window,
                   max_new_tokens=max_new, forced=case.gold if forced else None, framing=framing)
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "forwards": r.stats.forwards, "output_ids": r.output_ids, "text": r.text,
            "stopped_by": r.stopped_by, "truncated": r.stats.truncated, **proposer.counters()}


def _cad(row: Row, loaded, case: Case, forced: bool, max_new: int) -> dict:
    from engine.decode.program import decode_program
    from engine.drafters import make_proposer
    from engine.program.oracle import line_program
    from engine.prompt import render_prompt

    view = render_prompt(case.document, case.instruction, loaded.tokenizer,
                         profile=getattr(loaded, "prompt_profile", "teach")).view
    proposer = CountingProposer(make_proposer(row.drafter, document_ids=view.token_ids,  # as decode_program does
                                              draft=getattr(loaded, "draft", None)))
    program = line_program(case.document, case.gold) if forced else None
    t0 = time.perf_counter()
    cap = {} if row.payload_cap is None else {"guess_payload_cap": row.payload_cap}
    d = decode_program(loaded, case.document, case.instruction, max_new_tokens=max_new, drafter=proposer,
                       forced=program, mode="clipped", **cap)
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "forwards": d.stats.forwards, "output_ids": d.output_ids, "text": d.text or "",
            "stopped_by": "truncated" if d.stats.truncated else "end", "truncated": d.stats.truncated,
            "ops": len(d.program), **proposer.counters()}


def hf_generate(loaded, case: Case, lookup: int, n_new: int) -> dict:
    """HF ``generate`` with prompt lookup on the regen prompt; ``n_new`` new tokens at most."""
    import torch

    from engine.decode.regen import regen_framing
    from engine.guide.tokens import stop_ids

    framing = regen_framing(loaded.tokenizer, case.document, case.instruction)
    model, stops = loaded.model, sorted(stop_ids(loaded.tokenizer))
    sizes: list[int] = []
    hook = model.register_forward_hook(lambda m, a, kw, out: sizes.append(kw["input_ids"].shape[-1]),
                                       with_kwargs=True)
    ids = torch.tensor([framing.prompt_ids], device=loaded.device)
    kwargs = dict(max_new_tokens=max(1, n_new), do_sample=False, eos_token_id=stops,
                  pad_token_id=stops[0], attention_mask=torch.ones_like(ids))
    if lookup:
        kwargs["prompt_lookup_num_tokens"] = lookup
    t0 = time.perf_counter()
    try:
        with torch.no_grad():
            out = model.generate(ids, **kwargs)
    finally:
        hook.remove()
    wall = time.perf_counter() - t0
    new = out[0, len(framing.prompt_ids):].tolist()
    stopped = "eos" if new and new[-1] in stops else "budget"
    if stopped == "eos":
        new = new[:-1]
    decode_fwd = sizes[1:]
    accepted = len(new) + (stopped == "eos") - len(sizes)  # each forward yields accepted + 1 tokens
    return {"wall_s": wall, "forwards": len(sizes), "output_ids": new,
            "text": framing.extract(loaded.tokenizer.decode(new)), "stopped_by": stopped, "truncated": False,
            "rounds": len(sizes), "drafted_rounds": sum(1 for s in decode_fwd if s > 1),
            "draft_proposed": sum(s - 1 for s in decode_fwd if s > 1), "draft_accepted": max(0, accepted)}


def _dispatch(row: Row, loaded, case: Case, forced: bool, max_new: int, reference: dict | None) -> dict:
    if row.kind == "hf":
        if reference is None or reference.get("error"):
            raise RuntimeError("HF generate needs AR's record on this case (its output length is the budget)")
        return hf_generate(loaded, case, row.lookup, reference["output_tokens"] + (reference["stopped_by"] == "eos"))
    if row.kind == "cad":
        return _cad(row, loaded, case, forced, max_new)
    return _regen(row, loaded, case, forced, max_new)


def run(row: Row, loaded, case: Case, *, forced: bool, reference: dict | None = None,
        max_new: int | None = None, free_extra: int = 0) -> dict:
    """One (row, case) record: timing, counters, output hashes; ``reference`` is AR's record (hf needs
    its output length and stop to set the same budget); ``max_new``: a free-run token budget instead of
    the engine's automatic one (tests), ``free_extra``: free-run budget = gold tokens + free_extra (forced
    runs keep the automatic budget, so they replay the whole gold). A row that raises is recorded with ``error``."""
    max_new = (not forced and max_new) or budget(loaded.tokenizer, case, 0 if forced else free_extra)
    try:
        res = _dispatch(row, loaded, case, forced, max_new, reference)
    except Exception as exc:  # noqa: BLE001 - a failing row is reported, the run goes on
        res = {"wall_s": 0.0, "forwards": 0, "output_ids": [], "text": "", "stopped_by": "error",
               "truncated": False, "rounds": 0, "drafted_rounds": 0, "draft_proposed": 0, "draft_accepted": 0,
               "error": f"{type(exc).__name__}: {exc}"}
    ids, text = res.pop("output_ids"), res.pop("text")
    text_tokens = len(loaded.tokenizer.encode(text, add_special_tokens=False))
    return {"corpus": case.corpus, "case_id": case.case_id, "mode": "forced" if forced else "free", "budget": max_new,
            "strategy": row.name, "kind": row.kind, "reference": row.reference,
            "doc_tokens": len(loaded.tokenizer.encode(case.document, add_special_tokens=False)),
            "doc_sha": hashlib.sha1(case.document.encode()).hexdigest()[:16],
            "doc_lines": case.document.count("\n") + 1, "output_tokens": len(ids), "text_tokens": text_tokens,
            "ids_sha": digest(ids), "text_sha": hashlib.sha1(text.encode()).hexdigest()[:16],
            "exact": text == case.gold, "loadavg": os.getloadavg()[0], **res}
