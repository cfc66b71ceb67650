"""Crash-safe file replacement for `cad-apply --write`.

Owns: writing new bytes over an existing file so that, whatever happens (Ctrl-C, SIGTERM,
SIGKILL, power loss after fsync), the path holds either the complete old content or the
complete new content, never a mix. Recipe: temp file in the same directory, write, fsync,
copy the mode bits, re-check that the target still has the content we read (refuse otherwise),
``os.replace``, fsync the directory.

A read-only target (no write bit, or not writable by us) is refused with `ReadOnlyFileError`
unless the caller allows it: the rename would otherwise replace it silently, since renaming
needs only a writable directory. Temp names end in 128 random bits, and the caller is told the
name (`on_temp`, the journal records it) *before* the file is created, so
`clean_stale_temp_files` removes only temp files a killed run is known to have created, never a
file that merely looks like one.
"""
from __future__ import annotations

import hashlib
import os
import secrets
import stat
from pathlib import Path
from typing import Callable, Iterable

TEMP_MARKER = ".cad-apply-tmp"


class ChangedOnDiskError(RuntimeError):
    """The target changed between our read and our write; nothing was written."""


def content_hash(data: bytes) -> str:
    """Stable content hash used by the journal and the changed-on-disk check."""
    return hashlib.sha256(data).hexdigest()


class ReadOnlyFileError(PermissionError):
    """The target is read-only and the caller did not allow replacing it; nothing was written."""


def is_read_only(path: Path) -> bool:
    """No write permission bit at all, or not writable by this process."""
    st = os.stat(path)
    return not st.st_mode & 0o222 or not os.access(path, os.W_OK)


def temp_path(path: Path) -> Path:
    """An unguessable temp name beside ``path``: ``.<name>.cad-apply-tmp.<pid>.<32 hex>``."""
    return path.parent / f".{path.name}{TEMP_MARKER}.{os.getpid()}.{secrets.token_hex(16)}"


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


def atomic_replace(path: Path, data: bytes, *, expected_hash: str, allow_read_only: bool = False,
                   on_temp: Callable[[Path], None] | None = None) -> None:
    """Replace `path` with `data` atomically, preserving its mode bits.

    `expected_hash` is the `content_hash` of the bytes the caller read; if the file on disk no
    longer matches it, raise `ChangedOnDiskError` and leave the file alone. A read-only `path`
    raises `ReadOnlyFileError` unless `allow_read_only`. `on_temp(tmp)` is called with the temp
    file's name before it is created (to journal it for `clean_stale_temp_files`).
    """
    path = Path(path)
    st = path.stat()
    if not allow_read_only and is_read_only(path):
        raise ReadOnlyFileError(
            f"{path}: the file is read-only (mode {stat.S_IMODE(st.st_mode):04o}); not written. "
            "Make it writable (chmod u+w) or pass --allow-read-only to replace it anyway")
    tmp = temp_path(path)
    if on_temp is not None:
        on_temp(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
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


def clean_stale_temp_files(candidates: Iterable[Path]) -> list[Path]:
    """Remove the journaled temp files (`candidates`) that a dead cad-apply run left behind.

    Only names this module generates are considered (marker, pid, 32 hex digits), only regular
    files (not symlinks), and only when the pid in the name is not a live process other than us.
    """
    removed: list[Path] = []
    for entry in candidates:
        entry = Path(entry)
        parts = entry.name.split(TEMP_MARKER + ".", 1)
        try:
            pid_text, token = parts[1].split(".", 1)
            pid = int(pid_text)
        except (IndexError, ValueError):
            continue
        if len(token) != 32 or any(c not in "0123456789abcdef" for c in token):
            continue
        if pid != os.getpid() and _pid_alive(pid):
            continue
        try:
            if not stat.S_ISREG(entry.lstat().st_mode):
                continue
            entry.unlink()
            removed.append(entry)
        except OSError:
            pass
    return removed
