"""Apply-snippet cases: the instruction carries changed code with ``… existing code …`` placeholders.

A region of a real file (a function or block, else a window) is changed (lines replaced, inserted
or deleted), then shown the way a chat model or a colleague writes a suggested change: a few
unchanged context lines around each change, elided stretches replaced by a placeholder comment in
the file's comment syntax at the elided code's indentation, inside a fenced block with a short
preamble. Context is widened until it matches the document at one place only, so the merge is
well defined. Kinds: ``placeholder`` (elided snippet) and ``replace_function`` (the whole new
region, no placeholders).
"""
from __future__ import annotations

import random

from training.families.bugfix import _mutate
from training.families.common import (EditCase, block_end, code_fence, code_lines, functions, identifiers,
                                      indent_of, join, lines_of, new_identifier)
from training.langs import LANGS

_PLACEHOLDERS = ["{c} ... existing code ...", "{c} ... existing code ...", "{c} ...existing code...",
                 "{c} ... rest of the code ...", "{c} ... unchanged ...", "{c} (unchanged)", "{c} ...",
                 "{c} ... keep existing code ..."]
_PREAMBLES = ["Apply this change:", "Apply this change to `{fn}`:", "Update the code like this:",
              "Make this edit:", "Merge this snippet into the file:", "Change it to:",
              "Here is the updated `{fn}` (unchanged parts elided); apply it:", "Apply the following edit:",
              "Please update the code as shown:", ""]
_REPLACE = ["Replace `{fn}` with this version:", "Rewrite `{fn}` as follows:", "Use this implementation of `{fn}`:",
            "Replace this block with:"]
_DEBUG = {
    "python": ["print({x})", "logger.debug(\"{x}=%r\", {x})", "assert {x} is not None", "if {x} is None:\n    return None"],
    "javascript": ["console.log({x});", "if ({x} == null) {{\n  return null;\n}}", "// TODO: validate {x}"],
    "typescript": ["console.log({x});", "if ({x} === undefined) {{\n  return;\n}}"],
    "go": ["fmt.Println({x})", "if {x} == nil {{\n\treturn nil\n}}", "log.Printf(\"{x}=%v\", {x})"],
    "rust": ["println!(\"{{:?}}\", {x});", "debug_assert!({x}.is_some());", "let _ = &{x};"],
    "c": ["printf(\"%d\\n\", {x});", "if (!{x})\n  return -1;", "assert({x});"],
    "cpp": ["std::cout << {x} << std::endl;", "if (!{x})\n  return;", "assert({x});"],
    "java": ["System.out.println({x});", "if ({x} == null) {{\n    return null;\n}}", "Objects.requireNonNull({x});"],
    "ruby": ["puts {x}", "return nil if {x}.nil?", "raise ArgumentError if {x}.nil?"],
    "shell": ['echo "${x}"', 'echo "{x}=${x}" >&2', '[ -n "${x}" ] || exit 1'],
}   # configuration languages have none: a new line there is another line of the file


def _region(lines: list[str], lang, rng: random.Random) -> tuple[int, int] | None:
    fns = [(i, n) for i, n in functions(lines, lang)]
    rng.shuffle(fns)
    for i, _ in fns[:8]:
        e = block_end(lines, i, lang)
        if 3 <= e - i <= 60:
            return i, e
    if len(lines) < 6:
        return None
    size = rng.randint(5, min(25, len(lines) - 1))
    s = rng.randrange(0, len(lines) - size)
    return s, s + size - 1


def _new_lines(lines: list[str], at: int, lang, rng: random.Random) -> list[str]:
    indent = indent_of(lines[at]) if lines[at].strip() else indent_of(lines[max(0, at - 1)])
    names = [n for n in identifiers(" ".join(lines[max(0, at - 5):at + 5])) if len(n) > 1] or ["value"]
    if lang.name in _DEBUG and rng.random() < 0.6:
        tmpl = rng.choice(_DEBUG[lang.name]).format(x=rng.choice(names))
        return [indent + t for t in tmpl.split("\n")]
    pool = code_lines(lines, lang, min_len=8)
    src = [lines[k].strip() for k in rng.sample(pool, min(len(pool), rng.randint(1, 3)))] if pool else ["pass"]
    return [indent + t for t in src]


def _change(lines: list[str], s: int, e: int, lang, rng: random.Random) -> tuple[list[str], list[int]] | None:
    """Apply 1-2 changes inside lines s..e; returns (new lines, indices of changed/neighbour gold lines)."""
    gold = list(lines)
    marks: list[int] = []
    for _ in range(rng.choice([1, 1, 1, 2])):
        body = [k for k in code_lines(gold, lang) if s < k <= e]
        if not body:
            return None
        k = rng.choice(body)
        op = rng.choice(["replace", "replace", "insert", "insert", "delete"])
        if op == "replace":
            n = rng.choice([1, 1, 2])
            for j in range(k, min(k + n, e + 1)):
                got = _mutate(gold, j, rng.choice(["operator", "comparison", "off_by_one", "variable", "literal"]), lang, rng)
                if got is None:
                    names = [x for x in identifiers(gold[j]) if len(x) > 2]
                    new = new_identifier(names[0], set(identifiers(join(gold))), rng) if names else None
                    if not new:
                        continue
                    got = (gold[j].replace(names[0], new, 1),)
                gold[j] = got[0]
                marks.append(j)
        elif op == "insert":
            new = _new_lines(gold, k, lang, rng)
            gold[k:k] = new
            marks.extend(range(k, k + len(new)))
            e += len(new)
        else:
            n = min(rng.choice([1, 1, 2, 3]), e - k + 1)
            del gold[k:k + n]
            marks.append(k - 1)
            marks.append(min(k, len(gold) - 1))
            e -= n
    if gold == lines:
        return None
    return gold, sorted(set(m for m in marks if 0 <= m < len(gold)))


def _unique(doc_lines: list[str], window: list[str]) -> bool:
    n, hits = len(window), 0
    if not window or all(not w.strip() for w in window):
        return False
    for i in range(len(doc_lines) - n + 1):
        if doc_lines[i:i + n] == window:
            hits += 1
            if hits > 1:
                return False
    return hits == 1


def _snippet(doc_lines: list[str], gold: list[str], s: int, e: int, marks: list[int], lang, rng) -> list[str] | None:
    """Gold region s..e with unchanged stretches elided; each change keeps unique context."""
    keep = set()
    for m in marks:
        keep.add(m)
        for width in range(1, 4):  # context before/after, widened until it anchors uniquely
            before = [k for k in range(m - width, m) if k >= s]
            after = [k for k in range(m + 1, m + 1 + width) if k <= e]
            if before and after and _unique(doc_lines, [gold[k] for k in before]) and _unique(doc_lines, [gold[k] for k in after]):
                break
        else:
            if not (before or after):
                return None
        keep.update(before)
        keep.update(after)
    if rng.random() < 0.6:
        keep.add(s)           # the signature line anchors the function
        if lang.block_close and gold[e].strip().startswith(lang.block_close):
            keep.add(e)
    out, k = [], s
    placeholder = rng.choice(_PLACEHOLDERS)
    while k <= e:
        if k in keep:
            out.append(gold[k])
            k += 1
            continue
        j = k
        while j <= e and j not in keep:
            j += 1
        elided = [gold[x] for x in range(k, j) if gold[x].strip()]
        if elided:
            ind = min((indent_of(x) for x in elided), key=len)
            out.append(ind + placeholder.format(c=lang.comment))
        k = j
    lead = any(i not in keep for i in range(s, min(marks)))
    if out and not lead and s not in keep and rng.random() < 0.3:
        out.insert(0, indent_of(gold[s]) + placeholder.format(c=lang.comment))
    return out


def make(doc: str, lang_name: str, rng: random.Random) -> EditCase | None:
    lang = LANGS[lang_name]
    lines = lines_of(doc)
    region = _region(lines, lang, rng)
    if region is None:
        return None
    s, e = region
    changed = _change(lines, s, e, lang, rng)
    if changed is None:
        return None
    gold, marks = changed
    e_gold = e + (len(gold) - len(lines))
    if e_gold < s or not marks:
        return None
    from training.langs import function_name

    fn = function_name(lang, lines[s]) or "this code"
    if rng.random() < 0.2 and e_gold - s <= 40:
        kind, body = "replace_function", gold[s:e_gold + 1]
        pre = rng.choice(_REPLACE).format(fn=fn)
    else:
        kind, body = "placeholder", _snippet(lines, gold, s, e_gold, marks, lang, rng)
        if body is None:
            return None
        pre = rng.choice(_PREAMBLES).format(fn=fn)
    text = code_fence(lang, join(body)) if rng.random() < 0.9 else join(body)
    instruction = f"{pre}\n{text}" if pre else text
    return EditCase("snippet", kind, lang_name, doc, instruction, join(gold))
