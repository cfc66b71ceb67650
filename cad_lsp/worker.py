"""The engine worker: one thread, one :class:`engine.api.EditEngine`, a FIFO queue of edits.

Owns serialisation of all decodes onto the single engine, queue positions, cancellation
events, and loading the model exactly once (at the first job, or at start with preload).

Positions are 1-based over everything ahead of and including a job: the running job is
position 1, the next queued job position 2, and so on.

Besides edits the worker keeps ONE warm-up slot (:class:`WarmJob`, :meth:`EngineWorker.warm`):
the latest document to prefill (``EditEngine.warm``) runs only when no edit is queued, a newer
warm-up replaces a waiting one, and submitting an edit cancels a running one, which stops
before its next forward (its finished chunks stay cached). A warm-up never loads the model and
never counts in queue positions. ``on_position`` is called from the
submitting thread (initial position) and from the worker thread (when the queue advances).
All other callbacks are called from the worker thread; callers marshal them to their own
loop. Nothing here knows about LSP.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from engine.api import EditCancelled, EditEngine, EditRequest, Progress, edit_without_model

__all__ = ["CancelSignal", "EditJob", "EngineWorker", "WarmJob", "WorkerStoppedError"]

log = logging.getLogger(__name__)

EngineFactory = Callable[[str, str, Callable[[str], None]], Any]

class CancelSignal(threading.Event):
    """A job's cancel event that an event loop can also await (:meth:`wait_async`).

    The engine polls the plain ``threading.Event`` before every forward; the command awaits
    :meth:`wait_async` so a cancel is answered at once instead of after the current forward
    (a slow prefill made a progress-cancel take 4.5-11.7 s to answer).
    """

    def __init__(self) -> None:
        super().__init__()
        self._waiters: list[tuple[Any, Any]] = []
        self._guard = threading.Lock()

    def set(self) -> None:
        super().set()
        with self._guard:
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            try:
                loop.call_soon_threadsafe(_resolve, future)
            except RuntimeError:  # that loop is closed
                pass

    def wait_async(self):
        import asyncio

        loop = asyncio.get_running_loop()
        future = loop.create_future()
        with self._guard:
            if self.is_set():
                future.set_result(True)
            else:
                self._waiters.append((loop, future))
        return future


def _resolve(future) -> None:
    if not future.done():
        future.set_result(True)


class WorkerStoppedError(RuntimeError):
    """A job was submitted after the worker was stopped (the server is shutting down)."""

def _default_factory(model: str, device: str, on_status: Callable[[str], None],
                     draft_model: str | None = None) -> EditEngine:
    return EditEngine(model, device, on_status=on_status, draft_model=draft_model)

@dataclass
class EditJob:
    """One edit waiting for or running on the engine."""

    request: EditRequest | None  # None: load the model only (preload)
    model: str = "default"
    device: str = "auto"
    draft_model: str | None = None   # setting draftModel (engine.drafters.draft_model)
    cancel: threading.Event = field(default_factory=CancelSignal)
    on_progress: Callable[[Progress], None] | None = None
    on_position: Callable[[int], None] | None = None
    on_status: Callable[[str], None] | None = None
    on_start: Callable[[], None] | None = None
    future: Future = field(default_factory=Future)
    queued_at: float = field(default_factory=time.perf_counter)
    started_at: float | None = None
    finished_at: float | None = None
    engine_ms: float | None = None  # wall time inside EditEngine.edit

@dataclass
class WarmJob:
    """A document to prefill when the engine is idle (see module doc); ``on_done`` gets the
    ``engine.warmup.WarmResult`` (or None when skipped before reaching the engine)."""

    document: str
    strategy: str = "cad"
    model: str = "default"
    device: str = "auto"
    label: str = ""
    draft_model: str | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    on_done: Callable[[Any], None] | None = None


class EngineWorker:
    """Runs :class:`EditJob` s one at a time on a lazily created engine."""

    def __init__(self, engine_factory: EngineFactory = _default_factory):
        self._factory = engine_factory
        self._engine = None
        self._engine_key: tuple | None = None
        self._pending: deque[EditJob] = deque()
        self._running: EditJob | None = None
        self._warm_next: WarmJob | None = None   # the one waiting warm-up (a newer one replaces it)
        self._warming: WarmJob | None = None     # the warm-up running now
        self._cond = threading.Condition()
        self._stopped = False
        self._thread: threading.Thread | None = None

    # -- submitting ---------------------------------------------------------------------
    def submit(self, job: EditJob) -> int:
        """Queue ``job``; returns its position (1 = runs now)."""
        with self._cond:
            if self._stopped:
                raise WorkerStoppedError("the engine worker is stopped (server shutting down); "
                                         "restart the language server")
            self._pending.append(job)
            position = len(self._pending) + (1 if self._running else 0)
            if self._warming is not None:
                self._warming.cancel.set()  # an edit never waits for more than one warm-up forward
            self._ensure_thread()
            self._cond.notify()
        _safe(job.on_position, position)
        return position

    def warm(self, job: WarmJob) -> None:
        """Prefill ``job.document`` when no edit is waiting (replaces a warm-up not started yet)."""
        with self._cond:
            if self._stopped:
                return
            self._warm_next = job
            self._ensure_thread()
            self._cond.notify()

    def preload(self, model: str, device: str, draft_model: str | None = None) -> EditJob:
        """Load the model in the background (queued like an edit)."""
        job = EditJob(None, model=model, device=device, draft_model=draft_model)
        self.submit(job)
        return job

    @property
    def busy(self) -> bool:
        with self._cond:
            return self._running is not None or bool(self._pending)

    @property
    def loaded(self) -> bool:
        engine = self._engine
        return bool(engine is not None and getattr(engine, "loaded", False))

    def cancel_all(self) -> int:
        """Set the cancel event of the running and all queued jobs; returns how many were not
        cancelled already (a cancelled job may still be leaving its last forward)."""
        with self._cond:
            jobs = ([self._running] if self._running else []) + list(self._pending)
            for warm in (self._warming, self._warm_next):
                if warm is not None:
                    warm.cancel.set()
            self._warm_next = None
        jobs = [job for job in jobs if not job.cancel.is_set()]
        for job in jobs:
            job.cancel.set()
        return len(jobs)

    def stop(self, timeout: float = 10.0) -> bool:
        """Cancel everything and stop the thread (idempotent); True when the thread has ended."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self.cancel_all()
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(timeout)
        return not thread.is_alive()

    # -- the worker thread ----------------------------------------------------------------
    def _ensure_thread(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="cad-engine-worker", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._pending and self._warm_next is None and not self._stopped:
                    self._cond.wait()
                if self._pending:
                    job = self._pending.popleft()
                    self._running = job
                    waiting = list(self._pending)
                elif self._stopped:
                    return
                else:
                    self._warming, self._warm_next = self._warm_next, None
                    job = None
            if job is None:
                try:
                    self._run_warm(self._warming)
                finally:
                    with self._cond:
                        self._warming = None
                continue
            for i, other in enumerate(waiting):
                _safe(other.on_position, i + 2)
            try:
                self._run(job)
            finally:
                with self._cond:
                    self._running = None

    def _run(self, job: EditJob) -> None:
        job.started_at = time.perf_counter()
        try:
            if job.cancel.is_set():
                raise EditCancelled("the edit was cancelled while it was queued")
            _safe(job.on_start)
            if job.request is None:
                self._engine_for(job)
                result = None
            else:
                t0 = time.perf_counter()
                try:
                    # a pasted change that pins down the text needs no model (none is loaded for it) and
                    # no room in its context: a long diff is no "instruction too long"
                    result, notes = edit_without_model(job.request)
                    if result is None:
                        engine = self._engine_for(job)
                        result = engine.edit(replace(job.request, snippet_merge=False),  # the planners were asked
                                             cancel=job.cancel, progress=job.on_progress)
                        if notes:                   # why a pasted snippet did not merge
                            result.warnings[:0] = notes
                finally:
                    job.engine_ms = (time.perf_counter() - t0) * 1000.0
        except BaseException as exc:  # handed to the waiting request, never lost
            job.finished_at = time.perf_counter()
            if not job.future.done():
                job.future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        job.finished_at = time.perf_counter()
        if not job.future.done():
            job.future.set_result(result)

    def _run_warm(self, job: WarmJob) -> None:
        """Prefill on the current engine if it is loaded for the job's model, device and draft model; else skip."""
        engine = self._engine
        result = None
        if (engine is not None and self._engine_key == _key(job) and getattr(engine, "loaded", False)
                and hasattr(engine, "warm") and not job.cancel.is_set()):
            try:
                result = engine.warm(job.document, job.strategy, cancel=job.cancel)
            except Exception:  # noqa: BLE001 - a warm-up is an optimisation: log it, never fail the server
                log.exception("warm-up of %s failed", job.label or "a document")
        _safe(job.on_done, result)

    def _engine_for(self, job: EditJob):
        key = _key(job)
        if self._engine is None or self._engine_key != key:
            if self._engine is not None:
                log.info("settings changed model/device/draft model to %s; creating a new engine", key)
            self._current = job
            draft = {"draft_model": job.draft_model} if job.draft_model else {}   # factories without a draft keep working
            self._engine = self._factory(job.model, job.device, self._status, **draft)
            self._engine_key = key
        self._current = job
        if not getattr(self._engine, "loaded", False):
            _safe(job.on_status, f"loading model {job.model!r} on {job.device}")
            self._engine.load()
        return self._engine

    def _status(self, message: str) -> None:
        job = getattr(self, "_current", None)
        if job is not None:
            _safe(job.on_status, message)

def _key(job: EditJob | WarmJob) -> tuple:
    """What identifies the engine a job runs on: model, device and draft model."""
    return job.model, job.device, job.draft_model


def _safe(callback: Callable[..., None] | None, *args: Any) -> None:
    """Call a progress/status callback; a failing callback must not kill the decode."""
    if callback is None:
        return
    try:
        callback(*args)
    except Exception:  # noqa: BLE001 - logged, the edit continues
        log.exception("callback %r failed", callback)
