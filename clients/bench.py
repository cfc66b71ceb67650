"""`cad-bench`: async HumanEvalPack-Fix replay against the real cad server over stdio.

Owns the benchmark loop: start the server (`python -m cad_lsp`) through clients.lsp_session, open
each buggy document (declaration + buggy_solution) under its own URI, send `cad.applyEdit` with
`Fix bugs in {entry_point}.` keeping up to `--concurrency` requests in flight (the server queues
them), apply the server's `workspace/applyEdit` to our copy, then score every case: latency
(request → response; p50/p95), exact match against the gold (byte-exact up to one trailing
newline, and whitespace-trimmed), and pass@1 by running the dataset tests (clients.testrun)
after all requests finished, so test processes do not skew latencies. `--gold` skips the server
and scores the gold and the buggy text instead: a sanity check of the test machinery.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import platform
import shlex
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from clients.lsp_session import LspSession, LspSessionError
from engine.api import STRATEGIES  # the engine's strategy registry (torch-free import)
from evaluation.metrics import exact_match, percentile
from clients.progress_bar import ProgressBar
from clients.testrun import run_tests

LANGUAGE_IDS = {"python": "python", "js": "javascript"}
EXTENSIONS = {"python": "py", "js": "js"}
WARMUP_DOC = "def add(a, b):\n    return a - b\n"


@dataclass
class CaseResult:
    task_id: str
    lang: str
    latency_s: float | None = None
    applied: bool = False
    em: bool = False
    em_trimmed: bool = False
    passed: bool = False
    test_timed_out: bool = False
    error: str = ""            # request failed (exception / server error)
    message: str = ""          # the command's message (e.g. why nothing was applied)
    stats: dict = field(default_factory=dict)
    test_output_tail: str = ""


def load_cases(lang: str, n: int | None):
    from evaluation.corpus import load_pairs  # pure-python data loader; no torch

    langs = ["python", "js"] if lang == "both" else [lang]
    cases = []
    for one in langs:
        pairs = load_pairs(one)
        cases.extend(pairs[:n] if n is not None else pairs)
    return cases


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cad-bench", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lang", choices=["python", "js", "both"], default="python")
    p.add_argument("--cases", type=int, default=None, help="first N cases per language (default: all 164)")
    p.add_argument("--concurrency", type=int, default=1, help="requests in flight (default: 1)")
    p.add_argument("--strategy", default=None, choices=STRATEGIES, help="engine strategy (default: server's)")
    p.add_argument("--max-new-tokens", type=int, default=None, help="server setting cad.maxNewTokens")
    p.add_argument("--model", default=None, help="server setting cad.model")
    p.add_argument("--device", default=None, help="server setting cad.device")
    p.add_argument("--gold", action="store_true",
                   help="sanity mode: no server; score the gold and the buggy text (gold should pass, buggy fail)")
    p.add_argument("--json", dest="json_path", type=Path, help="write all results as JSON here")
    p.add_argument("--server-cmd", help="server command line (default: this python -m cad_lsp)")
    p.add_argument("--request-timeout-s", type=float, default=1800.0, help="per request (default: 1800)")
    p.add_argument("--test-timeout-s", type=float, default=15.0, help="per dataset test run (default: 15)")
    p.add_argument("--test-workers", type=int, default=2, help="parallel test processes (default: 2)")
    p.add_argument("--no-warmup", action="store_true",
                   help="do not send an untimed warm-up edit first (then case 1 includes model load)")
    p.add_argument("-v", "--verbose", action="store_true", help="echo the server's stderr")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    return p


def _settings(args) -> dict:
    cad = {}
    if args.model is not None:
        cad["model"] = args.model
    if args.device is not None:
        cad["device"] = args.device
    if args.strategy is not None:
        cad["strategy"] = args.strategy
    if args.max_new_tokens is not None:
        cad["maxNewTokens"] = args.max_new_tokens
    return {"cad": cad} if cad else {}


async def replay(args, cases, progress: ProgressBar) -> tuple[list[CaseResult], list[str], dict]:
    """Send every case to the server; returns (results, new text per case, run info), in case order."""
    command = shlex.split(args.server_cmd) if args.server_cmd else None
    on_stderr = (lambda line: print(f"[server] {line}", file=sys.stderr)) if args.verbose else None
    session = LspSession(command, settings=_settings(args), on_stderr=on_stderr)
    info: dict = {}
    texts: list[str] = [case.document for case in cases]   # our copies; unchanged if a request fails
    results: list[CaseResult] = []
    t0 = time.monotonic()
    await session.start()
    info["start_s"] = time.monotonic() - t0
    try:
        if not args.no_warmup:
            t1 = time.monotonic()
            progress.message("cad-bench: untimed warm-up edit (loads the model) ...")
            uri = "untitled:cad-bench-warmup.py"
            session.open(uri, WARMUP_DOC, "python")
            try:
                await session.apply_edit(uri, "Fix bugs in add.", strategy=args.strategy,
                                         timeout_s=args.request_timeout_s)
            except LspSessionError as exc:  # record it; each case will report its own outcome
                info["warmup_error"] = str(exc)[:500]
                progress.message(f"cad-bench: warm-up edit failed: {str(exc).splitlines()[0]}")
            finally:
                session.close(uri)
            info["warmup_s"] = time.monotonic() - t1
        semaphore = asyncio.Semaphore(max(1, args.concurrency))

        async def one(index: int, case) -> CaseResult:
            result = CaseResult(case.task_id, case.lang)
            uri = f"untitled:cad-bench/{index}-{case.task_id.replace('/', '_')}.{EXTENSIONS[case.lang]}"
            async with semaphore:
                session.open(uri, case.document, LANGUAGE_IDS[case.lang])
                try:
                    outcome = await session.apply_edit(uri, case.instruction, strategy=args.strategy,
                                                       timeout_s=args.request_timeout_s)
                    result.latency_s = outcome.latency_s
                    result.applied = outcome.applied  # a workspace/applyEdit arrived and applied
                    texts[index] = outcome.text
                    if isinstance(outcome.result, dict):
                        result.stats = outcome.result.get("stats") or {}
                        result.message = str(outcome.result.get("message") or "")[:300]
                        if outcome.result.get("applied") is True:  # includes "no change" replies
                            result.applied = True
                except LspSessionError as exc:
                    result.error = str(exc)[:500]
                finally:
                    try:
                        session.close(uri)
                    except LspSessionError:
                        pass
            progress.advance(f"{case.task_id} {'applied' if result.applied else 'not applied'}"
                             + (f" {result.latency_s:.1f}s" if result.latency_s is not None else ""))
            return result

        t2 = time.monotonic()
        results = await asyncio.gather(*(one(i, c) for i, c in enumerate(cases)))
        info["replay_wall_s"] = time.monotonic() - t2
        info["server_stderr_tail"] = list(session.stderr_tail)[-10:]
        return list(results), texts, info
    finally:
        await session.stop()


def score(cases, texts: list[str], results: list[CaseResult], args, progress: ProgressBar) -> None:
    """EM + pass@1 for each case (tests run in a small thread pool, after the replay)."""
    def work(triple):
        case, text, result = triple
        result.em = exact_match(text, case.gold)
        result.em_trimmed = text.strip() == case.gold.strip()
        outcome = run_tests(case.lang, text, case.test, case.entry_point, timeout_s=args.test_timeout_s)
        result.passed, result.test_timed_out = outcome.passed, outcome.timed_out
        if not outcome.passed:
            result.test_output_tail = outcome.output_tail[-300:]
        progress.advance(f"test {case.task_id} {'pass' if outcome.passed else 'fail'}")

    with ThreadPoolExecutor(max_workers=max(1, args.test_workers)) as pool:
        list(pool.map(work, zip(cases, texts, results)))


def summarize(results: list[CaseResult], lang: str, args, extra: dict | None = None) -> dict:
    rs = [r for r in results if lang == "all" or r.lang == lang]
    lat = [r.latency_s for r in rs if r.latency_s is not None]
    n = len(rs)
    row = {"lang": lang, "strategy": args.strategy or "server default", "cases": n,
           "concurrency": args.concurrency,
           "p50_s": percentile(lat, 50), "p95_s": percentile(lat, 95),
           "mean_s": (sum(lat) / len(lat)) if lat else float("nan"),
           "engine_p50_s": percentile([r.stats["engine_ms"] / 1000.0 for r in rs
                                       if isinstance(r.stats.get("engine_ms"), (int, float))], 50),
           "applied": sum(r.applied for r in rs) / n if n else float("nan"),
           "EM": sum(r.em for r in rs) / n if n else float("nan"),
           "EM_trim": sum(r.em_trimmed for r in rs) / n if n else float("nan"),
           "pass@1": sum(r.passed for r in rs) / n if n else float("nan"),
           "errors": sum(bool(r.error) for r in rs)}
    row.update(extra or {})
    return row


def markdown(rows: list[dict]) -> str:
    if not rows:
        return "(no rows)"
    cols = list(rows[0])
    fmt = lambda v: (f"{v:.3f}" if isinstance(v, float) else str(v))  # noqa: E731
    out = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    out += ["| " + " | ".join(fmt(r.get(c, "")) for c in cols) + " |" for r in rows]
    return "\n".join(out)


def run_gold(cases, args, progress: ProgressBar) -> tuple[list[dict], dict]:
    """Sanity mode: the gold text must pass its tests and the buggy text must fail them."""
    records = []

    def work(case):
        gold = run_tests(case.lang, case.gold, case.test, case.entry_point, timeout_s=args.test_timeout_s)
        buggy = run_tests(case.lang, case.document, case.test, case.entry_point, timeout_s=args.test_timeout_s)
        progress.advance(f"{case.task_id} gold {'pass' if gold.passed else 'FAIL'} buggy {'PASS' if buggy.passed else 'fail'}")
        return {"task_id": case.task_id, "lang": case.lang, "gold_passed": gold.passed,
                "buggy_passed": buggy.passed, "gold_output_tail": "" if gold.passed else gold.output_tail[-300:]}

    with ThreadPoolExecutor(max_workers=max(1, args.test_workers)) as pool:
        records = list(pool.map(work, cases))
    rows = []
    for lang in sorted({r["lang"] for r in records}):
        rs = [r for r in records if r["lang"] == lang]
        rows.append({"lang": lang, "cases": len(rs),
                     "gold pass@1": sum(r["gold_passed"] for r in rs) / len(rs),
                     "buggy pass@1": sum(r["buggy_passed"] for r in rs) / len(rs),
                     "gold failing": ", ".join(r["task_id"] for r in rs if not r["gold_passed"]) or "-",
                     "buggy passing": ", ".join(r["task_id"] for r in rs if r["buggy_passed"]) or "-"})
    return rows, {"cases": records}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.concurrency < 1:
        print("cad-bench: --concurrency must be >= 1", file=sys.stderr)
        return 2
    cases = load_cases(args.lang, args.cases)
    env = {"python": sys.version.split()[0], "platform": platform.platform(),
           "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if args.gold:
        progress = ProgressBar(len(cases), label="cad-bench gold", enabled=not args.quiet)
        rows, extra = run_gold(cases, args, progress)
        progress.close()
        report = {"benchmark": "cad-bench", "mode": "gold", "rows": rows, "environment": env, **extra}
        title = "cad-bench --gold (test-runner sanity: gold should pass, buggy should fail)"
    else:
        progress = ProgressBar(len(cases), label="cad-bench", enabled=not args.quiet)
        try:
            results, texts, info = asyncio.run(replay(args, cases, progress))
        except LspSessionError as exc:
            progress.close()
            print(f"cad-bench: server failed: {exc}", file=sys.stderr)
            return 4
        progress.close()
        progress = ProgressBar(len(cases), label="cad-bench tests", enabled=not args.quiet)
        score(cases, texts, results, args, progress)
        progress.close()
        langs = sorted({r.lang for r in results})
        rows = [summarize(results, lang, args) for lang in langs]
        if len(langs) > 1:
            rows.append(summarize(results, "all", args))
        report = {"benchmark": "cad-bench", "mode": "server", "rows": rows, "environment": env,
                  "settings": _settings(args), "run": info, "cases": [asdict(r) for r in results]}
        title = "cad-bench: HumanEvalPack-Fix through the cad server"
    print(f"## {title}\n")
    print(markdown(rows))
    if args.json_path:
        args.json_path.write_text(json.dumps(report, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
