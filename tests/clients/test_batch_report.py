"""clients.batch_report: final statuses, the explanation of an unchanged edit, the summary table."""
from __future__ import annotations

from pathlib import Path

from clients.batch_report import DETAIL_WIDTH, UNCHANGED_DETAIL, JobReport, relative, summary
from clients.jobs import Job


def _report(name="a.py", line_range=None):
    return JobReport(Job(Path("/r") / name, "Fix it.", line_range))


def test_finish_names_the_status_and_explains_an_edit_that_changed_nothing():
    changed, unchanged, truncated = _report(), _report(), _report()
    changed.finish(truncated=False, changed=True)
    unchanged.finish(truncated=False, changed=False)
    truncated.finish(truncated=True, changed=True)
    assert (changed.status, changed.detail) == ("ok", "")
    assert (unchanged.status, unchanged.detail) == ("unchanged", UNCHANGED_DETAIL)
    assert "--model" in UNCHANGED_DETAIL and len(UNCHANGED_DETAIL) <= DETAIL_WIDTH   # shown whole in the table
    assert truncated.status == "truncated"
    kept = _report()
    kept.detail = "placeholder warning"
    kept.finish(truncated=False, changed=False)
    assert kept.detail == "placeholder warning"        # an earlier, more specific detail is kept


def test_summary_lists_each_job_relative_to_the_root_and_totals():
    a, b = _report("a.py"), _report("sub/b.py", (3, 9))
    a.finish(truncated=False, changed=True)
    b.finish(truncated=False, changed=False)
    table = summary([a, b], Path("/r"))
    assert "| ok " in table and "sub/b.py:3-9" in table and UNCHANGED_DETAIL[:40] in table
    assert table.splitlines()[-1] == "totals: ok 1, unchanged 1"
    assert relative(Path("/elsewhere/x.py"), Path("/r")) == "/elsewhere/x.py"
