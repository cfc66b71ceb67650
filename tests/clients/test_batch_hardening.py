"""Issue 15, defect 12: `cad-apply --write` through the real CLI (`python -m clients.batch`).

Read-only files are not replaced unless asked, and the stale-temp cleaner deletes only temp
files a killed run journaled, never a user's file that merely looks like one.
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from clients.atomic_write import TEMP_MARKER
from clients.batch import EXIT_REFUSED
from clients.journal import JOURNAL_NAME

REPO = Path(__file__).resolve().parents[2]
FAKE = "tests.clients.fake_backends:appending"


def run_cli(args, cwd):
    return subprocess.run([sys.executable, "-m", "clients.batch", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)


def expected_after(old: str, instruction: str) -> str:
    return old + f"# edited: {instruction}\n"


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_read_only_file_is_refused_unless_allowed(tmp_path):
    target = tmp_path / "ro.py"
    target.write_text("x = 1\n")
    os.chmod(target, 0o444)
    refused = run_cli([str(target), "-i", "go", "--write", "--root", str(tmp_path), "--engine-factory", FAKE, "-q"],
                      cwd=tmp_path)
    assert refused.returncode == EXIT_REFUSED, refused.stderr
    assert "read-only (mode 0444)" in refused.stderr and "--allow-read-only" in refused.stderr
    assert target.read_text() == "x = 1\n"
    allowed = run_cli([str(target), "-i", "go", "--write", "--allow-read-only", "--root", str(tmp_path),
                       "--engine-factory", FAKE, "-q"], cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stderr
    assert target.read_text() == expected_after("x = 1\n", "go")
    assert stat.S_IMODE(target.stat().st_mode) == 0o444


def test_stale_temp_cleaner_spares_look_alike_files(tmp_path):
    target = tmp_path / "a.py"
    target.write_text("a = 1\n")
    dead = _dead_pid()
    look_alikes = [tmp_path / f".a.py{TEMP_MARKER}.{dead}.notes", tmp_path / f"mine{TEMP_MARKER}.{dead}.txt",
                   tmp_path / f".a.py{TEMP_MARKER}.{dead}.{'0' * 32}"]  # right shape, but never journaled
    for path in look_alikes:
        path.write_text("user data\n")
    result = run_cli([str(target), "-i", "go", "--write", "--root", str(tmp_path), "--engine-factory", FAKE, "-q"],
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert all(p.read_text() == "user data\n" for p in look_alikes)
    assert target.read_text() == expected_after("a = 1\n", "go")


def test_temp_file_journaled_by_a_killed_run_is_cleaned(tmp_path):
    target = tmp_path / "b.py"
    target.write_text("b = 1\n")
    # A run that journals its temp file, creates it and is killed before the rename.
    script = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from clients.atomic_write import temp_path\n"
        "from clients.journal import Journal\n"
        f"tmp = temp_path(Path({str(target)!r}))\n"
        f"Journal(Path({str(tmp_path / JOURNAL_NAME)!r})).record_temp(tmp)\n"
        "tmp.write_bytes(b'half-written')\n"
        "print(tmp)\n"
        "os._exit(137)\n")
    killed = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    leftover = tmp_path / os.path.basename(killed.stdout.strip())
    assert leftover.exists() and TEMP_MARKER in leftover.name
    result = run_cli([str(target), "-i", "go", "--write", "--root", str(tmp_path), "--engine-factory", FAKE, "-q"],
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not leftover.exists()
    assert not [q for q in tmp_path.iterdir() if TEMP_MARKER in q.name]
    temps = [json.loads(line) for line in (tmp_path / JOURNAL_NAME).read_text().splitlines() if '"temp"' in line]
    assert len(temps) == 2 and all(len(t["temp"].rsplit(".", 1)[1]) == 32 for t in temps)
