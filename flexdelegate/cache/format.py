"""Reader, validator and reference writer for the packed-weight cache file (FORMAT.md, v1).

`read_cache` accepts exactly what a loader accepts (FORMAT.md "Validity"); anything else,
including hostile bytes, raises `CacheError` and nothing else. `verify_blobs` adds the checks
a loader skips (blob checksums and the header's derived fields)."""
from __future__ import annotations

import errno
import fcntl
import os
import platform
import re
import stat
import struct
from dataclasses import dataclass, field

from .. import __version__
from .._native import hash64

MAGIC = b"FLXCACHE"
FORMAT_VERSION = 1
HEADER_SIZE = 256
PAGE = 4096  # blobs start on page boundaries so each maps and drops independently
ENTRY_SIZE = 64
MODEL_SIZE = 8
PRODUCER_SIZE = 64
U32, U64 = (1 << 32) - 1, (1 << 64) - 1

# magic, version, header_size, file_size, index_offset, index_count, index_checksum,
# models_offset, models_count, models_checksum, blob_bytes, dedup_saved_bytes, producer,
# reserved, header_checksum
_HEADER = struct.Struct("<8sIIQQQQQQQQQ64s96sQ")
# key_hi, key_lo, algo, layout_version, offset, size, checksum, reserved
_ENTRY = struct.Struct("<QQIIQQQ16s")
assert _HEADER.size == HEADER_SIZE and _ENTRY.size == ENTRY_SIZE

# `<path>.tmp.<pid>.<n>`: a writer's temp file (FORMAT.md "Writers").
TEMP_RE = re.compile(r"^(?P<base>.+)\.tmp\.(?P<pid>[0-9]+)\.(?P<n>[0-9]+)$")


class CacheError(ValueError):
    """The file is not a valid cache file (FORMAT.md "Validity")."""


class CacheOpenError(CacheError):
    """The path cannot be opened as a regular file: missing, a directory, a symlink, no access.
    Kept apart from damage so the CLI can answer "usage error" (2) rather than "damaged" (1)."""


@dataclass(frozen=True)
class Entry:
    key_hi: int
    key_lo: int
    algo: int
    layout_version: int
    offset: int
    size: int
    checksum: int

    @property
    def key(self) -> tuple[int, int, int, int]:
        """The index's sort key. FORMAT.md says (key_hi, key_lo, algo); layout_version is the
        last tie-breaker, as in the C loader, because after a layout bump one file can hold
        the old and the new packing of the same weights."""
        return (self.key_hi, self.key_lo, self.algo, self.layout_version)


@dataclass
class CacheFile:
    path: str
    format_version: int
    header_size: int
    file_size: int
    index_offset: int
    index_count: int
    index_checksum: int
    models_offset: int
    models_count: int
    models_checksum: int
    blob_bytes: int
    dedup_saved_bytes: int
    producer: str
    header_checksum: int
    entries: list[Entry] = field(default_factory=list)
    models: list[int] = field(default_factory=list)


# ---------------------------------------------------------------------------------------- read

def _open(path) -> int:
    """Opens a regular file read-only without following a final symlink. O_NONBLOCK so that a
    FIFO planted at the path cannot hang us (no effect on regular files)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise CacheOpenError(f"{path}: no such file") from None
    except ValueError:  # an embedded NUL
        raise CacheOpenError(f"{path!r}: not a valid path") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise CacheOpenError(f"{path}: is a symlink (refusing to follow it)") from None
        raise CacheOpenError(f"{path}: cannot open: {e.strerror}") from None
    try:
        st = os.fstat(fd)
    except OSError as e:
        os.close(fd)
        raise CacheOpenError(f"{path}: cannot stat: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        what = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise CacheOpenError(f"{path}: is {what}")
    return fd


def _pread(fd: int, size: int, offset: int, path, what: str) -> bytes:
    """Exactly `size` bytes or CacheError (a short read means the file shrank under us)."""
    chunks, got = [], 0
    try:
        while got < size:
            chunk = os.pread(fd, min(size - got, 1 << 30), offset + got)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    except OSError as e:
        raise CacheError(f"{path}: reading {what}: {e.strerror}") from None
    if got != size:
        raise CacheError(f"{path}: {what} truncated: read {got} of {size} bytes at offset {offset}")
    return b"".join(chunks)


def _mismatch(what: str, stored: int, data) -> str | None:
    actual = hash64(data)
    if actual == stored:
        return None
    return f"{what} checksum mismatch (stored {stored:#018x}, computed {actual:#018x})"


def _parse(fd: int, path) -> CacheFile:
    def bad(message: str) -> CacheError:
        return CacheError(f"{path}: {message}")

    real_size = os.fstat(fd).st_size
    if real_size == 0:
        raise bad("empty file (0 bytes)")
    if real_size < HEADER_SIZE:
        raise bad(f"truncated: {real_size} bytes, shorter than the {HEADER_SIZE}-byte header")
    raw = _pread(fd, HEADER_SIZE, 0, path, "header")
    (magic, version, header_size, file_size, index_offset, index_count, index_checksum,
     models_offset, models_count, models_checksum, blob_bytes, dedup, producer, _reserved,
     header_checksum) = _HEADER.unpack(raw)

    # Header first: until its checksum matches, no other field is worth reporting.
    if magic != MAGIC:
        raise bad(f"bad magic {magic!r} (expected {MAGIC!r}): not a flexdelegate cache file")
    if version != FORMAT_VERSION:
        raise bad(f"unsupported format_version {version} (this reader handles {FORMAT_VERSION})")
    if header_size != HEADER_SIZE:
        raise bad(f"header_size {header_size} (expected {HEADER_SIZE})")
    if problem := _mismatch("header", header_checksum, raw[:HEADER_SIZE - 8]):
        raise bad(problem)
    if file_size != real_size:
        raise bad(f"file_size {file_size} in header but the file has {real_size} bytes")

    # Tables: Python ints cannot overflow, so hostile counts just fail the bounds checks.
    if index_offset % ENTRY_SIZE or index_offset < PAGE:
        raise bad(f"index_offset {index_offset} must be a multiple of {ENTRY_SIZE} and >= {PAGE}")
    index_end = index_offset + ENTRY_SIZE * index_count
    if index_end > file_size:
        raise bad(f"index [{index_offset}, {index_end}) ({index_count} entries) "
                  f"runs past the end of the file ({file_size} bytes)")
    if models_offset != index_end:
        raise bad(f"models_offset {models_offset} does not follow the index (expected {index_end})")
    models_end = models_offset + MODEL_SIZE * models_count
    if models_end != file_size:
        raise bad(f"model table [{models_offset}, {models_end}) ({models_count} models) "
                  f"does not end at the end of the file ({file_size} bytes)")
    index_raw = _pread(fd, index_end - index_offset, index_offset, path, "index")
    if problem := _mismatch("index", index_checksum, index_raw):
        raise bad(problem)
    models_raw = _pread(fd, models_end - models_offset, models_offset, path, "model table")
    if problem := _mismatch("model table", models_checksum, models_raw):
        raise bad(problem)

    models = list(struct.unpack(f"<{models_count}Q", models_raw))
    for i in range(1, len(models)):
        if models[i] <= models[i - 1]:  # the loader binary-searches it
            raise bad(f"model table not strictly increasing at entry {i} "
                      f"({models[i - 1]:#018x} then {models[i]:#018x})")
    entries = [Entry(*_ENTRY.unpack_from(index_raw, i * ENTRY_SIZE)[:7]) for i in range(index_count)]
    for i in range(1, len(entries)):
        if entries[i].key <= entries[i - 1].key:
            raise bad(f"index keys not strictly increasing at entry {i} "
                      f"({_fmt_key(entries[i - 1])} then {_fmt_key(entries[i])})")
    for i, e in enumerate(entries):
        if e.offset % PAGE:
            raise bad(f"entry {i} blob offset {e.offset} is not a multiple of {PAGE}")
        if e.offset < PAGE or e.offset + e.size > index_offset:
            raise bad(f"entry {i} blob [{e.offset}, {e.offset + e.size}) lies outside "
                      f"the blob region [{PAGE}, {index_offset})")
    by_offset = sorted(range(len(entries)), key=lambda i: (entries[i].offset, entries[i].size))
    for a, b in zip(by_offset, by_offset[1:]):
        if entries[a].offset + entries[a].size > entries[b].offset:
            raise bad(f"blobs of entries {a} and {b} overlap "
                      f"([{entries[a].offset}, {entries[a].offset + entries[a].size}) and "
                      f"[{entries[b].offset}, {entries[b].offset + entries[b].size}))")

    return CacheFile(
        path=os.fspath(path), format_version=version, header_size=header_size, file_size=file_size,
        index_offset=index_offset, index_count=index_count, index_checksum=index_checksum,
        models_offset=models_offset, models_count=models_count, models_checksum=models_checksum,
        blob_bytes=blob_bytes, dedup_saved_bytes=dedup,
        producer=producer.split(b"\0", 1)[0].decode("utf-8", "replace"),
        header_checksum=header_checksum, entries=entries, models=models)


def _fmt_key(e: Entry) -> str:
    return f"({e.key_hi:#018x}, {e.key_lo:#018x}, algo {e.algo:#x}, layout {e.layout_version})"


def read_cache(path) -> CacheFile:
    """Parses and validates the header, index and model table (blob contents are not read)."""
    fd = _open(path)
    try:
        return _parse(fd, path)
    finally:
        os.close(fd)


def verify_blobs(path) -> list[str]:
    """What a loader does not check, as problems "<path>: ..." ([] = clean): every blob's
    checksum, blob_bytes = sum of blob sizes, reserved areas zero. Raises CacheError if the
    file fails read_cache's validation (then no blob can be located)."""
    fd = _open(path)
    try:
        cf = _parse(fd, path)  # same fd: a concurrent rename cannot mix two files
        problems = []
        for i, e in enumerate(cf.entries):
            try:
                data = _pread(fd, e.size, e.offset, path, f"blob {i}")
            except CacheError as err:
                problems.append(str(err))
                continue
            if problem := _mismatch(f"blob {i} {_fmt_key(e)} at offset {e.offset} ({e.size} bytes):",
                                    e.checksum, data):
                problems.append(f"{path}: {problem}")
        total = sum(e.size for e in cf.entries)
        if total != cf.blob_bytes:
            problems.append(f"{path}: header blob_bytes {cf.blob_bytes} != sum of blob sizes {total}")
        header = _pread(fd, PAGE, 0, path, "header page")
        if header[152:248].strip(b"\0") or header[HEADER_SIZE:].strip(b"\0"):
            problems.append(f"{path}: reserved header bytes (152..248 or {HEADER_SIZE}..{PAGE}) are not zero")
        index = _pread(fd, ENTRY_SIZE * cf.index_count, cf.index_offset, path, "index")
        bad = [i for i in range(cf.index_count)
               if index[i * ENTRY_SIZE + 48:(i + 1) * ENTRY_SIZE].strip(b"\0")]
        if bad:
            problems.append(f"{path}: reserved bytes of index entries {bad[:10]} are not zero")
        return problems
    finally:
        os.close(fd)


# --------------------------------------------------------------------------------------- write

def default_producer() -> str:
    return f"flexdelegate {__version__} {platform.machine()}"


def pid_alive(pid: int) -> bool | None:
    """True/False, or None when the number cannot be a writer's pid (callers leave such
    files alone). EPERM means the process exists but belongs to someone else."""
    if pid <= 0:
        return None  # kill(0) / kill(-n) would signal process groups
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, OSError):
        return None
    return True


def _remove_dead_temps(dir_fd: int, base: str) -> list[str]:
    """Removes `<base>.tmp.<pid>.<n>` regular files whose writer is dead (caller holds the lock)."""
    removed = []
    for name in os.listdir(dir_fd):
        m = TEMP_RE.match(name)
        if not m or m["base"] != base or pid_alive(int(m["pid"])) is not False:
            continue
        try:
            if stat.S_ISREG(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                os.unlink(name, dir_fd=dir_fd)
                removed.append(name)
        except FileNotFoundError:
            pass
    return removed


def _check_int(value, limit: int, what: str) -> int:
    if not isinstance(value, int) or not 0 <= value <= limit:
        raise ValueError(f"write_cache: {what} must be an int in [0, {limit}], got {value!r}")
    return value


def build_cache(blobs, models, producer: str | None = None, dedup_saved_bytes: int = 0) -> bytes:
    """The bytes of a valid cache file holding `blobs` [(key_hi, key_lo, algo, layout_version,
    data)] in the given order and the fingerprints `models` (sorted, duplicates dropped)."""
    producer_raw = (default_producer() if producer is None else producer).encode()
    if len(producer_raw) >= PRODUCER_SIZE or b"\0" in producer_raw:
        raise ValueError(f"write_cache: producer must be < {PRODUCER_SIZE} bytes of UTF-8 without NUL")
    _check_int(dedup_saved_bytes, U64, "dedup_saved_bytes")
    out = bytearray(PAGE)  # header placeholder + zero padding up to the first blob
    entries = []
    for item in blobs:
        key_hi, key_lo, algo, layout, data = item
        data = bytes(data)
        if not data:  # packed weights are never empty; an empty blob may land on index_offset
            raise ValueError("write_cache: empty blob")
        for value, limit, what in ((key_hi, U64, "key_hi"), (key_lo, U64, "key_lo"),
                                   (algo, U32, "algo"), (layout, U32, "layout_version")):
            _check_int(value, limit, what)
        out += bytes(-len(out) % PAGE)
        entries.append((key_hi, key_lo, algo, layout, len(out), len(data), hash64(data), b""))
        out += data
    entries.sort(key=lambda e: e[:4])
    for a, b in zip(entries, entries[1:]):
        if a[:4] == b[:4]:
            raise ValueError(f"write_cache: duplicate key (key_hi, key_lo, algo, layout_version) = {a[:4]}")
    out += bytes(-len(out) % ENTRY_SIZE)
    index_offset = len(out)
    index = b"".join(_ENTRY.pack(*e) for e in entries)
    models = sorted({_check_int(m, U64, "model fingerprint") for m in models})
    table = struct.pack(f"<{len(models)}Q", *models)
    out += index + table
    header = _HEADER.pack(
        MAGIC, FORMAT_VERSION, HEADER_SIZE, len(out), index_offset, len(entries), hash64(index),
        index_offset + len(index), len(models), hash64(table), sum(e[5] for e in entries),
        dedup_saved_bytes, producer_raw, b"", 0)
    out[:HEADER_SIZE - 8] = header[:HEADER_SIZE - 8]
    out[HEADER_SIZE - 8:HEADER_SIZE] = struct.pack("<Q", hash64(header[:HEADER_SIZE - 8]))
    return bytes(out)


def write_cache(path, blobs, models, producer: str | None = None, dedup_saved_bytes: int = 0) -> None:
    """Replaces `path` with a cache file holding exactly `blobs` and `models` (see build_cache),
    the way FORMAT.md "Writers" says: under flock(<path>.lock), write <path>.tmp.<pid>.<n>
    (O_EXCL|O_NOFOLLOW, 0644) with the header last, fsync, rename over path, fsync the directory.
    It replaces rather than merges: the old content is not carried over."""
    data = build_cache(blobs, models, producer, dedup_saved_bytes)
    path = os.fspath(path)
    directory, base = os.path.split(os.path.abspath(path))
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        lock_fd = os.open(base + ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                          0o644, dir_fd=dir_fd)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            _remove_dead_temps(dir_fd, base)
            tmp = _write_temp(dir_fd, base, data)
            try:
                os.rename(tmp, base, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except BaseException:
                os.unlink(tmp, dir_fd=dir_fd)
                raise
            os.fsync(dir_fd)  # make the rename itself durable
        finally:
            os.close(lock_fd)  # closing releases the flock
    finally:
        os.close(dir_fd)


def _write_temp(dir_fd: int, base: str, data: bytes) -> str:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for n in range(1000):
        tmp = f"{base}.tmp.{os.getpid()}.{n}"
        try:
            fd = os.open(tmp, flags, 0o644, dir_fd=dir_fd)
            break
        except FileExistsError:
            continue  # a leftover of ours (or a live writer's): never reuse it
    else:
        raise OSError(errno.EEXIST, f"write_cache: no free temp name for {base}")
    try:
        os.fchmod(fd, 0o644)  # the mode must not depend on the umask
        # The header goes in last, so a torn temp file never carries a valid header.
        view = memoryview(data)
        pos = HEADER_SIZE
        while pos < len(data):
            pos += os.pwrite(fd, view[pos:], pos)
        pos = 0
        while pos < HEADER_SIZE:
            pos += os.pwrite(fd, view[pos:HEADER_SIZE], pos)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(tmp, dir_fd=dir_fd)
        raise
    os.close(fd)
    return tmp
