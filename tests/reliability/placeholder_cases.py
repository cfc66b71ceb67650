"""Placeholder cases: lazy edits that must be refused and honest edits that must not be.

Shared by tests/reliability/test_placeholders.py and benchmarks/reliability.py. The lazy set is
built from parts (comment leaders × decorations × phrasings) so the rule is tested as a rule,
not as a list of strings; the honest set holds edits that look close (comments about "the rest",
a stub ``...`` the document already has, placeholders that delete nothing).
"""
from __future__ import annotations

import itertools

from engine.program.placeholders import find_lazy_placeholders

PY_DOC = ("import os\n\n\ndef total(values):\n    result = 0\n    for v in values:\n        result += v\n"
          "    return result\n\n\ndef mean(values):\n    return total(values) / len(values)\n")
JS_DOC = ("function total(values) {\n  let result = 0;\n  for (const v of values) {\n    result += v;\n  }\n"
          "  return result;\n}\n\nfunction mean(values) {\n  return total(values) / values.length;\n}\n")
PHRASES = ["existing code", "rest of the function", "rest unchanged", "unchanged", "rest of the code",
           "remaining code unchanged", "keep existing code", "same as before", "other methods omitted for brevity",
           "previous implementation", "rest of file", "code omitted", "original code here"]
DECORATIONS = ["{p}", "... {p} ...", "...{p}...", "… {p} …", "[{p}]", "({p})", "{p} ...", "... {p}"]
LEADERS = {"py": ["# {t}"], "js": ["// {t}", "/* {t} */"]}
BARE = ["...", "…", "# ...", "// ...", "/* ... */"]


def lazy_cases() -> list[tuple[str, str, str]]:
    """(name, document, new text) where a new placeholder replaces real code."""
    cases = []
    for lang, doc in (("py", PY_DOC), ("js", JS_DOC)):
        lines = doc.split("\n")
        for leader, deco, phrase in itertools.product(LEADERS[lang], DECORATIONS, PHRASES):
            placeholder = "    " + leader.format(t=deco.format(p=phrase))
            for cut in ((4, 7), (1, 6)):  # drop a function body / most of the file
                new = "\n".join(lines[:cut[0]] + [placeholder] + lines[cut[1]:])
                cases.append((f"{lang}:{placeholder.strip()}:{cut}", doc, new))
        for bare in BARE:
            new = "\n".join(lines[:4] + ["    " + bare] + lines[7:])
            cases.append((f"{lang}:bare {bare}", doc, new))
    return cases


def honest_cases() -> list[tuple[str, str, str]]:
    """(name, document, new text) that must not be flagged."""
    lines = PY_DOC.split("\n")
    stub_doc = PY_DOC.replace("    return total(values) / len(values)\n", "    ...  # rest of the function\n")
    return [
        ("fix a line", PY_DOC, PY_DOC.replace("len(values)", "max(len(values), 1)")),
        ("add a comment about the rest", PY_DOC, PY_DOC.replace("    for v", "    # sum the rest of the values\n    for v")),
        ("placeholder that deletes nothing", PY_DOC, PY_DOC.replace("import os\n", "import os\n# ... existing code ...\n")),
        ("document already has the stub", stub_doc, stub_doc.replace("import os\n", "import os\nimport sys\n")),
        ("copied placeholder kept while deleting elsewhere", stub_doc, stub_doc.replace("    result = 0\n", "")),
        ("delete a function on purpose", PY_DOC, "\n".join(lines[:3] + lines[9:])),
        ("rewrite a body", PY_DOC, PY_DOC.replace("    result = 0\n    for v in values:\n        result += v\n"
                                                  "    return result\n", "    return sum(values)\n")),
        ("todo note replacing code", PY_DOC, PY_DOC.replace("        result += v\n", "        # TODO: rest of the cases\n")),
        ("code with a trailing comment", PY_DOC, PY_DOC.replace("    return result\n", "    return result  # unchanged\n")),
        ("js rewrite", JS_DOC, JS_DOC.replace("values.length", "Math.max(values.length, 1)")),
        ("crlf document copied", PY_DOC.replace("\n", "\r\n"), PY_DOC.replace("\n", "\r\n").replace("os", "sys")),
    ]


def measure() -> dict:
    """Figures: lazy cases caught, honest cases flagged (false positives), code lines deleted by applied lazy edits."""
    lazy, honest = lazy_cases(), honest_cases()
    missed = [name for name, doc, new in lazy if not find_lazy_placeholders(doc, new)]
    flagged = [name for name, doc, new in honest if find_lazy_placeholders(doc, new)]
    return {"lazy_cases": len(lazy), "caught": len(lazy) - len(missed), "missed": missed,
            "honest_cases": len(honest), "false_positives": flagged}
