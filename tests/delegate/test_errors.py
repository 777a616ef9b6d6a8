"""A failed memory plan reads as one clean error: the runtime's RuntimeError carries our line on
its own (not glued to TFLite's "Node number N ... failed to prepare"), the delegate keeps it as
a BudgetError with its fields (last_error()), and our own helpers raise that instead."""
import pytest

from budgetcheck import heavy_model
from flexdelegate import BudgetError, load_flex
from flexdelegate.run import make_interpreter


@pytest.fixture(scope="module")
def model():
    return heavy_model(fc=256)


def test_infeasible_budget_at_prepare_is_a_clean_line_and_a_budget_error(model):
    d = load_flex(budget=1, cache_path="")
    assert d.last_error() is None
    from flexdelegate.runtime import detect
    rt = detect()
    with pytest.raises(RuntimeError) as raised:
        it = rt.Interpreter(model_content=model, experimental_delegates=[d],
                            experimental_op_resolver_type=rt.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        it.allocate_tensors()
    lines = str(raised.value).splitlines()
    ours = [line for line in lines if line.startswith("flexdelegate:")]
    assert len(ours) == 1 and ours[0].endswith(")") and "minimum is" in ours[0], lines
    err = d.last_error()
    assert isinstance(err, BudgetError) and str(err) == ours[0]
    assert err.min_budget_mb > 1 and err.node >= 0 and err.op in ("CONV_2D", "FULLY_CONNECTED")  # a layer with weights


def test_our_helpers_raise_the_budget_error_itself(model):
    d = load_flex(budget=1, cache_path="")
    with pytest.raises(BudgetError) as raised:
        make_interpreter(model, delegate=d)
    assert "\n" not in str(raised.value) and "Node number" not in str(raised.value)
    assert raised.value.min_budget_mb > 1


def test_last_error_follows_set_budget(model, tmp_path):
    d = load_flex(cache_path=str(tmp_path / "m.fxc"))  # a file to stream from: set_budget needs one
    it = make_interpreter(model, delegate=d)
    assert d.last_error() is None
    with pytest.raises(BudgetError) as raised:
        d.set_budget(1)
    assert str(d.last_error()) == str(raised.value) and d.last_error().min_budget_mb == raised.value.min_budget_mb
    d.set_budget(raised.value.min_budget_mb + 1)  # a plan that works clears it
    assert d.last_error() is None
    it.invoke()
