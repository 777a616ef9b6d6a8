"""Process memory readings (Linux; every reader degrades to 0/None/False elsewhere): the
resident set and its peak for the demo, tests and benchmarks, and for `flexdelegate profile`
glibc mallinfo2(), /proc/self/smaps_rollup, a VmHWM reset, and the [lo, hi] ranges one stage's
memory is reported as.

Why ranges: RSS keeps pages that malloc has freed but not returned to the OS, so an RSS delta
overstates what a stage needs if that free space would be reused (lo) and is exact if it
never is (hi)."""
from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os

_MALLINFO2_FIELDS = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                     "uordblks", "fordblks", "keepcost")


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in _MALLINFO2_FIELDS]


_mallinfo2 = False  # False = not looked up yet, None = unavailable


def mallinfo2() -> dict | None:
    """glibc's malloc figures in bytes (uordblks in use, fordblks free but kept, hblkhd
    mmapped); None without glibc >= 2.33 (musl, macOS)."""
    global _mallinfo2
    if _mallinfo2 is False:
        _mallinfo2 = None
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
            fn = libc.mallinfo2
            fn.restype, fn.argtypes = _Mallinfo2, []
            _mallinfo2 = fn
        except (OSError, AttributeError):
            pass
    if _mallinfo2 is None:
        return None
    info = _mallinfo2()
    return {name: int(getattr(info, name)) for name in _MALLINFO2_FIELDS}


def _kb_fields(path: str) -> dict:
    """`Name:  123 kB` lines of a /proc file as {Name: bytes}; {} if unreadable."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                key, _, rest = line.partition(":")
                parts = rest.split()
                if len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
                    out[key] = int(parts[0]) * 1024
    except OSError:
        pass
    return out


def status() -> dict:
    """/proc/self/status sizes in bytes (VmRSS, VmHWM, RssAnon, RssFile, ...)."""
    return _kb_fields("/proc/self/status")


def rss_bytes() -> int:
    """The resident set now (VmRSS)."""
    return status().get("VmRSS", 0)


def peak_rss_bytes() -> int:
    """VmHWM: the peak resident set since the process started (or since reset_peak())."""
    return status().get("VmHWM", 0)


def smaps_rollup() -> dict:
    """/proc/self/smaps_rollup in bytes (Rss, Pss, Private_Dirty, Shared_Clean, Anonymous, ...);
    {} where the kernel lacks it (< 4.14)."""
    return _kb_fields("/proc/self/smaps_rollup")


def sanitizer_allocator() -> bool:
    """Whether a sanitizer's allocator (AddressSanitizer, ThreadSanitizer) runs this process:
    its quarantine and shadow memory then move the resident set, not the program's heap."""
    try:
        with open("/proc/self/maps") as f:
            maps = f.read()
    except OSError:
        return False
    return "libasan" in maps or "libtsan" in maps


def release_heap() -> None:
    """Collects Python's garbage and hands glibc's free heap back to the OS (malloc_trim; a
    no-op without glibc): after it, RSS is what is in use, so a peak measured from here counts
    a stage's allocations even where they reuse memory freed before it."""
    gc.collect()
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def reset_peak() -> bool:
    """Resets VmHWM to the current RSS (writing 5 to clear_refs, Linux >= 4.0) so the next
    peak reading is this stage's; False if not permitted, and VmHWM stays process-wide."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def drop_page_cache(path: str) -> bool:
    """Asks the kernel to evict `path` from the OS page cache, for a cold-load measurement.
    Dirty pages are not evictable, so they are flushed first. Best effort: pages another
    process maps stay; False if the call is unsupported or failed."""
    if not hasattr(os, "posix_fadvise"):
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        try:
            os.fsync(fd)
        except OSError:
            pass  # read-only file systems refuse fsync; their pages are clean anyway
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def snapshot() -> dict:
    """The figures a stage's ranges are computed from: rss, hwm, malloc_free (None if unknown)."""
    st = status()
    mi = mallinfo2()
    return {"rss": st.get("VmRSS", 0), "hwm": st.get("VmHWM", 0),
            "malloc_free": None if mi is None else mi["fordblks"]}


def stage_memory(before: dict, after: dict) -> dict:
    """peak_bytes and increase_bytes as [lo, hi] for the span between two snapshots (take
    `before` right after reset_peak()). hi is the RSS figure; lo subtracts the malloc free
    bytes the stage left behind (kept resident, reusable by later allocations)."""
    peak_hi = max(after["hwm"], after["rss"]) - before["rss"]
    increase_hi = after["rss"] - before["rss"]
    if before["malloc_free"] is None or after["malloc_free"] is None:
        kept_free = 0
    else:
        # Only free space the stage added: what was free before is already in the baseline.
        kept_free = max(0, after["malloc_free"] - before["malloc_free"])
    return {"peak_bytes": [max(0, peak_hi - kept_free), max(0, peak_hi)],
            "increase_bytes": [increase_hi - kept_free, increase_hi]}


def sharing(rollup: dict | None = None) -> dict:
    """The private/shared split of the whole process now, in bytes: private_bytes
    (Private_Clean + Private_Dirty), shared_bytes (Shared_*), pss_bytes, anonymous_bytes.
    Note "shared" means mapped by another process too: a cache file only this process maps
    counts as private (clean) here; anonymous_bytes is the heap-like part."""
    r = smaps_rollup() if rollup is None else rollup
    return {"private_bytes": r.get("Private_Clean", 0) + r.get("Private_Dirty", 0),
            "shared_bytes": r.get("Shared_Clean", 0) + r.get("Shared_Dirty", 0),
            "pss_bytes": r.get("Pss", 0),
            "anonymous_bytes": r.get("Anonymous", 0)}
