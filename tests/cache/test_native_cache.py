"""The delegate's packed-weight cache file: warm loads map it, changes invalidate it, dedup
shrinks it, and no fault (race, crash, truncation, corruption, bad path, full disk) ever
crashes a process or yields a wrong answer."""
import multiprocessing as mp
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from flexdelegate import load_flex
from flexdelegate.cache.format import CacheError, read_cache
from cachecheck import CONV_BLOBS, TWO_CONV_BLOBS, assert_correct, reference, run_flex, two_conv_model
from flexdelegate.run import invoke, make_interpreter, max_error, random_inputs

HERE = os.path.dirname(os.path.abspath(__file__))


def blob_out_of_bounds(data: bytearray, info) -> bytearray:
    """The file with entry 0 pointing past the end, every checksum recomputed."""
    import struct
    from flexdelegate._native import hash64
    at = info.index_offset + 24
    struct.pack_into("<Q", data, at, info.file_size * 4 // 4096 * 4096)
    index = bytes(data[info.index_offset: info.index_offset + 64 * info.index_count])
    struct.pack_into("<Q", data, 40, hash64(index))
    struct.pack_into("<Q", data, 248, hash64(bytes(data[:248])))
    return data


def test_cold_load_writes_and_warm_load_maps_every_blob(tmp_path):
    model, path = two_conv_model(), tmp_path / "m.fxc"
    cold = assert_correct(model, path)
    assert cold["cache"]["blobs_packed"] == TWO_CONV_BLOBS and cold["cache"]["blobs_mapped"] == 0
    info = read_cache(path)
    assert len(info.entries) == TWO_CONV_BLOBS and len(info.models) == 1
    warm = assert_correct(model, path)
    assert warm["cache"]["blobs_mapped"] == TWO_CONV_BLOBS and warm["cache"]["blobs_packed"] == 0
    assert read_cache(path).entries == info.entries  # a warm load writes nothing
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644


def test_one_changed_float_same_size_same_mtime_is_never_stale(tmp_path):
    path, f = tmp_path / "m.fxc", tmp_path / "m.tflite"
    a = two_conv_model(seed=0)
    f.write_bytes(a)
    assert_correct(str(f), path)
    # Flip one weight in place: same size; restore the mtime too.
    w1 = (np.random.default_rng(0).standard_normal((16, 3, 3, 8)) * 0.2).astype(np.float32)
    at = a.find(w1.tobytes())  # the first conv's weights, exactly
    assert at > 0
    arr = np.frombuffer(a, np.uint8).copy()
    arr[at: at + 4] = np.frombuffer(np.float32(w1.flat[0] + 1.0).tobytes(), np.uint8)
    st_before = os.stat(f)
    f.write_bytes(arr.tobytes())
    os.utime(f, ns=(st_before.st_atime_ns, st_before.st_mtime_ns))
    stats = assert_correct(str(f), path)
    assert stats["cache"]["blobs_packed"] == CONV_BLOBS  # the first conv's forms, nothing else
    assert stats["cache"]["blobs_mapped"] == TWO_CONV_BLOBS - CONV_BLOBS


def test_equal_weights_in_two_layers_are_stored_once(tmp_path):
    path = tmp_path / "m.fxc"
    stats = assert_correct(two_conv_model(cin=16, cout=16, same_weights=True), path)
    assert stats["cache"]["blobs_deduped"] == CONV_BLOBS
    assert len(read_cache(path).entries) == CONV_BLOBS + 1


def test_two_models_share_a_file_that_grows_only_by_what_is_new(tmp_path):
    path = tmp_path / "shared.fxc"
    a = two_conv_model(seed=0, head_seed=1)
    b = two_conv_model(seed=0, head_seed=2)  # same backbone, another head
    assert_correct(a, path)
    size_a, blobs_a = read_cache(path).blob_bytes, len(read_cache(path).entries)
    stats = assert_correct(b, path)
    info = read_cache(path)
    assert stats["cache"]["blobs_mapped"] == 2 * CONV_BLOBS and stats["cache"]["blobs_packed"] == 1
    assert len(info.entries) == blobs_a + 1 and len(info.models) == 2
    head_bytes = info.blob_bytes - size_a
    assert 0 < head_bytes < size_a
    assert info.dedup_saved_bytes == stats["cache"]["bytes_mapped"] > 0  # b found the backbone stored
    # both models still load warm from the one file
    assert assert_correct(a, path)["cache"]["blobs_packed"] == 0
    assert assert_correct(b, path)["cache"]["blobs_packed"] == 0


def _creator(args):
    path, seed = args
    sys.path.insert(0, HERE)
    from cachecheck import assert_correct as check, two_conv_model as mk
    check(mk(seed=seed, cin=16, cout=32, size=24), path)
    return True


@pytest.mark.parametrize("procs", [2, 8])
def test_racing_creators_all_correct_one_valid_file(tmp_path, procs):
    path = str(tmp_path / "race.fxc")
    with mp.get_context("spawn").Pool(procs) as pool:
        assert all(pool.map(_creator, [(path, i % 2) for i in range(procs)]))
    info = read_cache(path)
    assert len(info.entries) == 2 * TWO_CONV_BLOBS and len(info.models) == 2  # two distinct models
    assert not [p for p in os.listdir(tmp_path) if ".tmp." in p]


KILLABLE = textwrap.dedent("""
    import sys; sys.path.insert(0, {here!r})
    from cachecheck import run_flex, two_conv_model
    run_flex(two_conv_model(seed=3, cin=64, cout=128, size=24), {path!r})
""")


def test_killed_writer_leaves_nothing_a_later_load_trusts(tmp_path):
    path = str(tmp_path / "k.fxc")
    code = KILLABLE.format(here=HERE, path=path)
    for delay in np.linspace(0.05, 1.2, 8):
        p = subprocess.Popen([sys.executable, "-c", code])
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait()
        if os.path.exists(path):
            read_cache(path)  # whatever is at the path is complete and valid
    model = two_conv_model(seed=3, cin=64, cout=128, size=24)
    assert_correct(model, path)
    assert_correct(model, path)
    assert not [p for p in os.listdir(tmp_path) if ".tmp." in p]  # dead temps cleaned up


TRUNCATE = textwrap.dedent("""
    import os, sys; sys.path.insert(0, {here!r})
    from cachecheck import two_conv_model
    from flexdelegate import load_flex
    from flexdelegate.run import invoke, make_interpreter, max_error, random_inputs
    model = two_conv_model(seed=5, cin=64, cout=64, size=16)
    make_interpreter(model, delegate=load_flex(cache_path={path!r}))   # cold: write the file
    it = make_interpreter(model, delegate=load_flex(cache_path={path!r}))  # warm: mapped
    x = random_inputs(it)
    ref = invoke(make_interpreter(model), x)
    if {after_first_invoke}:
        assert max_error(ref, invoke(it, x)) <= 1e-4
    if {rewrite}:  # someone else writes into it in place: same inode, same size
        with open({path!r}, "r+b") as f:
            f.seek(4096)
            f.write(bytes(range(256)) * ((os.path.getsize({path!r}) - 8192) // 256))
    else:  # someone else truncates it in place
        os.truncate({path!r}, 4096)
    print("err", max_error(ref, invoke(it, x)), max_error(ref, invoke(it, x)))
""")


@pytest.mark.parametrize("after_first_invoke,rewrite", [(False, False), (True, False), (True, True)])
def test_changed_under_a_live_mapping_never_crashes_or_misleads(tmp_path, after_first_invoke, rewrite):
    """Truncated: faults in the mapping, caught. Rewritten in place (same inode and size): the
    bytes reach the mapping at once; the fstat at the next invoke sees the new mtime. Either
    way the weights are packed again in memory, with one warning."""
    path = str(tmp_path / "t.fxc")
    code = TRUNCATE.format(here=HERE, path=path, after_first_invoke=after_first_invoke, rewrite=rewrite)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    errs = [float(v) for v in r.stdout.split()[1:]]
    assert len(errs) == 2 and max(errs) <= 1e-4
    assert r.stderr.count("truncated or rewritten in place") == 1


def test_replaced_while_mapped_keeps_the_old_inode(tmp_path):
    from flexdelegate import load_flex
    from flexdelegate.run import invoke, make_interpreter, max_error, random_inputs
    path = tmp_path / "r.fxc"
    model = two_conv_model(seed=6)
    assert_correct(model, path)
    it = make_interpreter(model, delegate=load_flex(cache_path=str(path)))
    x = random_inputs(it, seed=1)
    before = invoke(it, x)
    assert_correct(two_conv_model(seed=7), path)  # another model extends: a new file replaces it
    assert max_error(before, invoke(it, x)) == 0.0


@pytest.mark.parametrize("damage", ["truncated", "header_flip", "index_flip", "blob_oob"])
def test_damaged_file_is_rebuilt(tmp_path, capfd, damage):
    """A damaged cache (its magic intact: ours) is rebuilt; a file without the magic is not
    ours and is left alone (test_not_ours.py)."""
    path = tmp_path / "d.fxc"
    model = two_conv_model(seed=8)
    assert_correct(model, path)
    data = bytearray(path.read_bytes())
    info = read_cache(path)
    if damage == "truncated":
        data = data[: len(data) - 100]
    elif damage == "header_flip":
        data[20] ^= 0x40
    elif damage == "index_flip":
        data[info.index_offset + 9] ^= 1
    elif damage == "blob_oob":  # checksums fixed up, so only the bounds check can catch it
        data = blob_out_of_bounds(data, info)
    path.write_bytes(bytes(data))
    capfd.readouterr()
    stats = assert_correct(model, path)
    err = capfd.readouterr().err
    assert "warning" in err and str(path) in err
    assert stats["cache"]["blobs_packed"] == TWO_CONV_BLOBS
    read_cache(path)  # rebuilt and valid
    assert assert_correct(model, path)["cache"]["blobs_mapped"] == TWO_CONV_BLOBS


def test_directory_path_falls_back_to_memory(tmp_path, capfd):
    stats = assert_correct(two_conv_model(), tmp_path)
    assert "left alone" in capfd.readouterr().err
    # Known unwritable from the start: the GEMM forms a file would keep are not packed.
    assert stats["cache"]["file_ok"] is False and stats["cache"]["blobs_packed"] == TWO_CONV_BLOBS - 2


def test_unwritable_location_falls_back_to_memory(tmp_path, capfd):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    stats = assert_correct(two_conv_model(), blocker / "m.fxc")  # parent is not a directory
    assert "warning" in capfd.readouterr().err and stats["cache"]["file_ok"] is False


FULL_DISK = textwrap.dedent("""
    import resource, signal, sys; sys.path.insert(0, {here!r})
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))  # writes past 64 KiB fail
    from cachecheck import assert_correct, two_conv_model
    s = assert_correct(two_conv_model(seed=9, cin=32, cout=64), {path!r})
    print("file_ok", s["cache"]["file_ok"])
""")


def test_full_disk_falls_back_to_memory(tmp_path):
    path = str(tmp_path / "f.fxc")
    r = subprocess.run([sys.executable, "-c", FULL_DISK.format(here=HERE, path=path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "file_ok False" in r.stdout and "warning" in r.stderr
    assert not os.path.exists(path) and not [p for p in os.listdir(tmp_path) if ".tmp." in p]


def test_symlink_is_not_followed(tmp_path, capfd):
    target = tmp_path / "real.fxc"
    assert_correct(two_conv_model(), target)
    link = tmp_path / "link.fxc"
    link.symlink_to(target)
    before = target.read_bytes()
    stats = assert_correct(two_conv_model(seed=11), link)
    assert stats["cache"]["blobs_mapped"] == 0
    assert target.read_bytes() == before
    assert "warning" in capfd.readouterr().err


def test_default_location_and_in_memory(tmp_path, monkeypatch):
    from flexdelegate import load_flex
    from flexdelegate.run import make_interpreter
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    d = load_flex()
    make_interpreter(two_conv_model(), delegate=d)
    assert d.stats()["cache"]["path"].startswith(str(tmp_path / "xdg" / "flexdelegate"))  # waits for the write
    files = os.listdir(tmp_path / "xdg" / "flexdelegate")
    assert len([f for f in files if f.endswith(".fxc")]) == 1
    d2 = load_flex(cache_path="")
    make_interpreter(two_conv_model(seed=12), delegate=d2)
    assert d2.stats()["cache"]["path"] is None
    assert len([f for f in os.listdir(tmp_path / "xdg" / "flexdelegate") if f.endswith(".fxc")]) == 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 10**9), st.integers(0, 255)), min_size=1, max_size=8),
       st.sampled_from(["flip", "cut"]))
def test_fuzzed_file_never_crashes_or_misleads(tmp_path_factory, edits, mode):
    d = tmp_path_factory.mktemp("fuzz")
    path = d / "z.fxc"
    model = two_conv_model(seed=13, size=6)
    assert_correct(model, path)
    data = bytearray(path.read_bytes())
    for pos, val in edits:
        if mode == "flip":
            data[pos % len(data)] ^= val or 1
        else:
            data = data[: pos % max(len(data), 1)]
    path.write_bytes(bytes(data))
    try:
        read_cache(path)
        valid = True
    except CacheError:
        valid = False
    stats = run_flex(model, path)[1]
    if not valid:
        assert stats["cache"]["blobs_mapped"] == 0  # never trusts what the loader rejects
    assert_correct(model, path)


def test_unchanged_model_file_skips_hashing_and_any_change_is_seen(tmp_path):
    """A load of the same, unchanged model file replays the recorded keys (no hashing); an
    in-place edit (mtime restored) or a copy (new inode) is hashed again and never stale."""
    import shutil
    path, f = tmp_path / "m.fxc", tmp_path / "m.tflite"
    a = two_conv_model(seed=21)
    f.write_bytes(a)
    time.sleep(2.2)  # older than the racy window: its identity can be recorded
    first = assert_correct(str(f), path)
    assert first["cache"]["keys_replayed"] == 0 and first["cache"]["blobs_packed"] == TWO_CONV_BLOBS
    again = assert_correct(str(f), path)
    assert again["cache"]["keys_replayed"] == again["cache"]["blobs_mapped"] == TWO_CONV_BLOBS
    copy = tmp_path / "copy.tflite"
    shutil.copyfile(f, copy)
    c = assert_correct(str(copy), path)
    assert c["cache"]["keys_replayed"] == 0 and c["cache"]["blobs_mapped"] == TWO_CONV_BLOBS
    w1 = (np.random.default_rng(21).standard_normal((16, 3, 3, 8)) * 0.2).astype(np.float32)
    at = a.find(w1.tobytes())
    st_before = os.stat(f)
    with open(f, "r+b") as fh:  # in place: same inode, same size
        fh.seek(at)
        fh.write(np.float32(w1.flat[0] + 1.0).tobytes())
    os.utime(f, ns=(st_before.st_atime_ns, st_before.st_mtime_ns))
    changed = assert_correct(str(f), path)
    assert changed["cache"]["keys_replayed"] == 0 and changed["cache"]["blobs_packed"] == CONV_BLOBS


def mapped_rss(path) -> int:
    """Resident bytes of this process's mappings of `path`."""
    rss, inside = 0, False
    for line in open("/proc/self/smaps"):
        if line[0] in "0123456789abcdef" and "-" in line.split()[0]:
            inside = line.rstrip().endswith(str(path))
        elif inside and line.startswith("Rss:"):
            rss += int(line.split()[1]) * 1024
    return rss


def cold_loaded(tmp_path):
    """(cache path, delegate, interpreter, inputs, stock outputs) right after a cold load: the
    background write may still be running."""
    from flexdelegate import load_flex
    model, path = two_conv_model(cin=32, cout=64, size=16), tmp_path / "m.fxc"
    ref = make_interpreter(model)
    x = random_inputs(ref)
    want = invoke(ref, x)
    d = load_flex(cache_path=str(path))
    return path, d, make_interpreter(model, delegate=d), x, want


def test_cold_load_writes_in_the_background_then_computes_from_the_file(tmp_path):
    """The cold load packs in memory and returns; the file is written meanwhile, and once it is
    done the weights are read from its mapping (the memory copies freed), still correct."""
    path, d, it, x, want = cold_loaded(tmp_path)
    assert max_error(want, invoke(it, x)) <= 1e-4  # from the memory copies or the file
    stats = d.stats()  # waits for the writer and moves the weights into the file
    assert stats["cache"]["file_ok"] and stats["cache"]["blobs_packed"] == TWO_CONV_BLOBS
    assert max_error(want, invoke(it, x)) <= 1e-4
    assert mapped_rss(path) >= stats["cache"]["bytes_packed"] // 2  # the kernels read the file
    read_cache(path)  # valid


EXIT_AFTER_LOAD = textwrap.dedent("""
    import sys; sys.path.insert(0, {here!r})
    from cachecheck import two_conv_model
    from flexdelegate import load_flex
    from flexdelegate.run import make_interpreter
    it = make_interpreter(two_conv_model(cin=32, cout=64), delegate=load_flex(cache_path={path!r}))
    sys.exit(0)  # no invoke, no stats: the write may still be running
""")


def test_a_process_exiting_right_after_the_cold_load_leaves_its_cache(tmp_path):
    path = tmp_path / "m.fxc"
    code = EXIT_AFTER_LOAD.format(here=HERE, path=str(path))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert len(read_cache(path).entries) == TWO_CONV_BLOBS
    warm = run_flex(two_conv_model(cin=32, cout=64), path)[1]
    assert warm["cache"]["blobs_mapped"] == TWO_CONV_BLOBS and warm["cache"]["blobs_packed"] == 0


def test_a_child_forked_mid_write_neither_hangs_nor_writes(tmp_path):
    """fork() copies the pending write but not its thread: the child keeps computing from its
    memory copies, and settling (stats, exit) must not wait for a thread it does not have."""
    path, d, it, x, want = cold_loaded(tmp_path)
    pid = os.fork()
    if pid == 0:  # the child: no pytest machinery, just a verdict in the exit code
        ok = max_error(want, invoke(it, x)) <= 1e-4
        d.stats()
        os._exit(0 if ok and max_error(want, invoke(it, x)) <= 1e-4 else 1)
    deadline = time.time() + 60
    while time.time() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
        pytest.fail("the forked child hung")
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert d.stats()["cache"]["file_ok"] and max_error(want, invoke(it, x)) <= 1e-4
    assert len(read_cache(path).entries) == TWO_CONV_BLOBS




def test_warm_load_of_an_fp16_model_keeps_no_float32_copy(tmp_path):
    """DEQUANTIZE of fp16 weights feeding FC layers: the packed weights are keyed by the fp16
    bytes, so a warm load maps them and never dequantizes (48 MB of float32 never exists)."""
    from flexdelegate.tflite.writer import ModelBuilder
    rng = np.random.default_rng(3)
    b = ModelBuilder()
    prev = b.input((1, 2048), name="x")
    for _ in range(3):
        w16 = b.const((rng.standard_normal((2048, 2048)) * 0.02).astype(np.float16))
        w = b.tensor((2048, 2048))
        b.op("DEQUANTIZE", [w16], [w])
        y = b.tensor((1, 2048))
        b.op("FULLY_CONNECTED", [prev, w, b.const(np.zeros(2048, np.float32))], [y])
        prev = y
    b.output(prev)
    model = tmp_path / "fp16.tflite"
    model.write_bytes(b.build())
    cache = tmp_path / "m.fxc"
    from budgetcheck import cold_then_warm
    cold, warm = cold_then_warm(model, cache, 2048)
    assert warm["cache"]["blobs_mapped"] == 3
    assert np.allclose(cold["y"], warm["y"], rtol=1e-5, atol=1e-6)
    assert warm["anon"] < 16 * 2**20, warm  # one float32 copy of one layer would be 16 MB


def fp16_conv_model(seed=5) -> bytes:
    """CONV 3x3 (Winograd-sized) and FC with fp16 weights behind DEQUANTIZE."""
    from flexdelegate.tflite.writer import ModelBuilder
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.input((1, 16, 16, 16), name="x")
    w = b.tensor((32, 3, 3, 16))
    b.op("DEQUANTIZE", [b.const((rng.standard_normal((32, 3, 3, 16)) * 0.2).astype(np.float16))], [w])
    h = b.tensor((1, 16, 16, 32))
    b.op("CONV_2D", [x, w, b.const(np.zeros(32, np.float32))], [h], padding="SAME", stride_w=1, stride_h=1)
    flat = b.tensor((1, 16 * 16 * 32))
    b.op("RESHAPE", [h, b.const(np.array([1, 16 * 16 * 32], np.int32))], [flat])
    fw = b.tensor((10, 16 * 16 * 32))
    b.op("DEQUANTIZE", [b.const((rng.standard_normal((10, 16 * 16 * 32)) * 0.01).astype(np.float16))], [fw])
    y = b.tensor((1, 10))
    b.op("FULLY_CONNECTED", [flat, fw, b.const(np.zeros(10, np.float32))], [y])
    b.output(y)
    return b.build()


def test_damaged_blob_of_an_fp16_model_is_repacked_from_the_fp16_source(tmp_path, capfd):
    model, path = fp16_conv_model(), tmp_path / "m.fxc"
    assert assert_correct(model, path)["cache"]["blobs_packed"] == 3  # Winograd, its GEMM form, FC
    info = read_cache(path)
    data = bytearray(path.read_bytes())
    for e in info.entries:  # every blob damaged; header and index intact
        data[e.offset + e.size // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    stats = assert_correct(model, path)
    assert stats["cache"]["blobs_mapped"] == 3
    assert "checksum" in capfd.readouterr().err


def test_a_blob_failing_its_checksum_is_stored_again_by_the_next_load(tmp_path, capfd):
    """A damaged blob is dropped from the file by the load that finds it, and the next load
    packs and stores it again: from then on every blob maps, silently (it used to be repacked
    in memory on every load, forever)."""
    from flexdelegate.cache.tools import verify
    model, path = two_conv_model(seed=3), tmp_path / "m.fxc"
    assert_correct(model, path)
    info = read_cache(path)
    data = bytearray(path.read_bytes())
    e = info.entries[0]
    data[e.offset + e.size // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    assert not verify(path)[0]
    capfd.readouterr()
    first = assert_correct(model, path)  # finds it, repacks it in memory, drops it from the file
    assert "checksum" in capfd.readouterr().err
    assert first["cache"]["blobs_mapped"] == TWO_CONV_BLOBS
    assert len(read_cache(path).entries) == TWO_CONV_BLOBS - 1
    second = assert_correct(model, path)  # packs and stores it again
    assert second["cache"]["blobs_packed"] == 1
    third = assert_correct(model, path)
    assert third["cache"]["blobs_mapped"] == TWO_CONV_BLOBS and third["cache"]["blobs_packed"] == 0
    assert "checksum" not in capfd.readouterr().err
    assert verify(path)[0]


def test_a_damaged_blob_a_newer_version_carried_along_is_dropped_there(tmp_path, capfd):
    """Another load may rename a newer version over the path between our mapping and our check,
    copying the damaged bytes along: the load that finds the damage drops the blob from that
    version too, judged by its own checksum (the chaos test once left such a file failing
    verify after its final loads)."""
    from flexdelegate.cache.tools import verify
    model, path = two_conv_model(seed=3), tmp_path / "m.fxc"
    assert_correct(model, path)
    e = read_cache(path).entries[0]
    data = bytearray(path.read_bytes())
    data[e.offset + e.size // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    d = load_flex(cache_path=str(path))
    it = make_interpreter(model, delegate=d)  # maps the damaged version; checks at its first run
    before = os.stat(path).st_ino
    assert_correct(two_conv_model(seed=4), path)  # a newer version, the damaged bytes copied along
    assert os.stat(path).st_ino != before and not verify(path)[0]
    capfd.readouterr()
    assert max_error(reference(model), invoke(it, random_inputs(it, seed=1))) <= 1e-4
    assert "removed from the cache file" in capfd.readouterr().err
    assert verify(path)[0]
    assert e.key_hi not in {x.key_hi for x in read_cache(path).entries}
