"""A cache path the delegate does not own is never written: only a missing path or a file that
starts with the cache magic may be (re)written. The model itself, a text file, a symlink, a
directory, a FIFO or an empty file named as cache_path stay exactly as they were through load,
invoke and process exit (cold write in the background, the write at exit, the budget path),
with one warning line and the weights packed in memory. A valid cache we may not write (shipped
read-only with an app, or another user's) is used without a warning."""
import ctypes
import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest

from budgetcheck import heavy_model
from cachecheck import TWO_CONV_BLOBS, run_flex, two_conv_model
from flexdelegate.cache.format import read_cache

# One load + invoke in a fresh process, checked against stock; argv: model, cache, budget, and
# "settle" to wait for the background writer (stats) before exiting, else exit at once.
LOAD_INVOKE_EXIT = textwrap.dedent("""
    import json, sys
    from flexdelegate import load_flex
    from flexdelegate.run import invoke, make_interpreter, max_error, random_inputs
    model, cache, budget, when = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    ref = make_interpreter(model)
    x = random_inputs(ref)
    want = invoke(ref, x)
    d = load_flex(cache_path=cache, **({"budget": budget} if budget else {}))
    it = make_interpreter(model, delegate=d)
    err = max_error(want, invoke(it, x))
    cache_stats = d.stats()["cache"] if when == "settle" else None
    print(json.dumps({"err": err, "cache": cache_stats}))
""")


def drop_root_overrides():
    """For a child run as root: take the permission overrides (CAP_DAC_OVERRIDE,
    CAP_DAC_READ_SEARCH) out of its bounding set, so what it executes obeys file modes as any
    user does. Not root: nothing to drop (the call fails harmlessly)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):
        libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP


def load_invoke_exit(model, cache, *, budget=0, when="exit", as_user=False):
    r = subprocess.run([sys.executable, "-c", LOAD_INVOKE_EXIT, str(model), str(cache), str(budget), when],
                       capture_output=True, text=True, timeout=120,
                       preexec_fn=drop_root_overrides if as_user else None)
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert result["err"] <= 1e-4
    return result, [line for line in r.stderr.splitlines() if "flexdelegate" in line]


def snapshot(path):
    """Everything about `path` a write could change: its kind and bytes, a link's target and the
    target's bytes, a directory's listing; and the names beside it (no .lock, no temp file)."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        what = ("link", os.readlink(path), open(os.path.realpath(path), "rb").read())
    elif stat.S_ISDIR(st.st_mode):
        what = ("dir", sorted(os.listdir(path)))
    elif stat.S_ISFIFO(st.st_mode):
        what = ("fifo",)
    else:
        what = ("file", st.st_ino, open(path, "rb").read())
    return what, sorted(os.listdir(os.path.dirname(path)))


@pytest.fixture
def foreign(tmp_path, request):
    """(model path, a cache_path that is not ours) for each kind of file that is not a cache."""
    models = tmp_path / "models"
    models.mkdir()
    model = models / "m.tflite"
    model.write_bytes(heavy_model(fc=256) if request.param[1] else two_conv_model())
    kind = request.param[0]
    if kind == "model itself":
        return model, model
    path = tmp_path / "c.fxc"
    if kind == "text file":
        path.write_text("my notes\n")
    elif kind == "empty file":
        path.write_bytes(b"")
    elif kind == "symlink to a file we don't own":
        outside = tmp_path / "outside"
        outside.mkdir()
        (outside / "hostname").write_text("box\n")
        path.symlink_to(outside / "hostname")
    elif kind == "directory":
        path.mkdir()
        (path / "keep.txt").write_text("x")
    elif kind == "fifo":
        os.mkfifo(path)
    return model, path


KINDS = ["model itself", "text file", "empty file", "symlink to a file we don't own", "directory", "fifo"]


@pytest.mark.parametrize("foreign", [(k, False) for k in KINDS], indirect=True, ids=KINDS)
@pytest.mark.parametrize("when", ["exit", "settle"])  # the writer left to exit, or waited for
def test_a_file_not_ours_is_left_alone(foreign, when):
    model, path = foreign
    before = snapshot(path)
    result, lines = load_invoke_exit(model, path, when=when)
    assert snapshot(path) == before
    assert len(lines) == 1 and "left alone" in lines[0] and "warning" in lines[0], lines
    if when == "settle":
        # In memory, without the GEMM forms a file would have kept for budget plans.
        assert result["cache"]["blobs_packed"] == TWO_CONV_BLOBS - 2 and not result["cache"]["writable"]
        assert result["cache"]["blobs_mapped"] == 0 and not result["cache"]["file_ok"]


@pytest.mark.parametrize("foreign", [(k, True) for k in ("model itself", "text file", "symlink to a file we don't own")],
                         indirect=True, ids=["model itself", "text file", "symlink"])
def test_a_file_not_ours_is_left_alone_under_a_budget(foreign):
    """A budget commits in the foreground (weights streamed from the file): not into this one."""
    model, path = foreign
    before = snapshot(path)
    result, lines = load_invoke_exit(model, path, budget=3, when="settle")
    assert snapshot(path) == before and len(lines) == 1 and "left alone" in lines[0]


def test_a_damaged_cache_with_our_magic_is_still_rebuilt(tmp_path):
    path, model = tmp_path / "m.fxc", tmp_path / "m.tflite"
    model.write_bytes(two_conv_model())
    run_flex(str(model), path)
    data = bytearray(path.read_bytes())
    data[20] ^= 0x40  # header checksum broken, magic intact: ours, damaged
    path.write_bytes(bytes(data))
    result, lines = load_invoke_exit(model, path, when="settle")
    assert any("rebuilt" in line for line in lines)
    assert len(read_cache(path).entries) == TWO_CONV_BLOBS


def make_read_only(path):
    path.chmod(0o444)
    path.parent.chmod(0o555)


def test_a_read_only_valid_cache_is_used_without_a_warning(tmp_path):
    """Shipped with the app: another copy of the model (no load record of this file), a
    read-only file in a read-only directory. Every blob is mapped and nothing is said."""
    shipped = tmp_path / "app"
    shipped.mkdir()
    cache = shipped / "m.fxc"
    run_flex(two_conv_model(), cache)
    make_read_only(cache)
    model = tmp_path / "copy.tflite"  # a new inode: the file's records do not name it
    model.write_bytes(two_conv_model())
    before = snapshot(cache)
    try:
        for when in ("exit", "settle"):
            result, lines = load_invoke_exit(model, cache, when=when, as_user=True)
            assert lines == [] and snapshot(cache) == before
        assert result["cache"]["blobs_mapped"] == TWO_CONV_BLOBS and result["cache"]["file_ok"]
        assert not result["cache"]["writable"]
    finally:
        shipped.chmod(0o755)


def test_a_read_only_cache_in_a_writable_directory_is_not_replaced(tmp_path):
    cache = tmp_path / "m.fxc"
    run_flex(two_conv_model(), cache)
    cache.chmod(0o444)
    model = tmp_path / "copy.tflite"
    model.write_bytes(two_conv_model())
    before = snapshot(cache)
    result, lines = load_invoke_exit(model, cache, when="settle", as_user=True)
    assert lines == [] and snapshot(cache) == before
    assert result["cache"]["blobs_mapped"] == TWO_CONV_BLOBS


def test_a_read_only_cache_lacking_weights_says_so_once(tmp_path):
    """Something is really lost here: the other model's weights are packed in memory."""
    shipped = tmp_path / "app"
    shipped.mkdir()
    cache = shipped / "m.fxc"
    run_flex(two_conv_model(), cache)
    make_read_only(cache)
    model = tmp_path / "other.tflite"
    model.write_bytes(two_conv_model(seed=3))
    before = snapshot(cache)
    try:
        result, lines = load_invoke_exit(model, cache, when="settle", as_user=True)
    finally:
        shipped.chmod(0o755)
    assert snapshot(cache) == before
    assert len(lines) == 1 and "read-only" in lines[0] and "in memory" in lines[0], lines
    # Packed in memory: the Winograd weights and the FC, not the GEMM forms the file lacks.
    assert result["cache"]["blobs_packed"] == TWO_CONV_BLOBS - 2


def test_no_cache_file_for_a_model_with_no_delegated_node(tmp_path):
    """Nothing delegated, nothing packed: no file (and no lock) is made for it."""
    from flexdelegate.tflite.writer import ModelBuilder
    b = ModelBuilder()
    x = b.input((1, 8), name="x")
    y = b.tensor((1, 8))
    b.op("EXP", [x], [y])  # not an op the delegate runs
    b.output(y)
    model = tmp_path / "exp.tflite"
    model.write_bytes(b.build())
    path = tmp_path / "c" / "m.fxc"
    path.parent.mkdir()
    result, lines = load_invoke_exit(model, path, when="settle")
    assert os.listdir(path.parent) == [] and lines == []
