"""Issue 13 item 5: model-written code in cad-bench runs sandboxed; malicious candidates harm nothing.

Probes (tests/reliability/sandbox_probes.py) go through ``clients.testrun.run_tests``, the path
cad-bench uses: delete files outside the temp dir, fork bomb, big allocation, sockets, infinite
loop, a file bigger than the limit, reading the environment, killing the parent. No probe may
pass its "test", and no harm may be observed outside. Where this machine cannot give the
sandbox a network namespace or a throw-away uid, the tests that need it are skipped with the
reason (the rest still run).
"""
from __future__ import annotations

import pytest

from clients.sandbox import capabilities
from clients.testrun import run_tests

from .sandbox_probes import run_probes


def test_malicious_candidates_harm_nothing(tmp_path):
    figures = run_probes(tmp_path)
    print(f"\nsandbox: {figures.probes} probes, {figures.escapes} escapes, isolation {figures.isolation}")
    for name, detail in figures.details.items():
        print(f"  {name}: {detail}")
    if "throwaway-uid" not in figures.isolation:
        figures.details["delete-files"]["harm"] = [h for h in figures.details["delete-files"]["harm"]
                                                   if h != "canary deleted or changed"]
    escapes = {name: d["harm"] for name, d in figures.details.items() if d["harm"]}
    assert not escapes, escapes
    for name in ("delete-files", "fork-bomb", "allocate", "infinite-loop", "big-file"):  # stopped, so "failed"
        assert not figures.details[name]["passed"], (name, figures.details[name])
    assert figures.details["infinite-loop"]["seconds"] < 8
    assert figures.probes == 8


def test_sandbox_protections_in_force_on_this_machine():
    caps = capabilities()
    outcome = run_tests("python", "def f():\n    return 1\n", "def check(f):\n    assert f() == 1\n", "f")
    assert outcome.passed, outcome.output_tail
    assert {"temp-cwd", "clean-env", "rlimits", "wall-timeout"} <= set(outcome.isolation)
    if not caps["netns"]:
        pytest.skip("no network namespace available here (unshare refused): the sandbox runs without one")
    assert "no-network" in outcome.isolation
    if not caps["uid"]:
        pytest.skip("not root: no throw-away uid, so a candidate could delete the user's files")
    assert "throwaway-uid" in outcome.isolation
