"""cad-apply: diff/write modes, atomic writes under SIGKILL/SIGTERM, resume, --root, CRLF/mode.

Most tests use a deterministic fake backend (tests/clients/fake_backends.py) so they exercise
the file handling, not the model; tests marked real_model run the real engine.
"""
from __future__ import annotations

import json
import os
import random
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clients import batch
from clients.atomic_write import TEMP_MARKER
from clients.journal import JOURNAL_NAME

REPO = Path(__file__).resolve().parents[2]
FAKE = "tests.clients.fake_backends:appending"
MARK = "# edited: {}"


def run_cli(args, cwd, env=None, **kw):
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([sys.executable, "-m", "clients.batch", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=300, **kw)


def expected_after(old: str, instruction: str) -> str:
    """What the appending fake produces for a whole-file job (LF text, final newline kept)."""
    return old + MARK.format(instruction) + "\n" if old.endswith("\n") else old + "\n" + MARK.format(instruction)


def make_files(tmp_path: Path, n: int) -> list[Path]:
    paths = []
    for k in range(n):
        p = tmp_path / f"f{k}.py"
        p.write_text("".join(f"line {k}.{i}\n" for i in range(200)))
        paths.append(p)
    return paths


def test_gen_drafter_option_lists_the_drafter_registry():
    from engine.api import DEFAULT_GEN_DRAFTER, DRAFTERS

    parser = batch.build_parser()
    action = next(a for a in parser._actions if "--gen-drafter" in a.option_strings)
    assert tuple(action.choices) == DRAFTERS and action.default == DEFAULT_GEN_DRAFTER == "replaced-lines"
    assert "{" + ",".join(DRAFTERS) + "}" in parser.format_help()


def test_diff_mode_prints_diff_and_changes_nothing(tmp_path, capsys):
    (p,) = make_files(tmp_path, 1)
    old = p.read_bytes()
    code = batch.main([str(p), "-i", "fix it", "--root", str(tmp_path), "--engine-factory", FAKE, "-q"])
    out = capsys.readouterr().out
    assert code == 0
    assert p.read_bytes() == old
    assert "+++ b/f0.py" in out and "+# edited: fix it" in out
    assert not (tmp_path / JOURNAL_NAME).exists()


def test_a_multi_file_diff_is_applied_file_by_file_without_loading_the_model(tmp_path, capsys):
    """Each file gets the diff's section that fits it; the model (here one that cannot load) is never needed;
    a file the diff does not fit fails with the reason and stays as it was."""
    a, b, c = (tmp_path / name for name in ("a.py", "b.py", "c.py"))
    a.write_text("def a():\n    return 1\n")
    b.write_text("def b():\n    return 2\n")
    c.write_text("def c():\n    return 3\n")
    diff = ("--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n def a():\n-    return 1\n+    return 10\n"
            "--- a/b.py\n+++ b/b.py\n@@ -1,2 +1,2 @@\n def b():\n-    return 2\n+    return 20\n")
    code = batch.main([str(a), str(b), "-i", diff, "--write", "--root", str(tmp_path), "--model", str(tmp_path / "none"),
                       "--json", str(tmp_path / "report.json")])
    assert (a.read_text(), b.read_text(), c.read_text()) == ("def a():\n    return 10\n", "def b():\n    return 20\n",
                                                             "def c():\n    return 3\n")
    assert code == 0
    code = batch.main([str(c), "-i", diff, "--write", "--root", str(tmp_path), "--model", str(tmp_path / "none"),
                       "--json", str(tmp_path / "report.json")])
    assert code != 0 and c.read_text() == "def c():\n    return 3\n"
    assert "the pasted diff could not be applied as is: none of its 2 files fits" in (tmp_path / "report.json").read_text()


GIT_PATCH = """Here is the change:

```diff
diff --git a/src/a.py b/src/a.py
--- a/src/a.py
+++ b/src/a.py
@@ -1,2 +1,2 @@
 def a():
-    return 1
+    return 10
diff --git a/src/b.py b/src/b.py
--- a/src/b.py
+++ b/src/b.py
@@ -1,2 +1,2 @@
 def b():
-    return 2
+    return 20
diff --git a/src/new.py b/src/new.py
--- /dev/null
+++ b/src/new.py
@@ -0,0 +1 @@
+x = 1
```
"""


def test_patch_edits_the_files_it_names_without_a_model(tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.py").write_text("def a():\n    return 1\n")
    (src / "b.py").write_text("def b():\n    return 2\n")
    patch = tmp_path / "answer.md"
    patch.write_text(GIT_PATCH)
    code = batch.main(["--patch", str(patch), "--write", "--root", str(tmp_path), "--model", str(tmp_path / "none")])
    assert code == 0
    assert (src / "a.py").read_text() == "def a():\n    return 10\n" and (src / "b.py").read_text() == "def b():\n    return 20\n"
    assert not (src / "new.py").exists()
    assert "skipping b/src/new.py: the patch creates or deletes it" in capsys.readouterr().err
    again = run_cli(["--patch", "-", "--root", str(tmp_path), "--model", str(tmp_path / "none")], tmp_path,
                    input=GIT_PATCH)   # from stdin, a diff only: the files hold the change already
    assert again.returncode == 1 and "could not be applied as is" in again.stderr + again.stdout


@pytest.mark.parametrize("args, message", [
    (["--patch", "PATCH", "-i", "x"], "no FILE, -i, --jobs or --no-snippet-merge"),
    (["--patch", "PATCH", "--no-snippet-merge"], "no FILE, -i, --jobs or --no-snippet-merge"),
])
def test_patch_takes_no_other_jobs(tmp_path, capsys, args, message):
    with pytest.raises(SystemExit) as exit_info:
        batch.main(args)
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_a_patch_that_names_no_file_is_a_usage_error(tmp_path, capsys):
    patch = tmp_path / "p.diff"
    patch.write_text("```diff\n@@ ... @@\n-a\n+b\n```\n")
    assert batch.main(["--patch", str(patch), "--root", str(tmp_path)]) == 2
    assert "names no file to edit" in capsys.readouterr().err


def test_min_confidence_holds_back_unsure_edits_and_warnings_reach_stderr(tmp_path, capsys):
    (p,) = make_files(tmp_path, 1)
    old = p.read_bytes()
    unsure = "tests.clients.fake_backends:unsure"
    code = batch.main([str(p), "-i", "fix it", "--write", "--min-confidence", "0.7", "--root", str(tmp_path),
                       "--engine-factory", unsure, "--json", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert code == batch.EXIT_REFUSED and p.read_bytes() == old
    report = json.loads((tmp_path / "r.json").read_text())
    assert "probability 0.40, below --min-confidence 0.7: nothing written" in json.dumps(report)
    code = batch.main([str(p), "-i", "fix it", "--write", "--root", str(tmp_path), "--engine-factory", unsure])
    err = capsys.readouterr().err
    assert code == 0 and p.read_bytes() != old      # without --min-confidence: written, and the warning shown
    assert "cad-apply: warning: " in err and "low confidence: the model was unsure" in err


def test_write_preserves_crlf_mode_and_missing_final_newline(tmp_path):
    crlf = tmp_path / "crlf.py"
    crlf.write_bytes(b"a = 1\r\nb = 2\r\n")
    os.chmod(crlf, 0o751)
    nofinal = tmp_path / "nofinal.js"
    nofinal.write_bytes(b"let x = 1;\nlet y = 2;")
    code = batch.main([str(crlf), str(nofinal), "-i", "go", "--write", "--root", str(tmp_path),
                       "--engine-factory", FAKE, "-q"])
    assert code == 0
    assert crlf.read_bytes() == b"a = 1\r\nb = 2\r\n# edited: go\r\n"
    assert stat.S_IMODE(crlf.stat().st_mode) == 0o751
    assert nofinal.read_bytes() == b"let x = 1;\nlet y = 2;\n# edited: go"
    assert not [q for q in tmp_path.iterdir() if TEMP_MARKER in q.name]


def test_range_job_and_jobs_file(tmp_path):
    p = tmp_path / "sub" / "r.py"
    p.parent.mkdir()
    p.write_text("1\n2\n3\n4\n")
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text(json.dumps({"path": "sub/r.py", "instruction": "mid", "range": [2, 3]}) + "\n")
    code = batch.main(["--jobs", str(jobs), "--write", "--root", str(tmp_path), "--engine-factory", FAKE, "-q"])
    assert code == 0
    assert p.read_text() == "1\n2\n3\n# edited: mid\n4\n"
    assert (tmp_path / JOURNAL_NAME).exists()


def test_bad_jobs_file_is_a_usage_error(tmp_path, capsys):
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"path": "x.py"}\n')
    assert batch.main(["--jobs", str(jobs), "--engine-factory", FAKE]) == batch.EXIT_USAGE
    assert "jobs.jsonl:1" in capsys.readouterr().err


def test_refuses_paths_outside_root_including_symlinks(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside.py"
    outside.write_text("secret\n")
    link = root / "link.py"
    link.symlink_to(outside)
    inside = root / "ok.py"
    inside.write_text("fine\n")
    result = run_cli([str(link), str(outside), str(inside), "-i", "x", "--write", "--root", str(root),
                      "--engine-factory", FAKE], cwd=root)
    assert result.returncode == batch.EXIT_REFUSED, result.stderr
    assert outside.read_text() == "secret\n"
    assert inside.read_text() == "fine\n# edited: x\n"
    assert "outside --root" in result.stderr


def test_refuses_file_changed_on_disk_during_edit(tmp_path):
    (p,) = make_files(tmp_path, 1)
    code = batch.main([str(p), "-i", "x", "--write", "--root", str(tmp_path),
                       "--engine-factory", "tests.clients.fake_backends:touching", "-q"])
    assert code == batch.EXIT_REFUSED
    assert p.read_text().endswith("# someone else typed this\n")   # their change survives
    assert "# edited" not in p.read_text()


def test_failures_give_exit_code_1(tmp_path):
    (p,) = make_files(tmp_path, 1)
    old = p.read_bytes()
    result = run_cli([str(p), "-i", "x", "--write", "--engine-factory", FAKE], cwd=tmp_path,
                     env={"FAKE_EDIT_FAIL": "1"})
    assert result.returncode == batch.EXIT_FAILED
    assert p.read_bytes() == old
    assert "fake failure" in result.stderr


def test_resume_skips_finished_jobs_even_with_several_jobs_per_file(tmp_path):
    a, b = make_files(tmp_path, 2)
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text("".join(json.dumps(j) + "\n" for j in [
        {"path": "f0.py", "instruction": "one"}, {"path": "f0.py", "instruction": "two"},
        {"path": "f1.py", "instruction": "one"}]))
    calls = tmp_path / "calls.txt"
    args = ["--jobs", str(jobs), "--write", "--engine-factory", FAKE, "--json", str(tmp_path / "r.json")]
    first = run_cli(args, cwd=tmp_path, env={"FAKE_EDIT_CALLS": str(calls)})
    assert first.returncode == 0, first.stderr
    assert len(calls.read_text().splitlines()) == 3
    after = (a.read_bytes(), b.read_bytes())
    second = run_cli(args, cwd=tmp_path, env={"FAKE_EDIT_CALLS": str(calls)})
    assert second.returncode == 0, second.stderr
    assert len(calls.read_text().splitlines()) == 3          # nothing re-run
    assert [r["status"] for r in json.loads((tmp_path / "r.json").read_text())] == ["skipped"] * 3
    assert (a.read_bytes(), b.read_bytes()) == after
    third = run_cli([*args, "--no-resume"], cwd=tmp_path, env={"FAKE_EDIT_CALLS": str(calls)})
    assert third.returncode == 0
    assert len(calls.read_text().splitlines()) == 6


def _check_old_or_new(paths, olds, news):
    states = []
    for p, old, new in zip(paths, olds, news):
        data = p.read_text()
        assert data in (old, new), f"{p.name} is partial or double-applied:\n{data[-200:]}"
        states.append(data == new)
    return states


def test_sigkill_at_random_points_never_leaves_partial_files_and_resume_finishes(tmp_path):
    paths = make_files(tmp_path, 8)
    olds = [p.read_text() for p in paths]
    news = [expected_after(o, "kill me") for o in olds]
    args = [*map(str, paths), "-i", "kill me", "--write", "--engine-factory", FAKE, "-q"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "FAKE_EDIT_DELAY_S": "0.03"}
    rng = random.Random(1234)
    saw_partial_run = False
    for _ in range(6):
        proc = subprocess.Popen([sys.executable, "-m", "clients.batch", *args], cwd=tmp_path, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.05, 0.6))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        states = _check_old_or_new(paths, olds, news)
        saw_partial_run |= 0 < sum(states) < len(states)
    final = run_cli(args, cwd=tmp_path, env={"FAKE_EDIT_DELAY_S": "0"})
    assert final.returncode == 0, final.stderr
    assert all(_check_old_or_new(paths, olds, news))
    assert not [q for q in tmp_path.iterdir() if TEMP_MARKER in q.name], "stale temp files not cleaned"
    # the random kills should have interrupted at least one run midway (sanity of the test itself)
    assert saw_partial_run or all(p.read_text() == n for p, n in zip(paths, news))


def test_sigterm_exits_143_and_leaves_no_temp_files(tmp_path):
    paths = make_files(tmp_path, 6)
    olds = [p.read_text() for p in paths]
    news = [expected_after(o, "t") for o in olds]
    proc = subprocess.Popen([sys.executable, "-m", "clients.batch", *map(str, paths), "-i", "t", "--write",
                             "--engine-factory", FAKE, "-q"], cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(REPO), "FAKE_EDIT_DELAY_S": "0.3"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.2)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == batch.EXIT_SIGTERM
    states = _check_old_or_new(paths, olds, news)
    assert not all(states)
    assert not [q for q in tmp_path.iterdir() if TEMP_MARKER in q.name]


def test_via_lsp_with_fake_server_applies_versioned_edits(tmp_path):
    p = tmp_path / "x.py"
    p.write_text("ok\nBUG one\nBUG two\n")
    server = f"{sys.executable} {REPO / 'tests' / 'clients' / 'fake_cad_server.py'}"
    result = run_cli([str(p), "-i", "fix", "--range", "1-2", "--write", "--via-lsp", "--server-cmd", server],
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert p.read_text() == "ok\nFIX one\nBUG two\n"


@pytest.mark.real_model
def test_real_model_write_keeps_crlf_and_mode_then_resume_skips_without_model(tmp_path):
    p = tmp_path / "add.py"
    p.write_bytes(b"def add(a, b):\r\n    return a - b\r\n")
    os.chmod(p, 0o640)
    report = tmp_path / "r.json"
    common = [str(p), "-i", "Fix bugs in add.", "--write", "--root", str(tmp_path), "--strategy", "regen",
              "--max-new-tokens", "16", "--device", "cpu", "--allow-truncated", "--json", str(report), "-q"]
    assert batch.main(common) == 0
    (first,) = json.loads(report.read_text())
    assert first["status"] in ("ok", "unchanged") and first["stats"]["decoded_tokens"] <= 16
    data = p.read_bytes()
    assert data.count(b"\n") == data.count(b"\r\n") >= 1          # every line break is still CRLF
    assert data.endswith(b"\r\n")
    assert stat.S_IMODE(p.stat().st_mode) == 0o640
    assert not [q for q in tmp_path.iterdir() if TEMP_MARKER in q.name]
    # rerun: the journal says it's done, so it is skipped (the model is never even loaded)
    assert batch.main([*common[:-3], "--model", "/nonexistent/model.gguf", "--json", str(report), "-q"]) == 0
    (second,) = json.loads(report.read_text())
    assert second["status"] == "skipped"
    assert p.read_bytes() == data


@pytest.mark.real_model
def test_real_server_via_lsp_range_edit_leaves_other_lines_alone(tmp_path):
    p = tmp_path / "two.py"
    head = "def sub(a, b):\n    return a - b\n\n\n"
    p.write_text(head + "def add(a, b):\n    return a - b\n")
    report = tmp_path / "r.json"
    code = batch.main([str(p), "-i", "Fix bugs in add.", "--range", "5-6", "--write", "--via-lsp",
                       "--root", str(tmp_path), "--strategy", "regen", "--max-new-tokens", "16",
                       "--device", "cpu", "--allow-truncated", "--json", str(report), "-q"])
    assert code == 0, json.loads(report.read_text())
    (row,) = json.loads(report.read_text())
    assert row["status"] in ("ok", "unchanged") and row["stats"]["decoded_tokens"] <= 16
    assert p.read_text().startswith(head)          # lines 1-4 are outside the range: untouched


def test_diff_output_applies_with_git_apply_even_without_final_newline(tmp_path, capsys):
    p = tmp_path / "n.js"
    p.write_bytes(b"let a = 1;\nlet b = 2;")
    assert batch.main([str(p), "-i", "x", "--root", str(tmp_path), "--engine-factory", FAKE, "-q"]) == 0
    patch = capsys.readouterr().out
    assert "\\ No newline at end of file" in patch
    (tmp_path / "p.diff").write_text(patch)
    subprocess.run(["git", "apply", "p.diff"], cwd=tmp_path, check=True, capture_output=True)
    assert p.read_bytes() == b"let a = 1;\nlet b = 2;\n# edited: x"


def test_truncated_result_is_shown_but_never_written_unless_allowed(tmp_path, capsys):
    p = tmp_path / "t.py"
    p.write_text("a = 1\nb = 2\n")
    report = tmp_path / "r.json"
    base = [str(p), "-i", "x", "--root", str(tmp_path), "--engine-factory",
            "tests.clients.fake_backends:truncating", "--json", str(report), "-q"]
    assert batch.main(base) == 3                       # --diff: shown, with the reason, never "ok"
    assert "+# edited: x" in capsys.readouterr().out
    (row,) = json.loads(report.read_text())
    assert row["status"] == "truncated" and "token budget" in row["detail"]
    assert batch.main([*base, "--write"]) == 3         # refused: nothing written
    (row,) = json.loads(report.read_text())
    assert row["status"] == "truncated" and "--allow-truncated" in row["detail"]
    assert p.read_text() == "a = 1\nb = 2\n"
    assert batch.main([*base, "--write", "--allow-truncated"]) == 3   # written, still reported incomplete
    assert "# edited: x" in p.read_text()
    (row,) = json.loads(report.read_text())
    assert row["status"] == "truncated"


def test_draft_model_drafter_without_a_draft_model_is_refused_before_loading_anything():
    from clients.edit_backends import BackendStartError, InProcessBackend

    with pytest.raises(BackendStartError, match="needs --draft-model"):
        InProcessBackend(gen_drafter="draft-model")
