"""Cache file reader, validator and reference writer (flexdelegate/cache/FORMAT.md, version 3)."""
import os
import stat
import struct
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from flexdelegate._native import cache_check, hash64
from flexdelegate.cache import (CacheError, CacheOpenError, build_cache, read_cache,
                                verify_blobs, write_cache)
from flexdelegate.cache.format import (ENTRY_SIZE, FORMAT_VERSION, HEADER_SIZE, KEY_SIZE, MODEL_SIZE,
                                       PAGE, RESERVED_AT, ModelRecord)

# Three blobs, deliberately given out of key order and with sizes that leave gaps.
BLOBS = [
    (7, 1, 0x20008, 3, bytes(range(256)) * 20),   # 5120 bytes: spans two pages
    (2, 9, 0x10004, 3, b"\x01\x02\x03"),
    (7, 1, 0x10004, 3, b"w" * 100),               # same weights, other algo
]
KEYS = tuple((*b[:4], len(b[4])) for b in BLOBS)  # what one load asked for, in its order
# A load of a model file with a recorded identity (negative mtime: the field is signed).
REC = ModelRecord(0xDEADBEEF, dev=0x803, ino=123456, size=98765, mtime_ns=-5,
                  ctime_ns=1_700_000_000_123_456_789, machine=0x20008, keys=KEYS, path="/models/net.tflite")
MODELS = [0xDEADBEEF, 5, 0xDEADBEEF, REC]  # bare fingerprints: records without identity or keys


@pytest.fixture
def valid(tmp_path):
    path = tmp_path / "m.fxc"
    write_cache(path, BLOBS, MODELS, producer="test producer", dedup_saved_bytes=4096)
    return path


# The layout, spelled out from FORMAT.md rather than taken from format.py, so that the tests check
# the reader against the spec (and the C loader, see test_c_written_file_is_accepted).
HEADER_FIELDS = {  # name: (offset, struct format)
    "magic": (0, "8s"), "version": (8, "I"), "header_size": (12, "I"), "file_size": (16, "Q"),
    "index_offset": (24, "Q"), "index_count": (32, "Q"), "index_checksum": (40, "Q"),
    "models_offset": (48, "Q"), "models_count": (56, "Q"), "models_checksum": (64, "Q"),
    "blob_bytes": (72, "Q"), "dedup": (80, "Q"), "producer": (88, "64s"),
    "keys_offset": (152, "Q"), "keys_count": (160, "Q"), "paths_offset": (168, "Q"), "paths_bytes": (176, "Q"),
    "reserved": (184, "64s"),
}
ENTRY = struct.Struct("<QQIIQQQ16s")   # key_hi key_lo algo layout offset size checksum zero
# fingerprint dev ino size mtime ctime first_key n_keys machine path_offset path_len zero
RECORD = struct.Struct("<QQQQqqQIIQII")
KEY = struct.Struct("<QQIIQ")          # key_hi key_lo algo layout size


def test_layout_matches_format_md():
    assert (HEADER_SIZE, ENTRY_SIZE, MODEL_SIZE, KEY_SIZE, PAGE) == (256, 64, 80, 32, 4096)
    assert (FORMAT_VERSION, RESERVED_AT) == (3, 184)
    assert (ENTRY.size, RECORD.size, KEY.size) == (64, 80, 32)
    ends = sorted((o, o + struct.calcsize("<" + f)) for o, f in HEADER_FIELDS.values())
    assert all(a[1] == b[0] for a, b in zip(ends, ends[1:])) and ends[-1][1] == 248  # then the checksum


def pack_header(fix=True, **fields) -> bytes:
    h = bytearray(HEADER_SIZE)
    for name, value in fields.items():
        offset, fmt = HEADER_FIELDS[name]
        struct.pack_into("<" + fmt, h, offset, value)
    struct.pack_into("<Q", h, 248, hash64(bytes(h[:248])) if fix else 0)
    return bytes(h)


def record(m):
    """A raw record tuple: a bare fingerprint (no identity, no keys, no path), or a tuple padded
    with zeros to (fp, dev, ino, size, mtime, ctime, first_key, n_keys, machine, path_offset,
    path_len, zero)."""
    return record((m,)) if isinstance(m, int) else tuple(m) + (0,) * (12 - len(m))


def forge(path, entries=(), models=(), blob_region=b"", keys=(), *, index_pad=0, paths=b"", tail=b"",
          fix=True, **fields):
    """Writes a file with arbitrary content but consistent checksums (unless a checksum field
    is overridden), to reach the checks behind them. entries: (hi, lo, algo, layout, off, size,
    sum); models: fingerprints or raw records (see record()); keys: (hi, lo, algo, layout,
    size); paths: the path strings section; tail: bytes after it that paths_bytes leaves out."""
    blob_region += bytes(-len(blob_region) % ENTRY_SIZE)  # index_offset is 64-aligned
    index = b"".join(ENTRY.pack(*e, b"") for e in entries)
    records = b"".join(RECORD.pack(*record(m)) for m in models)
    key_list = b"".join(KEY.pack(*k) for k in keys)
    index_offset = PAGE + len(blob_region) + index_pad
    models_offset = index_offset + len(index)
    keys_offset = models_offset + len(records)
    paths_offset = keys_offset + len(key_list)
    h = dict(magic=b"FLXCACHE", version=3, header_size=HEADER_SIZE,
             file_size=paths_offset + len(paths) + len(tail), index_offset=index_offset,
             index_count=len(entries), index_checksum=hash64(index),
             models_offset=models_offset, models_count=len(models),
             models_checksum=hash64(records + key_list + paths + tail),
             blob_bytes=sum(e[5] for e in entries) % (1 << 64), dedup=0, producer=b"forged",
             keys_offset=keys_offset, keys_count=len(keys), paths_offset=paths_offset, paths_bytes=len(paths),
             reserved=b"")
    h.update(fields)
    data = (pack_header(fix, **h) + bytes(PAGE - HEADER_SIZE) + blob_region + bytes(index_pad) + index
            + records + key_list + paths + tail)
    path.write_bytes(data)
    return path


def blob_entry(key, offset, data, algo=1, layout=1):
    return (key, 0, algo, layout, offset, len(data), hash64(data))


# ------------------------------------------------------------------------------ round trip

def test_round_trip(valid):
    cf = read_cache(valid)
    assert cf.format_version == 3 and cf.header_size == 256
    assert cf.file_size == os.path.getsize(valid)
    assert cf.producer == "test producer"
    assert cf.dedup_saved_bytes == 4096
    # Sorted by (fingerprint, dev, ino); the duplicate bare fingerprint is dropped.
    assert cf.models == [ModelRecord(5), ModelRecord(0xDEADBEEF), REC] and cf.models_count == 3
    assert cf.fingerprints == {5, 0xDEADBEEF}
    assert [e.key for e in cf.entries] == sorted(b[:4] for b in BLOBS)
    assert cf.blob_bytes == sum(len(b[4]) for b in BLOBS)
    raw = valid.read_bytes()
    by_key = {b[:4]: b for b in BLOBS}
    for e in cf.entries:
        data = by_key[e.key][4]
        assert e.layout_version == 3 and e.offset % PAGE == 0 and e.offset >= PAGE
        assert raw[e.offset:e.offset + e.size] == data and e.checksum == hash64(data)
    assert cf.index_offset % 64 == 0 and cf.models_offset == cf.index_offset + 64 * len(BLOBS)
    assert cf.keys_offset == cf.models_offset + 80 * 3 and cf.keys_count == len(KEYS)
    assert cf.paths_offset == cf.keys_offset + 32 * len(KEYS) and cf.paths_bytes == len(REC.path) + 1
    assert cf.file_size == cf.paths_offset + cf.paths_bytes
    assert verify_blobs(valid) == []


def test_records_round_trip_byte_exact(valid):
    """The records, keys and paths are where FORMAT.md puts them, field by field."""
    cf, raw = read_cache(valid), valid.read_bytes()
    assert raw[152:184] == struct.pack("<QQQQ", cf.keys_offset, cf.keys_count, cf.paths_offset, cf.paths_bytes)
    assert raw[48:64] == struct.pack("<QQ", cf.models_offset, cf.models_count)
    recs = [RECORD.unpack_from(raw, cf.models_offset + 80 * i) for i in range(cf.models_count)]
    assert recs == [record(5), record(0xDEADBEEF),
                    (0xDEADBEEF, 0x803, 123456, 98765, -5, 1_700_000_000_123_456_789, 0, 3, 0x20008, 0, 18, 0)]
    assert [KEY.unpack_from(raw, cf.keys_offset + 32 * i) for i in range(3)] == list(KEYS)
    assert raw[cf.paths_offset:] == b"/models/net.tflite\0"
    assert struct.unpack_from("<Q", raw, 64)[0] == hash64(raw[cf.models_offset:])  # records, keys, paths


def test_model_records_round_trip_with_keys(tmp_path):
    """Several records, one fingerprint with several file identities, keys in load order
    (repeats allowed: a load asks for shared weights twice), given out of order."""
    k = [(i, i * 7, 0x10004 + i, 1, 100 * i + 1) for i in range(5)]
    recs = [
        ModelRecord(9, dev=1, ino=7, size=10, mtime_ns=1, ctime_ns=2, machine=1, keys=(k[4], k[0], k[4])),
        ModelRecord(9, dev=1, ino=3, size=11, mtime_ns=3, ctime_ns=4, machine=1, keys=(k[1],)),
        ModelRecord(2, keys=(k[2], k[3])),                     # no identity: racy or not a file
        ModelRecord(9, dev=0, ino=(1 << 64) - 1, machine=(1 << 32) - 1),  # no keys at all
        ModelRecord((1 << 64) - 1, dev=(1 << 64) - 1, ino=(1 << 64) - 1, size=(1 << 64) - 1,
                    mtime_ns=-(1 << 63), ctime_ns=(1 << 63) - 1, keys=tuple(k)),
    ]
    path = tmp_path / "r.fxc"
    write_cache(path, [(1, 2, 3, 4, b"x")], recs)
    cf = read_cache(path)
    assert cf.models == sorted(recs, key=lambda r: r.order) == [recs[2], recs[3], recs[1], recs[0], recs[4]]
    # Keys given as lists are written the same (and come back as tuples).
    as_lists = [ModelRecord(2, keys=[list(k[2]), list(k[3])]), *recs[3:], *recs[:2]]
    assert build_cache([(1, 2, 3, 4, b"x")], as_lists) == path.read_bytes()
    assert cf.keys_count == 3 + 1 + 2 + 5 and cf.fingerprints == {2, 9, (1 << 64) - 1}
    assert path.read_bytes() == build_cache([(1, 2, 3, 4, b"x")], cf.models)  # read, rewrite: same bytes
    assert verify_blobs(path) == []


def test_duplicate_record_identity_is_kept_once(tmp_path):
    """(fingerprint, dev, ino) is a record's identity: two of them cannot be in one file."""
    path = tmp_path / "d.fxc"
    write_cache(path, [], [ModelRecord(4, dev=1, ino=2, size=5), ModelRecord(4, dev=1, ino=2, size=6), 4, 4])
    cf = read_cache(path)
    assert [m.order for m in cf.models] == [(4, 0, 0), (4, 1, 2)]


def test_writer_file_hygiene(tmp_path):
    old = os.umask(0o077)  # the mode must not depend on the umask
    try:
        write_cache(tmp_path / "a.fxc", BLOBS, [])
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "a.fxc").st_mode) == 0o644
    assert sorted(os.listdir(tmp_path)) == ["a.fxc", "a.fxc.lock"]  # no temp left behind
    assert (tmp_path / "a.fxc").read_bytes() == build_cache(BLOBS, [])


def test_writer_replaces_and_cleans_dead_temps(tmp_path, valid):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"m.fxc.tmp.{dead.pid}.0"
    live = tmp_path / f"m.fxc.tmp.{os.getpid()}.0"  # taken: the writer must pick .1
    other = tmp_path / f"z.fxc.tmp.{dead.pid}.0"     # another file's temp: not ours to remove
    for p in (stale, live, other):
        p.write_bytes(b"partial")
    write_cache(valid, BLOBS[:1], [1])
    assert not stale.exists() and live.exists() and other.exists()
    assert live.read_bytes() == b"partial"
    cf = read_cache(valid)
    assert len(cf.entries) == 1 and cf.models == [ModelRecord(1)] and cf.keys_count == 0


def test_empty_cache(tmp_path):
    cf = read_cache(forge(tmp_path / "e.fxc"))
    assert cf.entries == [] and cf.models == [] and cf.file_size == PAGE
    assert cf.keys_offset == cf.models_offset == cf.index_offset == PAGE and cf.keys_count == 0
    write_cache(tmp_path / "w.fxc", [], [])
    assert read_cache(tmp_path / "w.fxc").file_size == PAGE


@pytest.mark.parametrize("blobs, models, kw, match", [
    ([(1, 2, 3, 4, b"a"), (1, 2, 3, 4, b"b")], [], {}, "duplicate key"),
    ([(1 << 64, 0, 0, 0, b"a")], [], {}, "key_hi"),
    ([(0, -1, 0, 0, b"a")], [], {}, "key_lo"),
    ([(0, 0, 1 << 32, 0, b"a")], [], {}, "algo"),
    ([(0, 0, 0, 0, b"")], [], {}, "empty blob"),
    ([], [1 << 64], {}, "model fingerprint"),
    ([], [-1], {}, "model fingerprint"),
    ([], [ModelRecord(1 << 64)], {}, "fingerprint"),
    ([], [ModelRecord(1, dev=-1)], {}, "dev"),
    ([], [ModelRecord(1, ino=1 << 64)], {}, "ino"),
    ([], [ModelRecord(1, size=-1)], {}, "size"),
    ([], [ModelRecord(1, machine=1 << 32)], {}, "machine"),
    ([], [ModelRecord(1, mtime_ns=1 << 63)], {}, "mtime_ns"),
    ([], [ModelRecord(1, ctime_ns=-(1 << 63) - 1)], {}, "ctime_ns"),
    ([], [ModelRecord(1, mtime_ns=1.5)], {}, "mtime_ns"),
    ([], [ModelRecord(1, keys=((1, 2, 3, 4),))], {}, "key must be"),
    ([], [ModelRecord(1, keys=(7,))], {}, "key must be"),
    ([], [ModelRecord(1, keys=7)], {}, "keys must be a sequence"),
    ([], [ModelRecord(1, keys=((1, 2, 1 << 32, 4, 5),))], {}, "key algo"),
    ([], [ModelRecord(1, keys=((1, 2, 3, 4, -5),))], {}, "key size"),
    ([], [ModelRecord(1, path="m.tflite")], {}, "path must be absolute"),
    ([], [ModelRecord(1, path="/a\0b")], {}, "path must be absolute"),
    ([], [ModelRecord(1, path="/" + "a" * 4095)], {}, "under 4096 bytes"),
    ([], [ModelRecord(1, path=b"/m.tflite")], {}, "path must be a str"),
    ([], [], {"producer": "x" * 64}, "producer"),
    ([], [], {"dedup_saved_bytes": -1}, "dedup_saved_bytes"),
])
def test_writer_rejects_bad_input(tmp_path, blobs, models, kw, match):
    with pytest.raises(ValueError, match=match):
        write_cache(tmp_path / "x.fxc", blobs, models, **kw)
    assert not (tmp_path / "x.fxc").exists()


# -------------------------------------------------------------------- paths that are not files

def test_missing_file(tmp_path):
    with pytest.raises(CacheOpenError, match="no such file"):
        read_cache(tmp_path / "nope.fxc")


def test_directory(tmp_path):
    with pytest.raises(CacheOpenError, match="is a directory"):
        read_cache(tmp_path)


def test_symlink_to_valid_file(tmp_path, valid):
    link = tmp_path / "link.fxc"
    link.symlink_to(valid)
    with pytest.raises(CacheOpenError, match="symlink"):
        read_cache(link)


def test_fifo_does_not_hang(tmp_path):
    os.mkfifo(tmp_path / "f.fxc")
    with pytest.raises(CacheOpenError, match="not a regular file"):
        read_cache(tmp_path / "f.fxc")


def test_zero_length(tmp_path):
    (tmp_path / "z.fxc").write_bytes(b"")
    with pytest.raises(CacheError, match=r"empty file \(0 bytes\)"):
        read_cache(tmp_path / "z.fxc")


def test_shorter_than_header(tmp_path, valid):
    valid.write_bytes(valid.read_bytes()[:100])
    with pytest.raises(CacheError, match="shorter than the 256-byte header"):
        read_cache(valid)


# -------------------------------------------------------------------------- header and tables

def patch(path, offset, data):
    raw = bytearray(path.read_bytes())
    raw[offset:offset + len(data)] = data
    path.write_bytes(bytes(raw))


def patch_header(path, offset, data):
    """Patches header bytes and recomputes the header checksum (only the field changes)."""
    patch(path, offset, data)
    raw = path.read_bytes()
    patch(path, 248, struct.pack("<Q", hash64(raw[:248])))


def test_bad_magic(valid):
    patch(valid, 0, b"FLXCACHF")
    with pytest.raises(CacheError, match="bad magic"):
        read_cache(valid)


@pytest.mark.parametrize("fields, match", [
    ({"version": 2}, "unsupported format_version 2"),  # an older file is rebuilt, not misread
    ({"version": 4}, "unsupported format_version 4"),
    ({"header_size": 512}, "header_size 512"),
    ({"file_size": PAGE + 1}, "file_size 4097 in header but the file has 4096 bytes"),
    ({"index_offset": PAGE + 8}, "index_offset 4104 must be a multiple of 64"),
    ({"index_offset": 0}, "index_offset 0 must be a multiple of 64 and >= 4096"),
    ({"index_count": 1 << 63}, "runs past the end of the file"),
    ({"index_count": (1 << 64) - 1, "models_count": (1 << 64) - 1}, "runs past the end"),
    ({"models_offset": PAGE + 64}, "models_offset 4160 does not follow the index"),
    ({"models_count": 1}, r"keys_offset 4096 does not follow the model records \(expected 4176\)"),
    ({"models_count": 1, "keys_offset": PAGE + 80}, "run past the end of the file"),
    # 80 × 2**60 wraps to 0 in u64 arithmetic: the chain must not look consistent.
    ({"models_count": 1 << 60}, "keys_offset 4096 does not follow the model records"),
    ({"keys_offset": PAGE + 32}, r"keys_offset 4128 does not follow the model records \(expected 4096\)"),
    ({"keys_offset": PAGE - 64}, "keys_offset 4032 does not follow"),
    ({"keys_count": 1}, r"\[4096, 4128\) \(0 records, 1 keys\) run past the end of the file \(4096"),
    ({"keys_count": (1 << 64) - 1}, "run past the end of the file"),
    ({"keys_count": 1 << 59}, "run past the end of the file"),  # 32 × 2**59 wraps to 0
    ({"paths_offset": PAGE + 1}, r"paths_offset 4097 does not follow the keys \(expected 4096\)"),
    ({"paths_offset": 0}, "paths_offset 0 does not follow the keys"),
    ({"paths_bytes": 1}, r"model paths \[4096, 4097\) do not end at the end of the file \(4096"),
    ({"paths_bytes": (1 << 64) - 1}, "model paths .* do not end at the end of the file"),
    ({"index_checksum": 1}, "index checksum mismatch"),
    ({"models_checksum": 1}, "model table checksum mismatch"),
])
def test_bad_header_fields(tmp_path, fields, match):
    path = forge(tmp_path / "f.fxc", **fields)
    with pytest.raises(CacheError, match=match):
        read_cache(path)


def test_file_size_must_end_at_the_paths(tmp_path):
    """file_size = paths_offset + paths_bytes: nothing may follow the paths, even bytes the
    header's size and the model checksum account for."""
    for tail in (b"k" * 32, b"\0" * 64, b"r" * 64 + b"k" * 32):
        with pytest.raises(CacheError, match=r"model paths \[\d+, \d+\) do not end at the end of the file"):
            read_cache(forge(tmp_path / "f.fxc", models=[(1, 0, 0, 0, 0, 0, 0, 1, 0)],
                             keys=[(1, 2, 3, 4, 5)], paths=b"/m\0", tail=tail))
    read_cache(forge(tmp_path / "f.fxc", models=[(1, 0, 0, 0, 0, 0, 0, 1, 0)], keys=[(1, 2, 3, 4, 5)],
                     paths=b"/m\0"))


def test_header_fields_are_where_format_md_says(valid):
    """keys_offset@152, keys_count@160, paths_offset@168 and paths_bytes@176 are read from there
    (not from the reserved area)."""
    cf = read_cache(valid)
    raw = valid.read_bytes()
    for offset, value in ((152, cf.keys_offset + 32), (160, cf.keys_count + 1), (160, cf.keys_count - 1),
                          (56, cf.models_count + 1), (168, cf.paths_offset + 1), (176, cf.paths_bytes - 1)):
        valid.write_bytes(raw)
        patch_header(valid, offset, struct.pack("<Q", value))
        with pytest.raises(CacheError, match="keys_offset|paths_offset|run past|do not end at the end of the file"):
            read_cache(valid)
    valid.write_bytes(raw)
    patch_header(valid, RESERVED_AT, b"\1")  # the first reserved byte: only verify notices
    assert read_cache(valid).keys_count == cf.keys_count
    assert "reserved header bytes (184..248" in verify_blobs(valid)[0]


def test_header_checksum(tmp_path, valid):
    patch(valid, 88, b"X")  # producer byte: only the checksum notices
    with pytest.raises(CacheError, match="header checksum mismatch"):
        read_cache(valid)
    with pytest.raises(CacheError, match="header checksum mismatch"):
        read_cache(forge(tmp_path / "f.fxc", fix=False))


def test_size_mismatch(valid):
    raw = valid.read_bytes()
    valid.write_bytes(raw + b"\0")
    with pytest.raises(CacheError, match="file_size .* but the file has"):
        read_cache(valid)
    valid.write_bytes(raw[:-1])
    with pytest.raises(CacheError, match="file_size .* but the file has"):
        read_cache(valid)


def rec(fp, dev=0, ino=0, first=0, n=0, size=0):
    return (fp, dev, ino, size, 0, 0, first, n, 0)


@pytest.mark.parametrize("models", [
    [2, 1],                                        # by fingerprint
    [2, 2],                                        # duplicate
    [rec(2, dev=5), rec(2, dev=4)],                # same fingerprint: by dev
    [rec(2, dev=5, ino=9), rec(2, dev=5, ino=8)],  # same fingerprint and dev: by ino
    [rec(2, 5, 9, size=1), rec(2, 5, 9, size=2)],  # same (fingerprint, dev, ino), another file state
    [rec(1, dev=9), rec(2, dev=1), rec(2)],       # fingerprint first, then dev
])
def test_model_records_must_strictly_increase(tmp_path, models):
    with pytest.raises(CacheError, match=r"model records not strictly increasing by \(fingerprint, dev, ino\) "
                                         rf"at record {len(models) - 1}"):
        read_cache(forge(tmp_path / "f.fxc", models=models))


def test_model_record_order_accepted(tmp_path):
    models = [rec(1, 9, 9), rec(2, 0, 5), rec(2, 1, 0), rec(2, 1, 1), rec((1 << 64) - 1)]
    cf = read_cache(forge(tmp_path / "f.fxc", models=models))
    assert [m.order for m in cf.models] == [m[:3] for m in models] and cf.fingerprints == {1, 2, (1 << 64) - 1}


K = [(i, i, 1, 1, 10) for i in range(3)]


@pytest.mark.parametrize("first, n", [(0, 4), (1, 3), (3, 1), (4, 0), ((1 << 64) - 1, 2), (2, (1 << 32) - 1)])
def test_record_keys_must_lie_within_the_key_list(tmp_path, first, n):
    with pytest.raises(CacheError, match=rf"model record 1 keys \[{first}, {first + n}\) outside the 3 keys"):
        read_cache(forge(tmp_path / "f.fxc", models=[rec(1, n=3), rec(2, first=first, n=n)], keys=K))


def test_record_key_ranges_may_share_and_be_empty(tmp_path):
    """Not stricter than FORMAT.md: ranges may overlap, be empty, end at the last key."""
    models = [rec(1, n=2), rec(2, first=1, n=2), rec(3, first=3, n=0), rec(4, first=0, n=3), rec(5, first=2, n=1)]
    cf = read_cache(forge(tmp_path / "f.fxc", models=models, keys=K))
    assert [m.keys for m in cf.models] == [tuple(K[:2]), tuple(K[1:]), (), tuple(K), (K[2],)]


def prec(fp, at, length):
    """A record without identity or keys whose path is paths[at:at + length]."""
    return (fp, 0, 0, 0, 0, 0, 0, 0, 0, at, length, 0)


LONG = b"/" + b"p" * 4094  # 4095 bytes: the longest path a record may hold


@pytest.mark.parametrize("models, paths, match", [
    ([prec(1, 3, 0)], b"/m\0", "path offset 3 without a path"),
    ([prec(1, 0, 3)], b"/m\0", r"path \[0, 3\] outside the 3 bytes"),            # no room for its NUL
    ([prec(1, 3, 1)], b"/m\0", "outside the 3 bytes"),                            # starts at the end
    ([prec(1, (1 << 64) - 1, 2)], b"/m\0", "outside"),                           # no wrap-around
    ([prec(1, 1, (1 << 32) - 1)], b"/m\0", "path of 4294967295 bytes"),
    ([prec(1, 0, 1)], b"/m\0", "not NUL-terminated after 1 bytes"),               # unterminated
    ([prec(1, 0, 4)], b"/a\0b\0", "holds a NUL"),
    ([prec(1, 0, 1)], b"m\0", "not absolute"),
    ([prec(1, 0, 0), prec(2, 0, 4)], b"/abcd", "record 1 path at 0 is not NUL-terminated"),
    ([prec(1, 0, 4096)], b"/" + b"p" * 4095 + b"\0", "path of 4096 bytes \\(at most 4095\\)"),  # oversized
])
def test_bad_model_paths(tmp_path, models, paths, match):
    """Both loaders refuse a record whose path reference is unsound (FORMAT.md "Validity")."""
    path = forge(tmp_path / "f.fxc", models=models, paths=paths)
    with pytest.raises(CacheError, match=match):
        read_cache(path)
    assert cache_check(path) is not None


def test_model_paths_accepted(tmp_path):
    """Not stricter than FORMAT.md: paths may be shared, unreferenced bytes may sit between
    them, the longest fits; the C loader agrees."""
    paths = b"/a\0junk\0/b/c.tflite\0" + LONG + b"\0"
    models = [prec(1, 0, 2), prec(2, 8, 11), prec(3, 8, 11), prec(4, 20, len(LONG)), prec(5, 0, 0)]
    path = forge(tmp_path / "f.fxc", models=models, paths=paths)
    assert [m.path for m in read_cache(path).models] == ["/a", "/b/c.tflite", "/b/c.tflite", LONG.decode(), ""]
    assert cache_check(path) is None
    # A path in another encoding is bytes to us: it comes back as os.fsdecode makes it.
    path = forge(tmp_path / "g.fxc", models=[prec(1, 0, 3)], paths=b"/\xff\xfe\0")
    (m,) = read_cache(path).models
    assert os.fsencode(m.path) == b"/\xff\xfe"
    write_cache(tmp_path / "h.fxc", [], [m])
    assert read_cache(tmp_path / "h.fxc").models == [m]


def test_same_weights_two_layout_versions(tmp_path):
    """After a layout bump a file holds the old and the new packing of the same weights."""
    path = tmp_path / "l.fxc"
    write_cache(path, [(1, 2, 3, 5, b"new"), (1, 2, 3, 4, b"old")], [])
    assert [e.layout_version for e in read_cache(path).entries] == [4, 5]


def test_path_with_nul():
    with pytest.raises(CacheOpenError, match="not a valid path"):
        read_cache("bad\0path.fxc")


def test_index_and_model_checksums(valid):
    cf = read_cache(valid)
    raw = valid.read_bytes()
    patch(valid, cf.index_offset + 50, b"\1")  # reserved bytes of an entry are covered too
    with pytest.raises(CacheError, match="index checksum mismatch"):
        read_cache(valid)
    # One checksum covers the records and the key lists and paths after them.
    for offset in (cf.models_offset, cf.models_offset + 80 * 2 + 60, cf.keys_offset, cf.paths_offset,
                   cf.file_size - 1):
        valid.write_bytes(raw)
        patch(valid, offset, bytes([raw[offset] ^ 1]))
        with pytest.raises(CacheError, match="model table checksum mismatch"):
            read_cache(valid)


# ------------------------------------------------------------------------------- index entries

D = b"d" * 10


@pytest.mark.parametrize("pages, entries, match", [
    (2, [blob_entry(2, PAGE, D), blob_entry(1, 2 * PAGE, D)], "not strictly increasing at entry 1"),
    (2, [blob_entry(1, PAGE, D), blob_entry(1, 2 * PAGE, D)], "not strictly increasing"),  # duplicate
    (2, [blob_entry(1, PAGE, D, algo=2), blob_entry(1, 2 * PAGE, D, algo=1)], "not strictly increasing"),
    (2, [blob_entry(1, PAGE, D, layout=2), blob_entry(1, 2 * PAGE, D, layout=1)], "not strictly increasing"),
    (1, [blob_entry(1, PAGE + 64, D)], "entry 0 blob offset 4160 is not a multiple of 4096"),
    (1, [blob_entry(1, 0, D)], r"entry 0 blob \[0, 10\) lies outside"),                 # header page
    (1, [blob_entry(1, 3 * PAGE, D)], r"outside the blob region \[4096, 8192\)"),       # past the region
    (1, [blob_entry(1, PAGE, b"x" * (PAGE + 1))], r"entry 0 blob \[4096, 8193\) lies"),  # into the index
    (1, [blob_entry(1, (1 << 64) - PAGE, D)], "entry 0 blob .* lies outside"),            # no wrap-around
    (2, [blob_entry(1, PAGE, b"x" * 5000), blob_entry(2, PAGE, D)], "entries 1 and 0 overlap"),  # same start
    (2, [blob_entry(1, 2 * PAGE, D), blob_entry(2, PAGE, b"x" * 5000)], r"overlap \(\[4096, 9096\)"),
])
def test_bad_entries(tmp_path, pages, entries, match):
    path = forge(tmp_path / "f.fxc", entries, [1], bytes(pages * PAGE))  # region [4096, index_offset)
    with pytest.raises(CacheError, match=match):
        read_cache(path)


def test_forged_valid_file_is_accepted(tmp_path):
    """Adjacent blobs, a padded index, an empty blob ahead of another at the same offset (as the
    C loader accepts it), records with keys: the checks are not stricter than FORMAT.md."""
    region = b"a" * PAGE + b"b" * 10
    path = forge(tmp_path / "f.fxc", [blob_entry(1, PAGE, b"a" * PAGE), blob_entry(2, 2 * PAGE, b""),
                                      blob_entry(3, 2 * PAGE, b"b" * 10)],
                 [3, rec(4, 1, 2, n=2), rec(4, 1, 3, first=1, n=1)], region, keys=K[:2], index_pad=PAGE)
    cf = read_cache(path)
    assert len(cf.entries) == 3 and verify_blobs(path) == []
    assert [m.keys for m in cf.models] == [(), tuple(K[:2]), (K[1],)]


# ---------------------------------------------------------------------------------- verify_blobs

def test_verify_blobs_finds_flipped_byte(valid):
    cf = read_cache(valid)
    target = cf.entries[1]
    patch(valid, target.offset + target.size - 1, b"\xff")
    read_cache(valid)  # a loader does not read blobs: still structurally valid
    problems = verify_blobs(valid)
    assert len(problems) == 1 and ": blob 1 " in problems[0] and "checksum mismatch" in problems[0]


def test_verify_blobs_soft_checks(tmp_path):
    e = [blob_entry(1, PAGE, D)]
    assert verify_blobs(forge(tmp_path / "a.fxc", e, [1, 2], D)) == []
    assert "blob_bytes 99" in verify_blobs(forge(tmp_path / "a.fxc", e, [1], D, blob_bytes=99))[0]
    for reserved in (b"x", bytes(63) + b"x"):  # header bytes 184 and 247
        problems = verify_blobs(forge(tmp_path / "a.fxc", e, [1], D, reserved=reserved))
        assert len(problems) == 1 and "reserved header bytes (184..248 or 256..4096)" in problems[0]
    problems = verify_blobs(forge(tmp_path / "a.fxc", e, [1, (2,) + (0,) * 10 + (7,)], D))  # record 1's last u32
    assert problems == [f"{tmp_path / 'a.fxc'}: reserved bytes of model records [1] are not zero"]
    path = forge(tmp_path / "a.fxc", e, [1], D)
    patch(path, 1000, b"x")  # page-0 padding: not covered by a checksum
    read_cache(path)
    assert "reserved header" in verify_blobs(path)[0]


def test_verify_blobs_raises_on_invalid(valid):
    patch(valid, 0, b"X")
    with pytest.raises(CacheError, match="bad magic"):
        verify_blobs(valid)


# ------------------------------------------------------------------------------ C interop

def test_c_written_file_is_accepted(tmp_path):
    """A file the C delegate wrote passes read_cache and verify_blobs, and its one record lists
    the keys the load asked for, which are the index's; a file the Python writer rebuilds from
    what it read maps completely in the C loader (warm load), which does not rewrite it."""
    from cachecheck import TWO_CONV_BLOBS, run_flex, two_conv_model
    model, path = two_conv_model(), tmp_path / "c.fxc"
    _, stats = run_flex(model, path)
    assert stats["cache"]["blobs_packed"] == TWO_CONV_BLOBS
    cf = read_cache(path)
    assert cf.format_version == 3 and cf.producer.startswith("flexdelegate ")
    assert cf.file_size == os.path.getsize(path) == cf.keys_offset + 32 * cf.keys_count + cf.paths_bytes
    assert verify_blobs(path) == []
    assert len(cf.entries) == TWO_CONV_BLOBS and len(cf.models) == 1 and cf.fingerprints == {cf.models[0].fingerprint}
    (r,) = cf.models
    # Loaded from memory, not from a file: no identity and no path recorded.
    assert (r.dev, r.ino, r.size, r.mtime_ns, r.ctime_ns, r.path) == (0, 0, 0, 0, 0, "")
    assert cf.paths_bytes == 0
    assert cf.keys_count == len(r.keys) == TWO_CONV_BLOBS
    assert sorted(k[:4] for k in r.keys) == [e.key for e in cf.entries]
    by_key = {e.key: e for e in cf.entries}
    assert all(k[4] == by_key[k[:4]].size for k in r.keys)
    # Python rewrites the same content; the C loader accepts it and maps every blob from it.
    raw = path.read_bytes()
    blobs = [(*e.key, raw[e.offset:e.offset + e.size]) for e in cf.entries]
    write_cache(path, blobs, cf.models, dedup_saved_bytes=cf.dedup_saved_bytes)
    rewritten = path.read_bytes()
    assert read_cache(path).models == cf.models
    _, stats = run_flex(model, path)
    assert stats["cache"]["blobs_mapped"] == TWO_CONV_BLOBS and stats["cache"]["blobs_packed"] == 0
    assert path.read_bytes() == rewritten  # the record was found: nothing to add, no rewrite


# -------------------------------------------------------------------------------------- fuzzing

VALID = build_cache(BLOBS, MODELS, producer="fuzz")
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def fuzz_path(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz") / "f.fxc"


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    path = tmp_path_factory.mktemp("layout") / "v.fxc"
    path.write_bytes(VALID)
    cf = read_cache(path)
    assert cf.keys_count > 0 and cf.models_count > 1  # the flips reach records and keys too
    return cf


def outcome(path, data):
    """read_cache's result on `data`: a CacheFile or a CacheError; anything else fails the test."""
    path.write_bytes(data)
    try:
        return read_cache(path)
    except CacheError as e:
        assert str(e).startswith(str(path)), e
        return e


@FUZZ
@given(st.integers(0, len(VALID) - 1), st.integers(1, 255))
def test_fuzz_single_flip_is_classified(fuzz_path, layout, pos, xor):
    data = bytearray(VALID)
    data[pos] ^= xor
    got = outcome(fuzz_path, bytes(data))
    blob = next((i for i, e in enumerate(layout.entries) if e.offset <= pos < e.offset + e.size), None)
    if pos < HEADER_SIZE or pos >= layout.index_offset:
        assert isinstance(got, CacheError)  # header, index, model records and keys are checksummed
    else:
        assert not isinstance(got, CacheError), got  # padding or blob contents
        assert got.entries == layout.entries and got.models == layout.models
        problems = verify_blobs(fuzz_path)
        if blob is not None:
            assert problems and f": blob {blob} " in problems[0]
        elif pos < PAGE:
            assert problems and "reserved header" in problems[0]
        else:
            assert problems == []  # gap between blobs


@FUZZ
@given(st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(1, 255)), min_size=1, max_size=8))
def test_fuzz_many_flips(fuzz_path, flips):
    data = bytearray(VALID)
    for pos, xor in flips:
        data[pos] ^= xor
    got = outcome(fuzz_path, bytes(data))
    if not isinstance(got, CacheError):
        verify_blobs(fuzz_path)  # must not raise either


@FUZZ
@given(st.integers(0, len(VALID) - 1))
def test_fuzz_truncation(fuzz_path, size):
    assert isinstance(outcome(fuzz_path, VALID[:size]), CacheError)


@FUZZ
@given(st.binary(min_size=1, max_size=300))
def test_fuzz_extension(fuzz_path, tail):
    assert isinstance(outcome(fuzz_path, VALID + tail), CacheError)


@FUZZ
@given(st.sampled_from([b"", b"FLXCACHE", b"FLXCACHE\1\0\0\0\0\1\0\0", b"FLXCACHE\2\0\0\0\0\1\0\0"]),
       st.binary(max_size=6000))
def test_fuzz_random_bytes(fuzz_path, prefix, body):
    assert isinstance(outcome(fuzz_path, prefix + body), CacheError)


U64 = st.integers(0, (1 << 64) - 1)
COUNT = st.one_of(st.integers(0, 70), U64, st.sampled_from([1 << 58, 1 << 59, 1 << 60, 1 << 63]))


@FUZZ
@given(st.one_of(st.integers(0, 130).map(lambda k: PAGE + 64 * k), U64), COUNT, COUNT, COUNT,
       st.booleans(), st.lists(U64, min_size=3, max_size=3), st.binary(max_size=64),
       st.integers(0, 3 * PAGE), st.booleans())
def test_fuzz_forged_header(fuzz_path, index_offset, index_count, models_count, keys_count, chained,
                            other, producer, body_size, honest_size):
    """Random header fields behind a correct header checksum reach the table checks."""
    mask = (1 << 64) - 1  # the offsets are u64: a chain that wraps must still be rejected
    models_offset = (index_offset + 64 * index_count) & mask if chained else other[0]
    keys_offset = (models_offset + 80 * models_count) & mask if chained else other[1]
    paths_offset = (keys_offset + 32 * keys_count) & mask if chained else other[0]
    fit = paths_offset - PAGE
    if chained and 0 <= fit <= 3 * PAGE and body_size % 2:
        body_size = fit  # a file exactly as long as the tables say: reaches the checksums
    file_size = PAGE + body_size if honest_size else other[1]
    paths_bytes = (file_size - paths_offset) & mask if chained else other[2]
    header = pack_header(magic=b"FLXCACHE", version=3, header_size=HEADER_SIZE, file_size=file_size,
                         index_offset=index_offset, index_count=index_count, index_checksum=other[2],
                         models_offset=models_offset, models_count=models_count,
                         models_checksum=other[2], blob_bytes=other[0], dedup=other[1],
                         producer=producer, keys_offset=keys_offset, keys_count=keys_count,
                         paths_offset=paths_offset, paths_bytes=paths_bytes)
    got = outcome(fuzz_path, header + bytes(PAGE - HEADER_SIZE) + bytes(body_size))
    if not isinstance(got, CacheError):  # only an honest chain of empty tables can pass here
        assert got.index_count == got.models_count == got.keys_count == 0


ENTRY_T = st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3), st.integers(0, 3),
                    st.one_of(st.sampled_from([0, PAGE, 2 * PAGE, 3 * PAGE, PAGE + 64]), U64),
                    st.one_of(st.integers(0, 2 * PAGE + 1), U64), U64)
RECORD_T = st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 2), U64,
                     st.integers(-(1 << 63), (1 << 63) - 1), st.integers(-(1 << 63), (1 << 63) - 1),
                     st.one_of(st.integers(0, 5), U64), st.one_of(st.integers(0, 5), st.integers(0, (1 << 32) - 1)),
                     st.integers(0, (1 << 32) - 1), st.one_of(st.integers(0, 8), U64),
                     st.one_of(st.integers(0, 8), st.integers(0, (1 << 32) - 1), st.just(4096)))
PATHS = st.sampled_from([b"", b"/m\0", b"/a\0/bc\0", b"x\0", b"/ab", b"/\0\0", b"/" + b"p" * 4096 + b"\0"])
KEY_T = st.tuples(U64, U64, st.integers(0, (1 << 32) - 1), st.integers(0, (1 << 32) - 1), U64)


@FUZZ
@given(st.lists(ENTRY_T, max_size=6), st.booleans(), st.lists(st.one_of(U64, RECORD_T), max_size=4),
       st.booleans(), st.lists(KEY_T, max_size=5), st.integers(0, 3 * PAGE), PATHS)
def test_fuzz_forged_index(fuzz_path, entries, sort, models, sort_models, keys, region, paths):
    """Random entries and records behind correct checksums: whatever is accepted satisfies the
    invariants."""
    if sort:  # get past the key-order check more often
        entries = sorted(entries)
    if sort_models:
        models = sorted(models, key=lambda m: record(m)[:3])
    forge(fuzz_path, entries, models, bytes(region), keys, paths=paths)
    c_says = cache_check(fuzz_path)
    got = outcome(fuzz_path, fuzz_path.read_bytes())
    assert (c_says is None) == (not isinstance(got, CacheError)), (c_says, got)  # C and Python agree
    if isinstance(got, CacheError):
        return
    keys_ = [e.key for e in got.entries]
    assert keys_ == sorted(set(keys_))
    spans = sorted((e.offset, e.offset + e.size) for e in got.entries)
    for start, end in spans:
        assert start % PAGE == 0 and PAGE <= start and end <= got.index_offset
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    orders = [m.order for m in got.models]
    assert orders == sorted(set(orders)) and len(got.models) == len(models)
    for raw, m in zip(map(record, models), got.models):
        first, n = raw[6], raw[7]
        assert first + n <= len(keys) and m.keys == tuple(keys[first:first + n])
        at, length = raw[9], raw[10]
        assert m.path == (os.fsdecode(paths[at:at + length]) if length else "")
        assert not m.path or (m.path.startswith("/") and paths[at + length] == 0 and length < 4096)
    verify_blobs(fuzz_path)  # blob checksums are random: problems expected, exceptions not
