"""Issue 13 item 3: ``cad-apply --write`` under kill -9 at random moments (≥ 50 trials, seeded).

Every target is its original or a complete result after each kill, the rerun leaves no temp
file and redoes exactly the unfinished jobs (see tests/reliability/kill9.py). The refusals
(symlink outside --root, ``..``, directory, binary, non-UTF-8, read-only, changed on disk) are
checked in one run at the end.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

from clients.batch import EXIT_REFUSED

from .kill9 import FAKE, REPO, run_trials

TRIALS = 50


def test_kill9_at_random_moments_never_partial_nothing_lost(tmp_path):
    figures = run_trials(tmp_path, TRIALS)
    print(f"\nkill -9: {figures.trials} trials ({figures.killed_mid_run} mid-run), partial files "
          f"{figures.partial_files}, lost jobs {figures.lost_jobs}, repeated {figures.repeated_jobs}, "
          f"temp files left {figures.temp_files_left}")
    assert not figures.failures, "\n".join(figures.failures[:10])
    assert figures.trials >= 50
    assert figures.killed_mid_run >= 10  # the kills really land inside runs (the test can fail)


def test_every_unsafe_target_is_refused_with_a_message(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "outside.py").write_text("secret = 1\n")
    (root / "link.py").symlink_to(tmp_path / "outside.py")
    (root / "dir.py").mkdir()
    (root / "binary.py").write_bytes(b"\x00\x01\x02binary\n")
    (root / "latin1.py").write_bytes("caf\xe9 = 1\n".encode("latin-1"))
    (root / "ro.py").write_text("ro = 1\n")
    os.chmod(root / "ro.py", 0o444)
    (root / "ok.py").write_text("ok = 1\n")
    jobs = [{"path": p, "instruction": "go"} for p in ("link.py", "../outside.py", "dir.py", "binary.py",
                                                       "latin1.py", "ro.py", "ok.py", "missing.py")]
    (root / "jobs.jsonl").write_text("".join(json.dumps(j) + "\n" for j in jobs))
    before = {p: p.read_bytes() for p in [tmp_path / "outside.py", *root.glob("*.py")] if p.is_file()}
    result = subprocess.run([sys.executable, "-m", "clients.batch", "--jobs", str(root / "jobs.jsonl"), "--write",
                             "--root", str(root), "--engine-factory", FAKE, "--json", str(tmp_path / "r.json")],
                            cwd=root, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
                            timeout=120)
    assert result.returncode == EXIT_REFUSED, result.stderr
    report = {os.path.basename(r["path"]): r for r in json.loads((tmp_path / "r.json").read_text())}
    assert report["ok.py"]["status"] == "ok"
    for name, needle in (("link.py", "outside --root"), ("outside.py", "outside --root"),
                         ("dir.py", "not a regular file"), ("binary.py", "binary file"), ("latin1.py", "not UTF-8"),
                         ("ro.py", "read-only"), ("missing.py", "no such file")):
        assert report[name]["status"] == "refused", report[name]
        assert needle in report[name]["detail"] and len(report[name]["detail"]) > 20, report[name]
    for path, data in before.items():
        if path.name != "ok.py":
            assert path.read_bytes() == data, path
