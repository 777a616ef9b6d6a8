"""The sanitizer runtime this process runs under, if any (tests/sanitize/README.md). Its
allocator replaces glibc's (redzones and a quarantine of freed blocks; ThreadSanitizer's shadow
memory besides), so a test that measures the process's memory then measures the sanitizer."""
import pytest


def _maps():
    try:
        with open("/proc/self/maps") as f:
            return f.read()
    except OSError:
        return ""


_MAPS = _maps()
ASAN = "libasan" in _MAPS
TSAN = "libtsan" in _MAPS

# Memory figures under ThreadSanitizer (CI's TSan step runs these files for their threads):
# peaks there moved by tens of MB from run to run.
MEASURES_MEMORY = pytest.mark.skipif(TSAN, reason="memory measured under ThreadSanitizer's allocator")

# Budget tests at the planner's exact minimum (issue 17, open): a cold load there may not fit.
# The minimum counts the arena and a fixed 2.5 MB reserve, not the Python heap planning keeps:
# the int8 heavy model (2.54 MB) peaked 0.2-0.3 MB over (its 1030-step plan takes 2.4-2.6 MB of
# heap for a moment); the FP32 one (2.77 MB) is refused on LiteRT on a Zen 5 ("the minimum is
# 3.34 MB": its first plan in the process kept 0.57 MB). A little above the minimum holds. (Here,
# not in budgetcheck: leak_cycles.py imports that, and pytest's import leaves locks LSan reports.)
AT_MINIMUM = pytest.mark.xfail(strict=False, reason="the planner's heap at the minimum (issue 17, open)")
