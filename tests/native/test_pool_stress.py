"""Builds and runs tests/native/pool_stress.c against the real thread pool: every task of
every job runs once and is finished when fx_parallel_tasks returns, across create / run /
free cycles. A task outliving its job once crashed Interpreter.__del__ (the worker still
wrote into the freed arena)."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ccflags import sanitize_flags, child_env

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "flexdelegate" / "native"
STRESS = Path(__file__).resolve().parent / "pool_stress.c"


@pytest.fixture(scope="module")
def stress_exe(tmp_path_factory):
    cc = shutil.which(os.environ.get("CC") or "cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler found")
    exe = tmp_path_factory.mktemp("pool") / "pool_stress"
    cmd = [cc, "-std=gnu11", "-O2", "-Wall", "-Werror", "-pthread", *sanitize_flags(), "-I", str(NATIVE), str(STRESS),
           str(NATIVE / "threadpool.c"), "-o", str(exe)]
    build = subprocess.run(cmd, capture_output=True, text=True, env=child_env())
    assert build.returncode == 0, " ".join(cmd) + "\n" + build.stdout + build.stderr
    return exe


@pytest.mark.parametrize("threads", [2, 3])
def test_pool_tasks_run_once_and_finish_before_return(stress_exe, threads):
    run = subprocess.run([str(stress_exe), "1000", str(threads)], capture_output=True, text=True, timeout=300,
                         env=child_env())
    assert run.returncode == 0, run.stdout + run.stderr
