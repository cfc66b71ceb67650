"""The reproducible data build: ``cad-train data --out DIR`` writes train/val/test JSONL + manifest.

Cases come from two places:

* HumanEvalPack-Fix (Python, JS): only the TRAIN part of ``evaluation.corpus.split`` goes into
  ``train``; the held-out part is the ``test`` split's ``heval`` cases (never trained on);
* synthetic edits on documents mined by ``training.sources`` from local source trees, each file
  assigned to one split by its path hash; ``HELD_OUT_LANGS`` appear in ``test`` only.

Each synthetic case: pick a file, cut a document of a sampled length (5 to ~400 lines: the range-
scoped view of a long file), pick a family by weight, let it make the edit. Cases whose rendered
context + target exceeds ``max_tokens`` are dropped (counted in the manifest). Everything is
driven by one ``random.Random(seed)`` per (split, language), so the same command on the same
machine writes the same files. The manifest records sources, file counts, licences, counts per
split/family/kind/language, the seed and the command.
"""
from __future__ import annotations

import json
import random
import time
from collections import Counter
from pathlib import Path

from training.families import FAMILIES, EditCase
from training.langs import HELD_OUT_LANGS, TRAIN_LANGS, default_roots
from training.sources import iter_sources, chunk

FAMILY_WEIGHTS = {"snippet": 0.32, "mechanical": 0.36, "bugfix": 0.20, "noop": 0.12}
LENGTH_BINS = [((5, 40), 0.40), ((40, 120), 0.35), ((120, 250), 0.17), ((250, 400), 0.08)]
TOKEN_LEVEL_SHARE = 0.05
LICENCES = {
    "python": "per distribution (PyPI metadata of the venv's third-party packages)",
    "javascript": "MIT/ISC/BSD (Debian node-* packages, npm)", "typescript": "Apache-2.0 (TypeScript), MIT (@types)",
    "go": "BSD-3-Clause (Go)", "rust": "MIT OR Apache-2.0 (Rust library)",
    "c": "LGPL/GPL with exceptions, BSD (system headers)", "cpp": "GPL-3.0 with GCC Runtime Library Exception (libstdc++)",
    "java": "GPL-2.0 with Classpath Exception (OpenJDK)", "ruby": "Ruby or BSD-2-Clause (Ruby standard library)",
    **{lang: "per package (Debian packages' files under /etc and /usr/share: debian/copyright; PyPI metadata of "
             "the venv's third-party packages)" for lang in ("yaml", "toml", "ini", "shell")},
    "heval": "MIT (HumanEvalPack)",
}


def _length(rng: random.Random) -> int:
    r, acc = rng.random(), 0.0
    for (lo, hi), w in LENGTH_BINS:
        acc += w
        if r < acc:
            return rng.randint(lo, hi)
    return rng.randint(*LENGTH_BINS[-1][0])


def heval_cases(split: str) -> list[EditCase]:
    """HumanEvalPack-Fix pairs: train part for ``train``, held-out part for ``test``, none for ``val``.

    Always the canonical ``evaluation.corpus.split`` (its default seed), whatever the data seed:
    the held-out part is what every benchmark holds out, so no ``cad-train data --seed N`` may
    train on it."""
    from evaluation.corpus import load_pairs
    from evaluation.corpus import split as corpus_split

    out = []
    for lang, name in (("python", "python"), ("js", "javascript")):
        train, held = corpus_split(load_pairs(lang))
        chosen = train if split == "train" else held if split == "test" else []
        for p in chosen:
            out.append(EditCase("heval", "fix", name, p.document, p.instruction, p.gold,
                                origin=f"humanevalpack:{p.task_id}", split=split, case_id=p.task_id))
    return out


def synthetic_cases(lang: str, split: str, n: int, roots: list[str], seed: int,
                    max_files: int = 3000) -> tuple[list[EditCase], int]:
    rng = random.Random(f"{seed}:{split}:{lang}")
    # a held-out language has no training files at all: its whole tree is evaluation data
    only = None if lang in HELD_OUT_LANGS else split
    files = list(iter_sources(lang, roots, split=only, limit=max_files, seed=seed))
    if not files:
        return [], 0
    names = list(FAMILY_WEIGHTS)
    weights = [FAMILY_WEIGHTS[f] for f in names]
    cases, attempts = [], 0
    while len(cases) < n and attempts < n * 20:
        attempts += 1
        src = rng.choice(files)
        doc = chunk(src.text, _length(rng), rng)
        family = rng.choices(names, weights)[0]
        case = FAMILIES[family](doc, lang, rng)
        if case is None or (family != "noop" and case.gold == case.document):
            continue
        case.origin, case.split = src.origin, split
        case.case_id = f"{split}-{lang}-{len(cases)}"
        if doc.count("\n") < 60 and rng.random() < TOKEN_LEVEL_SHARE:
            case.granularity = "tokens"
        cases.append(case)
    return cases, len(files)


def build(out_dir: Path, *, per_lang: dict[str, int], seed: int = 0, roots: dict[str, list[str]] | None = None,
          max_tokens: int = 8000, heval_repeat: int = 2, progress=print) -> dict:
    """Write ``{train,val,test}.jsonl`` and ``manifest.json`` under ``out_dir``; return the manifest."""
    from engine.backends.model import load_tokenizer
    from training.render import UnrenderableCase, render_case

    tok = load_tokenizer("default")
    roots = roots or default_roots()
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = {"seed": seed, "max_tokens": max_tokens, "family_weights": FAMILY_WEIGHTS,
                "length_bins": LENGTH_BINS, "roots": roots, "licences": LICENCES, "splits": {},
                "files": {}, "dropped_too_long": Counter(), "created": time.strftime("%Y-%m-%d")}
    for split, share in (("train", 1.0), ("val", 0.08), ("test", 0.15)):
        cases: list[EditCase] = []
        langs = TRAIN_LANGS + (HELD_OUT_LANGS if split == "test" else ())
        for lang in langs:
            want = max(1, int(per_lang.get(lang, per_lang.get("*", 0)) * share))
            if lang in HELD_OUT_LANGS:
                want = max(want, int(per_lang.get("*", 0) * 0.15))
            got, n_files = synthetic_cases(lang, split, want, roots.get(lang, []), seed)
            manifest["files"].setdefault(lang, {})[split] = n_files
            progress(f"{split} {lang}: {len(got)} cases from {n_files} files")
            cases.extend(got)
        cases.extend(heval_cases(split) * (heval_repeat if split == "train" else 1))
        kept = []
        for case in cases:
            try:
                n = len(render_case(case, tok).ids)
            except UnrenderableCase:
                manifest["dropped_too_long"][f"unrenderable:{case.lang}"] += 1
                continue
            if n > max_tokens:
                manifest["dropped_too_long"][case.lang] += 1
                continue
            kept.append(case)
        random.Random(f"{seed}:{split}:order").shuffle(kept)
        with open(out_dir / f"{split}.jsonl", "w", encoding="utf-8") as fh:
            for case in kept:
                fh.write(json.dumps(case.as_dict(), ensure_ascii=False) + "\n")
        manifest["splits"][split] = {
            "cases": len(kept),
            "by_family": dict(Counter(c.family for c in kept)),
            "by_kind": dict(Counter(f"{c.family}/{c.kind}" for c in kept)),
            "by_lang": dict(Counter(c.lang for c in kept)),
            "by_granularity": dict(Counter(c.granularity for c in kept)),
            "document_lines": _quantiles([c.document.count("\n") + 1 for c in kept]),
        }
    manifest["dropped_too_long"] = dict(manifest["dropped_too_long"])
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _quantiles(values: list[int]) -> dict:
    if not values:
        return {}
    v = sorted(values)
    return {"min": v[0], "p50": v[len(v) // 2], "p90": v[int(len(v) * 0.9)], "max": v[-1],
            "over_300": sum(1 for x in v if x >= 300)}


def load_cases(path: Path) -> list[EditCase]:
    with open(path, encoding="utf-8") as fh:
        return [EditCase.from_dict(json.loads(line)) for line in fh if line.strip()]
