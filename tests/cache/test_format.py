"""Cache file reader, validator and reference writer (flexdelegate/cache/FORMAT.md)."""
import os
import stat
import struct
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from flexdelegate._native import hash64
from flexdelegate.cache import (CacheError, CacheOpenError, build_cache, read_cache,
                                verify_blobs, write_cache)
from flexdelegate.cache.format import ENTRY_SIZE, HEADER_SIZE, PAGE, _ENTRY, _HEADER

# Three blobs, deliberately given out of key order and with sizes that leave gaps.
BLOBS = [
    (7, 1, 0x20008, 3, bytes(range(256)) * 20),   # 5120 bytes: spans two pages
    (2, 9, 0x10004, 3, b"\x01\x02\x03"),
    (7, 1, 0x10004, 3, b"w" * 100),               # same weights, other algo
]
MODELS = [0xDEADBEEF, 5, 0xDEADBEEF]


@pytest.fixture
def valid(tmp_path):
    path = tmp_path / "m.fxc"
    write_cache(path, BLOBS, MODELS, producer="test producer", dedup_saved_bytes=4096)
    return path


def forge(path, entries=(), models=(), blob_region=b"", *, index_pad=0, fix=True, **fields):
    """Writes a file with arbitrary content but consistent checksums (unless a checksum field
    is overridden), to reach the checks behind them. entries: (hi, lo, algo, layout, off, size, sum)."""
    blob_region += bytes(-len(blob_region) % ENTRY_SIZE)  # index_offset is 64-aligned
    index = b"".join(_ENTRY.pack(*e, b"") for e in entries)
    table = struct.pack(f"<{len(models)}Q", *models)
    index_offset = PAGE + len(blob_region) + index_pad
    h = dict(magic=b"FLXCACHE", version=1, header_size=HEADER_SIZE,
             file_size=index_offset + len(index) + len(table), index_offset=index_offset,
             index_count=len(entries), index_checksum=hash64(index),
             models_offset=index_offset + len(index), models_count=len(models),
             models_checksum=hash64(table), blob_bytes=sum(e[5] for e in entries) % (1 << 64), dedup=0,
             producer=b"forged", reserved=b"")
    h.update(fields)
    header = _HEADER.pack(*h.values(), 0)[:HEADER_SIZE - 8]
    header += struct.pack("<Q", hash64(header) if fix else 0)
    data = header + bytes(PAGE - HEADER_SIZE) + blob_region + bytes(index_pad) + index + table
    path.write_bytes(data)
    return path


def blob_entry(key, offset, data, algo=1, layout=1):
    return (key, 0, algo, layout, offset, len(data), hash64(data))


# ------------------------------------------------------------------------------ round trip

def test_round_trip(valid):
    cf = read_cache(valid)
    assert cf.format_version == 1 and cf.header_size == 256
    assert cf.file_size == os.path.getsize(valid)
    assert cf.producer == "test producer"
    assert cf.dedup_saved_bytes == 4096
    assert cf.models == [5, 0xDEADBEEF] and cf.models_count == 2  # sorted, deduplicated
    assert [e.key for e in cf.entries] == sorted(b[:4] for b in BLOBS)
    assert cf.blob_bytes == sum(len(b[4]) for b in BLOBS)
    raw = valid.read_bytes()
    by_key = {b[:4]: b for b in BLOBS}
    for e in cf.entries:
        data = by_key[e.key][4]
        assert e.layout_version == 3 and e.offset % PAGE == 0 and e.offset >= PAGE
        assert raw[e.offset:e.offset + e.size] == data and e.checksum == hash64(data)
    assert cf.index_offset % 64 == 0 and cf.models_offset == cf.index_offset + 64 * len(BLOBS)
    assert verify_blobs(valid) == []


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
    assert len(cf.entries) == 1 and cf.models == [1]


def test_empty_cache(tmp_path):
    cf = read_cache(forge(tmp_path / "e.fxc"))
    assert cf.entries == [] and cf.models == [] and cf.file_size == PAGE
    write_cache(tmp_path / "w.fxc", [], [])
    assert read_cache(tmp_path / "w.fxc").file_size == PAGE


@pytest.mark.parametrize("blobs, models, kw, match", [
    ([(1, 2, 3, 4, b"a"), (1, 2, 3, 4, b"b")], [], {}, "duplicate key"),
    ([(1 << 64, 0, 0, 0, b"a")], [], {}, "key_hi"),
    ([(0, -1, 0, 0, b"a")], [], {}, "key_lo"),
    ([(0, 0, 1 << 32, 0, b"a")], [], {}, "algo"),
    ([(0, 0, 0, 0, b"")], [], {}, "empty blob"),
    ([], [1 << 64], {}, "model fingerprint"),
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


def test_bad_magic(valid):
    patch(valid, 0, b"FLXCACHF")
    with pytest.raises(CacheError, match="bad magic"):
        read_cache(valid)


@pytest.mark.parametrize("fields, match", [
    ({"version": 2}, "unsupported format_version 2"),
    ({"header_size": 512}, "header_size 512"),
    ({"file_size": PAGE + 1}, "file_size 4097 in header but the file has 4096 bytes"),
    ({"index_offset": PAGE + 8}, "index_offset 4104 must be a multiple of 64"),
    ({"index_offset": 0}, "index_offset 0 must be a multiple of 64 and >= 4096"),
    ({"index_count": 1 << 63}, "runs past the end of the file"),
    ({"index_count": (1 << 64) - 1, "models_count": (1 << 64) - 1}, "runs past the end"),
    ({"models_offset": PAGE + 64}, "models_offset 4160 does not follow the index"),
    ({"models_count": 1}, "does not end at the end of the file"),
    ({"index_checksum": 1}, "index checksum mismatch"),
    ({"models_checksum": 1}, "model table checksum mismatch"),
])
def test_bad_header_fields(tmp_path, fields, match):
    path = forge(tmp_path / "f.fxc", **fields)
    with pytest.raises(CacheError, match=match):
        read_cache(path)


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


@pytest.mark.parametrize("models", [[2, 1], [2, 2]])
def test_model_table_must_strictly_increase(tmp_path, models):
    with pytest.raises(CacheError, match="model table not strictly increasing at entry 1"):
        read_cache(forge(tmp_path / "f.fxc", models=models))


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
    valid.write_bytes(raw)
    patch(valid, cf.models_offset, b"\0")
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
    """Adjacent blobs and a padded index are fine: the checks are not stricter than FORMAT.md."""
    region = b"a" * PAGE + b"b" * 10
    path = forge(tmp_path / "f.fxc", [blob_entry(1, PAGE, b"a" * PAGE), blob_entry(2, 2 * PAGE, b"b" * 10)],
                 [3, 4], region, index_pad=PAGE)
    assert len(read_cache(path).entries) == 2 and verify_blobs(path) == []


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
    assert "reserved header" in verify_blobs(forge(tmp_path / "a.fxc", e, [1], D, reserved=b"x"))[0]
    path = forge(tmp_path / "a.fxc", e, [1], D)
    patch(path, 1000, b"x")  # page-0 padding: not covered by a checksum
    read_cache(path)
    assert "reserved header" in verify_blobs(path)[0]


def test_verify_blobs_raises_on_invalid(valid):
    patch(valid, 0, b"X")
    with pytest.raises(CacheError, match="bad magic"):
        verify_blobs(valid)


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
    return read_cache(path)


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
        assert isinstance(got, CacheError)  # header, index and model table are checksummed
    else:
        assert not isinstance(got, CacheError), got  # padding or blob contents
        assert got.entries == layout.entries
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
@given(st.sampled_from([b"", b"FLXCACHE", b"FLXCACHE\1\0\0\0\0\1\0\0"]), st.binary(max_size=6000))
def test_fuzz_random_bytes(fuzz_path, prefix, body):
    assert isinstance(outcome(fuzz_path, prefix + body), CacheError)


U64 = st.integers(0, (1 << 64) - 1)
COUNT = st.one_of(st.integers(0, 70), U64)


@FUZZ
@given(st.one_of(st.integers(0, 130).map(lambda k: PAGE + 64 * k), U64), COUNT, COUNT,
       st.booleans(), st.lists(U64, min_size=3, max_size=3), st.binary(max_size=64),
       st.integers(0, 3 * PAGE), st.booleans())
def test_fuzz_forged_header(fuzz_path, index_offset, index_count, models_count, chained, other,
                            producer, body_size, honest_size):
    """Random header fields behind a correct header checksum reach the table checks."""
    models_offset = index_offset + 64 * index_count if chained else other[0]
    fit = models_offset + 8 * models_count - PAGE
    if chained and 0 <= fit <= 3 * PAGE and body_size % 2:
        body_size = fit  # a file exactly as long as the tables say: reaches the checksums
    file_size = PAGE + body_size if honest_size else other[1]
    header = _HEADER.pack(b"FLXCACHE", 1, HEADER_SIZE, file_size, index_offset, index_count,
                          other[2], models_offset % (1 << 64), models_count, other[2], other[0],
                          other[1], producer, b"", 0)[:HEADER_SIZE - 8]
    data = header + struct.pack("<Q", hash64(header)) + bytes(PAGE - HEADER_SIZE) + bytes(body_size)
    outcome(fuzz_path, data)


ENTRY = st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3), st.integers(0, 3),
                  st.one_of(st.sampled_from([0, PAGE, 2 * PAGE, 3 * PAGE, PAGE + 64]), U64),
                  st.one_of(st.integers(0, 2 * PAGE + 1), U64), U64)


@FUZZ
@given(st.lists(ENTRY, max_size=6), st.booleans(), st.lists(U64, max_size=4), st.integers(0, 3 * PAGE))
def test_fuzz_forged_index(fuzz_path, entries, sort, models, region):
    """Random entries behind correct checksums: whatever is accepted satisfies the invariants."""
    if sort:  # get past the key-order check more often
        entries = sorted(entries)
    forge(fuzz_path, entries, models, bytes(region))
    got = outcome(fuzz_path, fuzz_path.read_bytes())
    if isinstance(got, CacheError):
        return
    keys = [e.key for e in got.entries]
    assert keys == sorted(set(keys))
    spans = sorted((e.offset, e.offset + e.size) for e in got.entries)
    for start, end in spans:
        assert start % PAGE == 0 and PAGE <= start and end <= got.index_offset
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    verify_blobs(fuzz_path)  # blob checksums are random: problems expected, exceptions not
