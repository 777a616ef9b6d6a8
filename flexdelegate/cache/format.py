"""Reader, validator and reference writer for the packed-weight cache file (FORMAT.md, v3).

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
from dataclasses import dataclass, field, replace

from .. import __version__
from .._native import hash64, lib

MAGIC = b"FLXCACHE"
FORMAT_VERSION = 3
HEADER_SIZE = 256
PAGE = 4096  # blobs start on page boundaries so each maps and drops independently
ENTRY_SIZE = 64
MODEL_SIZE = 80
KEY_SIZE = 32
RESERVED_AT = 184  # header bytes [184, 248) are reserved (zero)
PATH_MAX = lib.FLEX_CACHE_PATH_MAX  # a recorded model path's bytes, NUL included (flex_api.h)
PRODUCER_SIZE = 64
U32, U64 = (1 << 32) - 1, (1 << 64) - 1

# magic, version, header_size, file_size, index_offset, index_count, index_checksum,
# models_offset, models_count, models_checksum, blob_bytes, dedup_saved_bytes, producer,
# keys_offset, keys_count, paths_offset, paths_bytes, reserved, header_checksum
_HEADER = struct.Struct("<8sIIQQQQQQQQQ64sQQQQ64sQ")
# key_hi, key_lo, algo, layout_version, offset, size, checksum, reserved
_ENTRY = struct.Struct("<QQIIQQQ16s")
# fingerprint, dev, ino, size, mtime_ns, ctime_ns, first_key, n_keys, machine, path_offset, path_len, reserved
_MODEL = struct.Struct("<QQQQqqQIIQII")
# key_hi, key_lo, algo, layout_version, size
_KEY = struct.Struct("<QQIIQ")
assert _HEADER.size == HEADER_SIZE and _ENTRY.size == ENTRY_SIZE
assert _MODEL.size == MODEL_SIZE and _KEY.size == KEY_SIZE

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


@dataclass(frozen=True)
class ModelRecord:
    """A load the file served: fingerprint, the model file's identity (dev = ino = 0 when not
    known; see `identified`), the keys it asked for, in order, and the model file's path as that load saw it
    ("" when unknown; a str, os.fsdecode of the bytes) (FORMAT.md "Model records")."""
    fingerprint: int
    dev: int = 0
    ino: int = 0
    size: int = 0
    mtime_ns: int = 0
    ctime_ns: int = 0
    machine: int = 0
    keys: tuple = ()  # ((key_hi, key_lo, algo, layout_version, size), ...)
    path: str = ""

    @property
    def order(self) -> tuple[int, int, int]:
        return (self.fingerprint, self.dev, self.ino)

    @property
    def identified(self) -> bool:
        """The record holds which version of the model file it was (its times): a load of that
        very file replays it. Without (times 0: written within 2 s of a change to the file, or
        no file at all), dev and ino at most say which file it is about."""
        return bool(self.mtime_ns or self.ctime_ns)


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
    keys_offset: int = 0
    keys_count: int = 0
    paths_offset: int = 0
    paths_bytes: int = 0
    entries: list[Entry] = field(default_factory=list)
    models: list[ModelRecord] = field(default_factory=list)

    @property
    def fingerprints(self) -> set[int]:
        return {m.fingerprint for m in self.models}


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
     models_offset, models_count, models_checksum, blob_bytes, dedup, producer, keys_offset,
     keys_count, paths_offset, paths_bytes, _reserved, header_checksum) = _HEADER.unpack(raw)

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

    # Tables: back to back from index_offset, in this order, to the end of the file. Python ints
    # cannot overflow, so hostile counts just fail these checks. Per table: its offset's header
    # field, its name, offset and bytes, and what to say where its end is checked against the
    # file's (the records and keys at once, after the keys).
    if index_offset % ENTRY_SIZE or index_offset < PAGE:
        raise bad(f"index_offset {index_offset} must be a multiple of {ENTRY_SIZE} and >= {PAGE}")
    index_end = index_offset + ENTRY_SIZE * index_count
    keys_end = keys_offset + KEY_SIZE * keys_count
    tables = [
        ("index_offset", "index", index_offset, ENTRY_SIZE * index_count,
         f"index [{index_offset}, {index_end}) ({index_count} entries) runs"),
        ("models_offset", "model records", models_offset, MODEL_SIZE * models_count, None),
        ("keys_offset", "keys", keys_offset, KEY_SIZE * keys_count,
         f"model records and keys [{models_offset}, {keys_end}) ({models_count} records, {keys_count} keys) run"),
        ("paths_offset", "model paths", paths_offset, paths_bytes, None),
    ]
    end, before = index_offset, None
    for field, name, offset, size, past_end in tables:
        if before and offset != end:
            raise bad(f"{field} {offset} does not follow the {before} (expected {end})")
        end, before = offset + size, name
        if past_end and end > file_size:
            raise bad(f"{past_end} past the end of the file ({file_size} bytes)")
    if end != file_size:
        raise bad(f"model paths [{paths_offset}, {end}) do not end at the end of the file ({file_size} bytes)")
    index_raw = _pread(fd, index_end - index_offset, index_offset, path, "index")
    if problem := _mismatch("index", index_checksum, index_raw):
        raise bad(problem)
    models_raw = _pread(fd, file_size - models_offset, models_offset, path, "model table")
    if problem := _mismatch("model table", models_checksum, models_raw):
        raise bad(problem)

    keys_raw = models_raw[MODEL_SIZE * models_count:keys_end - models_offset]
    paths_raw = models_raw[keys_end - models_offset:]
    all_keys = [_KEY.unpack_from(keys_raw, i * KEY_SIZE) for i in range(keys_count)]
    models = []
    for i in range(models_count):
        (fp, dev, ino, size, mtime, ctime, first, n, machine, path_at, path_len,
         _) = _MODEL.unpack_from(models_raw, i * MODEL_SIZE)
        if first > keys_count or n > keys_count - first:
            raise bad(f"model record {i} keys [{first}, {first + n}) outside the {keys_count} keys")
        if problem := _path_problem(paths_raw, path_at, path_len):
            raise bad(f"model record {i} {problem}")
        model_path = os.fsdecode(paths_raw[path_at:path_at + path_len])
        models.append(ModelRecord(fp, dev, ino, size, mtime, ctime, machine, tuple(all_keys[first:first + n]),
                                  model_path))
        if i and models[i].order <= models[i - 1].order:
            raise bad(f"model records not strictly increasing by (fingerprint, dev, ino) at record {i}")
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
    # By offset alone, ties in index order, as the C loader's stable sort leaves them: an empty
    # blob at the start of another one is an overlap exactly when it comes second in the index.
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
        header_checksum=header_checksum, keys_offset=keys_offset, keys_count=keys_count,
        paths_offset=paths_offset, paths_bytes=paths_bytes, entries=entries, models=models)


def _path_problem(paths: bytes, at: int, length: int) -> str | None:
    """Why a record's path reference is unsound (FORMAT.md "Validity"), the C loader's rules
    (store/cache_file.c check_path), or None."""
    if not length:
        return f"path offset {at} without a path" if at else None
    if length >= PATH_MAX:
        return f"path of {length} bytes (at most {PATH_MAX - 1})"
    if at >= len(paths) or length >= len(paths) - at:
        return f"path [{at}, {at + length}] outside the {len(paths)} bytes of paths"
    if paths[at + length] != 0:
        return f"path at {at} is not NUL-terminated after {length} bytes"
    if 0 in paths[at:at + length]:
        return f"path at {at} holds a NUL"
    if paths[at] != ord("/"):
        return f"path at {at} is not absolute"
    return None


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
        if header[RESERVED_AT:248].strip(b"\0") or header[HEADER_SIZE:].strip(b"\0"):
            problems.append(f"{path}: reserved header bytes ({RESERVED_AT}..248 or {HEADER_SIZE}..{PAGE}) are not zero")
        index = _pread(fd, ENTRY_SIZE * cf.index_count, cf.index_offset, path, "index")
        bad = [i for i in range(cf.index_count)
               if index[i * ENTRY_SIZE + 48:(i + 1) * ENTRY_SIZE].strip(b"\0")]
        if bad:
            problems.append(f"{path}: reserved bytes of index entries {bad[:10]} are not zero")
        records = _pread(fd, MODEL_SIZE * cf.models_count, cf.models_offset, path, "model records")
        bad = [i for i in range(cf.models_count)
               if records[(i + 1) * MODEL_SIZE - 4:(i + 1) * MODEL_SIZE].strip(b"\0")]
        if bad:
            problems.append(f"{path}: reserved bytes of model records {bad[:10]} are not zero")
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


def _check_i64(value, what: str) -> int:
    if not isinstance(value, int) or not -(1 << 63) <= value < (1 << 63):
        raise ValueError(f"write_cache: {what} must be an int in [-2**63, 2**63 - 1], got {value!r}")
    return value


def _key(k) -> tuple:
    try:
        k = tuple(k)
    except TypeError:
        k = None
    if k is None or len(k) != 5:
        raise ValueError("write_cache: a model record key must be (key_hi, key_lo, algo, layout_version, size)")
    for v, limit, what in zip(k, (U64, U64, U32, U32, U64), ("key_hi", "key_lo", "algo", "layout_version", "size")):
        _check_int(v, limit, f"model record key {what}")
    return k


def _record(m) -> ModelRecord:
    """A ModelRecord, or a bare fingerprint (a record with no file identity and no keys).
    Every field is range-checked here so that bad input is a ValueError, never a struct.error
    from packing; keys come back as a tuple of tuples, as read_cache returns them."""
    rec = m if isinstance(m, ModelRecord) else ModelRecord(_check_int(m, U64, "model fingerprint"))
    for v, limit, what in ((rec.fingerprint, U64, "fingerprint"), (rec.dev, U64, "dev"), (rec.ino, U64, "ino"),
                           (rec.size, U64, "size"), (rec.machine, U32, "machine")):
        _check_int(v, limit, f"model record {what}")
    _check_i64(rec.mtime_ns, "model record mtime_ns")
    _check_i64(rec.ctime_ns, "model record ctime_ns")
    if not isinstance(rec.path, str):
        raise ValueError(f"write_cache: model record path must be a str, got {rec.path!r}")
    raw = os.fsencode(rec.path)
    if raw and (not raw.startswith(b"/") or b"\0" in raw or len(raw) >= PATH_MAX):
        raise ValueError(f"write_cache: model record path must be absolute, without NUL, "
                         f"under {PATH_MAX} bytes, got {rec.path!r}")
    try:
        keys = list(rec.keys)
    except TypeError:
        raise ValueError(f"write_cache: model record keys must be a sequence of keys, got {rec.keys!r}") from None
    keys = tuple(map(_key, keys))
    if len(keys) > U32:  # n_keys is a u32
        raise ValueError(f"write_cache: a model record holds at most {U32} keys")
    return replace(rec, keys=keys)


def build_cache(blobs, models, producer: str | None = None, dedup_saved_bytes: int = 0) -> bytes:
    """The bytes of a valid cache file holding `blobs` [(key_hi, key_lo, algo, layout_version,
    data)] in the given order and the model records `models` (ModelRecord, or bare fingerprints;
    sorted, duplicates by (fingerprint, dev, ino) dropped)."""
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
    records = sorted({r.order: r for r in map(_record, models)}.values(), key=lambda r: r.order)
    keys, table, paths = [], b"", b""
    for r in records:
        raw = os.fsencode(r.path)
        table += _MODEL.pack(r.fingerprint, r.dev, r.ino, r.size, r.mtime_ns, r.ctime_ns, len(keys),
                             len(r.keys), r.machine, len(paths) if raw else 0, len(raw), 0)
        keys += list(r.keys)
        paths += raw + b"\0" if raw else b""
    table += b"".join(_KEY.pack(*k) for k in keys) + paths
    out += index + table
    models_offset = index_offset + len(index)
    keys_offset = models_offset + MODEL_SIZE * len(records)
    header = _HEADER.pack(
        MAGIC, FORMAT_VERSION, HEADER_SIZE, len(out), index_offset, len(entries), hash64(index),
        models_offset, len(records), hash64(table), sum(e[5] for e in entries),
        dedup_saved_bytes, producer_raw, keys_offset, len(keys), keys_offset + KEY_SIZE * len(keys), len(paths),
        b"", 0)
    out[:HEADER_SIZE - 8] = header[:HEADER_SIZE - 8]
    out[HEADER_SIZE - 8:HEADER_SIZE] = struct.pack("<Q", hash64(header[:HEADER_SIZE - 8]))
    return bytes(out)


def take_lock(dir_fd: int, lock_name: str) -> int:
    """The lock file, held exclusively. `cache prune` may remove an orphan lock file (its cache
    gone) while holding it: a writer that opened it just before then holds a removed inode, so it
    checks it holds the file now at the name, and opens again if not (as store/cache_file.c)."""
    while True:
        fd = os.open(lock_name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            named = os.stat(lock_name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            named = None
        held = os.fstat(fd)
        if named is not None and (named.st_ino, named.st_dev) == (held.st_ino, held.st_dev):
            return fd
        os.close(fd)


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
        lock_fd = take_lock(dir_fd, base + ".lock")
        try:
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
