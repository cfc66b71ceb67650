"""Prefix KV cache across edits: prompt prefill of a cold edit vs the same document edited again.

For each document (third-party Python from the venv's site-packages, never the standard
library), on the real default model, with its prompt profile:

* ``cold``: empty cache, the CaD prompt of (document, instruction A);
* ``warm``: the same document again with another instruction B (what an editor user does next);
* ``after edit``: the document with one line in its middle changed (an applied edit), instruction A.

Each row gives the prompt tokens, the positions reused and the prefill seconds (the first forward
of the session, where the cache acts). Acceptance (issue 11): warm prefill ≤ 20 % of cold.

    python -m benchmarks.prefix_cache --cases 6 --json benchmarks/results/prefix_cache.json
"""
from __future__ import annotations

import dataclasses
import statistics
import sys
import sysconfig
import time
from pathlib import Path

from benchmarks.common import bench_argparser, write_report

PACKAGES = ("pygls", "cattrs", "platformdirs", "hypothesis", "tokenizers", "jinja2")


def documents(count: int, min_lines: int = 120, max_lines: int = 320) -> list[tuple[str, str]]:
    """(name, text) of third-party modules of moderate length, in a fixed order."""
    site = Path(sysconfig.get_paths()["purelib"])
    found = []
    for package in PACKAGES:
        for path in sorted((site / package).rglob("*.py")):
            text = path.read_text(encoding="utf-8", errors="replace")
            if min_lines <= text.count("\n") <= max_lines:
                found.append((str(path.relative_to(site)), text))
                break
        if len(found) >= count:
            break
    return found


def _prefill_s(model, ids) -> tuple[float, int]:
    session = model.session()
    start = time.perf_counter()
    session.feed(ids)
    return time.perf_counter() - start, session.log.tokens_reused


def measure(model, name: str, text: str) -> dict:
    from engine.backends.prefix_cache import PrefixCache
    from engine.prompt import render_prompt

    tok, profile = model.tokenizer, model.prompt_profile
    lines = text.splitlines(keepends=True)
    middle = len(lines) // 2
    edited = "".join(lines[:middle] + ["# changed by an applied edit\n"] + lines[middle + 1:])
    prompts = {
        "cold": render_prompt(text, "Add a docstring to the first function.", tok, profile=profile).ids,
        "warm": render_prompt(text, "Rename the first variable to total.", tok, profile=profile).ids,
        "after_edit": render_prompt(edited, "Add a docstring to the first function.", tok, profile=profile).ids,
    }
    cached = dataclasses.replace(model, prefix_cache=PrefixCache(max_tokens=32768))
    row = {"document": name, "lines": len(lines), "prompt_tokens": len(prompts["cold"])}
    for key in ("cold", "warm", "after_edit"):
        if key == "after_edit":  # from the state after the cold edit only, as an editor would have it
            cached.prefix_cache.clear()
            _prefill_s(cached, prompts["cold"])
        seconds, reused = _prefill_s(cached, prompts[key])
        row[f"{key}_s"] = round(seconds, 3)
        row[f"{key}_reused"] = reused
    row["warm_vs_cold"] = round(row["warm_s"] / row["cold_s"], 3)
    row["after_edit_vs_cold"] = round(row["after_edit_s"] / row["cold_s"], 3)
    return row


def main(argv=None) -> int:
    parser = bench_argparser(__doc__.splitlines()[0], default_cases=6)
    parser.add_argument("--model", default="default")
    args = parser.parse_args(argv)
    from engine.backends.model import load_model

    model = load_model(args.model, "cpu", progress=lambda m: print(m, file=sys.stderr))
    _prefill_s(model, model.tokenizer.encode("warm up the kernels " * 20))
    rows = [measure(model, name, text) for name, text in documents(args.cases)]
    summary = {"median_warm_vs_cold": statistics.median(r["warm_vs_cold"] for r in rows),
               "max_warm_vs_cold": max(r["warm_vs_cold"] for r in rows),
               "median_after_edit_vs_cold": statistics.median(r["after_edit_vs_cold"] for r in rows),
               "model": args.model, "target": "warm prefill <= 0.20 x cold"}
    write_report("prefix_cache", rows, args.json_path, {"summary": summary},
                 title="Prefill of a cold edit vs the same document again (prefix KV cache)")
    print(" ".join(f"{k}={v}" for k, v in summary.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
