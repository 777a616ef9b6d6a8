"""One source of truth at the C/Python boundary: what Python knows of options, enums and
limits it reads from the native module (flex_api.h), never from a copy of its own."""
import pytest

from flexdelegate import _native, load_flex
from flexdelegate.planner import bridge

lib = _native.lib


def test_options_come_from_the_c_table():
    assert list(_native.OPTIONS) == ["budget", "cache_path", "num_threads", "log", "profile", "winograd"]
    assert str(lib.FLEX_BUDGET_MAX_MB) in _native.OPTIONS["budget"][1]
    assert str(lib.FLEX_THREADS_MAX) in _native.OPTIONS["num_threads"][1]
    numbers = {name for name, (kind, _) in _native.OPTIONS.items() if kind == lib.FLEX_OPTION_NUMBER}
    assert numbers == {"budget", "num_threads"}


@pytest.mark.parametrize("name", ["budget", "num_threads", "log", "profile", "winograd"])
def test_a_bad_value_is_refused_with_the_table_help(name):
    with pytest.raises(ValueError) as err:
        load_flex(**{name: "bogus"})
    assert f"invalid {name}: expected {_native.OPTIONS[name][1]}" in str(err.value)


def test_unknown_option_lists_the_table():
    with pytest.raises(ValueError, match="accepted: " + ", ".join(_native.OPTIONS)):
        load_flex(bogus=1)
    with pytest.raises(ValueError, match="accepted options are " + ", ".join(_native.OPTIONS)):
        _native.check_option("bogus", "1")


def test_limits_are_enforced_at_the_c_values():
    load_flex(num_threads=lib.FLEX_THREADS_MAX, budget=lib.FLEX_BUDGET_MAX_MB)
    with pytest.raises(ValueError):
        load_flex(num_threads=lib.FLEX_THREADS_MAX + 1)
    with pytest.raises(ValueError):
        load_flex(budget=lib.FLEX_BUDGET_MAX_MB + 1)


def test_planner_names_are_the_c_enums():
    assert bridge.KERNELS == {"gemm": lib.FLEX_KERNEL_GEMM, "gemm-rows": lib.FLEX_KERNEL_GEMM_ROWS,
                              "winograd": lib.FLEX_KERNEL_WINOGRAD, "direct": lib.FLEX_KERNEL_DIRECT,
                              "winograd-rt": lib.FLEX_KERNEL_WINOGRAD_RT, "band": lib.FLEX_KERNEL_BAND}
    assert bridge.SLICING == {"none": lib.FLEX_SLICE_NONE, "weights": lib.FLEX_SLICE_WEIGHTS,
                              "input": lib.FLEX_SLICE_INPUT}
    assert [bridge.KINDS[k] for k in sorted(bridge.KINDS)] == ["activation", "input", "output"]


def test_message_sizes_are_the_structs():
    err = _native.ffi.new("flex_error *")
    assert len(err.message) == lib.FLEX_MSG_LEN and len(err.op) == lib.FLEX_OP_NAME_LEN
