"""Pasted diffs and SEARCH/REPLACE blocks: does the model-free planner apply them exactly? No model.

For every (document, gold) pair of the corpora (HumanEvalPack-Fix, all of it, and ``cad-train data``
files of any family and language), the gold edit is written the ways people and chat models paste
it, inside an instruction, and run through ``engine.program.pasted.plan_pasted`` (what the product
runs before any decoding):

* ``git``: ``git diff`` style (``---``/``+++`` headers, ``@@ -a,b +c,d @@``, 3 context lines, no
  final empty line), unfenced after a line of prose;
* ``fenced``: the same inside a ```` ```diff ```` block;
* ``no-numbers``: hunk headers written ``@@ ... @@`` (chat models rarely count lines right);
* ``wrong-numbers``: every hunk header's line numbers 7 too high and its counts 2 too high;
* ``with-another-file``: the fenced diff after a diff for another file (HumanEval/0's fix): the
  part that fits the document is applied;
* ``context-1``: one context line per hunk, in a ```` ```diff ```` block;
* ``stripped-blanks``: blank context lines lost their leading space (editors strip it);
* ``headerless``: a ```` ```diff ```` block of ``-``/``+``/context lines with no ``@@`` at all,
  one hunk per case when the edit has one region;
* ``unprefixed``: the same block with the context lines as they stand in the document (no leading
  space; chat models often mark only the changed lines);
* ``search-replace``: Aider's SEARCH/REPLACE blocks (``evaluation.formats.search_replace``: the
  shortest anchors, so a block whose SEARCH occurs more than once is left to the model).

Per variant: ``exact`` (planned, byte-identical to gold), ``wrong`` (planned, differs: the number
that must be 0), ``left`` (no plan: the product refuses the paste and says why; the JSON's
``left_reasons`` counts the reasons) and which planner planned. ``triggered`` counts
the corpora's own instructions (prose, and snippets with placeholders) that ``patch`` or
``search-replace`` claims as its format: they would be taken from the snippet merger (should be 0).

    python -m benchmarks.pasted_changes data/cad-train/test.jsonl --json benchmarks/results/pasted_changes.json
"""
from __future__ import annotations

import argparse
import difflib
import json
import re
import time
from collections import Counter
from pathlib import Path

from benchmarks.common import write_report
from engine.program.pasted import PLANNERS, plan_pasted
from evaluation.formats import search_replace

def _diff(doc: str, gold: str, context: int) -> list[str]:
    a, b = doc.split("\n"), gold.split("\n")
    if doc.endswith("\n") and gold.endswith("\n"):     # git shows no final empty line
        a, b = a[:-1], b[:-1]
    return list(difflib.unified_diff(a, b, "a/file", "b/file", n=context, lineterm=""))


def _fence(lines: list[str]) -> str:
    return "Apply this patch:\n```diff\n" + "\n".join(lines) + "\n```\n"


def _miscounted(line: str) -> str:
    """A hunk header whose line numbers are 7 too high and whose counts are 2 too high."""
    m = re.match(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", line)
    if not m:
        return line
    a, b, c, d = (int(x) if x is not None else 1 for x in m.groups())
    return f"@@ -{a + 7},{b + 2} +{c + 7},{d + 2} @@"


# a diff for another file, pasted with each case's own: HumanEval/0's fix
_OTHER = ["--- a/other/close_elements.py", "+++ b/other/close_elements.py", "@@ -5,3 +5,3 @@",
          "             if idx != idx2:", "-                distance = elem - elem2",
          "+                distance = abs(elem - elem2)", "                 if distance < threshold:"]


def _headerless(doc: str, gold: str) -> str | None:
    body = _diff(doc, gold, 3)[2:]
    if sum(1 for line in body if line.startswith("@@")) != 1:
        return None
    return "Change it like this:\n```diff\n" + "\n".join(line for line in body if not line.startswith("@@")) + "\n```"


def _unprefixed(text: str | None) -> str | None:
    """A headerless diff block whose context lines lost their leading space (only the changes marked)."""
    if text is None:
        return None
    return "\n".join(line[1:] if line.startswith(" ") else line for line in text.split("\n"))


VARIANTS = {
    "git": lambda d, g: "Apply this patch.\n\n" + "\n".join(_diff(d, g, 3)) + "\n",
    "fenced": lambda d, g: _fence(_diff(d, g, 3)),
    "no-numbers": lambda d, g: _fence(["@@ ... @@" if line.startswith("@@") else line for line in _diff(d, g, 3)]),
    "wrong-numbers": lambda d, g: _fence([_miscounted(line) for line in _diff(d, g, 3)]),
    "with-another-file": lambda d, g: _fence(_OTHER + _diff(d, g, 3)),
    "context-1": lambda d, g: _fence(_diff(d, g, 1)),
    "stripped-blanks": lambda d, g: _fence(["" if line.startswith(" ") and not line.strip() else line
                                            for line in _diff(d, g, 3)]),
    "headerless": _headerless,
    "unprefixed": lambda d, g: _unprefixed(_headerless(d, g)),
    "search-replace": lambda d, g: "Make these changes:\n\n" + search_replace.serialize(d, g),
}


def _pairs(files: list[Path]):
    from evaluation.corpus import load_pairs

    for lang in ("python", "js"):
        for pair in load_pairs(lang):
            yield f"heval/{lang}", pair.document, pair.gold, None
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            yield case["family"], case["document"], case["gold"], case["instruction"]


def evaluate(files: list[Path]) -> tuple[list[dict], dict]:
    counts: dict[str, Counter] = {name: Counter() for name in VARIANTS}
    reasons: dict[str, Counter] = {name: Counter() for name in VARIANTS}   # why cases were left, per variant
    triggered, instructions, seconds, n = Counter(), 0, 0.0, 0
    for family, doc, gold, instruction in _pairs(files):
        if doc == gold:
            continue
        n += 1
        if instruction is not None:
            instructions += 1
            claimed = next(p.name for p in PLANNERS if p.claims(instruction))
            if claimed != "snippet-merge":
                triggered[family] += 1
        for name, make in VARIANTS.items():
            text = make(doc, gold)
            if text is None:
                continue
            start = time.perf_counter()
            planned = plan_pasted(doc, text)
            seconds += time.perf_counter() - start
            c = counts[name]
            c["cases"] += 1
            if planned.text is None:
                c["left"] += 1
                reasons[name][re.sub(r"\d+", "N", re.sub(r"\(from .*\)", "(from …)", planned.reason))] += 1
            else:
                c["exact" if planned.text == gold else "wrong"] += 1
                c[f"by {planned.planner}"] += 1
    rows = []
    for name, c in counts.items():
        rows.append({"variant": name, "cases": c["cases"], "exact": c["exact"], "wrong": c["wrong"],
                     "left": c["left"], "exact_rate": round(c["exact"] / max(1, c["cases"]), 4),
                     "planners": ", ".join(f"{k[3:]} {v}" for k, v in sorted(c.items()) if k.startswith("by "))})
    calls = sum(c["cases"] for c in counts.values())
    return rows, {"left_reasons": {name: dict(r.most_common(5)) for name, r in reasons.items() if r}, "edits": n, "own_instructions": instructions, "own_instructions_triggered": dict(triggered),
                  "ms_per_plan": round(1000 * seconds / max(1, calls), 3)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="*", type=Path, help="cad-train data .jsonl files (HumanEvalPack-Fix is always in)")
    p.add_argument("--json", type=Path, default=None, help="write the report here")
    args = p.parse_args(argv)
    rows, extra = evaluate(args.files)
    write_report("pasted_changes", rows, args.json, {"files": [str(f) for f in args.files], **extra},
                 title=f"Pasted changes on {extra['edits']} edits, {extra['ms_per_plan']} ms a plan; "
                       f"own instructions claimed by patch/search-replace: {sum(extra['own_instructions_triggered'].values())} "
                       f"of {extra['own_instructions']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
