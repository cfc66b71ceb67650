"""The engine worker's warm-up slot (cad_lsp.worker.WarmJob) and the LSP's idle timers (cad_lsp.warmup):
edits first, one warm-up waiting at most, an edit interrupts a running warm-up, the model is never
loaded for one. The engine is a stand-in; the real prefill is tested in tests/engine/test_warmup.py."""
from __future__ import annotations

import threading

from engine.api import EditRequest
from engine.warmup import WarmResult
from cad_lsp.worker import EditJob, EngineWorker, WarmJob


class _Engine:
    def __init__(self):
        self.loaded = False
        self.warmed: list[str] = []
        self.edits: list[str] = []
        self.warm_started = threading.Event()
        self.release = threading.Event()

    def load(self):
        self.loaded = True

    def edit(self, request, *, cancel=None, progress=None):
        self.edits.append(request.instruction)
        return request.instruction

    def warm(self, document, strategy="cad", *, cancel=None):
        self.warmed.append(document)
        self.warm_started.set()
        for _ in range(1000):  # one "forward" per 10 ms until released or cancelled
            if cancel.is_set():
                return WarmResult("cancelled")
            if self.release.wait(0.01):
                return WarmResult("warm", prompt_tokens=1, computed=1)
        raise AssertionError("never released")


def _worker():
    engine = _Engine()
    return engine, EngineWorker(lambda model, device, status: engine)


def _warm_job(document, done):
    return WarmJob(document, "cad", "default", "auto", on_done=lambda result: done.append(result))


def _wait(predicate, timeout=10.0):
    event = threading.Event()
    for _ in range(int(timeout / 0.01)):
        if predicate():
            return True
        event.wait(0.01)
    return False


def test_a_warm_up_never_loads_the_model():
    engine, worker = _worker()
    done: list = []
    worker.warm(_warm_job("doc", done))
    assert _wait(lambda: done)
    assert done == [None] and not engine.loaded and engine.warmed == []
    worker.stop()


def test_after_an_edit_loaded_the_engine_a_warm_up_runs_on_it():
    engine, worker = _worker()
    job = EditJob(EditRequest("doc", "first"))
    worker.submit(job)
    assert job.future.result(10) == "first"
    done: list = []
    engine.release.set()
    worker.warm(_warm_job("document text", done))
    assert _wait(lambda: done)
    assert engine.warmed == ["document text"] and done[0].status == "warm"
    worker.stop()


def test_an_edit_interrupts_a_running_warm_up_and_runs_next():
    engine, worker = _worker()
    worker.submit(EditJob(EditRequest("doc", "load")))
    assert _wait(lambda: engine.edits == ["load"])
    done: list = []
    worker.warm(_warm_job("long document", done))
    assert engine.warm_started.wait(10)
    job = EditJob(EditRequest("long document", "edit it"))
    assert worker.submit(job) == 1  # a warm-up is not a job ahead in the queue
    assert job.future.result(10) == "edit it"
    assert done and done[0].status == "cancelled"
    worker.stop()


def test_a_newer_warm_up_replaces_one_that_has_not_started():
    engine, worker = _worker()
    gate = threading.Event()
    blocker = EditJob(EditRequest("doc", "load"), on_start=lambda: gate.wait(10))
    worker.submit(blocker)
    first: list = []
    second: list = []
    worker.warm(_warm_job("old text", first))
    worker.warm(_warm_job("new text", second))
    engine.release.set()
    gate.set()
    assert blocker.future.result(10) == "load"
    assert _wait(lambda: second)
    assert engine.warmed == ["new text"] and first == []
    worker.stop()


def test_cancel_all_and_stop_cancel_a_warm_up():
    engine, worker = _worker()
    worker.submit(EditJob(EditRequest("doc", "load")))
    assert _wait(lambda: engine.loaded and not worker.busy)
    done: list = []
    worker.warm(_warm_job("text", done))
    assert engine.warm_started.wait(10)
    worker.cancel_all()
    assert _wait(lambda: done) and done[0].status == "cancelled"
    worker.stop()
