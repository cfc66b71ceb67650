"""Corpus loading and the seeded split."""
from __future__ import annotations

import pytest

from evaluation.corpus import CorpusError, data_dir, load_pairs, split


def test_load_pairs_builds_document_and_gold():
    pairs = load_pairs("python")
    assert len(pairs) == 164
    p = pairs[0]
    assert p.task_id == "Python/0" and p.lang == "python"
    assert p.document.startswith(p.declaration) and p.gold.startswith(p.declaration)
    assert p.document != p.gold
    assert p.instruction == f"Fix bugs in {p.entry_point}."
    assert load_pairs("js")[0].task_id == "JavaScript/0"


def test_split_is_seeded_and_partitions():
    pairs = load_pairs("js")
    train, held = split(pairs, seed=0)
    assert len(held) == round(164 * 0.2) and len(train) + len(held) == 164
    assert {p.task_id for p in train}.isdisjoint(p.task_id for p in held)
    assert split(pairs, seed=0) == (train, held)
    assert split(pairs, seed=1)[1] != held
    with pytest.raises(ValueError):
        split(pairs, held_out_frac=1.5)


def test_errors_name_the_problem(tmp_path, monkeypatch):
    with pytest.raises(CorpusError, match="unknown corpus language 'rust'"):
        load_pairs("rust")
    monkeypatch.setenv("CAD_DATA_DIR", str(tmp_path))
    assert data_dir() == tmp_path
    with pytest.raises(CorpusError, match="CAD_DATA_DIR"):
        load_pairs("python")
    (tmp_path / "python.jsonl").write_text('{"task_id": "X"}\n')
    with pytest.raises(CorpusError, match=r"python.jsonl:1: record lacks field"):
        load_pairs("python")
