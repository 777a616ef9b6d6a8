"""`flexdelegate profile`: the four stages, their JSON report, the table and the error paths."""
import contextlib
import io
import json
import os
import subprocess
import sys

import pytest

from flexdelegate import cli
from flexdelegate.cli import common, profile
from flexdelegate.tflite.demo_model import build_demo_model

ITERATIONS = 5
STAGE_KEYS = {"peak_bytes", "increase_bytes", "time_us", "private_bytes", "shared_bytes"}


@pytest.fixture(scope="module")
def demo_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "demo.tflite"
    path.write_bytes(build_demo_model(seed=0))
    return str(path)


@pytest.fixture(scope="module")
def run(demo_path, tmp_path_factory):
    """One real `flexdelegate profile` run (in this process, so worker pids can be compared
    with ours): (exit status, stdout, the --json report)."""
    out = tmp_path_factory.mktemp("out") / "p.json"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = cli.main(["profile", demo_path, "--iterations", str(ITERATIONS), "--json", str(out)])
    return rc, buf.getvalue(), json.loads(out.read_text())


def test_exit_status_and_table(run):
    rc, text, report = run
    assert rc == 0
    for stage in profile.STAGES:
        assert stage in text
    assert "latency:" in text and "min" in text and "median" in text
    assert "top 10 of 16 delegated ops" in text


def test_json_schema(run, demo_path):
    report = run[2]
    assert {"model", "budget_mb", "threads", "stages", "ops", "fallback"} <= set(report)
    assert report["model"] == demo_path and report["budget_mb"] == 0 and report["threads"] == 1
    assert list(report["stages"]) == list(profile.STAGES)
    for name, stage in report["stages"].items():
        assert STAGE_KEYS <= set(stage), name
        for key in ("peak_bytes", "increase_bytes"):
            assert isinstance(stage[key], list) and len(stage[key]) == 2
            assert all(isinstance(v, int) for v in stage[key])
        assert isinstance(stage["time_us"], float) and stage["time_us"] > 0
        assert isinstance(stage["private_bytes"], int) and isinstance(stage["shared_bytes"], int)
    inference = report["stages"]["inference"]
    for key in ("min_us", "median_us", "max_us"):
        assert isinstance(inference[key], float)
    assert isinstance(inference["iterations"], int)
    assert isinstance(report["stages"]["first_load"]["page_cache_dropped"], bool)
    assert len(report["ops"]) == report["nodes_delegated"] == 16
    for op in report["ops"]:
        assert {"index", "op", "kernel", "slices", "time_us", "gflops"} <= set(op)
        assert isinstance(op["index"], int) and isinstance(op["op"], str)
        assert isinstance(op["kernel"], str) and op["slices"] == 1
        assert isinstance(op["time_us"], float) and isinstance(op["gflops"], float)
        assert op["time_us"] >= 0 and op["gflops"] >= 0
    assert sorted(op["index"] for op in report["ops"]) == list(range(16))
    assert any(op["gflops"] > 0 for op in report["ops"])
    assert report["fallback"] == []


def test_ordering_invariants(run):
    report = run[2]
    for name, stage in report["stages"].items():
        for key in ("peak_bytes", "increase_bytes"):
            lo, hi = stage[key]
            assert lo <= hi, (name, key)
        assert stage["peak_bytes"][1] >= stage["increase_bytes"][1], name
        assert stage["peak_bytes"][0] >= 0
    inference = report["stages"]["inference"]
    assert 0 < inference["min_us"] <= inference["median_us"] <= inference["max_us"]
    assert inference["iterations"] == ITERATIONS
    # The stage's wall time covers the warm-up plus every timed invoke.
    assert inference["time_us"] >= ITERATIONS * inference["min_us"]


def test_stages_run_in_distinct_processes(run):
    pids = [stage["pid"] for stage in run[2]["stages"].values()]
    assert len(set(pids)) == len(pids) == 4
    assert os.getpid() not in pids


def test_compile_packs_then_loads_map(run):
    stages = run[2]["stages"]
    compiled = stages["compile"]["cache"]
    assert compiled["blobs_packed"] > 0 and compiled["bytes_packed"] > 0
    assert compiled["blobs_mapped"] == 0
    for name in ("first_load", "subsequent_load", "inference"):
        cache = stages[name]["cache"]
        assert cache["blobs_packed"] == 0, name
        assert cache["blobs_mapped"] == compiled["blobs_packed"], name
        assert cache["bytes_mapped"] == compiled["bytes_packed"], name


def test_budget_is_passed_through_and_recorded(demo_path):
    report, samples = profile.profile(demo_path, budget=64, threads=1, iterations=2)
    assert report["budget_mb"] == 64
    assert len(samples) == 2


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "flexdelegate", "profile", *args],
                          capture_output=True, text=True, timeout=120)


def _assert_clean_failure(proc, *words):
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("flexdelegate profile: error:"), proc.stderr
    for word in words:
        assert word in last, last


def test_missing_file(tmp_path):
    _assert_clean_failure(_cli(str(tmp_path / "nope.tflite")), "no such file")


def test_not_a_tflite_file(tmp_path):
    path = tmp_path / "random.tflite"
    path.write_bytes(os.urandom(4096))
    _assert_clean_failure(_cli(str(path)), "not a TFLite model")


def test_invalid_threads(demo_path):
    _assert_clean_failure(_cli(demo_path, "--threads", "0"), "num_threads")
    _assert_clean_failure(_cli(demo_path, "--threads", "abc"), "--threads")


def test_budget_rejected_by_the_delegate(demo_path):
    _assert_clean_failure(_cli(demo_path, "--budget", "-5"), "budget")


def test_worker_load_errors_become_one_line(demo_path, tmp_path):
    # Past the parent's option check, a load error (as an infeasible budget will be) comes
    # back from the worker as a ProfileError naming the stage, not as a crash.
    with pytest.raises(common.CommandError, match="compile stage: .*budget"):
        profile.run_stage("compile", demo_path, str(tmp_path / "c.fxc"), budget=-5)


def test_plot_without_matplotlib(demo_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    assert profile.main([demo_path, "--plot", "x.png"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "matplotlib" in err[0]


def test_plot(run, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "p.png"
    profile.plot(run[2], [100.0, 110.0, 120.0, 150.0, 105.0], str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_progress_only_when_enabled(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    bar = common.Bar("x", 10, enabled=False)
    bar.update(5)
    bar.close()
    assert err.getvalue() == ""
    bar = common.Bar("x", 10, enabled=True)
    bar.update(10)
    bar.close()
    assert "10/10" in err.getvalue() and err.getvalue().endswith("\r\x1b[K")


def test_infeasible_budget_is_a_clear_error(tmp_path):
    """A positive budget below the model's minimum: one line naming the minimum, exit 2."""
    import subprocess
    import sys
    from flexdelegate.tflite.demo_model import build_demo_model
    model = tmp_path / "demo.tflite"
    model.write_bytes(build_demo_model())
    r = subprocess.run([sys.executable, "-m", "flexdelegate", "profile", str(model), "--budget", "0.01",
                        "--iterations", "2"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "budget 0.01 MB is infeasible" in r.stderr and "minimum is" in r.stderr


def test_workers_import_this_package_whatever_the_working_directory(tmp_path):
    """Run from a source checkout whose extension is not built (here: a package named
    flexdelegate that cannot be imported), the workers still load the package the command is
    from, and relative paths still mean the caller's directory."""
    script = os.path.join(os.path.dirname(sys.executable), "flexdelegate")
    if not os.path.exists(script):
        pytest.skip("no flexdelegate console script beside this Python")  # not pip-installed
    shadow = tmp_path / "flexdelegate"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("raise ImportError(\"cannot import name '_native_ext'\")\n")
    (tmp_path / "m.tflite").write_bytes(build_demo_model())
    r = subprocess.run([script, "profile", "m.tflite", "--iterations", "2", "--json", "out.json"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "out.json").read_text())["stages"]["inference"]["iterations"] == 2
