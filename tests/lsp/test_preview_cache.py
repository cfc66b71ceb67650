"""cad.previewEdit → cad.applyPreview: the previewed program is applied without a second decode,
once, and only to the document it was computed for (or one changed elsewhere: rebased).

Over real stdio against the real server with a deterministic engine
(tests/editors/fake_engine_lsp.py, which counts decodes), plus the cache's own rules.
"""
from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from lsprotocol import types

from cad_lsp.preview_cache import MAX_PREVIEWS, Preview, PreviewCache
from clients.lsp_session import LspSession, LspSessionError

FAKE_ENGINE = Path(__file__).resolve().parents[1] / "editors" / "fake_engine_lsp.py"
DOC = "def add(a, b):\n    total = a - b\n    return total\n"


def test_cache_keeps_the_newest_and_hands_each_preview_out_once():
    cache = PreviewCache()
    ids = [cache.add(Preview(None, [], f"i{n}", "", False, None)) for n in range(MAX_PREVIEWS + 3)]
    assert len(set(ids)) == len(ids) and len(cache) == MAX_PREVIEWS
    assert cache.take(ids[0]) is None, "the oldest previews are dropped"
    assert cache.take(ids[-1]).instruction == f"i{MAX_PREVIEWS + 2}"
    assert cache.take(ids[-1]) is None, "a preview is applied at most once"


def run(tmp_path: Path, scenario, settings: dict | None = None):
    log = tmp_path / "decodes.log"

    async def main():
        env = {**os.environ, "FAKE_ENGINE_LOG": str(log)}
        session = LspSession([sys.executable, str(FAKE_ENGINE)], env=env, root_path=tmp_path, settings=settings)
        await session.start()
        try:
            uri = (tmp_path / "buggy.py").as_uri()
            session.open(uri, DOC, "python")
            return await scenario(session, uri)
        finally:
            await session.stop()

    out = asyncio.run(main())
    return out, (log.read_text().splitlines() if log.exists() else [])


def type_line(session: LspSession, uri: str, line: int, text: str) -> None:
    doc = session.docs[uri]
    lines = doc.text.split("\n")
    lines[line] = text
    doc.text, doc.version = "\n".join(lines), doc.version + 1
    session.client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=doc.version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=doc.text)]))


def test_preview_then_apply_once(tmp_path):
    async def scenario(session, uri):
        preview, _ = await session.execute("cad.previewEdit", {"uri": uri, "instruction": "upper"})
        assert session.docs[uri].text == DOC
        applied, _ = await session.execute("cad.applyPreview", {"previewId": preview["previewId"]})
        text = session.docs[uri].text
        with pytest.raises(LspSessionError) as again:
            await session.execute("cad.applyPreview", {"previewId": preview["previewId"]})
        return preview, applied, text, str(again.value)

    (preview, applied, text, again), decodes = run(tmp_path, scenario)
    assert preview["newText"] == DOC.upper() and "+    TOTAL = A - B" in preview["diff"]
    assert applied["applied"] is True and applied["reusedPreview"] is True, applied
    assert text == DOC.upper()
    assert decodes == ["upper"], "cad.applyPreview must not decode"
    assert "run the preview again" in again


def test_preview_applied_after_typing_elsewhere_is_rebased_and_overlap_is_discarded(tmp_path):
    async def scenario(session, uri):
        rng = {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 5}}
        first, _ = await session.execute("cad.previewEdit", {"uri": uri, "instruction": "upper", "range": rng})
        second, _ = await session.execute("cad.previewEdit", {"uri": uri, "instruction": "upper", "range": rng})
        type_line(session, uri, 0, "async def add(a, b):")
        await asyncio.sleep(0.3)
        rebased, _ = await session.execute("cad.applyPreview", {"previewId": first["previewId"]})
        after_rebase = session.docs[uri].text
        discarded, _ = await session.execute("cad.applyPreview", {"previewId": second["previewId"]})
        return rebased, after_rebase, discarded, session.docs[uri].text

    (rebased, after_rebase, discarded, final), decodes = run(tmp_path, scenario)
    assert rebased["applied"] is True and "rebased over your changes" in rebased["message"], rebased
    assert after_rebase == "async def add(a, b):\n    TOTAL = A - B\n    return total\n"
    # the second preview was computed for the original line 2, which the first apply rewrote
    assert discarded["applied"] is False and discarded["discarded"] is True
    assert "overlap line(s) 2" in discarded["message"]
    assert final == after_rebase
    assert decodes == ["upper", "upper"]


def test_apply_preview_needs_a_preview_id(tmp_path):
    async def scenario(session, uri):
        with pytest.raises(LspSessionError) as err:
            await session.execute("cad.applyPreview", {"uri": uri})
        return str(err.value)

    message, _ = run(tmp_path, scenario)
    assert "previewId" in message


def test_an_edit_less_sure_than_min_confidence_is_held_for_review_then_applied_as_previewed(tmp_path):
    async def scenario(session, uri):
        held, _ = await session.execute("cad.applyEdit", {"uri": uri, "instruction": "upper, unsure"})
        text_after_held = session.docs[uri].text
        sure, _ = await session.execute("cad.previewEdit", {"uri": uri, "instruction": "upper"})
        applied, _ = await session.execute("cad.applyPreview", {"previewId": held["previewId"]})
        return held, text_after_held, applied, session.docs[uri].text

    (held, text_after_held, applied, final), decodes = run(tmp_path, scenario, {"minConfidence": 0.4})
    assert held["applied"] is False and held["lowConfidence"] is True, held
    assert "0.20, below cad.minConfidence 0.4" in held["message"] and "cad.applyPreview" in held["message"]
    assert "+    TOTAL = A - B" in held["diff"] and held["newText"] == DOC.upper()
    assert text_after_held == DOC, "a held edit changes nothing"
    assert applied["applied"] is True and applied["reusedPreview"] is True and final == DOC.upper()
    assert decodes == ["upper, unsure", "upper"], "applying the held edit must not decode again"


def test_min_confidence_holds_nothing_that_is_sure_or_unchanged(tmp_path):
    async def scenario(session, uri):
        unchanged, _ = await session.execute("cad.applyEdit", {"uri": uri, "instruction": "keep it, unsure"})
        sure, _ = await session.execute("cad.applyEdit", {"uri": uri, "instruction": "upper"})
        return unchanged, sure, session.docs[uri].text

    (unchanged, sure, final), _ = run(tmp_path, scenario, {"minConfidence": 0.4})
    assert "lowConfidence" not in unchanged and "lowConfidence" not in sure
    assert sure["applied"] is True and final == DOC.upper()


def test_min_confidence_must_be_a_probability():
    from cad_lsp.settings import Settings, SettingsError

    assert Settings().merge({"minConfidence": 0.4}, source="test")[0].min_confidence == 0.4
    for bad in (1.5, -0.1, "0.4", True):
        with pytest.raises(SettingsError, match="between 0 and 1"):
            Settings().merge({"minConfidence": bad}, source="test")
