"""flexdelegate.cache.tools: info, verify, prune."""
import fcntl
import json
import os
import subprocess
import sys

import pytest

from flexdelegate.cache import CacheError, CacheOpenError, info, prune, read_cache, verify, write_cache
from flexdelegate.cache.format import MAGIC, ModelRecord

MiB = 1 << 20
BLOBS = [(1, 1, 0x10004, 2, b"a" * 1000), (1, 1, 0x20008, 2, b"b" * 5000), (3, 0, 0x10004, 2, b"c" * 7)]
KEYS = tuple((*b[:4], len(b[4])) for b in BLOBS)
# Fingerprint 12 was served twice: once without a file identity, once from a recorded file.
MODELS = [11, 12, 13, ModelRecord(12, dev=2049, ino=77, size=4242, mtime_ns=10**18, ctime_ns=10**18,
                                  machine=0x10004, keys=KEYS, path="/nowhere/m.tflite")]


@pytest.fixture
def cache(tmp_path):
    path = tmp_path / "c.fxc"
    write_cache(path, BLOBS, MODELS, producer="flexdelegate test", dedup_saved_bytes=6007)
    return path


def test_info_figures(cache):
    assert read_cache(cache).models_count == 4
    assert info(cache) == {
        "format_version": 3,
        "producer": "flexdelegate test",
        "blob_count": 3,
        "blob_bytes": 6007,
        "file_size": os.path.getsize(cache),
        "models_served": 3,  # distinct fingerprints, not records
        "dedup_saved_bytes": 6007,
        "algos": {0x10004: 2, 0x20008: 1},
        # Every record, by path; only one with a file identity has a size and mtime to show.
        "models": [
            {"fingerprint": f"{11:016x}", "path": None, "status": "unknown", "size_bytes": None, "mtime_ns": None,
             "weights": 0},
            {"fingerprint": f"{12:016x}", "path": None, "status": "unknown", "size_bytes": None, "mtime_ns": None,
             "weights": 0},
            {"fingerprint": f"{12:016x}", "path": "/nowhere/m.tflite", "status": "gone", "size_bytes": 4242,
             "mtime_ns": 10**18, "weights": 3},
            {"fingerprint": f"{13:016x}", "path": None, "status": "unknown", "size_bytes": None, "mtime_ns": None,
             "weights": 0},
        ],
    }


@pytest.mark.parametrize("models, served", [
    ([], 0),
    ([7], 1),
    # One model, two file identities (say, two copies of it): one model served.
    ([ModelRecord(7, dev=1, ino=2, keys=KEYS), ModelRecord(7, dev=1, ino=3, keys=KEYS)], 1),
    ([ModelRecord(7, dev=1, ino=2), ModelRecord(7, dev=9, ino=2), 7], 1),
    ([ModelRecord(7, dev=1, ino=2), ModelRecord(8, dev=1, ino=2), 9], 3),
])
def test_info_models_served_counts_distinct_fingerprints(tmp_path, models, served):
    path = tmp_path / "s.fxc"
    write_cache(path, BLOBS, models)
    figures = info(path)
    assert figures["models_served"] == served
    assert read_cache(path).models_count == len({(m, 0, 0) if isinstance(m, int) else m.order for m in models})


def test_info_model_status(tmp_path):
    """Whether the file a record names is still there as recorded: its identity decides."""
    model = tmp_path / "m.tflite"
    model.write_bytes(b"model")
    st = os.stat(model)
    same = dict(dev=st.st_dev, ino=st.st_ino, size=st.st_size, mtime_ns=st.st_mtime_ns, ctime_ns=st.st_ctime_ns)
    records = [ModelRecord(1, **same, path=str(model)),
               ModelRecord(2, **dict(same, size=st.st_size + 1), path=str(model)),  # another content
               ModelRecord(3, **dict(same, ino=st.st_ino + 1), path=str(model)),    # another file
               ModelRecord(4, path=str(model)),                                      # no identity
               ModelRecord(5, **same, path=str(tmp_path / "gone.tflite")),
               ModelRecord(6, **same, path=str(model / "x")),                        # under a file
               ModelRecord(7, **same)]
    write_cache(tmp_path / "c.fxc", [], records)
    got = [(m["path"], m["status"]) for m in info(tmp_path / "c.fxc")["models"]]
    assert got == [(str(model), "present"), (str(model), "changed"), (str(model), "changed"),
                   (str(model), "unverified"), (str(tmp_path / "gone.tflite"), "gone"),
                   (str(model / "x"), "gone"), (None, "unknown")]


def test_info_rejects_damage(cache):
    cache.write_bytes(cache.read_bytes()[:-1])
    with pytest.raises(CacheError, match="file_size"):
        info(cache)


def test_verify(cache):
    assert verify(cache) == (True, [])
    blob = read_cache(cache).entries[2]
    raw = bytearray(cache.read_bytes())
    raw[blob.offset + 3] ^= 0x40
    cache.write_bytes(bytes(raw))
    ok, problems = verify(cache)
    assert not ok and len(problems) == 1 and "blob 2 " in problems[0] and "checksum mismatch" in problems[0]
    cache.write_bytes(b"garbage" * 100)
    ok, problems = verify(cache)
    assert not ok and "bad magic" in problems[0]


def test_verify_unopenable(tmp_path):
    with pytest.raises(CacheOpenError):
        verify(tmp_path / "missing.fxc")
    with pytest.raises(CacheOpenError):
        verify(tmp_path)


# -------------------------------------------------------------------------------------- prune

def make(directory, name, size, used, ours=True):
    """A file of `size` bytes last used at time `used` (atime = mtime); a *.fxc one starts with
    the cache magic unless not `ours`."""
    path = directory / name
    head = MAGIC if ours and name.endswith(".fxc") else b""
    path.write_bytes((head + b"x" * size)[:size])
    os.utime(path, (used, used))
    return path


def dead_pid():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def names(directory):
    return sorted(os.listdir(directory))


def test_prune_lru_order(tmp_path):
    for i, name in enumerate(["old.fxc", "mid.fxc", "new.fxc", "newest.fxc"]):
        make(tmp_path, name, MiB, 1_000_000 + i * 1000)
    # Read recently but written long ago: max(atime, mtime) makes it recent.
    os.utime(tmp_path / "old.fxc", (2_000_000, 1_000_000))
    removed = prune(tmp_path, 2.5)
    assert removed == [str(tmp_path / "mid.fxc"), str(tmp_path / "new.fxc")]
    assert {"old.fxc", "newest.fxc"} <= set(names(tmp_path))


def test_prune_within_limit_removes_nothing(tmp_path):
    make(tmp_path, "a.fxc", MiB, 1_000_000)
    assert prune(tmp_path, 1) == [] and prune(tmp_path, float("inf")) == []
    assert prune(tmp_path, 0) == [str(tmp_path / "a.fxc")]
    with pytest.raises(ValueError):
        prune(tmp_path, -1)


def test_prune_skips_locked_file(tmp_path):
    make(tmp_path, "a.fxc", MiB, 1_000_000)
    make(tmp_path, "b.fxc", MiB, 1_001_000)
    make(tmp_path, "c.fxc", MiB, 1_002_000)
    fd = os.open(tmp_path / "a.fxc.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a writer extending a.fxc
        assert prune(tmp_path, 2) == [str(tmp_path / "b.fxc")]
        assert (tmp_path / "a.fxc").exists()
    finally:
        os.close(fd)
    assert prune(tmp_path, 1) == [str(tmp_path / "a.fxc")]  # lock released
    assert not (tmp_path / "a.fxc.lock").exists()  # removed with its cache, while held


def test_prune_temp_files(tmp_path):
    pid = dead_pid()
    make(tmp_path, "a.fxc", 10, 1_000_000)
    dead = make(tmp_path, f"a.fxc.tmp.{pid}.0", 10, 1_000_000)
    dead_other = make(tmp_path, f"b.fxc.tmp.{pid}.3", 10, 1_000_000)
    live = make(tmp_path, f"a.fxc.tmp.{os.getpid()}.0", 10, 1_000_000)
    not_ours = make(tmp_path, f"a.bin.tmp.{pid}.0", 10, 1_000_000)      # not a cache temp
    pid0 = make(tmp_path, "a.fxc.tmp.0.0", 10, 1_000_000)               # kill(0) would hit our group
    huge = make(tmp_path, f"a.fxc.tmp.{1 << 80}.0", 10, 1_000_000)      # cannot be a pid
    removed = prune(tmp_path, 1)
    assert sorted(removed) == sorted([str(dead), str(dead_other)])
    for p in (live, not_ours, pid0, huge, tmp_path / "a.fxc"):
        assert p.exists()


def test_prune_dead_temp_waits_for_lock(tmp_path):
    dead = make(tmp_path, f"a.fxc.tmp.{dead_pid()}.0", 10, 1_000_000)
    fd = os.open(tmp_path / "a.fxc.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert prune(tmp_path, 1) == [] and dead.exists()
    finally:
        os.close(fd)
    assert prune(tmp_path, 1) == [str(dead)]


def test_prune_touches_only_fxc_files(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    target = make(outside, "target.fxc", MiB, 1_000_000)
    d = tmp_path / "cache"
    d.mkdir()
    make(d, "model.tflite", 3 * MiB, 1_000_000)
    make(d, "x.fxc.bak", 3 * MiB, 1_000_000)
    make(d, "x.fxcx", 3 * MiB, 1_000_000)
    (d / "link.fxc").symlink_to(target)
    (d / "dir.fxc").mkdir()
    (d / "sub").mkdir()
    make(d / "sub", "deep.fxc", 3 * MiB, 1_000_000)
    (d / "lnk.fxc.tmp.999999999.0").symlink_to(target)
    keep = make(d, "keep.fxc", MiB, 2_000_000)
    before = names(d)
    assert prune(d, 0) == [str(keep)]
    assert names(d) == sorted([n for n in before if n != "keep.fxc"])
    assert target.exists() and (d / "sub" / "deep.fxc").exists()


def test_prune_never_removes_a_file_without_the_cache_magic(tmp_path):
    """Named *.fxc but not ours (someone's notes, a model renamed): left alone, no lock beside it."""
    notes = make(tmp_path, "notes.fxc", MiB, 1_000_000, ours=False)
    empty = make(tmp_path, "empty.fxc", 0, 1_000_000, ours=False)
    before = {p: p.read_bytes() for p in (notes, empty)}
    assert prune(tmp_path, 0) == []
    assert {p: p.read_bytes() for p in (notes, empty)} == before
    assert names(tmp_path) == ["empty.fxc", "notes.fxc"]


def test_prune_symlinked_lock_is_not_followed(tmp_path):
    victim = make(tmp_path, "victim", 5, 1_000_000)
    d = tmp_path / "cache"
    d.mkdir()
    make(d, "a.fxc", MiB, 1_000_000)
    (d / "a.fxc.lock").symlink_to(victim)
    assert prune(d, 0) == []  # cannot lock safely: leave it
    assert (d / "a.fxc").exists() and victim.read_bytes() == b"xxxxx"


def test_prune_missing_directory(tmp_path):
    with pytest.raises(FileNotFoundError):
        prune(tmp_path / "nope", 1)
    make(tmp_path, "f", 1, 1)
    with pytest.raises(NotADirectoryError):
        prune(tmp_path / "f", 1)


def test_algorithms_in_words():
    from flexdelegate.cache.tools import algo_name
    assert algo_name(0x01000010) == "GEMM panels, 16 columns"
    assert algo_name(0x02000610) == "Winograd, 6x6 output tiles, panels of 16"
    assert algo_name(0x7F000001).startswith("unknown algorithm 0x7f000001")


def test_tidy_removes_orphan_locks_and_stale_plans(tmp_path):
    from flexdelegate.cache.tools import tidy
    from flexdelegate.planner.cache import FORMAT
    make(tmp_path, "live.fxc", 100, 1_000_000)
    for name in ("live.fxc.lock", "gone.fxc.lock", "notes.lock"):
        (tmp_path / name).write_bytes(b"")
    held = tmp_path / "busy.fxc.lock"  # orphan but held: a writer is about to create busy.fxc
    held.write_bytes(b"")
    plans = tmp_path / "plans"
    plans.mkdir()
    (plans / "a.json").write_text(json.dumps({"format": FORMAT, "key": "a"}))
    (plans / "old.json").write_text(json.dumps({"format": FORMAT + 99}))
    (plans / "broken.json").write_text("{")
    fd = os.open(held, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        removed = tidy(tmp_path)
    finally:
        os.close(fd)
    assert sorted(removed) == sorted([str(tmp_path / "gone.fxc.lock"), str(plans / "old.json"),
                                      str(plans / "broken.json")])
    assert names(tmp_path) == ["busy.fxc.lock", "live.fxc", "live.fxc.lock", "notes.lock", "plans"]
    assert os.listdir(plans) == ["a.json"]


def test_writer_after_an_orphan_lock_was_removed_locks_the_new_file(tmp_path):
    """A writer that opened the lock just before tidy() removed it must not hold a dead inode."""
    from flexdelegate.cache.format import take_lock
    (tmp_path / "c.fxc.lock").write_bytes(b"")
    dir_fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.unlink(tmp_path / "c.fxc.lock")  # as tidy() would, between the writer's open and flock
        fd = take_lock(dir_fd, "c.fxc.lock")
        assert os.fstat(fd).st_ino == os.stat(tmp_path / "c.fxc.lock").st_ino
        os.close(fd)
    finally:
        os.close(dir_fd)
