"""kill -9 fault injection for ``cad-apply --write`` (shared by the test and benchmarks/reliability.py).

One trial: a fresh directory of files and a jobs file (some files get two jobs), ``cad-apply
--jobs … --write`` with the instant appending backend (tests/clients/fake_backends.py) is
SIGKILLed at a random moment, then rerun to completion. Checked after the kill: every file is
one of its whole states (original, after job 1, after job 2), never partial. Checked after the
rerun: every file is complete, no temp file is left, and the rerun called the backend for
exactly the jobs the killed run had not finished (journal resume: nothing lost, nothing twice).
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from clients.atomic_write import TEMP_MARKER

REPO = Path(__file__).resolve().parents[2]
FAKE = "tests.clients.fake_backends:appending"
JOBS = [("f0.py", "one"), ("f0.py", "two"), ("f1.py", "one"), ("f2.py", "one"), ("f3.py", "one"),
        ("f3.py", "two"), ("f4.py", "one")]


@dataclass
class KillFigures:
    trials: int = 0
    killed_mid_run: int = 0       # the kill left some jobs done and some not
    partial_files: int = 0
    lost_jobs: int = 0            # unfinished jobs the rerun did not redo
    repeated_jobs: int = 0        # finished jobs the rerun redid (applied twice or wasted)
    temp_files_left: int = 0
    failures: list = field(default_factory=list)


def _states(old: str, instructions: list[str]) -> list[str]:
    states = [old]
    for instruction in instructions:
        states.append(states[-1] + f"# edited: {instruction}\n")
    return states


def one_trial(base: Path, rng: random.Random, figures: KillFigures) -> None:
    base.mkdir(parents=True)
    files = sorted({name for name, _ in JOBS})
    for k, name in enumerate(files):
        (base / name).write_text("".join(f"v{k}_{i} = {i}\n" for i in range(rng.randint(1, 400))))
    (base / "jobs.jsonl").write_text("".join(json.dumps({"path": p, "instruction": i}) + "\n" for p, i in JOBS))
    expected = {name: _states((base / name).read_text(), [i for p, i in JOBS if p == name]) for name in files}
    env = {**os.environ, "PYTHONPATH": str(REPO), "FAKE_EDIT_DELAY_S": f"{rng.uniform(0.0, 0.02):.4f}"}
    args = [sys.executable, "-m", "clients.batch", "--jobs", str(base / "jobs.jsonl"), "--write",
            "--engine-factory", FAKE, "-q"]
    proc = subprocess.Popen(args, cwd=base, env={**env, "FAKE_EDIT_CALLS": str(base / "calls1.txt")},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # Kill after a random number of jobs has started (machine-speed independent), plus a random
    # moment inside that job (computing, journaling, writing the temp file, renaming).
    started, calls1 = rng.randint(0, len(JOBS)), base / "calls1.txt"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and proc.poll() is None:
        if calls1.exists() and len(calls1.read_text().splitlines()) >= started:
            break
        time.sleep(0.002)
    time.sleep(rng.uniform(0.0, 0.03))
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    figures.trials += 1
    done = {}
    for name in files:
        text = (base / name).read_text()
        if text not in expected[name]:
            figures.partial_files += 1
            figures.failures.append(f"{base}: {name} is partial after kill -9")
            return
        done[name] = expected[name].index(text)
    total = sum(len(s) - 1 for s in expected.values())
    figures.killed_mid_run += 0 < sum(done.values()) < total
    rerun = subprocess.run(args, cwd=base, env={**env, "FAKE_EDIT_DELAY_S": "0",
                                                "FAKE_EDIT_CALLS": str(base / "calls2.txt")},
                           capture_output=True, text=True, timeout=120)
    if rerun.returncode != 0:
        figures.failures.append(f"{base}: rerun exit {rerun.returncode}: {rerun.stderr[-500:]}")
    calls = base / "calls2.txt"
    redone = Counter(Path(line).name for line in (calls.read_text().splitlines() if calls.exists() else []))
    owed = Counter({name: len(expected[name]) - 1 - done[name] for name in files})
    figures.lost_jobs += sum((owed - redone).values())
    figures.repeated_jobs += sum((redone - owed).values())
    if redone != +owed:
        figures.failures.append(f"{base}: rerun redid {dict(redone)}, unfinished were {dict(+owed)}")
    for name in files:
        if (base / name).read_text() != expected[name][-1]:
            figures.partial_files += 1
            figures.failures.append(f"{base}: {name} incomplete after the rerun")
    temps = [p for p in base.iterdir() if TEMP_MARKER in p.name]
    figures.temp_files_left += len(temps)
    if temps:
        figures.failures.append(f"{base}: temp files left: {[p.name for p in temps]}")


def run_trials(root: Path, trials: int, seed: int = 13) -> KillFigures:
    rng = random.Random(seed)
    figures = KillFigures()
    for k in range(trials):
        one_trial(root / f"trial{k:03d}", rng, figures)
    return figures
