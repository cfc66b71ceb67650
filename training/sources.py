"""Source documents for synthetic edits, mined from local source trees, with a file-level split.

``iter_sources(lang, roots, ...)`` yields ``Source(lang, origin, text)`` for readable UTF-8 text
files of the language (plain files, or members of a ``.zip`` such as openjdk's ``src.zip``),
skipping binaries, minified or generated files and anything from the Python standard library
(by location, and by content: a file byte-identical to a standard-library file is refused
wherever it was vendored). ``split_of(origin)`` assigns every file once and for all to
``train`` / ``val`` / ``test`` by a hash of its origin, so held-out documents never reach training.
``chunk(text, n_lines, rng)`` cuts a document of about ``n_lines`` lines out of a long file,
starting at a top-level line when it can: the view a range-scoped edit gives the model.
"""
from __future__ import annotations

import functools
import hashlib
import os
import random
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from training.langs import lang_of

SPLITS = ("train", "val", "test")
_SKIP_DIRS = {"__pycache__", "node_modules_cache", ".git", "testdata", "_vendor", "vendor", "vendored",
              "_distutils", "backports", "dist", "min", "locale"}
MAX_FILE_BYTES = 400_000


@dataclass(frozen=True)
class Source:
    lang: str
    origin: str      # path, or "archive.zip!member"
    text: str


def split_of(origin: str) -> str:
    """The split a file belongs to: 85% train, 5% val, 10% test, fixed by its origin's hash."""
    bucket = int(hashlib.sha1(origin.encode()).hexdigest()[:8], 16) % 100
    return "train" if bucket < 85 else "val" if bucket < 90 else "test"


def stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"]).resolve()


@functools.lru_cache(maxsize=1)
def stdlib_hashes() -> frozenset[str]:
    """sha1 of every .py file of the Python standard library (its own site-packages excluded)."""
    root = stdlib_dir()
    out = set()
    for path in root.rglob("*.py"):
        if "site-packages" in path.parts:
            continue
        try:
            out.add(hashlib.sha1(path.read_bytes()).hexdigest())
        except OSError:
            continue
    return frozenset(out)


def in_stdlib(path: str) -> bool:
    """Whether ``path`` lies inside the standard library tree (outside its site-packages)."""
    try:
        p = Path(path).resolve()
        rel = p.relative_to(stdlib_dir())
    except (ValueError, OSError):
        return False
    return "site-packages" not in rel.parts


def looks_like_source(text: str) -> bool:
    """Text worth editing: no NUL, 5+ lines, not minified (long lines), not mostly blank."""
    if "\x00" in text:
        return False
    lines = text.split("\n")
    if len(lines) < 5:
        return False
    long = sum(1 for line in lines if len(line) > 160)
    if long > max(2, len(lines) // 50) or max(len(line) for line in lines) > 1000:
        return False
    blank = sum(1 for line in lines if not line.strip())
    return blank < 0.6 * len(lines)


def _decode(data: bytes) -> str | None:
    if len(data) > MAX_FILE_BYTES:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _walk(root: str) -> Iterator[str]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            yield os.path.join(dirpath, name)


def iter_sources(lang: str, roots: list[str], *, limit: int | None = None, split: str | None = None,
                 seed: int = 0) -> Iterator[Source]:
    """Readable source files of ``lang`` under ``roots`` (optionally one split), stdlib excluded.

    Files are visited in a seeded random order over all roots, so ``limit`` samples every package
    of a tree rather than the first ones alphabetically.
    """
    banned = stdlib_hashes() if lang == "python" else frozenset()
    entries = []
    archives = {}
    for root in roots:
        if root.endswith(".zip") and os.path.isfile(root):
            zf = archives[root] = zipfile.ZipFile(root)
            entries.extend((f"{root}!{n}", functools.partial(zf.read, n)) for n in sorted(zf.namelist()) if lang_of(n, lang))
        else:
            entries.extend((p, None) for p in _walk(root) if lang_of(p, lang) and not os.path.islink(p))
    random.Random(f"{seed}:{lang}").shuffle(entries)
    count = 0
    try:
        for origin, loader in entries:
            if split is not None and split_of(origin) != split:
                continue
            if in_stdlib(origin) or (lang == "python" and os.path.basename(origin).startswith("__editable__")):
                continue
            try:
                data = loader() if loader else Path(origin).read_bytes()
            except OSError:
                continue
            if banned and hashlib.sha1(data).hexdigest() in banned:
                continue
            text = _decode(data)
            if text is None or not looks_like_source(text):
                continue
            yield Source(lang, origin, text.replace("\r\n", "\n"))
            count += 1
            if limit is not None and count >= limit:
                return
    finally:
        for zf in archives.values():
            zf.close()


def chunk(text: str, n_lines: int, rng: random.Random) -> str:
    """About ``n_lines`` consecutive lines of ``text``, preferably starting at a top-level line.

    A chunk that reaches the end of the file keeps the file's final newline; one cut from the
    middle ends with a newline most of the time, as editor buffers do.
    """
    lines = text.split("\n")
    if len(lines) <= n_lines:
        return text
    starts = [i for i in range(len(lines) - n_lines + 1) if lines[i] and not lines[i][0].isspace()]
    start = rng.choice(starts) if starts and rng.random() < 0.8 else rng.randrange(len(lines) - n_lines + 1)
    piece = lines[start:start + n_lines]
    if start + n_lines >= len(lines):
        return "\n".join(piece)
    return "\n".join(piece) + ("\n" if rng.random() < 0.85 else "")
