"""What every family shares: the EditCase record and small, language-aware text helpers."""
from __future__ import annotations

import random
import re
from dataclasses import asdict, dataclass

from training.langs import Lang, function_name

IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")
KEYWORDS = frozenset("""
and as assert async await break case catch class const continue def default del do elif else enum
except export extends false final finally fn for from func function go goto if impl import in
instanceof interface is lambda let loop match mod mut new nil none not null or package pass pub
raise return self static struct super switch this throw true try type typedef typeof union unsafe
use var void while with yield True False None int char long short unsigned signed float double bool
string auto template typename namespace using public private protected virtual override sizeof
end begin module require include define ifdef ifndef endif undef elsif unless until then puts
""".split())


@dataclass
class EditCase:
    """One training or evaluation case: edit ``document`` by ``instruction`` into ``gold``."""

    family: str
    kind: str
    lang: str
    document: str
    instruction: str
    gold: str
    origin: str = ""
    granularity: str = "lines"     # "lines" (cad) or "tokens" (cad-tokens)
    split: str = ""
    case_id: str = ""

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, row: dict) -> "EditCase":
        return cls(**{k: row[k] for k in cls.__dataclass_fields__ if k in row})


def lines_of(doc: str) -> list[str]:
    return doc.split("\n")


def join(lines: list[str]) -> str:
    return "\n".join(lines)


def indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def is_code(line: str, lang: Lang) -> bool:
    """A non-blank line that is not only a comment."""
    s = line.strip()
    return bool(s) and not s.startswith((lang.comment, "/*", "*", "*/", "#", '"""', "'''"))


def comment_mask(lines: list[str]) -> list[bool]:
    """Which lines lie inside a block comment (``/* … */``) or a triple-quoted string."""
    out, inside, closer = [], False, ""
    for line in lines:
        s = line.strip()
        if inside:
            out.append(True)
            if closer in s:
                inside = False
            continue
        for opener, close in (("/*", "*/"), ('"""', '"""'), ("'''", "'''"), ("=begin", "=end")):
            at = s.find(opener)
            if at >= 0 and s.find(close, at + len(opener)) < 0:
                inside, closer = True, close
                break
        out.append(inside)
    return out


def code_lines(lines: list[str], lang: Lang, *, min_len: int = 4) -> list[int]:
    """0-based indices of code lines: not blank, not a comment, not inside a block comment/docstring."""
    masked = comment_mask(lines)
    return [i for i, line in enumerate(lines)
            if not masked[i] and is_code(line, lang) and len(line.strip()) >= min_len]


def enclosing_function(lines: list[str], idx: int, lang: Lang) -> str | None:
    """The name of the nearest function defined at or above line ``idx`` (0-based), if any."""
    for k in range(idx, max(-1, idx - 200), -1):
        name = function_name(lang, lines[k])
        if name:
            return name
    return None


def functions(lines: list[str], lang: Lang) -> list[tuple[int, str]]:
    """(0-based line, name) of every function definition the language pattern recognises."""
    out = []
    for i, line in enumerate(lines):
        name = function_name(lang, line)
        if name:
            out.append((i, name))
    return out


def block_end(lines: list[str], start: int, lang: Lang) -> int:
    """Last line (0-based, inclusive) of the block opened at ``start``: the lines indented deeper,
    plus the closing line at the same indentation for brace languages."""
    base = len(indent_of(lines[start]))
    k = start + 1
    last = start
    while k < len(lines):
        line = lines[k]
        if line.strip():
            if len(indent_of(line)) <= base:
                if lang.block_close and line.strip().startswith(lang.block_close):
                    return k
                break
            last = k
        k += 1
    return last


def identifiers(text: str) -> list[str]:
    return [m.group(0) for m in IDENT.finditer(text) if m.group(0) not in KEYWORDS and not m.group(0)[0].isdigit()]


def where(fn: str | None, line_no: int, rng: random.Random) -> str:
    """A natural reference to a place: the function name, or the line number."""
    if fn and rng.random() < 0.7:
        return rng.choice([f"in `{fn}`", f"in {fn}", f"in the `{fn}` function"])
    return rng.choice([f"on line {line_no}", f"at line {line_no}", f"in line {line_no}"])


def new_identifier(old: str, taken: set[str], rng: random.Random) -> str | None:
    """A plausible new name for ``old`` (same naming style), not already used in the document."""
    words = ["value", "result", "item", "count", "total", "node", "entry", "data", "buf", "index",
             "size", "name", "key", "state", "config", "source", "target", "limit", "offset", "cache"]
    snake = "_" in old or old.islower()
    for _ in range(12):
        choice = rng.random()
        w = rng.choice(words)
        if choice < 0.3:
            cand = f"{old}_{w}" if snake else old + w.capitalize()
        elif choice < 0.6:
            cand = f"{w}_{old}" if snake else w + old[:1].upper() + old[1:]
        elif choice < 0.8:
            cand = (w + "_" + rng.choice(words)) if snake else w + rng.choice(words).capitalize()
        else:
            cand = f"new_{old}" if snake else "new" + old[:1].upper() + old[1:]
        if old[:1].isupper():
            cand = cand[:1].upper() + cand[1:]
        if cand not in taken and cand != old:
            return cand
    return None


def code_fence(lang: Lang, body: str) -> str:
    return f"```{lang.fence}\n{body}\n```"
