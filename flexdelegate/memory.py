"""Process memory readings from /proc (Linux)."""
from __future__ import annotations


def _status_kb(field: str) -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_bytes() -> int:
    return _status_kb("VmRSS") * 1024


def peak_rss_bytes() -> int:
    """VmHWM: the peak resident set since the process started."""
    return _status_kb("VmHWM") * 1024
