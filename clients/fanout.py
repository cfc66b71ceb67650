"""Batch fan-out for ``cad-apply --concurrency N``: at most N edits in flight against a serving engine.

``run_fanout(items, n, run_one, on_done)`` runs ``run_one(job, report)`` for every item on a pool of
``n`` threads and calls ``on_done(job, report)`` in the calling thread as each finishes (progress,
notes). Ctrl-C / SIGTERM cancel the jobs not started yet and wait for the ones in flight (their
writes are atomic and journaled as before). ``PerThread`` gives each worker thread its own edit
backend (a remote engine is cheap to open: one HTTP client, the cached tokenizer), and
``LockedJournal`` serialises journal appends. ``throughput(reports, wall_s)`` is the summary line.
"""
from __future__ import annotations

import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Callable


class PerThread:
    """One backend per worker thread, made on first use; ``close_all()`` closes them."""

    def __init__(self, factory: Callable[[], object]):
        self._factory, self._local, self._all = factory, threading.local(), []
        self._lock = threading.Lock()

    def __call__(self):
        backend = getattr(self._local, "backend", None)
        if backend is None:
            backend = self._local.backend = self._factory()
            with self._lock:
                self._all.append(backend)
        return backend

    def close_all(self) -> list[Exception]:
        errors = []
        for backend in self._all:
            try:
                backend.close()
            except Exception as exc:  # closing must not hide the real outcome
                errors.append(exc)
        return errors


class LockedJournal:
    """The journal with its appends serialised (several writers in one process)."""

    def __init__(self, journal):
        self._journal, self._lock = journal, threading.Lock()

    def __getattr__(self, name):
        attr = getattr(self._journal, name)
        if not callable(attr):
            return attr

        def locked(*args, **kwargs):
            with self._lock:
                return attr(*args, **kwargs)

        return locked


def run_fanout(items, n: int, run_one, on_done) -> None:
    """Run ``run_one`` over ``items`` ((job, report) pairs), at most ``n`` at a time (see module doc)."""
    pending = list(items)
    pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="cad-apply")
    running: dict = {}
    try:
        while pending or running:
            while pending and len(running) < n:
                job, report = pending.pop(0)
                running[pool.submit(run_one, job, report)] = (job, report)
            done, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for fut in done:
                job, report = running.pop(fut)
                fut.result()          # re-raises a start-up failure in the caller's thread
                on_done(job, report)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def throughput(reports, wall_s: float) -> str:
    done = [r for r in reports if r.status in ("ok", "unchanged", "truncated", "failed", "refused")]
    rate = len(done) / wall_s * 60.0 if wall_s > 0 else 0.0
    return f"throughput: {len(done)} job(s) in {wall_s:.1f} s = {rate:.1f} jobs/min"
