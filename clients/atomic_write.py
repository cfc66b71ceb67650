"""Crash-safe file replacement for `cad-apply --write`.

Owns: writing new bytes over an existing file so that, whatever happens (Ctrl-C, SIGTERM,
SIGKILL, power loss after fsync), the path holds either the complete old content or the
complete new content, never a mix. Recipe: temp file in the same directory, write, fsync,
copy the mode bits, re-check that the target still has the content we read (refuse otherwise),
``os.replace``, fsync the directory. Temp files carry a recognisable name so a later run can
remove the ones a killed run left behind (`clean_stale_temp_files`).
"""
from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from pathlib import Path

TEMP_MARKER = ".cad-apply-tmp"


class ChangedOnDiskError(RuntimeError):
    """The target changed between our read and our write; nothing was written."""


def content_hash(data: bytes) -> str:
    """Stable content hash used by the journal and the changed-on-disk check."""
    return hashlib.sha256(data).hexdigest()


def _temp_prefix(path: Path) -> str:
    return f".{path.name}{TEMP_MARKER}.{os.getpid()}."


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # e.g. platforms without directory fds; the rename is still atomic
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_replace(path: Path, data: bytes, *, expected_hash: str) -> None:
    """Replace `path` with `data` atomically, preserving its mode bits.

    `expected_hash` is the `content_hash` of the bytes the caller read; if the file on disk no
    longer matches it, raise `ChangedOnDiskError` and leave the file alone.
    """
    path = Path(path)
    st = path.stat()
    fd, tmp_name = tempfile.mkstemp(prefix=_temp_prefix(path), dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        try:  # keep the owner when we are allowed to (root, or same user); ignore otherwise
            os.chown(tmp, st.st_uid, st.st_gid)
        except OSError:
            pass
        current = content_hash(path.read_bytes())
        if current != expected_hash:
            raise ChangedOnDiskError(
                f"{path}: file changed on disk while the edit was computed "
                f"(expected sha256 {expected_hash[:12]}, found {current[:12]}); "
                "not written — rerun cad-apply to edit the new content"
            )
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(path.parent)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale_temp_files(directory: Path) -> list[Path]:
    """Remove temp files left in `directory` by cad-apply runs that no longer exist."""
    removed: list[Path] = []
    try:
        entries = list(Path(directory).iterdir())
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        if TEMP_MARKER not in name or not entry.is_file():
            continue
        try:
            pid = int(name.split(TEMP_MARKER + ".", 1)[1].split(".", 1)[0])
        except (IndexError, ValueError):
            continue
        if pid != os.getpid() and _pid_alive(pid):
            continue
        try:
            entry.unlink()
            removed.append(entry)
        except OSError:
            pass
    return removed
