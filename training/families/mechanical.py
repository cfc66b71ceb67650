"""Mechanical edits: exactly specified changes an editor user asks for, each fully determined.

Kinds: ``rename`` (every whole-word occurrence), ``delete_lines`` (by number), ``delete_block`` (a
block named by its first line), ``insert_line`` (after/before a line number or a quoted line),
``add_comment``, ``add_docstring``, ``change_literal``, ``set_value`` (the value of a setting named
by its key, as editor users ask: "Change the port to 8080"), ``add_param`` and ``remove_param`` (an
unused parameter of a one-line signature). Instructions name what to do precisely enough that
there is one right answer, phrased in natural variations.
"""
from __future__ import annotations

import random
import re
from collections import Counter

from training.families.common import (KEYWORDS, EditCase, block_end, code_lines, functions, identifiers, indent_of, join,
                                      lines_of, new_identifier)
from training.families.snippet import _new_lines
from training.langs import LANGS

_COMMENTS = ["TODO: handle errors here", "NOTE: keep this in sync with the caller", "validate the input first",
             "fast path", "FIXME: this is slow for large inputs", "see the module docs", "edge case: empty input",
             "cache the result", "TODO: remove after the migration", "must run before {x} is used"]
_DOCS = ["Return the {x}.", "Compute {x} from the arguments.", "Update {x} in place.", "Check whether {x} is valid.",
         "Build and return a new {x}.", "Helper for {x}."]
_PARAMS = {
    "python": ["verbose=False", "timeout=None", "strict=True", "limit=10", "name=None"],
    "javascript": ["options", "callback", "verbose = false", "limit = 10"],
    "typescript": ["verbose = false", "options?: Options", "limit: number = 10"],
    "go": ["verbose bool", "timeout time.Duration", "limit int", "ctx context.Context"],
    "rust": ["verbose: bool", "limit: usize", "name: &str"],
    "c": ["int flags", "size_t limit", "const char *name"],
    "cpp": ["bool verbose", "std::size_t limit", "int flags"],
    "java": ["boolean verbose", "int limit", "String name"],
    "ruby": ["verbose = false", "limit = 10", "options = {}"],
}
_STR = re.compile(r'"([A-Za-z][A-Za-z0-9 _-]{1,20})"')
_NUM = re.compile(r"(?<![\w.])(\d{2,5})(?![\w.])")


def _q(line: str) -> str:
    return line.strip()


def _unique_line(lines: list[str], k: int) -> bool:
    return len(_q(lines[k])) >= 8 and sum(1 for x in lines if _q(x) == _q(lines[k])) == 1


def rename(lines, lang, rng):
    counts: dict[str, int] = {}
    for line in lines:
        for n in set(identifiers(line)):
            counts[n] = counts.get(n, 0) + 1
    names = [n for n, c in counts.items() if 2 <= c <= 8 and len(n) >= 3]
    if not names:
        return None
    old = rng.choice(sorted(names))
    new = new_identifier(old, set(counts), rng)
    if not new:
        return None
    gold = [re.sub(rf"\b{re.escape(old)}\b", new, x) for x in lines]
    instr = rng.choice(["Rename `{o}` to `{n}`.", "Rename {o} to {n} everywhere.", "Rename the identifier `{o}` to `{n}`.",
                        "Change the name `{o}` to `{n}` throughout.", "rename {o} -> {n}"]).format(o=old, n=new)
    return "rename", gold, instr


def delete_lines(lines, lang, rng):
    pool = code_lines(lines, lang)
    if not pool:
        return None
    a = rng.choice(pool)
    b = min(len(lines) - 1, a + rng.choice([0, 0, 1, 2, 4]))
    gold = lines[:a] + lines[b + 1:]
    if a == b:
        instr = rng.choice(["Delete line {a}.", "Remove line {a}.", "Delete line {a} (`{t}`)."])
    else:
        instr = rng.choice(["Delete lines {a}-{b}.", "Remove lines {a} to {b}.", "Delete lines {a} through {b}."])
    return "delete_lines", gold, instr.format(a=a + 1, b=b + 1, t=_q(lines[a]))


def delete_block(lines, lang, rng):
    opens = [k for k in range(len(lines) - 1) if lines[k].rstrip().endswith(("{", ":")) and _unique_line(lines, k)
             and re.match(r"\s*(if|for|while|else|try|elif|with)\b", lines[k])]
    rng.shuffle(opens)
    for k in opens:
        e = block_end(lines, k, lang)
        if 1 <= e - k <= 15:
            gold = lines[:k] + lines[e + 1:]
            instr = rng.choice(["Remove the `{t}` block.", "Delete the block that starts with `{t}`.",
                                "Drop the `{t}` branch entirely."]).format(t=_q(lines[k]))
            return "delete_block", gold, instr
    return None


def insert_line(lines, lang, rng):
    pool = code_lines(lines, lang)
    if not pool:
        return None
    k = rng.choice(pool)
    new = _new_lines(lines, k, lang, rng)[:1]
    where = rng.random()
    if where < 0.4:
        gold = lines[:k + 1] + new + lines[k + 1:]
        instr = rng.choice(["Insert `{t}` after line {n}.", "Add the line `{t}` after line {n}."])
    elif where < 0.7:
        gold = lines[:k] + new + lines[k:]
        instr = rng.choice(["Insert `{t}` before line {n}.", "Add `{t}` above line {n}."])
    elif _unique_line(lines, k):
        gold = lines[:k + 1] + new + lines[k + 1:]
        instr = rng.choice(["Add `{t}` right after `{a}`.", "Insert the line `{t}` below `{a}`."])
    else:
        return None
    return "insert_line", gold, instr.format(t=_q(new[0]), n=k + 1, a=_q(lines[k]))


def add_comment(lines, lang, rng):
    pool = code_lines(lines, lang)
    if not pool:
        return None
    k = rng.choice(pool)
    names = identifiers(lines[k]) or ["this"]
    text = rng.choice(_COMMENTS).format(x=rng.choice(names))
    gold = lines[:k] + [f"{indent_of(lines[k])}{lang.comment} {text}"] + lines[k:]
    if _unique_line(lines, k) and rng.random() < 0.5:
        instr = rng.choice(["Add the comment `{t}` above `{a}`.", "Put a comment \"{t}\" before `{a}`."])
    else:
        instr = rng.choice(["Add the comment `{t}` above line {n}.", "Add a comment saying \"{t}\" above line {n}."])
    return "add_comment", gold, instr.format(t=text, n=k + 1, a=_q(lines[k]))


def add_docstring(lines, lang, rng):
    fns = functions(lines, lang)
    rng.shuffle(fns)
    for k, name in fns:
        line = lines[k]
        words = re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", name).lower()) or [name]
        text = rng.choice(_DOCS).format(x=" ".join(words))
        if lang.name == "python":
            if not line.rstrip().endswith(":") or k + 1 >= len(lines) or lines[k + 1].strip().startswith(('"""', "'''")):
                continue
            body_indent = indent_of(lines[k + 1]) if lines[k + 1].strip() else indent_of(line) + "    "
            gold = lines[:k + 1] + [f'{body_indent}"""{text}"""'] + lines[k + 1:]
        else:
            if k > 0 and lines[k - 1].strip().startswith(("//", "/*", "*", "#")):
                continue
            mark = {"rust": "/// {t}", "go": "// " + name + " {t}"}.get(
                lang.name, "# {t}" if lang.comment == "#" else "/** {t} */")
            gold = lines[:k] + [indent_of(line) + mark.format(t=text[:1].lower() + text[1:] if lang.name == "go" else text)] + lines[k:]
        instr = rng.choice(["Add a docstring to `{f}`: \"{t}\"", "Document `{f}` with the comment \"{t}\"",
                            "Add the doc comment \"{t}\" to {f}."]).format(f=name, t=text)
        return "add_docstring", gold, instr
    return None


def change_literal(lines, lang, rng):
    cands = [(k, m) for k, line in enumerate(lines) for m in list(_NUM.finditer(line)) + list(_STR.finditer(line))]
    if not cands:
        return None
    k, m = rng.choice(cands)
    old = m.group(0)
    if old.startswith('"'):
        new = '"' + rng.choice(["default", "value", "unknown", "enabled", m.group(1) + "_v2"]) + '"'
    else:
        new = str(int(old) * rng.choice([2, 10]) if rng.random() < 0.5 else max(1, int(old) // 2))
    if new == old:
        return None
    gold = list(lines)
    gold[k] = lines[k][:m.start()] + new + lines[k][m.end():]
    unique = sum(x.count(old) for x in lines) == 1
    if unique and rng.random() < 0.6:
        instr = rng.choice(["Change `{o}` to `{n}`.", "Replace {o} with {n}.", "Set it to {n} instead of {o}."])
    else:
        instr = rng.choice(["Change `{o}` to `{n}` on line {l}.", "On line {l}, replace {o} with {n}."])
    return "change_literal", gold, instr.format(o=old, n=new, l=k + 1)


# a setting: `name = value`, `name: value`, `"name": value`, `name := value`, `name value`, `NAME=value`,
# `LIMIT: usize = 10`; the value a number, a quoted string or a boolean, then the end of the statement
# (`#define` lines never get here: `code_lines` leaves out every line that starts with `#`)
_SETTING = re.compile(r"""^(?P<head>\s*(?:(?:export|const|let|var|static|final|public|private|pub|val|readonly|int|
    long|double|float|bool|boolean|String|string|auto|size_t|unsigned|char\s*\*?)\s+)*["']?)
    (?P<key>[A-Za-z_][A-Za-z0-9_]*)["']?(?:\s*:\s*&?[A-Za-z_][\w<>\[\]]*(?=\s*=))?(?P<op>\s*(?::=|=|:|\s)\s*)
    (?P<value>-?\d+(?:\.\d+)?|"[^"\\]{0,40}"|'[^'\\]{0,40}'|true|false|True|False)
    (?P<tail>\s*[;,]?\s*(?:(?://|\#).*)?)$""", re.X)
# YAML and INI need no quotes around a string (`level: info`, `host = db.local`): there a bare word is a
# value too, after `:` or `=` only (a line of two words is prose, not a setting)
_BARE_VALUE_LANGS = ("yaml", "ini")
_BARE_SETTING = re.compile(r"""^(?P<head>\s*(?:-\s+)?["']?)(?P<key>[A-Za-z_][A-Za-z0-9_.-]*)["']?(?P<op>\s*[:=]\s*)
    (?P<value>-?\d+(?:\.\d+)?|"[^"\\]{0,40}"|'[^'\\]{0,40}'|[A-Za-z][\w.-]{0,30})
    (?P<tail>\s*(?:[\#;].*)?)$""", re.X)
_WORDS = ["debug", "info", "warning", "production", "staging", "localhost", "utf-8", "json", "enabled",
          "disabled", "always", "never", "auto"]


def _new_value(value: str, rng: random.Random) -> str:
    """Another value of the same type as ``value``."""
    if value in ("true", "false", "True", "False"):
        return {"true": "false", "false": "true", "True": "False", "False": "True"}[value]
    if value[0] in "\"'":
        q, inner = value[0], value[1:-1]
        if re.fullmatch(r"\d+(?:\.\d+)+", inner):          # a version: bump one of its parts
            parts = inner.split(".")
            i = rng.randrange(len(parts))
            word = ".".join(parts[:i] + [str(int(parts[i]) + 1)] + ["0"] * (len(parts) - i - 1))
        elif "/" in inner.strip("/"):                       # a path: another last component
            word = inner.rstrip("/").rsplit("/", 1)[0] + "/" + rng.choice(["data", "logs", "cache", "tmp", "build"])
        else:
            word = rng.choice(["debug", "production", "localhost", "utf-8", "json", "v2", "enabled", "none"])
        return q + word + q if word != inner else value
    if not re.fullmatch(r"-?\d+(?:\.\d+)?", value):     # a bare word (YAML, INI)
        return rng.choice([w for w in _WORDS if w != value])
    number = float(value) if "." in value else int(value)
    new = rng.choice([number * 2, number * 10, number + 1, max(1, number // 2) if isinstance(number, int) else number / 2])
    return str(round(new, 6) if isinstance(new, float) else new)


def _spoken(key: str) -> str:
    """``pool_size`` / ``poolSize`` / ``POOL_SIZE`` -> ``pool size``: how people name a setting."""
    return " ".join(re.findall(r"[a-z]+|\d+", re.sub(r"([a-z])([A-Z])", r"\1 \2", key).lower())) or key


def set_value(lines, lang, rng):
    pattern = _BARE_SETTING if lang.name in _BARE_VALUE_LANGS else _SETTING
    found = [(k, m) for k in code_lines(lines, lang, min_len=3) if (m := pattern.match(lines[k]))
             and m.group("key") not in KEYWORDS]
    keys = Counter(m.group("key") for _, m in found)
    found = [(k, m) for k, m in found if keys[m.group("key")] == 1]   # the one setting of that name
    if not found:
        return None
    k, m = rng.choice(found)
    old, new = m.group("value"), _new_value(m.group("value"), rng)
    if new == old:
        return None
    gold = list(lines)
    gold[k] = lines[k][:m.start("value")] + new + lines[k][m.end("value"):]
    key, shown = m.group("key"), new if new[0] not in "\"'" else new[1:-1]
    instr = rng.choice(["Set `{k}` to {n}.", "Change {s} to {n}.", "Change the {s} to {n}.", "Use {n} for {k}.",
                        "{k} should be {n}, not {o}.", "Make {s} {n} instead of {o}."])
    return "set_value", gold, instr.format(k=key, s=_spoken(key), n=shown, o=old)


def _signature(lines, lang, rng):
    fns = functions(lines, lang)
    rng.shuffle(fns)
    for k, name in fns:
        line = lines[k]
        if line.count("(") == 1 and line.count(")") == 1 and "*" not in line[line.index("("):] and "..." not in line:
            yield k, name, line.index("("), line.index(")")


def add_param(lines, lang, rng):
    for k, name, lp, rp in _signature(lines, lang, rng):
        if lang.name not in _PARAMS:   # shell functions and configuration files take no declared parameters
            return None
        param = rng.choice(_PARAMS[lang.name])
        inside = lines[k][lp + 1:rp]
        new_inside = f"{inside}, {param}" if inside.strip() else param
        gold = list(lines)
        gold[k] = lines[k][:lp + 1] + new_inside + lines[k][rp:]
        instr = rng.choice(["Add a parameter `{p}` to `{f}`.", "Add `{p}` as the last parameter of {f}.",
                            "`{f}` should take an extra parameter `{p}`."]).format(p=param, f=name)
        return "add_param", gold, instr
    return None


def remove_param(lines, lang, rng):
    for k, name, lp, rp in _signature(lines, lang, rng):
        params = [p for p in lines[k][lp + 1:rp].split(",")]
        if len(params) < 2:
            continue
        end = block_end(lines, k, lang)
        body = " ".join(lines[k + 1:end + 1])
        for i, p in enumerate(params):
            names = identifiers(p.split("=")[0].split(":")[0])
            pname = names[-1] if names else None
            if not pname or pname in ("self", "cls") or re.search(rf"\b{re.escape(pname)}\b", body):
                continue
            rest = params[:i] + params[i + 1:]
            inside = ",".join(rest)
            inside = inside.lstrip() if i == 0 else inside
            gold = list(lines)
            gold[k] = lines[k][:lp + 1] + inside + lines[k][rp:]
            instr = rng.choice(["Remove the unused parameter `{p}` from `{f}`.", "Drop the `{p}` parameter of {f}; it is unused."])
            return "remove_param", gold, instr.format(p=pname, f=name)
    return None


KINDS = {"rename": rename, "delete_lines": delete_lines, "delete_block": delete_block, "insert_line": insert_line,
         "add_comment": add_comment, "add_docstring": add_docstring, "change_literal": change_literal,
         "set_value": set_value, "add_param": add_param, "remove_param": remove_param}

KIND_WEIGHTS = {"set_value": 4.0}   # settings are what editor users change most; few lines of code are one


def make(doc: str, lang_name: str, rng: random.Random) -> EditCase | None:
    lang = LANGS[lang_name]
    lines = lines_of(doc)
    # a weighted shuffle (Efraimidis-Spirakis): a kind that fits few documents is tried first more often
    order = sorted(KINDS, key=lambda name: -rng.random() ** (1.0 / KIND_WEIGHTS.get(name, 1.0)))
    for name in order[:3]:
        got = KINDS[name](lines, lang, rng)
        if got is not None and got[1] != lines:
            kind, gold, instr = got
            return EditCase("mechanical", kind, lang_name, doc, instr, join(gold))
    return None
