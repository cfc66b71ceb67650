"""The long-document corpus: 150–900-line third-party Python files with 1–3 local edits each.

    cases = long_document_cases(n=24, seed=0)     # list[LongDocCase], deterministic per venv

Where Copy-as-Decode should win: a two-character fix in a 400-line file is thousands of copied
tokens and a handful of generated ones. Documents are whole files of the venv's third-party
``site-packages`` (never the Python standard library: ``training.sources`` refuses it by location
and by content), drawn only from files that the committed training manifest's split assigns to
``test``: the split is a hash of the file's path under the manifest's own Python root, so no
document here was ever a training document. Each case stacks 1–3 synthetic bugs
(``training.families.bugfix``: operator, comparison, off-by-one, literal, variable, deleted or
swapped line) in distinct places; the instruction names each, the gold is the original file.
"""
from __future__ import annotations

import difflib
import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path

from training.families import bugfix
from training.langs import third_party_site_packages
from training.sources import iter_sources, split_of

__all__ = ["LongDocCase", "long_document_cases", "training_origin"]

MANIFEST = Path(__file__).resolve().parent.parent / "training" / "data_manifest.json"


@dataclass(frozen=True)
class LongDocCase:
    """One long-document edit: ``document`` edited by ``instruction`` should give ``gold``."""

    case_id: str
    origin: str          # path relative to site-packages
    document: str
    instruction: str
    gold: str
    edits: int           # number of local edits (1–3)

    @property
    def lines(self) -> int:
        return self.document.count("\n") + 1

    def as_dict(self) -> dict:
        return asdict(self)

    def edited_lines(self) -> tuple[int, int]:
        """First and last line of ``document`` (1-based) that the gold changes."""
        ops = difflib.SequenceMatcher(None, self.document.split("\n"), self.gold.split("\n"),
                                      autojunk=False).get_opcodes()
        changed = [(a0, a1) for tag, a0, a1, _, _ in ops if tag != "equal"]
        return changed[0][0] + 1, max(changed[-1][1], changed[-1][0] + 1)

    def window(self, count_tokens, max_tokens: int, step: int = 10) -> tuple[int, int] | None:
        """The editor's selection for a model whose context cannot hold the whole document: the
        widest range around the edited lines (grown ``step`` lines each side at a time) whose text
        has at most ``max_tokens`` tokens by ``count_tokens(text)``; None when the whole document fits."""
        lines = self.document.split("\n")
        if count_tokens(self.document) <= max_tokens:
            return None
        first, last = self.edited_lines()
        a, b = first, min(last, len(lines))
        while True:
            na, nb = max(1, a - step), min(len(lines), b + step)
            if (na, nb) == (a, b) or count_tokens("\n".join(lines[na - 1:nb])) > max_tokens:
                return a, b
            a, b = na, nb


def _manifest_python_root() -> str | None:
    try:
        roots = json.loads(MANIFEST.read_text(encoding="utf-8"))["roots"]["python"]
    except (OSError, KeyError, ValueError):
        return None
    return roots[0] if roots else None


def training_origin(path: str, site_root: str) -> str:
    """The origin the training data build gave (or would give) this file: the same path under the
    manifest's recorded Python root, so ``split_of`` agrees with the committed split on any machine."""
    root = _manifest_python_root()
    rel = str(Path(path).relative_to(site_root))
    return f"{root.rstrip('/')}/{rel}" if root else path


def _hunks(a: str, b: str) -> int:
    matcher = difflib.SequenceMatcher(None, a.split("\n"), b.split("\n"), autojunk=False)
    return sum(1 for tag, *_ in matcher.get_opcodes() if tag != "equal")


def _stack_bugs(text: str, edits: int, rng: random.Random) -> tuple[str, list[str]] | None:
    """Break ``text`` in ``edits`` distinct places; (broken document, one instruction per bug)."""
    document, instructions = text, []
    for _ in range(edits * 4):
        case = bugfix.make(document, "python", rng)
        if case is None:
            return None
        if _hunks(case.document, text) != len(instructions) + 1:
            continue          # touched an earlier bug's place (or merged with it): draw another
        if case.kind == "deleted_line" and instructions:
            continue          # a deletion would shift the line numbers earlier instructions name
        document = case.document
        instructions.append(case.instruction.strip())
        if len(instructions) == edits:
            return document, instructions
    return None


def long_document_cases(n: int = 24, seed: int = 0, *, min_lines: int = 150, max_lines: int = 900,
                        max_edits: int = 3) -> list[LongDocCase]:
    """``n`` long-document cases, deterministic for a given venv and seed (see module doc)."""
    rng = random.Random(seed)
    cases: list[LongDocCase] = []
    for site_root in third_party_site_packages():
        for source in iter_sources("python", [site_root], seed=seed):
            if split_of(training_origin(source.origin, site_root)) != "test":
                continue
            text = source.text if source.text.endswith("\n") else source.text + "\n"
            if not min_lines <= text.count("\n") <= max_lines:
                continue
            edits = 1 + len(cases) % max_edits
            stacked = _stack_bugs(text, edits, rng)
            if stacked is None:
                continue
            document, instructions = stacked
            rel = str(Path(source.origin).relative_to(site_root))
            cases.append(LongDocCase(case_id=f"long/{len(cases):02d}", origin=rel, document=document,
                                     instruction=" ".join(instructions), gold=text, edits=edits))
            if len(cases) == n:
                return cases
    return cases


if __name__ == "__main__":      # python -m benchmarks.longdocs: list the corpus
    for c in long_document_cases():
        print(f"{c.case_id}  {c.lines:4d} lines  {c.edits} edit(s)  {c.origin}\n    {c.instruction[:150]}")
