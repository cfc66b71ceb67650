"""Where `cad-apply` gets its edits from: the in-process engine or the LSP server.

Owns: the small `EditBackend` interface (`edit(text, instruction, line_range) -> EditOutcome`,
`close()`), and its two implementations: `InProcessBackend` (engine.api.EditEngine, imported
lazily) and `LspBackend` (spawns the server and uses `cad.applyEdit` through `LspSession`, on a
private asyncio loop). `load_backend_factory` resolves `--engine-factory module:callable`, a hook
for tests and plugins that supplies any object with the same `edit`/`close` methods.
"""
from __future__ import annotations

import asyncio
import importlib
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol


class BackendError(RuntimeError):
    """The edit could not be computed (engine error, server error); message says which job."""


class BackendStartError(BackendError):
    """The engine/model or the server could not be started at all."""


@dataclass
class EditOutcome:
    text: str
    stats: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


class EditBackend(Protocol):
    def edit(self, text: str, instruction: str, line_range: tuple[int, int] | None,
             *, path: Path | None = None) -> EditOutcome: ...
    def close(self) -> None: ...


class InProcessBackend:
    """engine.api.EditEngine in this process (model loaded on first use)."""

    def __init__(self, *, model: str = "default", strategy: str = "cad",
                 max_new_tokens: int | None = None, device: str = "auto",
                 on_status: Callable[[str], None] | None = None, gen_drafter: str | None = None,
                 snippet_merge: bool = True, draft_model: str | None = None):
        try:
            from engine import api
        except ImportError as exc:
            raise BackendStartError(f"engine.api is not importable ({exc}); run from the repo root or install the package") from exc
        if strategy not in api.STRATEGIES:
            raise BackendStartError(f"unknown --strategy {strategy!r}; choose one of {', '.join(api.STRATEGIES)}")
        gen_drafter = gen_drafter or api.DEFAULT_GEN_DRAFTER
        if gen_drafter not in api.DRAFTERS:
            raise BackendStartError(f"unknown --gen-drafter {gen_drafter!r}; choose one of {', '.join(api.DRAFTERS)}")
        if gen_drafter == "draft-model" and not draft_model:
            raise BackendStartError("--gen-drafter draft-model needs --draft-model SPEC (a smaller model of the same "
                                    "tokenizer as --model)")
        self._api = api
        self.strategy = strategy
        self.max_new_tokens = max_new_tokens
        self.snippet_merge = snippet_merge
        self.engine = api.EditEngine(model, device, on_status=on_status, gen_drafter=gen_drafter,
                                     draft_model=draft_model)

    def edit(self, text, instruction, line_range, *, path=None) -> EditOutcome:
        # the engine loads the model on the first edit that needs it (a pasted diff does not)
        api = self._api
        request = api.EditRequest(document=text, instruction=instruction, strategy=self.strategy,
                                  line_range=line_range, max_new_tokens=self.max_new_tokens,
                                  snippet_merge=self.snippet_merge)
        try:
            result = self.engine.edit(request)
        except api.EngineError as exc:
            raise BackendError(f"{path or '<text>'}: engine failed: {exc}") from exc
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # an engine bug must fail this job, not crash the whole batch
            if not self.engine.loaded:   # the model did not load: no later job can run either
                raise BackendStartError(f"could not load the model: {exc}") from exc
            raise BackendError(f"{path or '<text>'}: internal engine error "
                               f"{type(exc).__name__}: {exc} (please report)") from exc
        stats = result.stats
        stats_dict = {k: getattr(stats, k) for k in ("decoded_tokens", "copied_tokens", "forced_tokens",
                                                     "forwards", "ops", "wall_ms", "truncated", "budget", "planner",
                                                     "picked", "predicted_ms", "confidence")
                      if hasattr(stats, k)}
        return EditOutcome(result.text, stats_dict, list(result.warnings))

    def close(self) -> None:
        pass


class LspBackend:
    """The cad server over stdio: didOpen → cad.applyEdit → apply workspace/applyEdit → didClose."""

    def __init__(self, *, command: list[str] | None = None, settings: dict | None = None,
                 strategy: str | None = None, root: Path | None = None,
                 timeout_s: float = 1800.0, on_stderr: Callable[[str], None] | None = None):
        from clients.lsp_session import LspSession

        self.strategy = strategy
        self.timeout_s = timeout_s
        self._loop = asyncio.new_event_loop()
        self._counter = itertools.count(1)
        self.session = LspSession(command, settings=settings, root_path=root, on_stderr=on_stderr)
        try:
            self._loop.run_until_complete(self.session.start())
        except Exception as exc:
            self._loop.run_until_complete(self.session.stop())
            self._loop.close()
            raise BackendStartError(str(exc)) from exc

    def edit(self, text, instruction, line_range, *, path=None) -> EditOutcome:
        from clients.lsp_session import LspSessionError
        from clients.text_edits import lines_to_range

        if path is not None:
            uri = Path(path).resolve().as_uri()
        else:
            uri = f"untitled:cad-apply-{next(self._counter)}"
        rng = lines_to_range(text, *line_range) if line_range else None

        async def run():
            self.session.open(uri, text, _language_id(path))
            try:
                return await self.session.apply_edit(uri, instruction, range=rng, strategy=self.strategy,
                                                     timeout_s=self.timeout_s)
            finally:
                self.session.close(uri)

        try:
            outcome = self._loop.run_until_complete(run())
        except LspSessionError as exc:
            raise BackendError(f"{path or uri}: {exc}") from exc
        result = outcome.result if isinstance(outcome.result, dict) else {"result": outcome.result}
        if result.get("applied") is False:  # discarded, or our client refused the edit
            raise BackendError(f"{path or uri}: server did not apply the edit: {result.get('message') or 'no reason given'}")
        stats = result.get("stats") if isinstance(result.get("stats"), dict) else {}
        warnings = [str(w) for w in result.get("warnings") or []]
        return EditOutcome(outcome.text, dict(stats or {}), warnings)

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            self._loop.run_until_complete(self.session.stop())
        finally:
            self._loop.close()


def _language_id(path: Path | None) -> str:
    suffix = Path(path).suffix.lower() if path else ""
    return {".py": "python", ".js": "javascript", ".ts": "typescript", ".md": "markdown",
            ".json": "json", ".rs": "rust", ".go": "go", ".c": "c", ".cpp": "cpp"}.get(suffix, "plaintext")


def load_backend_factory(spec: str) -> Callable[..., Any]:
    """`module:callable` → the callable (it receives the parsed CLI args and returns a backend)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise BackendStartError(f"--engine-factory {spec!r}: expected 'module:callable'")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise BackendStartError(f"--engine-factory {spec!r}: {exc}") from exc
