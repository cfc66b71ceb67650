"""The engine's front door: `EditEngine`, and the names front ends need, re-exported.

Owns request validation and lazy thread-safe model loading; the edit itself runs in `engine.edit`
(scope -> strategy -> result). Types come from `engine.types`, errors from `engine.errors`, the
strategy registry from `engine.strategies` (`STRATEGIES` is its names, in order), the drafter registry's
names from `engine.drafters` (`DRAFTERS`: the choices for gen-body drafting; `DEFAULT_GEN_DRAFTER` the default). Importing this
module or constructing `EditEngine` never imports torch; `load()` (or the first `edit()`) does.

    engine = EditEngine()                       # "default" = SmolLM2-135M GGUF, device "auto"
    result = engine.edit(EditRequest(document, "Fix bugs in add.", strategy="cad"))
    result.program, result.text, result.stats, result.warnings
    result.stats.planner                        # "model", or a model-free planner: "patch", "search-replace",
                                                # "snippet-merge" (a pasted change applied exactly, engine.program.pasted)
    engine.warm(document, "cad")                # prefill the document's prompt before the instruction is known

`line_range=(a, b)` (1-based inclusive) edits only lines a..b: the model sees that slice, and the
program is re-based so `.program` / `.text` refer to the full document (lines outside unchanged).
"""
from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Callable

from engine.drafters import DEFAULT_GEN_DRAFTER, DRAFTERS
from engine.edit import UNCHANGED_HINT, pasted_edit, run_edit
from engine.program.pasted import MODEL, planner_note
from engine.errors import (
    ContextOverflowError, EditCancelled, EngineError, InvalidRangeError, InvalidRequestError, ModelLoadError,
    PastedChangeError, UnknownStrategyError,
)
from engine.program.scope import check_range
from engine.remote.spec import is_remote_spec
from engine.size_guard import check_size
from engine.strategies import STRATEGIES, get_strategy
from engine.types import MODES, EditRequest, EditResult, EditStats, Progress

__all__ = [
    "STRATEGIES", "DRAFTERS", "DEFAULT_GEN_DRAFTER", "MODES", "EditRequest", "Progress", "EditStats", "EditResult", "EditEngine",
    "EngineError", "ContextOverflowError", "EditCancelled", "InvalidRangeError",
    "UnknownStrategyError", "InvalidRequestError", "ModelLoadError", "get_strategy",
    "MODEL", "planner_note", "UNCHANGED_HINT", "PastedChangeError", "edit_without_model",
]


def validate(request: EditRequest) -> tuple[int, int] | None:
    """Check a request; returns the normalised line range (or None). Raises EngineError subclasses."""
    if not isinstance(request.document, str):
        raise InvalidRequestError(f"document must be a str, got {type(request.document).__name__}")
    if not isinstance(request.instruction, str) or not request.instruction.strip():
        raise InvalidRequestError("instruction is empty: say what to change, e.g. 'Fix bugs in add.'")
    get_strategy(request.strategy)  # UnknownStrategyError names the registered choices
    if not isinstance(request.snippet_merge, bool):
        raise InvalidRequestError(f"snippet_merge must be true or false, got {request.snippet_merge!r}")
    if request.mode not in MODES:
        raise InvalidRequestError(f"unknown resolve mode {request.mode!r}; choose 'strict' or 'clipped'")
    if request.gen_drafter is not None:
        check_drafter(request.gen_drafter, "gen_drafter")
    budget = request.max_new_tokens
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
        raise InvalidRequestError(f"max_new_tokens must be a positive int or None (auto), got {budget!r}")
    if request.line_range is None:
        return None
    return check_range(request.document, request.line_range)


def check_drafter(name, what: str = "gen_drafter") -> str:
    """`name` if the drafter registry has it, else InvalidRequestError naming the choices."""
    if name not in DRAFTERS:
        raise InvalidRequestError(f"{what} must be one of {', '.join(DRAFTERS)}, got {name!r}")
    return name


def _plan(request: EditRequest) -> tuple[tuple[int, int] | None, EditResult | None, list[str]]:
    """Validate ``request``; its line range, the edit of a pasted change that pins down the new text
    (``engine.edit.pasted_edit``, timed) or None, and the warnings for a decode."""
    rng = validate(request)
    start = time.perf_counter()
    planned, notes = pasted_edit(request, rng)
    if planned is not None:
        planned.stats.wall_ms = (time.perf_counter() - start) * 1000.0
    return rng, planned, notes


def edit_without_model(request: EditRequest) -> tuple[EditResult | None, list[str]]:
    """The edit of a pasted change that pins down the new text (a diff, SEARCH/REPLACE blocks, a snippet
    that anchors: ``engine.program.pasted``), which needs no model; or None and the warnings a decode of
    it should carry (why a pasted snippet did not merge). The planners need not be asked again: decode
    ``replace(request, snippet_merge=False)``. Raises what ``EditEngine.edit`` raises for an invalid
    request, and ``PastedChangeError``."""
    _, planned, notes = _plan(request)
    return planned, notes


class EditEngine:
    """Loads the model once (lazily, thread-safe) and runs edits one at a time."""

    def __init__(self, model="default", device: str = "auto", *,
                 on_status: Callable[[str], None] | None = None, spec_edit_window: int = 32,
                 spec_edit_probe: int | None = None, gen_drafter: str = DEFAULT_GEN_DRAFTER, prefix_cache: bool = True,
                 draft_model: str | None = None):
        # `model` is a spec ("default", an HF dir, a .gguf path) or an already loaded LoadedModel.
        # spec_edit_window / spec_edit_probe: draft size for "spec-edit" (engine.drafters.document);
        # gen_drafter: the DRAFTERS name drafting inside cad gen bodies unless a request names one
        # (lossless either way).
        # prefix_cache: a model this engine loads keeps the KV of recent prompts, so the system
        # prompt and a document edited again are not prefilled twice (engine.backends.prefix_cache);
        # a LoadedModel passed in keeps its own setting.
        # draft_model: a smaller model of the same tokenizer (a spec) loaded beside the model; the drafter
        # "draft-model" drafts with it, and "switchsd" below its copy gate (engine.drafters.draft_model);
        # a LoadedModel passed in brings its own (its `draft` attribute).
        check_drafter(gen_drafter)
        self._prefix_cache = prefix_cache
        self._spec = model if isinstance(model, str) else getattr(model, "spec", "preloaded")
        self._loaded = None if isinstance(model, str) else model
        self._device = device
        self._on_status = on_status
        self._window = spec_edit_window
        self._probe = spec_edit_probe
        self._gen_drafter = gen_drafter
        self._draft_spec = draft_model
        self._load_lock = threading.Lock()
        self._edit_lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._loaded is not None

    @property
    def model(self):
        """The LoadedModel (loads it on first use)."""
        self.load()
        return self._loaded

    def load(self) -> None:
        """Load the model and tokenizer (idempotent; safe to call from several threads).
        Raises ModelLoadError (message says how to fix it) when the model cannot be loaded."""
        if self._loaded is not None:
            return
        with self._load_lock:
            if self._loaded is not None:
                return
            if is_remote_spec(self._spec):  # a URL: edit through a serving engine (engine.remote)
                from engine.remote.backend import connect as load_model
            else:
                from engine.backends.model import load_model  # imports torch

            self._status(f"loading model {self._spec} ...")
            loaded = load_model(self._spec, self._device, progress=self._on_status)
            if self._prefix_cache and getattr(loaded, "prefix_cache", False) is None:
                from engine.backends.prefix_cache import PrefixCache

                loaded.prefix_cache = PrefixCache()
            if self._draft_spec:
                loaded.draft = self._load_draft(loaded, load_model)
            self._loaded = loaded
            self._status(f"model ready ({getattr(loaded, 'device', '?')}, {getattr(loaded, 'dtype', '?')})")

    def _load_draft(self, loaded, load_model):
        """The draft model beside ``loaded`` (ModelLoadError when it cannot draft for it)."""
        from engine.drafters.draft_model import check_draft_compatible

        if is_remote_spec(self._spec) or is_remote_spec(self._draft_spec):
            raise ModelLoadError(f"draft model {self._draft_spec!r}: a draft model runs in process, beside an "
                                 "in-process model (a serving engine drafts with its own speculative settings)")
        self._status(f"loading draft model {self._draft_spec} ...")
        draft = load_model(self._draft_spec, self._device, progress=self._on_status)
        try:
            check_draft_compatible(loaded, draft)
        except ValueError as exc:
            raise ModelLoadError(str(exc)) from None
        return draft

    def _status(self, message: str) -> None:
        if self._on_status is not None:
            self._on_status(message)

    def edit(self, request: EditRequest, *, cancel: threading.Event | None = None,
             progress: Callable[[Progress], None] | None = None) -> EditResult:
        """Run one edit. Raises UnknownStrategyError / InvalidRangeError / InvalidRequestError,
        ContextOverflowError (suggests a range-scoped edit), PastedChangeError (a pasted diff that does
        not fit) and EditCancelled. A pasted change that pins down the new text is applied without
        loading the model."""
        rng, planned, notes = _plan(request)        # a pasted change that pins the text: no model needed
        if planned is not None:
            return planned
        has_draft = bool(self._draft_spec) or getattr(self._loaded, "draft", None) is not None
        if (request.gen_drafter or self._gen_drafter) == "draft-model" and not has_draft:  # refused before any load
            raise InvalidRequestError("gen_drafter 'draft-model' needs a draft model: name one with draft_model "
                                      "(the server setting draftModel, cad-apply --draft-model)")
        self.load()
        check_size(self._loaded, request)  # refuse what certainly cannot fit before tokenizing it all
        with self._edit_lock:
            start = time.perf_counter()
            runner = getattr(self._loaded, "edit_runner", run_edit)  # engine.remote.edit for a URL spec
            result = runner(self._loaded, replace(request, snippet_merge=False), rng,  # the planners were asked
                            cancel=cancel, progress=progress, window=self._window, probe=self._probe,
                            gen_drafter=request.gen_drafter or self._gen_drafter)
            result.warnings[:0] = notes
            result.stats.wall_ms = (time.perf_counter() - start) * 1000.0
            return result

    def warm(self, document: str, strategy: str = "cad", *, cancel: threading.Event | None = None):
        """Prefill the part of ``document``'s prompt that comes before any instruction, so its next
        edit with ``strategy`` starts warm (``engine.warmup``): in the in-process prefix cache, or, for a
        URL model, in the serving engine's (one one-token request). Never loads the model: before
        ``load()`` (or the first edit) it is skipped. Returns an ``engine.warmup.WarmResult``."""
        from engine.warmup import WarmResult, warm_document

        get_strategy(strategy)
        if not isinstance(document, str):
            raise InvalidRequestError(f"document must be a str, got {type(document).__name__}")
        if self._loaded is None:
            return WarmResult("skipped", reason="the model is not loaded yet")
        with self._edit_lock:
            return warm_document(self._loaded, document, strategy, cancel=cancel, window=self._window)
