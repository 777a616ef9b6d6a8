"""What `flexdelegate cache` does: info, verify, prune."""
from __future__ import annotations

import fcntl
import os
import stat
from collections import Counter

from .._native import cache_check
from .format import TEMP_RE, CacheError, CacheOpenError, pid_alive, read_cache, verify_blobs

MiB = 1 << 20
SUFFIX = ".fxc"


def info(path) -> dict:
    """Summary figures of a valid cache file (raises CacheError otherwise)."""
    cf = read_cache(path)
    return {
        "format_version": cf.format_version,
        "producer": cf.producer,
        "blob_count": len(cf.entries),
        "blob_bytes": cf.blob_bytes,
        "file_size": cf.file_size,
        "models_served": len(cf.fingerprints),
        "dedup_saved_bytes": cf.dedup_saved_bytes,
        "algos": dict(sorted(Counter(e.algo for e in cf.entries).items())),
    }


def verify(path) -> tuple[bool, list[str]]:
    """(ok, problems): loader validation plus every blob checksum, and the delegate's own C
    loader must accept the file too. A path that cannot be opened as a regular file is not a
    damaged cache: CacheOpenError propagates."""
    try:
        problems = verify_blobs(path)
    except CacheOpenError:
        raise
    except CacheError as e:
        return False, [str(e)]
    refused = cache_check(path)
    if refused is not None:  # the readers disagree (or the file changed in between)
        problems.append(f"{path}: the delegate's loader refuses it: {refused}")
    return not problems, problems


def _try_lock(dir_fd: int, name: str) -> int | None:
    """flock(LOCK_EX|LOCK_NB) on `<name>.lock`, or None if a writer holds it or the lock file
    is unusable (e.g. a symlink): then the file is left alone. The lock file is created if
    missing, like writers do, and never removed: unlinking a lock file races with a writer
    that already opened it (two holders of two different inodes)."""
    flags = os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(name + ".lock", flags, 0o644, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _lstat(dir_fd: int, name: str):
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def prune(directory, max_size_mb: float) -> list[str]:
    """Shrinks the `*.fxc` files directly in `directory` to at most `max_size_mb` MiB in total,
    removing the least recently used (max(atime, mtime)) first, and removes temp files of dead
    writers. Files whose lock is held are skipped. Symlinks and other names are never touched
    (entries are handled relative to the directory's fd, never followed). Returns removed paths."""
    if not max_size_mb >= 0:
        raise ValueError(f"max size must be >= 0 MB, got {max_size_mb!r}")
    limit = max_size_mb * MiB  # float: inf means no limit
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    removed: list[str] = []
    try:
        names = sorted(os.listdir(dir_fd))
        # Dead writers' temp files, under their target's lock as FORMAT.md asks.
        for name in names:
            m = TEMP_RE.match(name)
            if not m or not m["base"].endswith(SUFFIX) or pid_alive(int(m["pid"])) is not False:
                continue
            st = _lstat(dir_fd, name)
            if st is None or not stat.S_ISREG(st.st_mode):
                continue
            lock = _try_lock(dir_fd, m["base"])
            if lock is None:
                continue
            try:
                st = _lstat(dir_fd, name)
                if st is not None and stat.S_ISREG(st.st_mode):
                    os.unlink(name, dir_fd=dir_fd)
                    removed.append(os.path.join(directory, name))
            finally:
                os.close(lock)

        files = []
        for name in names:
            st = _lstat(dir_fd, name) if name.endswith(SUFFIX) else None
            if st is not None and stat.S_ISREG(st.st_mode):
                files.append((max(st.st_atime_ns, st.st_mtime_ns), name, st))
        total = sum(st.st_size for _, _, st in files)
        for _, name, st in sorted(files):
            if total <= limit:
                break
            lock = _try_lock(dir_fd, name)
            if lock is None:
                continue  # a writer is extending it
            try:
                now = _lstat(dir_fd, name)
                if now is None or not stat.S_ISREG(now.st_mode):
                    total -= st.st_size
                    continue
                if (now.st_ino, now.st_mtime_ns) != (st.st_ino, st.st_mtime_ns):
                    total += now.st_size - st.st_size  # rewritten since the scan: just used
                    continue
                os.unlink(name, dir_fd=dir_fd)
                total -= st.st_size
                removed.append(os.path.join(directory, name))
            finally:
                os.close(lock)
    finally:
        os.close(dir_fd)
    return removed
