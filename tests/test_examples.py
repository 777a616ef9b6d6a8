"""Every script in examples/ runs (on the embedded demo model) and shows what it says it does."""
import gc
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import flexdelegate

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run(script, *args):
    r = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    return r.stdout


def test_every_example_is_listed_and_tested():
    listed = set(re.findall(r"`(\w+\.py)`", (EXAMPLES / "README.md").read_text()))
    tested = set(re.findall(r'run\("(\w+\.py)"', Path(__file__).read_text()))
    assert listed == tested == {p.name for p in EXAMPLES.glob("*.py")}


def test_classify_gives_stocks_top5():
    out = run("classify.py")
    stock = re.search(r"stock TFLite : (.*)", out).group(1)
    flex = re.search(r"flexdelegate : (.*)", out).group(1)
    assert stock == flex and "delegated 16/16 nodes in 1 partition" in out


def test_budget_replans_and_names_the_minimum():
    out = run("budget.py", "--steps", "6")
    assert re.search(r"refused \(flexdelegate: budget [\d.e-]+ MB is infeasible: the minimum is", out), out
    assert len(re.findall(r"ms", out)) >= 2


def test_shared_cache_pages_are_shared():
    out = run("shared_cache.py", "--processes", "4")
    rss, pss = map(int, re.search(r"all 4: RSS (\d+) kB, PSS (\d+) kB", out).groups())
    assert rss > 0 and pss <= 0.6 * rss, out  # each page counted once across the processes, not 4 times


def test_profile_writes_json_and_reads_it():
    out = run("profile_model.py")
    for stage in ("compile", "first_load", "subsequent_load", "inference"):
        assert re.search(rf"{stage}\s+[\d.]+ ms, peak", out), out
    assert "profile.json" in out and "profile.png" in out


def test_load_delegate_with_string_options():
    out = run("load_delegate.py")
    assert "output:" in out and "refused:" in out and "invalid budget" in out


@pytest.fixture(scope="module")
def load_plugin(tmp_path_factory):
    """examples/c/load_plugin.c compiled as its README says."""
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    assert cc, "a C compiler is a prerequisite (README)"
    exe = tmp_path_factory.mktemp("c") / "load_plugin"
    subprocess.run([cc, "-Wall", "-Werror", "-o", str(exe), str(EXAMPLES / "c" / "load_plugin.c"), "-ldl"],
                   check=True, timeout=120)
    return exe


def test_c_host_loads_the_plain_library(load_plugin):
    plain = flexdelegate.library_path(plain=True)
    r = subprocess.run([load_plugin, plain, "num_threads=2", "cache_path="], capture_output=True, text=True)
    assert r.returncode == 0 and "created a flexdelegate TfLiteDelegate" in r.stdout, r.stderr
    # The extension module is for Python processes: a C host cannot load it.
    r = subprocess.run([load_plugin, flexdelegate.library_path()], capture_output=True, text=True)
    assert r.returncode == 1 and "undefined symbol" in r.stderr


def test_plain_library_refuses_a_budget_in_one_line(load_plugin):
    r = subprocess.run([load_plugin, flexdelegate.library_path(plain=True), "budget=50"], capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stderr.splitlines() == [r.stderr.strip()] and "needs the Python planner" in r.stderr


def test_plain_library_runs_a_model_like_the_extension(tmp_path):
    """The same kernels: through the runtime's load_delegate, outputs match stock's."""
    from flexdelegate.run import invoke, make_interpreter, max_error, random_inputs
    from flexdelegate.runtime import detect
    from flexdelegate.tflite.demo_model import build_demo_model
    rt, model = detect(), build_demo_model()
    ref = make_interpreter(model)
    x = random_inputs(ref)
    d = rt.load_delegate(flexdelegate.library_path(plain=True), {"cache_path": str(tmp_path / "m.fxc")})
    it = rt.Interpreter(model_content=model, experimental_delegates=[d],
                        experimental_op_resolver_type=rt.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    assert max_error(invoke(ref, x), invoke(it, x)) <= 1e-4
    del it, d  # the delegate's destroy waits for its background cache write
    gc.collect()
    assert (tmp_path / "m.fxc").read_bytes()[:8] == b"FLXCACHE"  # it delegated: weights were packed
