"""Bug-fix cases: break one line of a real file; the gold is the original, the instruction asks for a fix.

Kinds: ``operator`` (+/-, *,/, &&/||, and/or), ``comparison`` (< <= > >= == !=), ``off_by_one``
(an integer literal one off), ``literal`` (true/false, 0/1), ``variable`` (a name swapped for another
name from the same function), ``deleted_line`` and ``swapped_lines``. The instruction is vague
("Fix the bug in `f`."), names the kind of bug, or points at the line, in natural variations.
"""
from __future__ import annotations

import random
import re

from training.families.common import (EditCase, code_lines, enclosing_function, identifiers, indent_of, join,
                                      lines_of)
from training.langs import LANGS

_SWAPS = {
    "operator": [(" + ", " - "), (" - ", " + "), (" * ", " / "), (" / ", " * "), (" && ", " || "),
                 (" || ", " && "), (" and ", " or "), (" or ", " and "), (" += ", " -= "), (" -= ", " += ")],
    "comparison": [(" < ", " <= "), (" <= ", " < "), (" > ", " >= "), (" >= ", " > "), (" == ", " != "),
                   (" != ", " == "), (" < ", " > "), (" > ", " < ")],
}
_KIND_HINT = {
    "operator": ["`{fn}` uses the wrong operator; fix it.", "Fix the arithmetic/logic operator bug in `{fn}`.",
                 "One operator in `{fn}` is wrong. Fix it."],
    "comparison": ["The comparison in `{fn}` is wrong; fix it.", "Fix the wrong comparison operator in `{fn}`.",
                   "`{fn}` has a boundary condition bug in a comparison. Fix it."],
    "off_by_one": ["Fix the off-by-one error in `{fn}`.", "`{fn}` has an off-by-one bug; fix it.",
                   "A number in `{fn}` is off by one. Fix it."],
    "literal": ["`{fn}` uses the wrong constant; fix it.", "Fix the wrong literal value in `{fn}`."],
    "variable": ["`{fn}` uses the wrong variable somewhere; fix it.", "Fix the variable mix-up in `{fn}`."],
    "deleted_line": ["Restore the line `{orig}` that is missing from {fn}.",
                     "{fn} lost the statement `{orig}`; put it back where it belongs."],
    "swapped_lines": ["Two statements in `{fn}` are in the wrong order; fix it.",
                      "Fix the statement order bug in `{fn}`."],
}
_VAGUE = ["Fix the bug in `{fn}`.", "Fix bugs in {fn}.", "There is a bug in `{fn}`. Fix it.",
          "`{fn}` does not work correctly; fix it.", "Please fix {fn}."]
_VAGUE_NOFN = ["Fix the bug.", "Fix the bug in this code.", "There is a bug here; fix it."]
_LINE_HINT = ["Line {n} has a bug: `{bad}` should be `{good}`.", "On line {n}, change `{bad}` to `{good}`.",
              "Fix line {n}: it should read `{good_line}`."]
_INT = re.compile(r"(?<![\w.])(\d{1,3})(?![\w.])")


def _outside_strings(line: str, pos: int) -> bool:
    before = line[:pos]
    return before.count('"') % 2 == 0 and before.count("'") % 2 == 0 and "//" not in before and " #" not in before


def _mutate(lines: list[str], idx: int, kind: str, lang, rng: random.Random):
    """Return (broken_line, bad, good) for a one-line mutation of lines[idx], or None."""
    line = lines[idx]
    if kind in _SWAPS:
        options = [(a, b) for a, b in _SWAPS[kind] if a in line and _outside_strings(line, line.index(a))]
        if not options:
            return None
        a, b = rng.choice(options)
        return line.replace(a, b, 1), b.strip(), a.strip()
    if kind == "off_by_one":
        ms = [m for m in _INT.finditer(line) if _outside_strings(line, m.start())]
        if not ms:
            return None
        m = rng.choice(ms)
        v = int(m.group(1))
        new = v + 1 if v == 0 or rng.random() < 0.5 else v - 1
        return line[:m.start()] + str(new) + line[m.end():], str(new), m.group(1)
    if kind == "literal":
        pairs = [("True", "False"), ("False", "True")] if lang.name == "python" else [("true", "false"), ("false", "true")]
        options = [(a, b) for a, b in pairs if re.search(rf"\b{a}\b", line)]
        if not options:
            return None
        a, b = rng.choice(options)
        return re.sub(rf"\b{a}\b", b, line, count=1), b, a
    if kind == "variable":
        names = [n for n in dict.fromkeys(identifiers(line)) if len(n) > 1]
        nearby = {n for k in range(max(0, idx - 12), min(len(lines), idx + 12)) for n in identifiers(lines[k])}
        if not names:
            return None
        old = rng.choice(names)
        others = sorted(n for n in nearby if n != old and len(n) > 1 and n not in line)
        if not others:
            return None
        new = rng.choice(others)
        broken = re.sub(rf"\b{re.escape(old)}\b", new, line, count=1)
        return (broken, new, old) if broken != line else None
    return None


def make(doc: str, lang_name: str, rng: random.Random) -> EditCase | None:
    lang = LANGS[lang_name]
    lines = lines_of(doc)
    candidates = code_lines(lines, lang, min_len=6)
    if not candidates:
        return None
    kind = rng.choice(["operator", "comparison", "off_by_one", "literal", "variable", "operator", "comparison",
                       "off_by_one", "deleted_line", "swapped_lines"])
    rng.shuffle(candidates)
    for idx in candidates[:40]:
        fn = enclosing_function(lines, idx, lang)
        broken = list(lines)
        if kind == "deleted_line":
            if lines[idx].rstrip().endswith(("{", ":", "(", ",")) or lines[idx].strip() in ("}", "end"):
                continue
            del broken[idx]
            orig = lines[idx].strip()
            fmt = dict(fn=f"`{fn}`" if fn else "the code", orig=orig)
            instruction = rng.choice(_KIND_HINT[kind]).format(**fmt)
        elif kind == "swapped_lines":
            j = idx + 1
            if j >= len(lines) or lines[j].strip() == lines[idx].strip() or indent_of(lines[j]) != indent_of(lines[idx]):
                continue
            if not all(s.strip() and not s.rstrip().endswith(("{", ":")) for s in (lines[idx], lines[j])):
                continue
            broken[idx], broken[j] = lines[j], lines[idx]
            instruction = _instruction(kind, fn, idx + 1, None, rng, swapped=(idx + 1, j + 1))
        else:
            got = _mutate(lines, idx, kind, lang, rng)
            if got is None:
                continue
            broken[idx] = got[0]
            instruction = _instruction(kind, fn, idx + 1, (got[1], got[2], lines[idx].strip()), rng)
        if broken == lines:
            continue
        return EditCase("bugfix", kind, lang_name, join(broken), instruction, doc)
    return None


def _instruction(kind, fn, line_no, change, rng, swapped=None) -> str:
    r = rng.random()
    if swapped and r < 0.4:
        return rng.choice(["Lines {a} and {b} are in the wrong order; swap them back.",
                           "Swap lines {a} and {b}: they are in the wrong order."]).format(a=swapped[0], b=swapped[1])
    if change and r < 0.35:
        bad, good, good_line = change
        return rng.choice(_LINE_HINT).format(n=line_no, bad=bad, good=good, good_line=good_line)
    if r < 0.7 and fn:
        return rng.choice(_KIND_HINT[kind]).format(fn=fn, orig="")
    if fn:
        return rng.choice(_VAGUE).format(fn=fn)
    return rng.choice(_VAGUE_NOFN)
