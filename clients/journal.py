"""Resume journal for `cad-apply --write`.

Owns: the append-only JSONL journal (`.cad-apply.journal.jsonl`) that records each write as
{path, instruction, range, before, after} (sha256 of the file before/after), appended and
fsynced just BEFORE the atomic rename, so a kill between the two never causes a double apply
(the file still has the "before" hash, which does not count as done). A rerun skips a job when
the file's current hash is that job's recorded "after" hash, or any hash reached from it by
later journaled writes to the same file (so several jobs on one file all resume correctly).

It also records each temp file's name (`{"temp", "pid"}`) before the temp file is created, so the
next run deletes only temp files a killed run really created (`stale_temp_files`), never a file
that merely looks like one.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from clients.jobs import Job

JOURNAL_NAME = ".cad-apply.journal.jsonl"


class Journal:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.entries: list[dict] = []
        self.temps: list[str] = []
        self._torn_tail = False
        if self.path.exists():
            data = self.path.read_bytes()
            self._torn_tail = bool(data) and not data.endswith(b"\n")
            for raw in data.decode("utf-8", errors="replace").splitlines():
                try:
                    entry = json.loads(raw)
                except json.JSONDecodeError:
                    continue  # a torn last line from a killed run; the write it described is redone
                if isinstance(entry, dict) and {"path", "before", "after"} <= set(entry):
                    self.entries.append(entry)
                elif isinstance(entry, dict) and isinstance(entry.get("temp"), str):
                    self.temps.append(entry["temp"])

    def stale_temp_files(self) -> list[Path]:
        """Temp files earlier runs journaled (whether they still exist is for the cleaner to see)."""
        return [Path(p) for p in dict.fromkeys(self.temps)]

    def record_temp(self, temp: Path) -> None:
        """Journal a temp file's name (fsynced) before it is created."""
        self.temps.append(str(temp))
        self._append({"temp": str(temp), "pid": os.getpid(), "time": time.time()})

    def is_done(self, job: Job, current_hash: str) -> bool:
        """True when `job` was applied earlier and the file still descends from that result."""
        key = job.key()
        same_file = [e for e in self.entries if e["path"] == key["path"]]
        for entry in same_file:
            if entry.get("instruction") != key["instruction"] or entry.get("range") != key["range"]:
                continue
            reachable = {entry["after"]}
            grew = True
            while grew:  # follow before→after edges of later writes to the same file
                grew = False
                for other in same_file:
                    if other["before"] in reachable and other["after"] not in reachable:
                        reachable.add(other["after"])
                        grew = True
            if current_hash in reachable:
                return True
        return False

    def record(self, job: Job, before: str, after: str) -> None:
        """Append one write (about to be renamed into place) and fsync the journal."""
        entry = {**job.key(), "before": before, "after": after, "time": time.time()}
        self.entries.append(entry)
        self._append(entry)

    def _append(self, entry: dict) -> None:
        line = (json.dumps(entry, sort_keys=True) + "\n").encode("utf-8")
        if self._torn_tail:  # start on a fresh line after a killed run's partial append
            line = b"\n" + line
            self._torn_tail = False
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
