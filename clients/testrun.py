"""Running HumanEvalPack tests against a candidate solution (pass@1 for cad-bench).

Owns: building the test program (Python: code + test + `check(entry_point)` if the test does not
call it already; JS: a shim that makes `console.assert` throw, then code + test), running it with
`python` / `node` in a fresh temp dir with a timeout (the whole process group is killed on
timeout), and reporting pass/fail with the output tail. Any exception, non-zero exit or timeout is
a fail.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

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
    if lang == "python":
        return [sys.executable, "-I"]
    node = shutil.which("node")
    if node is None:
        raise TestRunnerError("`node` not found on PATH: install Node.js (e.g. apt-get install nodejs) to run JS tests")
    return [node]


def run_tests(lang: str, code: str, test: str, entry_point: str, *, timeout_s: float = 15.0) -> TestOutcome:
    """Run the dataset test for `code`; pass = exit code 0 within the timeout."""
    program = build_program(lang, code, test, entry_point)
    cmd = interpreter(lang)
    with tempfile.TemporaryDirectory(prefix="cad-bench-test-") as tmp:
        name = os.path.join(tmp, "candidate.py" if lang == "python" else "candidate.js")
        with open(name, "w", encoding="utf-8") as fh:
            fh.write(program)
        if lang == "js":
            for module, source in JS_MODULES.items():
                os.makedirs(os.path.join(tmp, "node_modules", module))
                with open(os.path.join(tmp, "node_modules", module, "index.js"), "w", encoding="utf-8") as fh:
                    fh.write(source)
        start = time.monotonic()
        proc = subprocess.Popen([*cmd, name], cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        timed_out = False
        try:
            out, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            out, _ = proc.communicate()
        seconds = time.monotonic() - start
    text = out.decode("utf-8", errors="replace")
    return TestOutcome(passed=(not timed_out and proc.returncode == 0), returncode=proc.returncode,
                       timed_out=timed_out, seconds=seconds, output_tail=text[-800:])
