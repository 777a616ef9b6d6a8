"""Builds and runs the standalone C self-test of the FP32 op kernels.

tests/native/ops_selftest.c is compiled together with every
flexdelegate/native/ops/*.c file (it provides its own serial fx_parallel_for),
with warnings as errors, and must exit 0.
"""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ccflags import sanitize_flags, child_env

ROOT = Path(__file__).resolve().parents[2]
OPS_DIR = ROOT / "flexdelegate" / "native" / "ops"
SELFTEST = Path(__file__).resolve().parent / "ops_selftest.c"

# A definition (not a declaration) of fx_parallel_for: the self-test brings its
# own serial stub, so a source defining the real one must not be linked in.
_PARALLEL_FOR_DEF = re.compile(r"\bvoid\s+fx_parallel_for\s*\([^;{]*\)\s*\{", re.S)


def _find_cc():
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def _kernel_sources():
    srcs = []
    for path in sorted(OPS_DIR.glob("*.c")):
        if _PARALLEL_FOR_DEF.search(path.read_text(errors="replace")):
            continue
        srcs.append(str(path))
    return srcs + [str(OPS_DIR.parent / "cpu.c")]  # the CPU probe the variant tables share


def test_ops_selftest(tmp_path):
    cc = _find_cc()
    if cc is None:
        pytest.skip("no C compiler found")
    exe = tmp_path / "ops_selftest"
    cmd = [cc, "-std=c11", "-O1", "-Wall", "-Werror", *sanitize_flags(), "-I", str(OPS_DIR), str(SELFTEST),
           *_kernel_sources(), "-o", str(exe), "-lm"]
    build = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=child_env())
    assert build.returncode == 0, (
        "self-test build failed:\n" + " ".join(cmd) + "\n" + build.stdout + build.stderr)
    run = subprocess.run([str(exe)], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=child_env())
    out = run.stdout + run.stderr
    assert run.returncode == 0, "C op self-test failed:\n" + out
    last = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    assert re.fullmatch(r"\d+ passed, 0 failed", last), out
