"""Builds and runs the standalone C self-test of the FP32 op kernels.

tests/native/ops_selftest.c is compiled together with the op kernels (kernels/ops) and the
variant families they call (depthwise conv, sigmoid, with the CPU probe their tables share);
it brings its own serial fx_parallel_for instead of the thread pool. Warnings are errors; it
must exit 0."""
import re

import pytest

import cbuild


def test_ops_selftest(tmp_path):
    if cbuild.host_cc() is None:
        pytest.skip("no C compiler found")
    srcs = [cbuild.HERE / "ops_selftest.c",
            *cbuild.sources("kernels/ops/*.c", "kernels/dwconv/*.c", "kernels/vsigmoid/*.c", "kernels/vgelu/*.c", "runtime/cpu.c")]
    exe, _ = cbuild.build(srcs, tmp_path / "ops_selftest")
    run = cbuild.run(exe, timeout=300)
    out = run.stdout + run.stderr
    assert run.returncode == 0, "C op self-test failed:\n" + out
    last = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    assert re.fullmatch(r"\d+ passed, 0 failed", last), out
