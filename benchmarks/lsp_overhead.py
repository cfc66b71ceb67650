"""LSP overhead of the Copy-as-Decode server, measured over real stdio.

Two figures:

* **LSP overhead** per edit = client latency of ``cad.applyEdit`` (request sent → response
  received, including the server's ``workspace/applyEdit`` round trip) minus the engine's
  own time (``stats.engine_ms``: wall time inside ``EditEngine.edit``), as % of the client
  latency. Target < 5%.
* **Queued-request answer latency**: while one decode runs, a second ``cad.applyEdit`` is
  sent; time until its progress says ``queued (position 2)``; plus a ``codeAction`` round
  trip during the decode. Target < 100 ms.

    python -m benchmarks.lsp_overhead --json out.json [--cases 5] [--max-new-tokens 32]
"""
from __future__ import annotations

import asyncio
import statistics
import sys
import time
import uuid

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from benchmarks.common import bench_argparser, percentile, write_report
from evaluation.corpus import load_pairs

CAPS = types.ClientCapabilities(
    window=types.WindowClientCapabilities(work_done_progress=True),
    workspace=types.WorkspaceClientCapabilities(
        apply_edit=True, workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True)),
)


class BenchClient(LanguageClient):
    """Accepts every workspace/applyEdit and records progress messages per token."""

    def __init__(self):
        super().__init__("cad-lsp-overhead", "0.1")
        self.progress: dict[str, list[tuple[float, str]]] = {}
        self.versions: dict[str, int] = {}
        self.logs: list[str] = []

        @self.feature(types.WORKSPACE_APPLY_EDIT)
        def _apply(ls, params):
            return types.ApplyWorkspaceEditResult(applied=True)

        @self.feature(types.PROGRESS)
        def _progress(ls, params):
            value = params.value if isinstance(params.value, dict) else {}
            self.progress.setdefault(str(params.token), []).append(
                (time.perf_counter(), value.get("message") or value.get("kind", "")))

        @self.feature(types.WINDOW_LOG_MESSAGE)
        def _log(ls, params):
            self.logs.append(params.message)

        @self.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def _create(ls, params):
            return None

    def open(self, uri: str, text: str) -> None:
        self.versions[uri] = 1
        self.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))

    def command(self, name: str, args: dict, token: str | None = None) -> asyncio.Future:
        """Send workspace/executeCommand now; the returned future resolves with the reply."""
        return asyncio.ensure_future(self.workspace_execute_command_async(
            types.ExecuteCommandParams(command=name, arguments=[args], work_done_token=token)))


async def _wait(predicate, timeout: float = 600.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("benchmark step timed out")
        await asyncio.sleep(0.002)


async def run(args) -> tuple[list[dict], dict]:
    pairs = load_pairs("python")[: args.cases]
    client = BenchClient()
    await client.start_io(sys.executable, "-m", "cad_lsp", "--preload", "--device", args.device,
                          "--strategy", args.strategy, "--max-new-tokens", str(args.max_new_tokens))
    await client.initialize_async(types.InitializeParams(capabilities=CAPS))
    client.initialized(types.InitializedParams())
    rows, overheads, queued, actions = [], [], [], []
    try:
        # Warm-up (not measured): waits for the preloaded model and the first forward.
        client.open("file:///bench/warmup.py", pairs[0].document)
        await client.command("cad.previewEdit", {"uri": "file:///bench/warmup.py",
                                                 "instruction": pairs[0].instruction, "maxNewTokens": 2})
        for i, pair in enumerate(pairs):
            uri = f"file:///bench/{i}.py"
            client.open(uri, pair.document)
            t0 = time.perf_counter()
            reply = await client.command("cad.applyEdit", {"uri": uri, "instruction": pair.instruction})
            client_ms = (time.perf_counter() - t0) * 1000.0
            stats = reply["stats"] if isinstance(reply, dict) else reply.stats
            engine_ms = float(stats["engine_ms"])
            overhead = client_ms - engine_ms  # queue_ms is ~0 here: one edit at a time
            overheads.append(100.0 * overhead / client_ms)
            rows.append({"case": pair.task_id, "client_ms": client_ms, "engine_ms": engine_ms,
                         "queue_ms": float(stats["queue_ms"]),
                         "overhead_ms": overhead, "overhead_pct": 100.0 * overhead / client_ms,
                         "decoded": stats["decoded_tokens"], "copied": stats["copied_tokens"]})
        for i, pair in enumerate(pairs[: args.queue_trials]):
            uri = f"file:///bench/q{i}.py"
            client.open(uri, pair.document)
            t1, t2 = uuid.uuid4().hex, uuid.uuid4().hex
            first = client.command("cad.applyEdit", {"uri": uri, "instruction": "Rewrite it.", "strategy": "regen",
                                                     "maxNewTokens": 512}, t1)
            await _wait(lambda: any(m.startswith("decoding") for _, m in client.progress.get(t1, [])) or first.done())
            if first.done():  # finished before it reported a decode step: nothing to queue behind
                continue
            start = time.perf_counter()
            second = client.command("cad.applyEdit", {"uri": uri, "instruction": "Rewrite it."}, t2)
            await _wait(lambda: any(m == "queued (position 2)" for _, m in client.progress.get(t2, [])))
            at = next(t for t, m in client.progress[t2] if m == "queued (position 2)")
            queued.append((at - start) * 1000.0)
            start = time.perf_counter()
            await client.text_document_code_action_async(types.CodeActionParams(
                types.TextDocumentIdentifier(uri=uri), types.Range(types.Position(0, 0), types.Position(0, 0)),
                types.CodeActionContext(diagnostics=[])))
            actions.append((time.perf_counter() - start) * 1000.0)
            answered_during_decode = not first.done()
            await client.command("cad.cancelAll", {})
            for future in (first, second):
                try:
                    await future
                except Exception:  # noqa: BLE001 - cancelled on purpose
                    pass
            rows.append({"case": f"queue-{i}", "queued_report_ms": queued[-1], "code_action_ms": actions[-1],
                         "answered_during_decode": answered_during_decode})
    finally:
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()
    summary = {
        "lsp_overhead_pct_median": statistics.median(overheads) if overheads else float("nan"),
        "lsp_overhead_pct_p90": percentile(overheads, 90),
        "queued_answer_ms_median": statistics.median(queued) if queued else float("nan"),
        "queued_answer_ms_max": max(queued) if queued else float("nan"),
        "code_action_during_decode_ms_median": statistics.median(actions) if actions else float("nan"),
        "strategy": args.strategy, "max_new_tokens": args.max_new_tokens, "device": args.device,
    }
    return rows, summary


def main(argv: list[str] | None = None) -> int:
    parser = bench_argparser(__doc__.splitlines()[0], default_cases=3)
    parser.add_argument("--strategy", default="cad")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--queue-trials", type=int, default=2)
    args = parser.parse_args(argv)
    rows, summary = asyncio.run(run(args))
    write_report("lsp_overhead", rows, args.json_path, extra={"summary": summary}, title="LSP overhead")
    print("| figure | value |\n|---|---|")
    for key, value in summary.items():
        print(f"| {key} | {value if isinstance(value, (str, int)) else f'{value:.2f}'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
