"""Builds and runs tests/native/pool_stress.c against the real thread pool: every task of
every job runs once and is finished when fx_parallel_tasks returns, across create / run /
free cycles; fx_parallel_for covers odd sizes exactly once in chunks of at least its grain;
a nested job runs whole; each thread runs its own range of a job first. A task outliving its job once crashed Interpreter.__del__ (the
worker still wrote into the freed arena)."""
import pytest

import cbuild


@pytest.fixture(scope="module")
def stress_exe(tmp_path_factory):
    if cbuild.host_cc() is None:
        pytest.skip("no C compiler found")
    exe, _ = cbuild.build([cbuild.HERE / "pool_stress.c", *cbuild.sources("runtime/threadpool.c")],
                          tmp_path_factory.mktemp("pool") / "pool_stress")
    return exe


@pytest.mark.parametrize("threads", [1, 2, 3, 5])
def test_pool_tasks_run_once_and_finish_before_return(stress_exe, threads):
    run = cbuild.run(stress_exe, 1000, threads, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
