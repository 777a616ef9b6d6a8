"""Running under a memory budget: same answers at every feasible budget, a clear error below
the minimum, re-planning between invokes, and a measured peak within the budget."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from budgetcheck import (change_cache_file, heavy_model, measured_peak, min_budget, simulated_planning_heap,
                         stock_reference)
from opcheck import check, conv_model
from sanitizers import AT_MINIMUM, MEASURES_MEMORY
from flexdelegate import BudgetError, load_flex
from flexdelegate.run import invoke, make_interpreter, max_error

MB = 2**20
TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # budgetcheck.py


@pytest.fixture(scope="module")
def model():
    return heavy_model()


@pytest.fixture(scope="module")
def reference(model):
    return stock_reference(model, seed=4)


def test_every_feasible_budget_gives_the_same_answer(model, reference, tmp_path):
    cache = tmp_path / "m.fxc"
    x, ref = reference
    lo = min_budget(model, cache)
    for budget in (lo, lo + 0.5, lo + 1.5, lo + 4.0, 64.0):
        d = load_flex(budget=budget, cache_path=str(cache))
        it = make_interpreter(model, delegate=d)
        assert max_error(ref, invoke(it, x)) <= 1e-4, budget
        assert max_error(ref, invoke(it, x)) <= 1e-4, budget  # the loader reruns cleanly
        mem = d.stats()["partitions_memory"][0]
        assert mem["arena_bytes"] <= budget * MB
        if budget < lo + 2:  # ~18 MB of FC weights cannot sit in the arena: sliced and streamed
            assert mem["steps"] > len(d.stats()["ops"])


def test_a_budget_that_holds_everything_runs_the_unlimited_plan(model, reference, tmp_path):
    """No slicing, no streaming, the unlimited arena: the same run as without a budget. Just
    below that footprint the planner takes over again. The one choice of planner (native/plan/
    planner.c) shows in stats(): the greedy one, then the budget one."""
    x, ref = reference
    cache = str(tmp_path / "m.fxc")
    free = load_flex(cache_path=cache)
    it_free = make_interpreter(model, delegate=free)  # partitions live as long as their interpreter
    unlimited = free.stats()["partitions_memory"][0]
    assert unlimited["planner"] == "greedy" and unlimited["min_budget_bytes"] == 0
    d = load_flex(budget=64, cache_path=cache)
    it = make_interpreter(model, delegate=d)
    assert max_error(invoke(it_free, x), invoke(it, x)) == 0
    assert d.stats()["partitions_memory"][0] == unlimited
    # ~20 MB of weights plus the arena and reserve do not fit in 20 MB: planned and streamed.
    d = load_flex(budget=20, cache_path=cache)
    it = make_interpreter(model, delegate=d)
    assert max_error(ref, invoke(it, x)) <= 1e-4
    budgeted = d.stats()["partitions_memory"][0]
    assert budgeted["steps"] != unlimited["steps"]
    assert budgeted["planner"] == "budget" and 0 < budgeted["min_budget_bytes"] <= 20 * MB


def test_infeasible_budget_names_the_minimum_and_the_bottleneck(model, tmp_path):
    lo = min_budget(model, tmp_path / "m.fxc")
    assert 2.5 < lo < 6  # the runtime's reserve plus a small arena, far below the ~20 MB of weights
    # set_budget says the same as fields: a BudgetError, the minimum the load named, its node
    d = load_flex(cache_path=str(tmp_path / "m.fxc"))
    it = make_interpreter(model, delegate=d)  # noqa: F841 - its partitions are what is re-planned
    with pytest.raises(BudgetError) as err:
        d.set_budget(0.01)
    e = err.value
    assert e.min_budget_mb == lo and f"minimum is {lo:.2f} MB" in str(e)
    assert f"node {e.node} ({e.op})" in str(e) and 0 <= e.node < 6 and e.op in (
        "CONV_2D", "RESHAPE", "FULLY_CONNECTED")
    d.set_budget(e.min_budget_mb)  # the figure quoted back as a budget is feasible


def test_set_budget_replans_between_invokes(model, reference, tmp_path):
    x, ref = reference
    lo = min_budget(model, tmp_path / "m.fxc")
    d = load_flex(budget=64, cache_path=str(tmp_path / "m.fxc"))
    it = make_interpreter(model, delegate=d)
    invoke(it, x)
    for budget in (lo, 0, lo + 1, 64):
        d.set_budget(budget)
        assert max_error(ref, invoke(it, x)) <= 1e-4
        if budget:
            assert d.stats()["partitions_memory"][0]["arena_bytes"] <= budget * MB
    with pytest.raises(BudgetError, match="minimum is") as err:
        d.set_budget(0.05)
    assert err.value.min_budget_mb == lo
    assert max_error(ref, invoke(it, x)) <= 1e-4  # the old budget stays in force
    with pytest.raises(ValueError):
        d.set_budget(-1)


def budgeted_from_cache_file(model, tmp_path):
    """A cache file written by an unlimited load, then a delegate budgeted just above the
    minimum streaming from it: (cache path, minimum budget, delegate, interpreter)."""
    cache = tmp_path / "m.fxc"
    lo = min_budget(model, cache)
    make_interpreter(model, delegate=load_flex(cache_path=str(cache)))  # writes the file
    d = load_flex(budget=lo + 0.5, cache_path=str(cache))
    return cache, lo, d, make_interpreter(model, delegate=d)


@pytest.mark.parametrize("what", ["deleted", "replaced"])
def test_cache_file_deleted_or_replaced_under_a_budgeted_delegate(model, reference, tmp_path, what):
    """Budgeted runs stream weights from the file they mapped, whatever happens to its path
    (a concurrent prune deleted it: 46 of ~832 loads failed "cannot open the cache file")."""
    x, ref = reference
    cache, lo, d, it = budgeted_from_cache_file(model, tmp_path)
    assert d.stats()["cache"]["blobs_mapped"] > 0
    if what == "deleted":
        cache.unlink()
    else:  # another file renamed over the path: same name, other bytes
        tmp = tmp_path / "other"
        tmp.write_bytes(b"\0" * cache.stat().st_size)
        tmp.rename(cache)
    for budget in (lo + 1.5, lo):  # re-plans open nothing by path
        d.set_budget(budget)
        assert max_error(ref, invoke(it, x)) <= 1e-4, budget


@pytest.mark.parametrize("change", ["truncated", "rewritten"])
def test_cache_file_changed_in_place_under_a_budgeted_delegate(model, reference, tmp_path, change):
    """Streamed weights are read with pread from the mapped file: someone else truncating it
    or writing into it in place would reach the kernels. The next invoke notices (a short read,
    the per-invoke fstat), repacks the weights in memory, lays the plan out again: correct."""
    x, ref = reference
    cache, lo, d, it = budgeted_from_cache_file(model, tmp_path)
    assert max_error(ref, invoke(it, x)) <= 1e-4
    change_cache_file(cache, change)
    assert max_error(ref, invoke(it, x)) <= 1e-4
    assert max_error(ref, invoke(it, x)) <= 1e-4


def test_set_budget_right_after_a_cold_unlimited_load(model, reference, tmp_path):
    """The cold load's cache write may still be running: the new plan streams from the file
    only once it is there (set_budget waits for it)."""
    x, ref = reference
    lo = min_budget(model, tmp_path / "other.fxc")
    d = load_flex(cache_path=str(tmp_path / "m.fxc"))
    it = make_interpreter(model, delegate=d)
    d.set_budget(lo)
    assert max_error(ref, invoke(it, x)) <= 1e-4
    assert d.stats()["partitions_memory"][0]["steps"] > len(d.stats()["ops"])


def peak(budget, cache, fc, model_path, cold=False, from_disk=False):
    return measured_peak(heavy_model(fc=fc), model_path, cache, budget, cold=cold, from_disk=from_disk)["peak"]


@MEASURES_MEMORY
def test_measured_peak_stays_within_budget_plus_fixed_cost(tmp_path):
    """Peak RSS increase over the process before the Interpreter, less the stock interpreter's
    fixed cost (measured here on a tiny model), stays within the budget while the model's
    weights (~36 MB) are far larger."""
    fixed = peak(0, tmp_path / "none.fxc", fc=16, model_path=tmp_path / "tiny.tflite")  # stock, tiny model
    for budget in (6.0, 48.0):  # streamed; and all weights resident (the unlimited plan)
        got = peak(budget, tmp_path / "m.fxc", fc=2048, model_path=tmp_path / "heavy.tflite", from_disk=True)
        assert got - fixed <= budget * MB, f"budget {budget}: peak {got / MB:.1f} MB, fixed {fixed / MB:.1f} MB"


@MEASURES_MEMORY
@pytest.mark.parametrize("budget", [12.0, 48.0, 6.0, pytest.param("min", marks=AT_MINIMUM)])
def test_cold_load_builds_the_cache_within_budget(tmp_path, budget):
    """The first load (no cache file yet) of a ~36 MB model read from a file: hashing and packing
    the weights read through the file, writing the cache file a piece at a time, it stays within
    the budget over the whole process, the stock interpreter's fixed cost aside (a tiny model
    from a file), down to the planner's minimum. Packing each blob whole before writing it peaked
    at ~34 MB over the fixed cost here at a 12 MB budget; hashing and packing through the model's
    mapping, 8 MB at 6 MB (each byte touched mapped its 2 MB folio). The model file is read back
    from disk first: the stock runtime's own touches of a file just written cost it more than a
    tiny model's fixed cost shows (test_q8_budget.py says why)."""
    if budget == "min":
        budget = min_budget(heavy_model(fc=2048), tmp_path / "min.fxc")
    fixed = peak(0, tmp_path / "none.fxc", fc=16, model_path=tmp_path / "tiny.tflite")
    cache = tmp_path / "fresh.fxc"
    got = peak(budget, cache, fc=2048, cold=True, model_path=tmp_path / "heavy.tflite", from_disk=True)
    assert cache.exists()
    assert got - fixed <= budget * MB, f"budget {budget}: peak {got / MB:.1f} MB, fixed {fixed / MB:.1f} MB"


NO_CACHE = textwrap.dedent("""
    import json, sys; sys.path.insert(0, {here!r})
    from budgetcheck import heavy_model, stock_reference
    from flexdelegate import load_flex
    from flexdelegate.memstat import peak_rss_bytes, rss_bytes
    from flexdelegate.run import make_interpreter, invoke, max_error
    import flexdelegate.planner.bridge, flexdelegate.planner.arena  # imported before measuring
    model = heavy_model(fc=2048)
    x, ref = stock_reference(model, seed=2)
    open({model_path!r}, "wb").write(model)
    open("/proc/self/clear_refs", "w").write("5")
    r0 = rss_bytes()
    d = load_flex(budget={budget}, cache_path={cache!r})
    try:
        it = make_interpreter({model_path!r}, delegate=d)
    except RuntimeError as e:
        print(json.dumps({{"refused": str(e)}}))
        sys.exit(0)
    err = max_error(ref, invoke(it, x))
    print(json.dumps({{"peak": peak_rss_bytes() - r0, "err": err, "memory": d.stats()["memory"]}}))
""")


def no_cache_run(tmp_path, budget, cache, env=None):
    code = NO_CACHE.format(here=TESTS, budget=budget, cache=str(cache), model_path=str(tmp_path / "heavy.tflite"))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env={**os.environ, **(env or {})})
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


@MEASURES_MEMORY
@pytest.mark.parametrize("where", ["no path", "unwritable path"])
def test_budget_without_a_writable_cache_streams_from_an_unlinked_temp_file(tmp_path, where):
    """No cache file to stream from (cache_path="", or one that cannot be created: its parent is
    a regular file, which stops root too): the weights go to an unlinked temp file under
    $TMPDIR and the budget holds (it used to pack everything into memory, silently)."""
    (tmp_path / "afile").write_bytes(b"")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    cache = "" if where == "no path" else tmp_path / "afile" / "x.fxc"
    fixed = peak(0, tmp_path / "none.fxc", fc=16, model_path=tmp_path / "tiny.tflite")
    got, err = no_cache_run(tmp_path, 12, cache, env={"TMPDIR": str(tmp)})
    assert got["memory"] == {"weights_backing": "temp_file", "budget_held": True, "temp_dir": str(tmp),
                             "temp_on_tmpfs": got["memory"]["temp_on_tmpfs"]}
    assert got["err"] <= 1e-4
    assert got["peak"] - fixed <= 12 * MB, f"peak {got['peak'] / MB:.1f} MB, fixed {fixed / MB:.1f} MB"
    assert list(tmp.iterdir()) == []  # unlinked: nothing left behind
    assert ("trying an unlinked temp file" in err) == (where != "no path")


def test_budget_with_nowhere_to_write_is_refused_in_one_line(tmp_path):
    (tmp_path / "afile").write_bytes(b"")
    got, _ = no_cache_run(tmp_path, 12, "", env={"TMPDIR": str(tmp_path / "afile")})
    assert "a budget needs a file to stream weights from" in got["refused"]
    assert "cache_path=" in got["refused"] and "TMPDIR" in got["refused"]


def test_set_budget_refuses_weights_packed_in_memory(model, reference, tmp_path):
    x, ref = reference
    d = load_flex(cache_path="")
    it = make_interpreter(model, delegate=d)
    with pytest.raises(ValueError, match="packed in memory"):
        d.set_budget(8)
    assert d.stats()["budget_mb"] == 0 and d.stats()["memory"]["weights_backing"] == "memory"
    assert max_error(ref, invoke(it, x)) <= 1e-4


def test_unbudgeted_without_a_cache_keeps_weights_in_memory(tmp_path):
    got, _ = no_cache_run(tmp_path, 0, "")
    assert got["memory"]["weights_backing"] == "memory" and got["memory"]["budget_held"] is None


def test_plans_are_cached_on_disk_and_checked(model, reference, tmp_path, monkeypatch):
    """A warm load reuses the plan saved by the first (no planning); a damaged plan file is
    replanned, never run."""
    from flexdelegate.planner import bridge
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    x, ref = reference
    lo = min_budget(model, tmp_path / "m.fxc")
    make_interpreter(model, delegate=load_flex(budget=lo + 1, cache_path=str(tmp_path / "m.fxc")))
    plans = list((tmp_path / "xdg" / "flexdelegate" / "plans").iterdir())
    assert len(plans) == 1
    bridge._memo.clear()

    def no_planning(*a, **k):
        raise AssertionError("planned again")
    monkeypatch.setattr(bridge, "make_plan", no_planning)
    it = make_interpreter(model, delegate=load_flex(budget=lo + 1, cache_path=str(tmp_path / "m.fxc")))
    assert max_error(ref, invoke(it, x)) <= 1e-4
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    doc = json.loads(plans[0].read_text())
    doc["plan"]["arena_bytes"] = doc["plan"]["budget_bytes"] * 10  # inconsistent: must not run
    plans[0].write_text(json.dumps(doc))
    bridge._memo.clear()
    it = make_interpreter(model, delegate=load_flex(budget=lo + 1, cache_path=str(tmp_path / "m.fxc")))
    assert max_error(ref, invoke(it, x)) <= 1e-4


def test_heap_a_new_plan_leaves_resident_shrinks_its_arena(model, reference, tmp_path, monkeypatch):
    """What planning leaves resident (a fragmented heap) counts against the budget: the arena is
    replanned into what is left, that plan is cached under the budget asked for, and a warm load
    runs it without planning. Simulated: the first plan leaves 3 MB resident, a rerun no more."""
    from flexdelegate.planner import bridge
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    x, ref = reference
    budget = min_budget(model, tmp_path / "m.fxc") + 4
    limits = simulated_planning_heap(monkeypatch, [3] * 9)
    it = make_interpreter(model, delegate=load_flex(budget=budget, cache_path=str(tmp_path / "m.fxc")))
    assert max_error(ref, invoke(it, x)) <= 1e-4
    assert len(limits) >= 2 and limits[1] <= limits[0] - 3 * MB, limits
    (path,) = (tmp_path / "xdg" / "flexdelegate" / "plans").iterdir()
    saved = json.loads(path.read_text())["plan"]
    assert saved["budget_bytes"] == limits[0] and saved["arena_bytes"] <= limits[-1]
    limits.clear()
    bridge._memo.clear()
    it = make_interpreter(model, delegate=load_flex(budget=budget, cache_path=str(tmp_path / "m.fxc")))
    assert limits == [] and max_error(ref, invoke(it, x)) <= 1e-4
    bridge._memo.clear()


def test_heap_planning_leaves_beyond_the_budget_makes_it_infeasible(model, tmp_path, monkeypatch):
    """When what planning leaves resident does not fit either, the load is refused with a
    minimum that counts it (above the budget asked for), not run over the budget."""
    from flexdelegate.planner import bridge
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    budget = min_budget(model, tmp_path / "m.fxc") + 1
    simulated_planning_heap(monkeypatch, [9] * 9)
    with pytest.raises(BudgetError) as e:
        make_interpreter(model, delegate=load_flex(budget=budget, cache_path=str(tmp_path / "m.fxc")))
    assert e.value.min_budget_mb > budget + 7, str(e.value)
    assert not bridge._memo  # the plan that did not fit is not served to the next call
    bridge._memo.clear()


def test_heap_planning_keeps_replanning_until_it_settles(model, reference, tmp_path, monkeypatch):
    """The first plan in a process keeps the most (what it used for the first time), the next
    ones less and less: planning goes on while the heap grows, so the plan that runs holds the
    arena budget with all of it. Simulated: 3, 3.5, 3.7 MB kept, then no more."""
    from flexdelegate.planner import bridge
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    x, ref = reference
    budget = min_budget(model, tmp_path / "m.fxc") + 6
    limits = simulated_planning_heap(monkeypatch, [3, 3.5, 3.7] + [3.7] * 9)
    d = load_flex(budget=budget, cache_path=str(tmp_path / "m.fxc"))
    it = make_interpreter(model, delegate=d)
    assert max_error(ref, invoke(it, x)) <= 1e-4
    arena = d.stats()["partitions_memory"][0]["arena_bytes"]
    assert arena + 3.7 * MB <= limits[0], (arena, limits)
    bridge._memo.clear()


def test_heap_planning_that_never_settles_is_refused(model, tmp_path, monkeypatch):
    """A heap that grows more with every plan (past the room each replan leaves for the next),
    within the budget's slack: after bridge.HEAP_PLANS plans the load is refused with a minimum
    above the budget, not run over it."""
    from flexdelegate.planner import bridge
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    budget = min_budget(model, tmp_path / "m.fxc") + 20
    simulated_planning_heap(monkeypatch, [k * k / 4 for k in range(1, 40)])
    with pytest.raises(BudgetError) as e:
        make_interpreter(model, delegate=load_flex(budget=budget, cache_path=str(tmp_path / "m.fxc")))
    assert e.value.min_budget_mb > budget, str(e.value)
    assert not bridge._memo
    bridge._memo.clear()


@pytest.mark.parametrize("field", [6, 10])  # w_offset, s_offset in bridge._steps' tuples
def test_the_runtime_refuses_an_unaligned_slot_the_planner_hands_it(model, tmp_path, monkeypatch, field):
    """The C loader checks a plan on its own (the Python check only sees plans read from disk):
    an offset off the arena alignment is refused in one line, never run with misaligned loads."""
    from flexdelegate.planner import bridge
    steps = bridge._steps

    def shifted(p):
        out = steps(p)
        i = next(i for i, s in enumerate(out) if s[field + 1])  # a step with such a slot
        out[i] = out[i][:field] + (out[i][field] + 4,) + out[i][field + 1:]
        return out
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(bridge, "_steps", shifted)
    bridge._memo.clear()
    lo = min_budget(model, tmp_path / "m.fxc")
    with pytest.raises(ValueError, match="unaligned slot"):
        make_interpreter(model, delegate=load_flex(budget=lo + 1, cache_path=str(tmp_path / "m.fxc")))
    bridge._memo.clear()


def test_smallest_budgets_run_a_conv_direct():
    """The kernel ladder's last rung: a 1x1 stride-2 conv runs im2col GEMM by default; at its
    minimum budget only direct (weights by channel panels, no im2col scratch) fits."""
    model = conv_model((1, 16, 16, 256), 256, 1, 1, stride=(2, 2))
    low = min_budget(model, "")
    kernels = {b: check(model, flex={"budget": b, "cache_path": ""})["ops"][0]["kernel"] for b in (low, 0)}
    assert kernels[low].startswith("direct f32-igemm"), kernels
    assert kernels[0].startswith("gemm-im2col"), kernels


@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan"), -1, -1e-9, 1e7 + 1, 1e18, 2**64,
                                 10**400, True, False])
def test_set_budget_refuses_what_load_flex_refuses(model, tmp_path, bad):
    """One check for both: a one-line ValueError, the old budget still in force (huge values
    reached an overflowing float -> size_t cast and failed as "budget 0.00 MB")."""
    d = load_flex(cache_path=str(tmp_path / "m.fxc"))
    it = make_interpreter(model, delegate=d)
    with pytest.raises(ValueError) as set_err:
        d.set_budget(bad)
    assert "\n" not in str(set_err.value) and not isinstance(set_err.value, BudgetError)
    with pytest.raises(ValueError):
        load_flex(budget=bad)
    assert d.stats()["budget_mb"] == 0
    invoke(it, stock_reference(model, seed=1)[0])


@pytest.mark.parametrize("edge", [1e-300, 2**-40])
def test_tiny_positive_budget_is_infeasible_not_unlimited(model, tmp_path, edge):
    d = load_flex(cache_path=str(tmp_path / "m.fxc"))
    it = make_interpreter(model, delegate=d)  # noqa: F841 - its partitions are what is re-planned
    with pytest.raises(BudgetError, match="infeasible: the minimum is") as err:
        d.set_budget(edge)
    assert err.value.min_budget_mb > 2.5
    assert d.stats()["budget_mb"] == 0


def test_largest_budget_runs_the_unlimited_plan(model, reference, tmp_path):
    x, ref = reference
    d = load_flex(cache_path=str(tmp_path / "m.fxc"))
    it = make_interpreter(model, delegate=d)
    unlimited = d.stats()["partitions_memory"]
    d.set_budget(1e7)
    assert d.stats()["partitions_memory"] == unlimited and d.stats()["budget_mb"] == 1e7
    assert max_error(ref, invoke(it, x)) <= 1e-4


def test_set_budget_to_exactly_the_minimum_it_names(model, reference, tmp_path):
    """The figure an infeasible set_budget quotes back is itself feasible (it is rounded up to
    0.01 MB), runs correctly within it, and 0.02 MB less is refused again."""
    x, ref = reference
    d = load_flex(cache_path=str(tmp_path / "m.fxc"))
    it = make_interpreter(model, delegate=d)
    with pytest.raises(BudgetError) as err:
        d.set_budget(0.5)
    named = err.value.min_budget_mb
    assert f"minimum is {named:.2f} MB" in str(err.value)  # the message quotes the same figure
    d.set_budget(named)
    assert d.stats()["budget_mb"] == named
    assert d.stats()["partitions_memory"][0]["arena_bytes"] <= named * MB
    assert max_error(ref, invoke(it, x)) <= 1e-4
    with pytest.raises(BudgetError):
        d.set_budget(named - 0.02)
    assert d.stats()["budget_mb"] == named  # the refused budget left the old one in force
    assert max_error(ref, invoke(it, x)) <= 1e-4


def test_mixed_switches_while_stats_and_invokes_run(model, reference, tmp_path):
    """200 set_budget calls cycling through the minimum, unlimited, the largest, infeasible and
    invalid values (inf, nan, negative, bool, 2**64) on one thread, while another reads stats()
    and a third invokes: each call takes effect or raises a one-line ValueError, every report
    is whole, every invoke answers right, nothing crashes (run under ASan in CI)."""
    import threading
    x, ref = reference
    lo = min_budget(model, tmp_path / "m.fxc")
    d = load_flex(cache_path=str(tmp_path / "m.fxc"))
    it = make_interpreter(model, delegate=d)
    values = [lo, 0, 1e7, float("inf"), lo * 0.5, float("nan"), -3, True, 2**64, 1e-300, lo + 1.5, lo]
    stop, problems, reports, answers = threading.Event(), [], [], []

    def reader():
        while not stop.is_set():
            try:
                s = d.stats()
                reports.append(s["budget_mb"])
            except Exception as e:  # noqa: BLE001 - reported below
                problems.append(f"stats: {e!r}")

    def runner():
        while not stop.is_set():
            answers.append(max_error(ref, invoke(it, x)))

    threads = [threading.Thread(target=reader), threading.Thread(target=runner)]
    for t in threads:
        t.start()
    accepted = refused = 0
    try:
        for i in range(200):
            v = values[i % len(values)]
            try:
                d.set_budget(v)
                accepted += 1
            except ValueError as e:
                refused += 1
                if "\n" in str(e):
                    problems.append(f"set_budget({v!r}): a multi-line error")
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not problems, problems[:5]
    # lo, 0, 1e7, lo + 1.5 and lo again (positions 0, 1, 2, 10, 11) take effect, the rest not.
    assert accepted == sum(1 for i in range(200) if i % 12 in (0, 1, 2, 10, 11))
    assert refused == 200 - accepted
    assert reports and answers and max(answers) <= 1e-4
    assert set(reports) <= {0, lo, 1e7, lo + 1.5}
    last = values[max(i for i in range(200) if i % 12 in (0, 1, 2, 10, 11)) % 12]  # the last accepted
    assert d.stats()["budget_mb"] == last and max_error(ref, invoke(it, x)) <= 1e-4
