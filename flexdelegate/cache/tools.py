"""What `flexdelegate cache` does: info, verify, prune."""
from __future__ import annotations

import fcntl
import os
import stat
from collections import Counter

from .._native import cache_check
from ..paths import default_dir  # noqa: F401 - part of this module's API
from .format import MAGIC, TEMP_RE, CacheError, CacheOpenError, pid_alive, read_cache, verify_blobs

MiB = 1 << 20
SUFFIX = ".fxc"


def algo_name(algo: int) -> str:
    """A blob's packing algorithm in words (flex_api.h FLEX_PACK_* families)."""
    from .. import _native
    families = {v: k for k, v in _native.enum("FLEX_PACK_").items()}
    family = families.get(algo >> 24)
    if family == "gemm-panels":
        return f"GEMM panels, {algo & 0xFF} columns"
    if family == "winograd":
        return f"Winograd, {(algo >> 8) & 0xFF}x{(algo >> 8) & 0xFF} output tiles, panels of {algo & 0xFF}"
    return f"unknown algorithm {algo:#x}"


def model_status(m) -> str:
    """Whether the model file a record names is still there as recorded: "present" (same
    identity: a load replays its record), "changed" (another file or contents at that path),
    "gone", "unverified" (there, but the record holds no identity to compare: written within
    2 s of a change to the model), "inaccessible" (cannot stat it), "unknown" (no path)."""
    if not m.path:
        return "unknown"
    try:
        st = os.stat(m.path)
    except (FileNotFoundError, NotADirectoryError):
        return "gone"
    except OSError:
        return "inaccessible"
    if not m.identified:
        return "unverified"
    now = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    return "present" if now == (m.dev, m.ino, m.size, m.mtime_ns, m.ctime_ns) else "changed"


def info(path) -> dict:
    """Summary figures of a valid cache file (raises CacheError otherwise). models: one per
    load record: the model file's path as last seen (None: unknown), whether it is still
    there (model_status), its size and modification time as recorded (None when the record
    holds no file identity), and how many weights the load asked for."""
    cf = read_cache(path)
    models = [{"fingerprint": f"{m.fingerprint:016x}", "path": m.path or None, "status": model_status(m),
               "size_bytes": m.size if m.identified else None,
               "mtime_ns": m.mtime_ns if m.identified else None, "weights": len(m.keys)}
              for m in cf.models]
    return {
        "format_version": cf.format_version,
        "producer": cf.producer,
        "blob_count": len(cf.entries),
        "blob_bytes": cf.blob_bytes,
        "file_size": cf.file_size,
        "models_served": len(cf.fingerprints),
        "dedup_saved_bytes": cf.dedup_saved_bytes,
        "algos": dict(sorted(Counter(e.algo for e in cf.entries).items())),
        "models": models,
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
    missing, like writers do; tidy() removes it once its cache is gone, under the lock (writers
    check, once they hold a lock, that it is still the file at the name: take_lock)."""
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


def _is_ours(dir_fd: int, name: str) -> bool:
    """Whether `name` starts with the cache magic (a cache of any version, damaged or not):
    any other file merely named *.fxc is someone else's and is never removed."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return False
    try:
        return os.pread(fd, len(MAGIC), 0) == MAGIC
    except OSError:
        return False
    finally:
        os.close(fd)


def prune(directory, max_size_mb: float) -> list[str]:
    """Shrinks the `*.fxc` files directly in `directory` to at most `max_size_mb` MiB in total,
    removing the least recently used (max(atime, mtime)) first, and removes temp files of dead
    writers. Files whose lock is held are skipped. Symlinks, files without the cache magic and
    other names are never touched
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
            if st is not None and stat.S_ISREG(st.st_mode) and _is_ours(dir_fd, name):
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
                os.unlink(name + ".lock", dir_fd=dir_fd)  # held: its writers re-check (take_lock)
                total -= st.st_size
                removed.append(os.path.join(directory, name))
            finally:
                os.close(lock)
    finally:
        os.close(dir_fd)
    return removed


def tidy(directory) -> list[str]:
    """What `cache prune` also clears after prune(): orphan lock files and stale budget plans
    (directory/plans). Returns the removed paths."""
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        removed = _remove_orphan_locks(dir_fd, directory)
    finally:
        os.close(dir_fd)
    return removed + prune_plans(os.path.join(directory, "plans"))


def _remove_orphan_locks(dir_fd: int, directory) -> list[str]:
    """`<x>.fxc.lock` files whose `<x>.fxc` is gone, removed while held (no writer is mid-write:
    a writer holds the lock through its whole write)."""
    removed = []
    for name in sorted(os.listdir(dir_fd)):
        if not name.endswith(SUFFIX + ".lock"):
            continue
        base = name[: -len(".lock")]
        st = _lstat(dir_fd, name)
        if st is None or not stat.S_ISREG(st.st_mode) or _lstat(dir_fd, base) is not None:
            continue
        lock = _try_lock(dir_fd, base)
        if lock is None:
            continue
        try:
            now, held = _lstat(dir_fd, name), os.fstat(lock)
            if _lstat(dir_fd, base) is None and now is not None and (now.st_ino, now.st_dev) == (held.st_ino, held.st_dev):
                os.unlink(name, dir_fd=dir_fd)
                removed.append(os.path.join(directory, name))
        finally:
            os.close(lock)
    return removed


def prune_plans(plans_dir) -> list[str]:
    """Stale budget plans (planner/cache.py): files of another plan format or unreadable, and
    temp files a writer left an hour ago or more. A missing directory has none."""
    import json
    import time

    from ..planner.cache import FORMAT
    try:
        names = sorted(os.listdir(plans_dir))
    except (FileNotFoundError, NotADirectoryError):
        return []
    removed = []
    for name in names:
        path = os.path.join(plans_dir, name)
        try:
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode):
                continue
            if name.startswith(".") and name.endswith(".tmp"):
                stale = time.time() - st.st_mtime >= 3600
            elif name.endswith(".json"):
                try:
                    with open(path, "rb") as f:
                        stale = json.loads(f.read()).get("format") != FORMAT
                except (ValueError, AttributeError):
                    stale = True
            else:
                continue
            if stale:
                os.unlink(path)
                removed.append(path)
        except FileNotFoundError:
            continue
    return removed
