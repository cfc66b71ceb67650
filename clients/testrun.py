"""Running HumanEvalPack tests against a candidate solution (pass@1 for cad-bench).

Owns: building the test program (Python: code + test + `check(entry_point)` if the test does not
call it already; JS: a shim that makes `console.assert` throw, then code + test), running it with
`python` / `node` in a fresh temp dir with a timeout (the whole process group is killed on
timeout), and reporting pass/fail with the output tail. Any exception, non-zero exit or timeout is
a fail.

The candidate is model-written code, so it runs in :mod:`clients.sandbox` (temp cwd, clean
environment, rlimits, wall timeout, no network, a throw-away uid when run as root);
``TestOutcome.isolation`` lists the protections that were in force.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from clients.sandbox import Limits, run_sandboxed, world_executable

# console.assert only logs in node; make a failed assertion fatal, and fail on stray rejections.
JS_SHIM = """\
console.assert = (cond, ...msg) => {
  if (!cond) { throw new Error("Assertion failed" + (msg.length ? ": " + msg.join(" ") : "")); }
};
process.on("unhandledRejection", (err) => { console.error(err); process.exit(1); });
"""


# HumanEvalPack JavaScript/162 does `require('js-md5')`; same function via node's built-in crypto.
JS_MODULES = {
    "js-md5": "module.exports = (text) => require('crypto').createHash('md5').update(String(text)).digest('hex');\n",
}


class TestRunnerError(RuntimeError):
    """The interpreter for a language is missing; the message says what to install."""


@dataclass
class TestOutcome:
    passed: bool
    returncode: int | None
    timed_out: bool
    seconds: float
    output_tail: str
    isolation: list[str] = field(default_factory=list)


def build_program(lang: str, code: str, test: str, entry_point: str) -> str:
    if lang == "python":
        program = code.rstrip("\n") + "\n\n\n" + test.rstrip("\n") + "\n"
        if f"check({entry_point})" not in test:
            program += f"\n\ncheck({entry_point})\n"
        return program
    if lang == "js":
        return JS_SHIM + "\n" + code.rstrip("\n") + "\n\n" + test.rstrip("\n") + "\n"
    raise ValueError(f"unknown test language {lang!r}; use 'python' or 'js'")


def interpreter(lang: str) -> list[str]:
    if lang == "python":  # an interpreter the sandbox's throw-away uid can run (stdlib is all a test needs)
        for candidate in (sys.executable, shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")):
            if candidate and world_executable(candidate):
                return [candidate, "-I"]
        return [sys.executable, "-I"]
    node = shutil.which("node")
    if node is None:
        raise TestRunnerError("`node` not found on PATH: install Node.js (e.g. apt-get install nodejs) to run JS tests")
    return [node]


# node reserves several GiB of address space up front (V8 cage); its heap is capped by the flag instead
NODE_HEAP_MB = 512
JS_LIMITS = Limits(memory_bytes=16 << 30)


def run_tests(lang: str, code: str, test: str, entry_point: str, *, timeout_s: float = 15.0) -> TestOutcome:
    """Run the dataset test for `code` in the sandbox; pass = exit code 0 within the timeout."""
    program = build_program(lang, code, test, entry_point)
    cmd = interpreter(lang)
    if lang == "js":
        cmd = [*cmd, f"--max-old-space-size={NODE_HEAP_MB}"]
    with tempfile.TemporaryDirectory(prefix="cad-bench-test-") as tmp:
        name = os.path.join(tmp, "candidate.py" if lang == "python" else "candidate.js")
        with open(name, "w", encoding="utf-8") as fh:
            fh.write(program)
        if lang == "js":
            for module, source in JS_MODULES.items():
                os.makedirs(os.path.join(tmp, "node_modules", module))
                with open(os.path.join(tmp, "node_modules", module, "index.js"), "w", encoding="utf-8") as fh:
                    fh.write(source)
        limits = JS_LIMITS if lang == "js" else Limits()
        result = run_sandboxed([*cmd, name], Path(tmp), timeout_s=timeout_s,
                               limits=Limits(**{**limits.__dict__, "cpu_s": max(1, int(timeout_s) + 1)}))
    return TestOutcome(passed=(not result.timed_out and result.returncode == 0), returncode=result.returncode,
                       timed_out=result.timed_out, seconds=result.seconds, output_tail=result.output[-800:],
                       isolation=result.isolation)
