"""flex_cache_check: the C loader's verdict on a cache file, which `flexdelegate cache verify`
reports beside the Python reader's (and the cache fuzzer demands they agree)."""
import os
import subprocess
import sys
import textwrap

import pytest

from cachecheck import assert_correct, two_conv_model
from flexdelegate._native import cache_check
from flexdelegate.cache import verify
from flexdelegate.cache.format import CacheError, read_cache

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    path = tmp_path_factory.mktemp("check") / "m.fxc"
    assert_correct(two_conv_model(), path)
    return path.read_bytes()


def python_verdict(path):
    try:
        read_cache(path)
        return None
    except CacheError as e:
        return str(e)


def test_valid_missing_and_foreign(good, tmp_path):
    path = tmp_path / "c.fxc"
    path.write_bytes(good)
    assert cache_check(path) is None
    assert cache_check(tmp_path / "absent.fxc") == "missing"
    path.write_bytes(b"not a cache" * 1000)
    assert "magic" in cache_check(path)
    assert cache_check(tmp_path) == "not a regular file"
    assert cache_check("bad\0path") == "not a valid path"


@pytest.mark.parametrize("damage", ["truncated", "extended", "header_byte", "index_byte", "model_byte"])
def test_c_and_python_agree_on_damage(good, tmp_path, damage):
    data = bytearray(good)
    info_file = tmp_path / "ok.fxc"
    info_file.write_bytes(good)
    info = read_cache(info_file)
    if damage == "truncated":
        data = data[:-1]
    elif damage == "extended":
        data += b"\0"
    elif damage == "header_byte":
        data[100] ^= 1
    elif damage == "index_byte":
        data[info.index_offset + 3] ^= 1
    else:
        data[info.models_offset + 5] ^= 1
    path = tmp_path / "d.fxc"
    path.write_bytes(bytes(data))
    c, py = cache_check(path), python_verdict(path)
    assert c is not None and py is not None, (c, py)
    ok, problems = verify(path)
    assert not ok and problems


def test_verify_reports_the_c_loader_too(good, tmp_path, monkeypatch):
    """A file the Python reader accepts but the loader refuses fails verify, naming the loader
    (simulated: the readers agree on every file we know how to make)."""
    from flexdelegate.cache import tools
    path = tmp_path / "c.fxc"
    path.write_bytes(good)
    assert verify(path) == (True, [])
    monkeypatch.setattr(tools, "cache_check", lambda p: "index not sorted")
    ok, problems = verify(path)
    assert not ok and "delegate's loader refuses it: index not sorted" in problems[-1]


def test_a_fifo_at_the_cache_path_neither_hangs_check_nor_load(tmp_path):
    """open() of a FIFO blocks until a writer appears: the loader opened the cache path without
    O_NONBLOCK, so a load (and the check) hung forever on one."""
    fifo = tmp_path / "m.fxc"
    os.mkfifo(fifo)
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {HERE!r})
        from cachecheck import assert_correct, two_conv_model
        from flexdelegate._native import cache_check
        print(cache_check({str(fifo)!r}))
        assert_correct(two_conv_model(), {str(fifo)!r})
        print("done")
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.split() == ["not", "a", "regular", "file", "done"], run.stdout + run.stderr
