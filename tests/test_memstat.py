"""flexdelegate.memstat: the /proc and glibc readers behind `flexdelegate profile`."""
import os

import numpy as np
import pytest

from flexdelegate import memstat
from sanitizers import ASAN

linux = pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux /proc")
# Under the sanitizer stage ASan's allocator replaces glibc malloc: no malloc arena statistics,
# and freed memory stays quarantined instead of going back to the OS.
glibc_malloc = pytest.mark.skipif(ASAN, reason="ASan's allocator replaces glibc malloc")


@glibc_malloc
def test_mallinfo2_fields_and_growth():
    before = memstat.mallinfo2()
    if before is None:
        pytest.skip("no glibc mallinfo2")
    assert set(before) == set(memstat._MALLINFO2_FIELDS)
    assert all(isinstance(v, int) and v >= 0 for v in before.values())
    # Below the mmap threshold numpy's buffers come from the malloc arena.
    keep = [np.ones(2000) for _ in range(20)]
    after = memstat.mallinfo2()
    assert after["uordblks"] - before["uordblks"] >= 20 * 2000 * 8 * 0.9
    del keep


@linux
def test_status_and_sharing():
    st = memstat.status()
    assert st["VmRSS"] > 0 and st["VmHWM"] >= st["VmRSS"] // 2
    rollup = memstat.smaps_rollup()
    if not rollup:
        pytest.skip("kernel without smaps_rollup")
    split = memstat.sharing(rollup)
    assert set(split) == {"private_bytes", "shared_bytes", "pss_bytes", "anonymous_bytes"}
    assert all(isinstance(v, int) and v >= 0 for v in split.values())
    # Every resident page is either private or shared.
    assert split["private_bytes"] + split["shared_bytes"] == rollup["Rss"]
    assert split["pss_bytes"] <= rollup["Rss"]


@linux
@glibc_malloc
def test_reset_peak_forgets_an_earlier_peak():
    big = np.ones(64 * 2**20 // 8)  # 64 MiB, touched, then returned to the OS (mmapped)
    del big
    st = memstat.status()
    assert st["VmHWM"] - st["VmRSS"] >= 48 * 2**20
    if not memstat.reset_peak():
        pytest.skip("clear_refs not writable here")
    st = memstat.status()
    assert st["VmHWM"] - st["VmRSS"] < 16 * 2**20


def test_stage_memory_ranges():
    before = {"rss": 100, "hwm": 100, "malloc_free": 10}
    after = {"rss": 150, "hwm": 400, "malloc_free": 30}
    m = memstat.stage_memory(before, after)
    assert m == {"peak_bytes": [280, 300], "increase_bytes": [30, 50]}
    # Free space that shrank (reused) is not credited: lo == hi then.
    m = memstat.stage_memory(before, dict(after, malloc_free=5))
    assert m["peak_bytes"] == [300, 300] and m["increase_bytes"] == [50, 50]
    # Without mallinfo2 the range collapses to the RSS figure.
    m = memstat.stage_memory(dict(before, malloc_free=None), after)
    assert m["peak_bytes"] == [300, 300] and m["increase_bytes"] == [50, 50]
    # A stage that frees memory: negative increase, peak never below 0.
    m = memstat.stage_memory(before, {"rss": 60, "hwm": 60, "malloc_free": 10})
    assert m["increase_bytes"] == [-40, -40] and m["peak_bytes"] == [0, 0]


def test_snapshot_keys():
    s = memstat.snapshot()
    assert set(s) == {"rss", "hwm", "malloc_free"}


@linux
def test_drop_page_cache(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(os.urandom(1 << 16))
    assert memstat.drop_page_cache(str(path)) is True
    assert memstat.drop_page_cache(str(tmp_path / "missing")) is False
