"""Model paths in the cache file (FORMAT.md "Model record ... and path"): a load records where
its model file was, `cache info` names every model a file serves by that path, as last seen,
and says whether the file is still there as recorded."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from cachecheck import TWO_CONV_BLOBS, assert_correct, two_conv_model
from flexdelegate.cache import info, read_cache, verify

ROOT = Path(__file__).resolve().parents[2]


def model_file(path: Path, seed: int) -> str:
    path.write_bytes(two_conv_model(seed=seed))
    return os.path.realpath(path)  # what /proc/self/maps shows: no symlinks in it


def paths(cache) -> dict:
    return {m["path"]: m for m in info(cache)["models"]}


def cli_info(cache, *args):
    r = subprocess.run([sys.executable, "-m", "flexdelegate", "cache", "info", *args, str(cache)], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_a_load_names_its_model(tmp_path):
    cache, model = tmp_path / "c.fxc", model_file(tmp_path / "m.tflite", seed=1)
    assert_correct(model, cache)
    (m,) = info(cache)["models"]
    # Loaded within 2 s of being written: the path, but no identity to compare yet.
    assert (m["path"], m["status"], m["weights"], m["size_bytes"]) == (model, "unverified", TWO_CONV_BLOBS, None)
    assert f"  {model}: unverified, size not recorded, {TWO_CONV_BLOBS} weights" in cli_info(cache)
    time.sleep(2.2)
    assert_correct(model, cache)  # now old enough: its identity is recorded beside the path
    (m,) = info(cache)["models"]
    assert (m["path"], m["status"], m["size_bytes"]) == (model, "present", os.path.getsize(model))
    assert json.loads(cli_info(cache, "--json"))["models"] == [m]
    with open(model, "r+b") as f:  # same path, other contents
        f.seek(os.path.getsize(model) - 8)
        f.write(b"\x01" * 8)
    assert paths(cache)[model]["status"] == "changed"
    os.unlink(model)
    assert paths(cache)[model]["status"] == "gone"
    assert f"  {model}: gone, " in cli_info(cache)


def test_two_models_in_one_file_are_both_named(tmp_path):
    cache = tmp_path / "shared.fxc"
    a, b = model_file(tmp_path / "a.tflite", seed=2), model_file(tmp_path / "b.tflite", seed=3)
    assert_correct(a, cache)
    assert_correct(b, cache)
    assert set(paths(cache)) == {a, b} and info(cache)["models_served"] == 2
    text = cli_info(cache)
    assert f"  {a}: " in text and f"  {b}: " in text


def test_a_renamed_model_shows_its_new_path(tmp_path):
    """Renamed (inode kept, ctime moved): the next load replaces the record, path included;
    within the 2 s racy window too."""
    cache, old = tmp_path / "c.fxc", model_file(tmp_path / "old.tflite", seed=4)
    time.sleep(2.2)
    assert_correct(old, cache)
    assert paths(cache)[old]["status"] == "present"
    new = os.path.join(os.path.dirname(old), "new.tflite")
    os.rename(old, new)
    assert paths(cache)[old]["status"] == "gone"
    stats = assert_correct(new, cache)
    assert stats["cache"]["blobs_mapped"] == TWO_CONV_BLOBS and stats["cache"]["blobs_packed"] == 0
    assert list(paths(cache)) == [new]  # one record: the old path is not kept beside it
    assert verify(cache) == (True, [])


def test_a_moved_directory_rewrites_the_record_once(tmp_path):
    """A directory renamed keeps the model's inode and times: the record still replays, and the
    load writes the file again for the new path alone (FORMAT.md: once per move)."""
    cache, first = tmp_path / "c.fxc", tmp_path / "first"
    first.mkdir()
    old = model_file(first / "m.tflite", seed=5)
    time.sleep(2.2)
    assert_correct(old, cache)
    os.rename(first, tmp_path / "second")
    new = os.path.realpath(tmp_path / "second" / "m.tflite")
    inode = os.stat(cache).st_ino
    stats = assert_correct(new, cache)
    assert stats["cache"]["keys_replayed"] == TWO_CONV_BLOBS  # same identity: no hashing
    assert os.stat(cache).st_ino != inode and list(paths(cache)) == [new]
    assert paths(cache)[new]["status"] == "present"
    inode = os.stat(cache).st_ino
    assert_correct(new, cache)
    assert os.stat(cache).st_ino == inode  # the path is as recorded: nothing to write


def test_a_copy_gets_its_own_record(tmp_path):
    import shutil
    cache, model = tmp_path / "c.fxc", model_file(tmp_path / "m.tflite", seed=6)
    assert_correct(model, cache)
    copy = os.path.join(os.path.dirname(model), "copy.tflite")
    shutil.copyfile(model, copy)
    assert_correct(copy, cache)
    assert set(paths(cache)) == {model, copy} and info(cache)["models_served"] == 1


def test_model_from_memory_has_no_path(tmp_path):
    cache = tmp_path / "c.fxc"
    assert_correct(two_conv_model(seed=7), cache)
    (m,) = info(cache)["models"]
    assert (m["path"], m["status"]) == (None, "unknown")
    assert f"  unknown path: {TWO_CONV_BLOBS} weights (model {m['fingerprint']})" in cli_info(cache)


def test_an_older_format_file_is_replaced_not_left_alone(tmp_path, capfd):
    """A version-2 file (64-byte records, no paths) starts with our magic: ours. Both readers
    refuse it, the load warns once and rebuilds it in this version."""
    from flexdelegate._native import cache_check
    cache = tmp_path / "c.fxc"
    cache.write_bytes((ROOT / "tests/fuzz/corpus/cache/crash-old-version-2.fxc").read_bytes())
    assert cache_check(cache) == "written by another format version"
    model = model_file(tmp_path / "m.tflite", seed=8)
    stats = assert_correct(model, cache)
    err = capfd.readouterr().err
    assert "ignoring cache" in err and "another format version" in err and "left alone" not in err
    assert stats["cache"]["file_ok"] and read_cache(cache).format_version == 3
    assert list(paths(cache)) == [model] and cache_check(cache) is None
