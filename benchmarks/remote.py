"""Copy-as-Decode on a serving engine (engine.remote): parity with in-process, and cost vs regeneration.

    python -m benchmarks.remote parity  [--url URL] [--cases N] [--json out.json]
    python -m benchmarks.remote compare [--url URL] [--cases N] [--corpus heval|long] [--json out.json]
    python -m benchmarks.remote fanout  [--url URL] [--cases N] [--corpus heval|long] [--levels 1,4,16] [--json out.json]

``--server-threads T`` sets the threads of the llama.cpp server started here (default: half the cores).

Without ``--url`` a llama.cpp server is started on loopback with the default weights (adapter
merged, f32 GGUF; ``engine.remote.llama_server``); ``--url`` takes any remote model spec (e.g.
``make serve``'s ``http://127.0.0.1:8000/v1#smollm2-135m-cad``). Cases: the first N HumanEvalPack-Fix
pairs per language (``benchmarks.common.load_corpora``, as the other benchmarks), the pair's own
instruction, automatic budget, greedy.

* ``parity``: the same edit through the in-process engine (``EditEngine("default", "cpu")``) and the
  server, strategy ``cad``: is the program identical, the text identical; where not, the first
  differing op. Rate = identical programs / cases.
* ``compare``: prompt-level CaD vs full regeneration on the same server: output tokens the server
  generated, requests per edit, wall time, prompt tokens the server took from its prefix cache (from
  the answers), and the server's own counters (``/metrics``: vLLM ``prefix_cache_*``, llama.cpp
  ``prompt_tokens_total`` / ``tokens_predicted_total``) before and after the run. ``--corpus long``:
  the long-document corpus (``benchmarks.longdocs``: held-out third-party files of 150-900 lines,
  1-3 local edits), each document longer than the model's window edited in the widest range around
  its edits that fits (``LONG_WINDOW_TOKENS``), for both strategies alike.
* ``fanout``: the cases' CaD edits with 1, 4, 16 in flight (one engine per worker thread, as
  ``cad-apply --concurrency``), after one untimed warm-up edit (so the first level does not pay the
  process's imports): wall time and edits per minute per level. Every level starts with the server's
  prefix caches emptied (``reset_prefix_caches``; each level edits the same documents, and a level
  that found the previous level's prompts cached would prefill less and read faster). Per level,
  the server's own counters: prompt tokens and seconds (prefill), generated tokens and seconds
  (decode). ``batching_bound_L`` = 1 / (prefill share + decode share / L) at level 1: the speedup
  that L in flight could give if batching made decoding L sequences cost one and prefill (compute
  bound on a CPU) gained nothing.
"""
from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass

from benchmarks.common import bench_argparser, load_corpora, write_report

# Regeneration needs the scope twice in the context (prompt + output): 3,000 tokens each fit 8,192.
LONG_WINDOW_TOKENS = 3000
_METRIC = re.compile(r"^([a-zA-Z_:]*(?:prefix_cache_(?:hits|queries)|prompt_tokens|tokens_predicted|"
                     r"generation_tokens|prompt_seconds|tokens_predicted_seconds)_total)(?:\{[^}]*\})?\s+([0-9.eE+-]+)$")


@dataclass(frozen=True)
class Case:
    """One benchmark edit: the pair's task id, document, instruction and (long documents) the range."""

    task_id: str
    document: str
    instruction: str
    line_range: tuple[int, int] | None = None
    lines: int = 0
    gold: str = ""

    def request(self, strategy: str):
        from engine.api import EditRequest

        return EditRequest(self.document, self.instruction, strategy=strategy, line_range=self.line_range)


def _cases(n: int, corpus: str = "heval", window_tokens: int = LONG_WINDOW_TOKENS) -> list[Case]:
    """HumanEvalPack-Fix (the first ``n`` pairs per language) or the long-document corpus
    (``benchmarks.longdocs``, ``n`` documents; a document longer than ``window_tokens`` is edited
    in the widest range around its edits that fits, as an editor selection would)."""
    if corpus == "long":
        from engine.backends.model import load_tokenizer
        from benchmarks.longdocs import long_document_cases

        tok = load_tokenizer("default")
        count = lambda text: len(tok.encode(text, add_special_tokens=False))  # noqa: E731
        return [Case(c.case_id, c.document, c.instruction, c.window(count, window_tokens), c.lines, c.gold)
                for c in long_document_cases(n=n)]
    corpora = load_corpora(n)
    return [Case(p.task_id, p.document, p.instruction, None, p.document.count("\n") + 1, p.gold)
            for lang in corpora for p in corpora[lang]]


def server_metrics(root_url: str) -> dict:
    """Counters of interest from the server's Prometheus /metrics ({} when it has none)."""
    import urllib.request

    try:
        with urllib.request.urlopen(f"{root_url}/metrics", timeout=10) as resp:
            text = resp.read().decode()
    except Exception:
        return {}
    out: dict = {}
    for line in text.splitlines():
        m = _METRIC.match(line.strip())
        if m:
            out[m.group(1)] = out.get(m.group(1), 0.0) + float(m.group(2))
    return out


def reset_prefix_caches(root_url: str) -> str:
    """Empty the server's prefix caches; returns what was done, or why nothing was. llama.cpp: erase
    every slot (``POST /slots/{id}?action=erase``; the server must run with ``--slot-save-path``,
    else it answers 501; its host-memory prompt cache, ``--cache-ram``, has no such request: run it
    with ``--cache-ram 0``, as this benchmark does with the server it starts); vLLM:
    ``POST /reset_prefix_cache`` (served in its dev mode, ``VLLM_SERVER_DEV_MODE=1``)."""
    from engine.remote.http import call_json

    try:
        slots = call_json(f"{root_url}/slots", timeout=10.0, retries=0)
    except Exception:
        slots = None
    if isinstance(slots, list) and slots:
        try:
            for slot in slots:
                call_json(f"{root_url}/slots/{slot['id']}?action=erase", {}, timeout=30.0, retries=0)
        except Exception as exc:
            return f"not reset: llama.cpp slot erase failed ({str(exc)[:120]}; start it with --slot-save-path)"
        return f"llama.cpp: {len(slots)} slots erased"
    try:
        call_json(f"{root_url}/reset_prefix_cache", {}, timeout=30.0, retries=0)
        return "vLLM: reset_prefix_cache"
    except Exception as exc:
        return f"not reset: {str(exc)[:160]}"


def _level_costs(before: dict, after: dict) -> dict:
    """Prefill and decode tokens and seconds between two ``server_metrics`` readings (llama.cpp names)."""
    delta = lambda key: after.get(f"llamacpp:{key}_total", 0.0) - before.get(f"llamacpp:{key}_total", 0.0)  # noqa: E731
    return {"prefill_tokens": int(delta("prompt_tokens")), "prefill_s": round(delta("prompt_seconds"), 2),
            "decode_tokens": int(delta("tokens_predicted")), "decode_s": round(delta("tokens_predicted_seconds"), 2)}


def _first_diff(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b)) if len(a) != len(b) else None


def run_parity(url: str, cases) -> tuple[list, dict]:
    from engine.api import EditEngine
    from engine.program.grammar import serialize

    local, remote = EditEngine("default", "cpu"), EditEngine(url)
    rows = []
    for k, pair in enumerate(cases):
        req = pair.request("cad")
        t0 = time.perf_counter()
        a = local.edit(req)
        t1 = time.perf_counter()
        b = remote.edit(req)
        t2 = time.perf_counter()
        diff = _first_diff(a.program, b.program)
        rows.append({"task": pair.task_id, "same_program": diff is None, "same_text": a.text == b.text,
                     "first_diff_op": diff if diff is not None else "", "ops": len(a.program),
                     "truncated_local": a.stats.truncated, "truncated_remote": b.stats.truncated,
                     "local_ms": round((t1 - t0) * 1000), "remote_ms": round((t2 - t1) * 1000),
                     "requests": b.stats.forwards,
                     "local_program": serialize(a.program)[:400] if diff is not None else "",
                     "remote_program": serialize(b.program)[:400] if diff is not None else ""})
        print(f"case {k + 1}/{len(cases)} {pair.task_id}: same={diff is None}", file=sys.stderr, flush=True)
    same = sum(r["same_program"] for r in rows)
    return rows, {"parity_rate": same / max(1, len(rows)), "same_programs": same, "cases": len(rows),
                  "same_texts": sum(r["same_text"] for r in rows)}


def run_compare(url: str, cases) -> tuple[list, dict]:
    from engine.api import EditEngine, EngineError

    engine = EditEngine(url)
    engine.load()
    root = engine.model.server.spec.root_url
    before = server_metrics(root)
    rows = []
    for k, pair in enumerate(cases):
        row = {"task": pair.task_id, "lines": pair.lines,
               "range": "-".join(map(str, pair.line_range)) if pair.line_range else "all"}
        for strategy in ("cad", "regen"):
            t0 = time.perf_counter()
            try:
                r = engine.edit(pair.request(strategy))
            except EngineError as exc:       # recorded, not fatal: the other cases still run
                row[f"{strategy}_error"] = f"{type(exc).__name__}: {exc}"[:200]
                print(f"case {k + 1} {strategy}: {row[f'{strategy}_error']}", file=sys.stderr, flush=True)
                continue
            ms = (time.perf_counter() - t0) * 1000
            generated = r.stats.decoded_tokens
            row.update({f"{strategy}_decoded": generated, f"{strategy}_requests": r.stats.forwards,
                        f"{strategy}_ms": round(ms), f"{strategy}_truncated": r.stats.truncated,
                        f"{strategy}_exact": r.text == pair.gold})
            if strategy == "cad":
                row["cad_copied"] = r.stats.copied_tokens
        rows.append(row)
        print(f"case {k + 1}/{len(cases)} {pair.task_id}", file=sys.stderr, flush=True)
    after = server_metrics(root)
    done = [r for r in rows if "cad_ms" in r and "regen_ms" in r]   # both strategies answered
    n = max(1, len(done))
    mean = lambda key: sum(r[key] for r in done) / n  # noqa: E731
    summary = {
        "cases": len(rows), "compared": len(done), "server": engine.model.server.dialect,
        "errors": sum(1 for r in rows if "cad_error" in r or "regen_error" in r),
        "cad_decoded_mean": mean("cad_decoded"), "regen_decoded_mean": mean("regen_decoded"),
        "cad_requests_mean": mean("cad_requests"), "cad_ms_mean": mean("cad_ms"), "regen_ms_mean": mean("regen_ms"),
        "cad_exact": sum(bool(r.get("cad_exact")) for r in rows), "regen_exact": sum(bool(r.get("regen_exact")) for r in rows),
        "metrics_delta": {k: after[k] - before.get(k, 0.0) for k in after},
    }
    summary["decoded_ratio"] = summary["cad_decoded_mean"] / max(1e-9, summary["regen_decoded_mean"])
    summary["wall_ratio_regen_over_cad"] = summary["regen_ms_mean"] / max(1e-9, summary["cad_ms_mean"])
    return rows, summary


def run_fanout(url: str, cases, levels) -> tuple[list, dict]:
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from engine.api import EditEngine
    from engine.remote.spec import parse_remote_spec

    local = threading.local()
    root = parse_remote_spec(url).root_url

    def one(pair):
        engine = getattr(local, "engine", None)
        if engine is None:
            engine = local.engine = EditEngine(url)
        return engine.edit(pair.request("cad")).text

    EditEngine(url).edit(cases[0].request("cad"))   # untimed warm-up: imports, tokenizer, server caches
    rows, texts = [], None
    for level in levels:
        reset = reset_prefix_caches(root)
        before = server_metrics(root)
        t0 = time.perf_counter()
        with ThreadPoolExecutor(level) as pool:
            out = list(pool.map(one, cases))
        wall = time.perf_counter() - t0
        texts = texts or out
        rows.append({"concurrency": level, "edits": len(cases), "wall_s": round(wall, 2),
                     "edits_per_min": round(len(cases) / wall * 60, 1), "same_texts_as_level_1": out == texts,
                     **_level_costs(before, server_metrics(root)), "caches": reset})
        print(f"concurrency {level}: {wall:.1f} s ({reset})", file=sys.stderr, flush=True)
    base = rows[0]["edits_per_min"]
    summary = {f"speedup_{r['concurrency']}": r["edits_per_min"] / base for r in rows}
    busy = rows[0]["prefill_s"] + rows[0]["decode_s"]
    if busy > 0:
        decode_share = rows[0]["decode_s"] / busy
        summary["decode_share_1"] = round(decode_share, 3)
        summary["server_busy_share_1"] = round(busy / rows[0]["wall_s"], 3)
        for r in rows:
            summary[f"batching_bound_{r['concurrency']}"] = round(
                1 / (1 - decode_share + decode_share / r["concurrency"]), 3)
    return rows, summary


def main(argv=None) -> int:
    p = bench_argparser(__doc__.split("\n\n")[0], default_cases=10)
    p.add_argument("mode", choices=("parity", "compare", "fanout"))
    p.add_argument("--corpus", choices=("heval", "long"), default="heval",
                   help="HumanEvalPack-Fix pairs, or the long-document corpus (benchmarks.longdocs)")
    p.add_argument("--levels", default="1,4,16", help="fanout: concurrency levels (default 1,4,16)")
    p.add_argument("--url", default=None, help="remote model spec (default: start llama.cpp on loopback)")
    p.add_argument("--server-threads", type=int, default=None,
                   help="threads of the llama.cpp server this benchmark starts (default: half the cores)")
    p.add_argument("--timeout", type=float, default=3600.0,
                   help="seconds per request to the server this benchmark starts (default 3600: a long "
                        "regeneration on a busy CPU)")
    args = p.parse_args(argv)
    levels = [int(x) for x in args.levels.split(",")]
    server = None
    url = args.url
    if url is None:
        from engine.remote.llama_server import SERVED_NAME, start_llama_server

        parallel = max(levels) if args.mode == "fanout" else 1
        import tempfile

        # fan-out levels must start alike: --slot-save-path lets reset_prefix_caches erase the slots (nothing
        # is saved there) and --cache-ram 0 turns off the host-memory prompt cache, which no request clears
        extra = ("--metrics", "--slot-save-path", tempfile.mkdtemp(prefix="cad-llama-slots-"), "--cache-ram", "0")
        server = start_llama_server(parallel=parallel, threads=args.server_threads, extra=extra)
        url = f"{server.url}#model={SERVED_NAME}&timeout={args.timeout:g}"
    try:
        cases = _cases(args.cases, args.corpus)
        if args.mode == "fanout":
            rows, summary = run_fanout(url, cases, levels)
        else:
            rows, summary = (run_parity if args.mode == "parity" else run_compare)(url, cases)
    finally:
        if server is not None:
            server.stop()
    cols = [c for c in rows[0] if c not in ("local_program", "remote_program")] if rows else None
    write_report(f"remote-{args.mode}", rows, args.json_path, extra={"summary": summary, "url": url}, columns=cols)
    print({k: v for k, v in summary.items() if k != "metrics_delta"})
    if summary.get("metrics_delta"):
        print("server metrics delta:", summary["metrics_delta"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
