"""``textDocument/codeAction``: "Apply edit instruction…" and "Apply: <instruction comment>".

Owns which actions are offered (kind ``refactor.rewrite``):

* **Apply edit instruction…** — command ``cad.applyEdit`` with ``[{uri, range?}]`` and NO
  instruction: the editor plugin maps it to its own prompt, then runs ``cad.applyEdit`` with
  the instruction. ``range`` is the selection when it is not empty (a range-scoped edit).
* **Apply: <instruction>** — one per instruction comment (``# cad: …``, ``// cad: …`` …) in
  the selection, or in the whole document when the selection is empty; command
  ``cad.applyEdit`` with ``{uri, instruction, range?, comment: {line, text}}``. The comment
  line is consumed by the edit (see :mod:`cad_lsp.instruction_comments`). A selection within
  the comment's own line is a cursor, not a range: the edit covers the whole document.
"""
from __future__ import annotations

from typing import Any

from lsprotocol import types

from .commands import APPLY_EDIT
from .documents import DocumentUnavailableError, take_snapshot
from .instruction_comments import find_instruction_comments
from .positions import range_to_line_range

__all__ = ["KIND", "PROMPT_TITLE", "code_actions"]

KIND = types.CodeActionKind.RefactorRewrite
PROMPT_TITLE = "Apply edit instruction…"


def _wanted(only: list[str] | None) -> bool:
    if not only:
        return True
    ours = str(KIND.value)
    return any(ours == str(getattr(k, "value", k)) or ours.startswith(str(getattr(k, "value", k)) + ".")
               for k in only)


def _range_json(rng: types.Range) -> dict:
    return {"start": {"line": rng.start.line, "character": rng.start.character},
            "end": {"line": rng.end.line, "character": rng.end.character}}


async def code_actions(ls: Any, params: types.CodeActionParams) -> list[types.CodeAction]:
    if not _wanted(params.context.only if params.context else None):
        return []
    uri = params.text_document.uri
    try:  # an unopened document is read only inside the workspace, off the event loop
        text = (await take_snapshot(ls, uri)).text
    except DocumentUnavailableError as exc:
        ls.log(f"codeAction: {exc}", types.MessageType.Warning)
        return []
    rng = params.range
    has_selection = rng.start != rng.end
    base: dict = {"uri": uri}
    if has_selection:
        base["range"] = _range_json(rng)
    actions = [types.CodeAction(title=PROMPT_TITLE, kind=KIND,
                                command=types.Command(title=PROMPT_TITLE, command=APPLY_EDIT, arguments=[base]))]
    first = last = 0
    if has_selection:
        first, last = range_to_line_range(text, rng, ls.position_encoding)
        comments = find_instruction_comments(text, first - 1, last - 1)
    else:
        comments = find_instruction_comments(text)
    for comment in comments:
        title = f"Apply: {comment.instruction}"
        args = dict(base, instruction=comment.instruction, comment={"line": comment.line, "text": comment.text})
        if first == last == comment.line + 1:
            # A selection inside the comment line is a cursor (Helix always selects a character,
            # eglot the word at point), not a scope: an edit of the comment line alone would be empty.
            args.pop("range", None)
        actions.append(types.CodeAction(title=title, kind=KIND,
                                        command=types.Command(title=title, command=APPLY_EDIT, arguments=[args])))
    return actions
