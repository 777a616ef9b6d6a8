"""`python -m flexdelegate cache ...`: output, exit codes, one-line errors."""
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from flexdelegate._native import hash64
from flexdelegate.cache import info, read_cache, write_cache
from flexdelegate.cache.format import ModelRecord

ROOT = Path(__file__).resolve().parents[2]
BLOBS = [(1, 2, 0x10004, 1, b"p" * 3000), (5, 6, 0x20008, 1, b"q" * 9000)]
# Two records of one model: without a file identity, and from a recorded model file.
MODELS = [42, ModelRecord(42, dev=2049, ino=1234, size=777, mtime_ns=10**18, ctime_ns=10**18, machine=0x10004,
                          keys=tuple((*b[:4], len(b[4])) for b in BLOBS), path="/gone/away/net.tflite")]


def run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "flexdelegate", *map(str, args)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)


def assert_one_line_error(r, code):
    assert r.returncode == code, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "error" in lines[0], r.stderr


@pytest.fixture
def cache(tmp_path):
    path = tmp_path / "c.fxc"
    write_cache(path, BLOBS, MODELS, producer="cli test", dedup_saved_bytes=123)
    return path


def test_top_level_help_lists_both_commands():
    r = run("--help")
    assert r.returncode == 0 and "demo" in r.stdout and "cache" in r.stdout


def test_info(cache):
    r = run("cache", "info", cache)
    assert r.returncode == 0, r.stderr
    assert read_cache(cache).models_count == 2
    for text in ("cli test", "format version:    3", "blobs:             2", "models served:     1",
                 "0x10004 x1", "0x20008 x1", "models (path as last seen):",
                 "  unknown path: 0 weights (model 000000000000002a)",
                 "  /gone/away/net.tflite: gone, 777 bytes, modified "):
        assert text in r.stdout, r.stdout
    r = run("cache", "info", "--json", cache)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    want = info(cache)
    want["algos"] = {str(k): v for k, v in want["algos"].items()}  # JSON object keys are strings
    assert got == want


def test_verify_ok_and_flipped_byte(cache):
    r = run("cache", "verify", cache)
    assert (r.returncode, r.stdout.strip()) == (0, f"{cache}: OK")
    blob = read_cache(cache).entries[1]
    raw = bytearray(cache.read_bytes())
    raw[blob.offset + blob.size // 2] ^= 1
    cache.write_bytes(bytes(raw))
    r = run("cache", "verify", cache)
    assert r.returncode == 1 and "blob 1 " in r.stdout and "checksum mismatch" in r.stdout
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("action", ["info", "verify"])
def test_bad_paths(tmp_path, cache, action):
    (tmp_path / "empty.fxc").write_bytes(b"")
    (tmp_path / "garbage.fxc").write_bytes(os.urandom(5000))
    (tmp_path / "link.fxc").symlink_to(cache)
    old = bytearray(cache.read_bytes())  # the same file, labelled format version 1
    struct.pack_into("<I", old, 8, 1)
    struct.pack_into("<Q", old, 248, hash64(bytes(old[:248])))
    (tmp_path / "v1.fxc").write_bytes(bytes(old))
    for name, code, text in [("missing.fxc", 2, "no such file"), (".", 2, "is a directory"),
                             ("link.fxc", 2, "symlink"), ("empty.fxc", 1, "empty file"),
                             ("garbage.fxc", 1, "bad magic"), ("v1.fxc", 1, "unsupported format_version 1")]:
        r = run("cache", action, tmp_path / name)
        if action == "verify" and code == 1:  # a damaged file: verify's report, on stdout
            lines = r.stdout.splitlines()
            assert r.returncode == 1 and "Traceback" not in r.stderr and len(lines) == 1
            assert lines[0].startswith(f"{tmp_path / name}: {text}")
        else:
            assert_one_line_error(r, code)
            assert text in r.stderr


def test_prune(tmp_path):
    old, new = tmp_path / "old.fxc", tmp_path / "new.fxc"
    for i, path in enumerate((old, new)):
        write_cache(path, BLOBS, [i])
        os.utime(path, (1_000_000 + i, 1_000_000 + i))
    (tmp_path / "notes.txt").write_text("keep me")
    r = run("cache", "prune", tmp_path, "--max-size", os.path.getsize(new) / (1 << 20))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [f"removed {old}", "1 file(s) removed"]
    assert new.exists() and not old.exists() and (tmp_path / "notes.txt").exists()


@pytest.mark.parametrize("args", [
    ["cache"], ["cache", "bogus"], ["cache", "info"], ["cache", "prune", "."],
    ["cache", "prune", ".", "--max-size", "lots"],
])
def test_usage_errors(args):
    r = run(*args)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "usage:" in r.stderr


def test_prune_errors(tmp_path):
    assert_one_line_error(run("cache", "prune", tmp_path / "nope", "--max-size", 1), 2)
    assert_one_line_error(run("cache", "prune", tmp_path, "--max-size", -1), 2)


def test_prune_defaults_to_the_default_directory_and_info_speaks_words(tmp_path):
    d = tmp_path / "xdg" / "flexdelegate"
    d.mkdir(parents=True)
    cache = d / "m.fxc"
    write_cache(cache, [(1, 1, 0x01000010, 2, b"a" * 100)], [0])
    (d / "gone.fxc.lock").write_bytes(b"")
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "xdg"))
    r = run("cache", "prune", "--max-size", 0, env=env)
    assert r.returncode == 0, r.stderr
    assert f"removed {cache}" in r.stdout and f"removed {d / 'gone.fxc.lock'}" in r.stdout
    assert not cache.exists() and not (d / "gone.fxc.lock").exists()
    write_cache(cache, [(1, 1, 0x01000010, 2, b"a" * 100)], [0])
    r = run("cache", "info", cache)
    assert "GEMM panels, 16 columns x1" in r.stdout, r.stdout
