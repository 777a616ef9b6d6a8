"""A Winograd conv under a budget: the whole transformed blob when it fits, output-channel slices
of it when only those fit, its im2col GEMM form below that; the same answers at every budget;
the GEMM form stored beside the Winograd blob at every load; stats() and `flexdelegate plan` name what
runs."""
import subprocess
import sys

import pytest

from budgetcheck import min_budget, scratch_shrunk, stock_reference, winograd_model
from flexdelegate import load_flex
from flexdelegate.run import invoke, make_interpreter, max_error

STEP_MB = 0.1


@pytest.fixture(scope="module")
def model():
    return winograd_model()


@pytest.fixture(scope="module")
def reference(model):
    return stock_reference(model, seed=2)


def conv_run(d):
    """(kernel family, slices) of the 3x3 conv, as stats() reports it."""
    op = d.stats()["ops"][0]
    return op["kernel"].split()[0], op["slices"]


@pytest.fixture(scope="module")
def sweep(model, reference, tmp_path_factory):
    """Budgets from the minimum up, in small steps, until the whole Winograd blob fits: each
    budget's (conv kernel, slices) and its error against stock TFLite."""
    x, ref = reference
    cache = tmp_path_factory.mktemp("wino") / "m.fxc"
    lo = min_budget(model, cache, num_threads=1)
    out = []
    for i in range(60):
        budget = round(lo + i * STEP_MB, 2)
        d = load_flex(budget=budget, cache_path=str(cache), num_threads=1)
        it = make_interpreter(model, delegate=d)
        out.append((budget, *conv_run(d), max_error(ref, invoke(it, x))))
        if out[-1][1:3] == ("winograd-f6", 1) or out[-1][1:3] == ("winograd-f4", 1):
            break
    return out


def test_every_budget_gives_the_same_answer(sweep):
    for budget, kernel, slices, err in sweep:
        assert err <= 1e-4, (budget, kernel, slices)


def test_kernel_falls_from_winograd_slices_to_gemm_as_the_budget_shrinks(sweep):
    kinds = [(k.startswith("winograd"), k, n) for _, k, n, _ in sweep]
    # At the minimum not even one Winograd panel fits: the GEMM panels run, as the ladder's
    # last rung (direct, no scratch) or im2col.
    assert kinds[0][1] in ("direct", "gemm-im2col"), sweep
    assert kinds[-1][0] and kinds[-1][2] == 1  # the sweep ends where the whole blob fits
    first = next(i for i, k in enumerate(kinds) if k[0])
    assert all(k[0] for k in kinds[first:]), sweep  # more memory never goes back to GEMM
    assert any(n > 1 for is_wino, _, n in kinds if is_wino), sweep  # sliced by channel panels between


def test_plan_command_shows_winograd_slices(model, sweep, tmp_path):
    budget, kernel, slices, _ = next(s for s in sweep if s[1].startswith("winograd") and s[2] > 1)
    path = tmp_path / "w.tflite"
    path.write_bytes(model)
    r = subprocess.run([sys.executable, "-m", "flexdelegate", "plan", str(path), "--budget", str(budget),
                        "--threads", "1", "--cache", str(tmp_path / "m.fxc")], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    conv = r.stdout.splitlines()[2].split()
    assert conv[1:5] == ["CONV_2D", "winograd", str(slices), "channels"], r.stdout
    lo = sweep[0][0]
    r = subprocess.run([sys.executable, "-m", "flexdelegate", "plan", str(path), "--budget", str(lo),
                        "--threads", "1", "--cache", str(tmp_path / "m.fxc")], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[2].split()[2] in ("gemm", "gemm-rows", "direct"), r.stdout


def test_gemm_form_is_in_the_file_before_any_budget(model, reference, tmp_path):
    """A Winograd conv's GEMM form goes into the cache file with the load, budget or not, so
    set_budget() re-plans without copying the file to add it; without a file it is not packed
    (it would only add to memory)."""
    x, ref = reference
    cache = tmp_path / "m.fxc"
    d = load_flex(cache_path=str(cache), num_threads=1)
    it = make_interpreter(model, delegate=d)
    assert conv_run(d)[0].startswith("winograd")
    assert d.stats()["cache"]["blobs_packed"] == 3  # two convs, and the Winograd one's GEMM form
    inode = cache.stat().st_ino
    lo = min_budget(model, tmp_path / "other.fxc", num_threads=1)
    d.set_budget(lo)  # from unlimited to a budget only the GEMM form fits
    assert cache.stat().st_ino == inode  # nothing was missing: the file was not rewritten
    assert conv_run(d)[0] in ("direct", "gemm-im2col")  # the GEMM panels, either way
    assert max_error(ref, invoke(it, x)) <= 1e-4
    d.set_budget(0)
    assert conv_run(d) == (conv_run(d)[0], 1) and conv_run(d)[0].startswith("winograd")
    assert max_error(ref, invoke(it, x)) <= 1e-4
    for budget in (lo, 0):  # warm loads, budgeted or not, find every form in the file
        warm = load_flex(budget=budget, cache_path=str(cache), num_threads=1)
        make_interpreter(model, delegate=warm)
        assert (warm.stats()["cache"]["blobs_mapped"], warm.stats()["cache"]["blobs_packed"]) == (3, 0)
    in_memory = load_flex(cache_path="", num_threads=1)
    make_interpreter(model, delegate=in_memory)
    assert in_memory.stats()["cache"]["blobs_packed"] == 2


def test_budgets_slice_runtime_winograd_from_the_gemm_form(tmp_path):
    """Between the whole GEMM form and the planner's minimum, a 14x14x256 conv keeps Winograd,
    run from its GEMM form's panels (its plain bytes) in output-channel slices, each
    transforming the input again: the planner prices that from a measured table (conv/choose.c;
    this layer's pre-transformed blob, 9.4 MB, is past the allowance and would gain little);
    every budget gives stock's answer."""
    model = winograd_model(size=14, cin=256, cout=256)
    x, ref = stock_reference(model, seed=3)
    cache = tmp_path / "rt.fxc"
    make_interpreter(model, delegate=load_flex(cache_path=str(cache), num_threads=1))
    lo = min_budget(model, cache, num_threads=1)
    seen, verified = [], 0
    from flexdelegate.planner import bridge
    from flexdelegate.planner.check import verify
    bridge.keep_plans = True
    try:
        for budget in (8, 5, 4.6, 4.3, 4.1, lo * 1.02):
            if budget < lo:
                continue
            bridge._memo.clear()
            d = load_flex(budget=budget, cache_path=str(cache), num_threads=1)
            it = make_interpreter(model, delegate=d)
            assert max_error(ref, invoke(it, x)) <= 1e-4, f"budget {budget}"
            seen.append(conv_run(d))
            if bridge.last_plan():  # planned (the largest budget holds everything: no plan)
                p, graph, _ = bridge.last_plan()
                verify(p, graph)
                verified += 1
    finally:
        bridge.keep_plans = False
        bridge._memo.clear()
    assert verified >= 3 and seen[0] == ("winograd-f4-rt", 1), (verified, seen)  # all fits: unsliced
    assert any(k.endswith("-rt") and slices > 1 for k, slices in seen), seen


def test_the_runtime_refuses_a_winograd_step_with_too_small_a_scratch(tmp_path, monkeypatch):
    """The C loader checks each run-time Winograd step's scratch slot against what its kernel
    needs (the whole transformed input), whatever the planner hands it: one line, never run."""
    from flexdelegate.planner import bridge
    model = winograd_model(size=14, cin=256, cout=256)
    cache = tmp_path / "rt.fxc"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    make_interpreter(model, delegate=load_flex(cache_path=str(cache), num_threads=1))
    rt = bridge.KERNELS["winograd-rt"]
    with scratch_shrunk(monkeypatch, lambda s: s[2] == rt), pytest.raises(ValueError, match="scratch slot too small"):
        make_interpreter(model, delegate=load_flex(budget=5, cache_path=str(cache), num_threads=1))
