"""A tiny stand-in cad server for testing client plumbing without a model.

Implements `cad.applyEdit` / `cad.previewEdit` with the real command shapes from
docs/ARCHITECTURE.md, but the "edit" is deterministic: every line in scope that contains
`BUG` gets `BUG` replaced by `FIX` (scope = `range` lines, or the whole document). Edits are sent
as a versioned `workspace/applyEdit`, one TextEdit per changed line, so the client's position
handling and version bookkeeping are exercised. Env `FAKE_CAD_DELAY_S` adds a per-request delay.
With `FAKE_CAD_MODE=gold` the edit instead turns a HumanEvalPack buggy document into its gold
text (looked up in evaluation.corpus), sent as line-block TextEdits from a difflib alignment.
"""
from __future__ import annotations

import asyncio
import difflib
import os

from lsprotocol import types
from pygls.lsp.server import LanguageServer

server = LanguageServer("fake-cad", "0.0.1")


_GOLD: dict[str, str] = {}


def _gold_plan(doc):
    if not _GOLD:
        from evaluation.corpus import load_pairs
        for lang in ("python", "js"):
            _GOLD.update({p.document: p.gold for p in load_pairs(lang)})
    old = doc.source.split("\n")
    new_text = _GOLD.get(doc.source, doc.source)
    new = new_text.split("\n")
    edits = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        # replace lines i1..i2 (exclusive) by new[j1:j2]; positions at line starts
        text = "".join(line + "\n" for line in new[j1:j2])
        if i2 >= len(old):  # touching the last line: end at the document end instead
            edits.append(types.TextEdit(range=types.Range(
                start=types.Position(line=i1, character=0),
                end=types.Position(line=len(old) - 1, character=len(old[-1]))), new_text=text[:-1]))
        else:
            edits.append(types.TextEdit(range=types.Range(
                start=types.Position(line=i1, character=0), end=types.Position(line=i2, character=0)),
                new_text=text))
    return doc, edits, new_text


def _plan(ls: LanguageServer, args: dict):
    uri = args["uri"]
    doc = ls.workspace.get_text_document(uri)
    if os.environ.get("FAKE_CAD_MODE") == "gold":
        return _gold_plan(doc)
    lines = doc.source.split("\n")
    lo, hi = 0, len(lines) - 1
    if args.get("range"):
        lo, hi = args["range"]["start"]["line"], args["range"]["end"]["line"]
    edits = []
    new_lines = list(lines)
    for i in range(lo, min(hi, len(lines) - 1) + 1):
        if "BUG" in lines[i]:
            new_lines[i] = lines[i].replace("BUG", "FIX")
            edits.append(types.TextEdit(
                range=types.Range(start=types.Position(line=i, character=0),
                                  end=types.Position(line=i, character=len(lines[i].encode("utf-16-le")) // 2)),
                new_text=new_lines[i]))
    return doc, edits, "\n".join(new_lines)


@server.command("cad.previewEdit")
async def preview(ls: LanguageServer, args: dict):
    doc, _edits, new_text = _plan(ls, args)
    diff = "".join(difflib.unified_diff(doc.source.splitlines(True), new_text.splitlines(True), "a", "b"))
    return {"diff": diff, "stats": {"ops": 1}}


@server.command("cad.applyEdit")
async def apply(ls: LanguageServer, args: dict):
    await asyncio.sleep(float(os.environ.get("FAKE_CAD_DELAY_S", "0")))
    doc, edits, _ = _plan(ls, args)
    if not edits:
        return {"applied": False, "message": "no change", "stats": {}}
    result = await ls.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(
        edit=types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version),
            edits=edits)])))
    return {"applied": result.applied, "message": result.failure_reason or "ok", "stats": {"edits": len(edits)}}


if __name__ == "__main__":
    server.start_io()
