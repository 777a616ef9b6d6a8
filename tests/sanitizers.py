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
