"""``cad-apply --concurrency N`` against a REAL llama.cpp server: same files as one at a time, journal resumes."""
from __future__ import annotations

import json

from clients import batch
from engine.api import EditEngine, EditRequest
from evaluation.corpus import data_dir


def _docs(n: int):
    rows = [json.loads(line) for line in (data_dir() / "python.jsonl").read_text().splitlines()[:n]]
    return [(r["declaration"] + r["buggy_solution"], "Fix bugs in " + r["entry_point"] + ".") for r in rows]


def test_concurrent_batch_writes_what_sequential_edits_produce(tmp_path, llama_server, capsys):
    docs = _docs(4)
    jobs = tmp_path / "jobs.jsonl"
    with jobs.open("w") as fh:
        for k, (doc, instruction) in enumerate(docs):
            (tmp_path / f"f{k}.py").write_text(doc)
            fh.write(json.dumps({"path": f"f{k}.py", "instruction": instruction}) + "\n")
    args = ["--jobs", str(jobs), "--write", "--root", str(tmp_path), "--model", llama_server.spec,
            "--concurrency", "3", "--allow-truncated", "--allow-placeholders"]
    assert batch.main(args) in (0, 3)
    err = capsys.readouterr().err
    assert "throughput:" in err
    engine = EditEngine(llama_server.spec)
    for k, (doc, instruction) in enumerate(docs):
        expected = engine.edit(EditRequest(doc, instruction, strategy="cad")).text
        assert (tmp_path / f"f{k}.py").read_text() == expected, k
    assert batch.main(args) in (0, 3)                   # resumed: every job is in the journal
    assert capsys.readouterr().err.count("already applied (journal)") == 4


def test_concurrency_needs_a_server(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    try:
        batch.main([str(tmp_path / "a.py"), "-i", "Rename x.", "--root", str(tmp_path), "--concurrency", "2"])
    except SystemExit as exc:
        assert exc.code == 2
    else:  # pragma: no cover
        raise AssertionError("--concurrency 2 with an in-process model was accepted")
