"""No-op cases: requests whose right answer is the document unchanged (one copy of every line).

Kinds: ``nothing`` (the user asks for no change, or only to check), ``already_renamed`` (a rename
whose old name is absent and whose new name is already there), ``already_applied`` (a snippet that
is already in the document, shown with placeholders around it).
"""
from __future__ import annotations

import random

from training.families.common import EditCase, code_fence, code_lines, identifiers, indent_of, join, lines_of
from training.langs import LANGS

_NOTHING = ["Leave the file unchanged.", "No changes needed; keep the document as it is.",
            "Do not modify anything.", "Keep everything exactly as it is.", "This is fine as is; make no edits.",
            "Check the code but don't change anything."]


def make(doc: str, lang_name: str, rng: random.Random) -> EditCase | None:
    lang = LANGS[lang_name]
    lines = lines_of(doc)
    r = rng.random()
    if r < 0.35:
        return EditCase("noop", "nothing", lang_name, doc, rng.choice(_NOTHING), doc)
    if r < 0.65:
        present = sorted({n for n in identifiers(doc) if len(n) >= 4})
        if not present:
            return None
        new = rng.choice(present)
        old = new + rng.choice(["_old", "Old", "2", "_tmp"])
        if old in doc:
            return None
        instr = rng.choice(["Rename `{o}` to `{n}`.", "Rename {o} to {n} everywhere."]).format(o=old, n=new)
        return EditCase("noop", "already_renamed", lang_name, doc, instr, doc)
    pool = code_lines(lines, lang)
    if not pool:
        return None
    k = rng.choice(pool)
    a, b = max(0, k - rng.randint(1, 3)), min(len(lines) - 1, k + rng.randint(1, 3))
    body = lines[a:b + 1]
    if a > 0:
        body = [indent_of(lines[a]) + f"{lang.comment} ... existing code ..."] + body
    if b < len(lines) - 1:
        body = body + [indent_of(lines[b]) + f"{lang.comment} ... existing code ..."]
    instr = rng.choice(["Apply this change:", "Make sure the code looks like this:", "Update the code like this:"])
    return EditCase("noop", "already_applied", lang_name, doc, f"{instr}\n{code_fence(lang, join(body))}", doc)
