"""What the fuzz targets share: the finding type and the models they serve."""
from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:  # models.py, budgetcheck.py, opcheck.py
    sys.path.insert(0, str(TESTS))


class Finding(AssertionError):
    """A fuzz input broke a promise: atheris saves it as a crash file, pytest fails on it."""


def model_for_cache() -> bytes:
    """Three packed weights (3x3 conv, 1x1 conv, fully connected): small blobs, quick loads."""
    from models import conv_net
    return conv_net(size=8, cout=16)


def model_for_budget() -> bytes:
    """Weights ~6x the activations: under a budget they are sliced and streamed."""
    from budgetcheck import heavy_model
    return heavy_model(seed=5, fc=384, size=8, c=16)


# ------------------------------------------------------------------------------- feedback
# libFuzzer keeps an input only if it covers something new, and most of what these targets
# exercise (C code built without coverage, child processes) is invisible to atheris. So each
# target names what an execution did (its outcome, the ops, the refusal site, ...) and that
# signature is hashed into one of 4096 leaves of an instrumented decision tree: a new leaf is
# new coverage, and the input that reached it joins the corpus.

def _decision_tree(depth: int):
    lines = ["def leaf(h):"]

    def grow(level, indent, value):
        pad = " " * indent
        if level == depth:
            lines.append(f"{pad}return {value}")
            return
        lines.append(f"{pad}if h & {1 << level}:")
        grow(level + 1, indent + 1, value + (1 << level))
        lines.append(f"{pad}else:")
        grow(level + 1, indent + 1, value)

    grow(0, 1, 0)
    namespace = {}
    exec(compile("\n".join(lines), "<fuzz-feedback>", "exec"), namespace)
    return namespace["leaf"]


_leaf = None


def feedback(signature: str) -> None:
    """Reports an execution's signature to libFuzzer as coverage (call it only under atheris)."""
    global _leaf
    if _leaf is None:
        import atheris
        _leaf = atheris.instrument_func(_decision_tree(12))
    import zlib
    _leaf(zlib.crc32(signature.encode()) & 4095)


def coarse(text: str, width: int = 60) -> str:
    """A message with its numbers blanked: one signature per kind of message, not per value."""
    import re
    return re.sub(r"[0-9]+", "#", text or "")[:width]
