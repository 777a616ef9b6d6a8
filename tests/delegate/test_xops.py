"""The small ops of transformer graphs (issue 16 item 1): SUM, REDUCE_MAX / MIN / PROD,
LOG_SOFTMAX, EXPAND_DIMS, SLICE, BROADCAST_TO, GATHER_ND, EMBEDDING_LOOKUP, FILL, RANGE and CUMSUM,
each against stock over its options, types and edge shapes (empty dims, negative axes,
keep_dims), folded at load when every input is constant, and refused per node (stock then
decides) where its parameters are bad."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from opcheck import F32, Input, check, rand, single_op
from flexdelegate import load_flex
from flexdelegate.run import invoke, make_interpreter
from flexdelegate.tflite.writer import ModelBuilder

I32, I64, BOOL = np.int32, np.int64, np.bool_
HYP = settings(max_examples=20, deadline=None)
REDUCERS = {"SUM": np.sum, "REDUCE_MAX": np.max, "REDUCE_MIN": np.min, "REDUCE_PROD": np.prod}


def _ints(shape, seed, lo, hi, dtype=I32):
    return np.random.default_rng(seed).integers(lo, hi, size=shape).astype(dtype)


def _reduced_shape(shape, axes, keep):
    axes = {a % len(shape) for a in axes}
    return tuple(1 if i in axes else d for i, d in enumerate(shape) if keep or i not in axes)


def _data(shape, dtype, op, seed):
    if dtype == F32:  # products near 1 so they neither vanish nor overflow
        return (1 + 0.2 * rand(shape, seed)).astype(F32) if op == "REDUCE_PROD" else rand(shape, seed)
    lo, hi = (-(1 << 30), 1 << 30) if op == "SUM" else (-5, 6)  # SUM wraps as stock's does
    return _ints(shape, seed, lo, hi, dtype)


def _refused(model):
    """Stock refuses the model at Prepare; the delegate claims nothing of it, never crashes."""
    delegate = load_flex()
    with pytest.raises((RuntimeError, ValueError)):
        make_interpreter(model, delegate=delegate)
    return delegate.stats()


# ---------------------------------------------------------------------------- reductions
@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("shape,axes", [
    ((2, 3, 4), [1]), ((2, 3, 4), [-1]), ((2, 3, 4), [0, 2]), ((2, 3, 4), [2, 0, -1]),
    ((2, 3, 4), [0, 1, 2]), ((5,), [0]), ((2, 0, 3), [1]), ((2, 0, 3), [2]),
    ((1, 2, 1, 3, 2), [1, 3]),
], ids=str)
@pytest.mark.parametrize("dtype", [F32, I32, I64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", list(REDUCERS))
def test_reduce(op, dtype, shape, axes, keep):
    model = single_op(op, [Input(shape, dtype), np.array(axes, I32)], _reduced_shape(shape, axes, keep),
                      out_dtype=dtype, keep_dims=keep)
    check(model, inputs=lambda it, seed: [_data(shape, dtype, op, seed)])


@HYP
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=4), data=st.data(),
       op=st.sampled_from(list(REDUCERS)), keep=st.booleans())
def test_reduce_random(shape, data, op, keep):
    r = len(shape)
    axes = data.draw(st.lists(st.integers(-r, r - 1), min_size=1, max_size=r))
    model = single_op(op, [Input(shape, F32), np.array(axes, I32)], _reduced_shape(shape, axes, keep), keep_dims=keep)
    check(model, inputs=lambda it, seed: [_data(tuple(shape), F32, op, seed)])


def test_reduce_empty_axis_list_stays_with_stock():
    """An empty axis list has no buffer in the model, so it is not a constant the delegate can
    read: the node stays with stock (correct, with a reason), the graph still answers as stock."""
    model = single_op("SUM", [(2, 3), np.array([], I32)], (2, 3))
    x = rand((2, 3))
    delegate = load_flex()
    got = invoke(make_interpreter(model, delegate=delegate), [x])
    np.testing.assert_array_equal(got[0], invoke(make_interpreter(model), [x])[0])
    assert delegate.stats()["fallback"][0]["reason"] == "non-constant weights or parameters"


def test_reduce_axis_out_of_range_is_refused():
    stats = _refused(single_op("SUM", [(2, 3), np.array([2], I32)], (2, 3)))
    assert stats["nodes_delegated"] == 0
    assert "axis out of range" in stats["fallback"][0]["reason"]


def test_reduce_prod_of_a_shape_chain_folds():
    """SHAPE -> SLICE -> REDUCE_PROD -> CONCATENATION -> RESHAPE's shape: all folded at load."""
    b = ModelBuilder()
    x = b.input((2, 3, 4))
    s = b.tensor((3,), dtype=I32)
    b.op("SHAPE", [x], [s])
    tail = b.tensor((2,), dtype=I32)
    b.op("SLICE", [s, b.const(np.array([1], I32)), b.const(np.array([2], I32))], [tail])
    prod = b.tensor((1,), dtype=I32)
    b.op("REDUCE_PROD", [tail, b.const(np.array([0], I32))], [prod], keep_dims=True)
    new_shape = b.tensor((2,), dtype=I32)
    b.op("CONCATENATION", [b.const(np.array([2], I32)), prod], [new_shape], axis=0)
    y = b.tensor((2, 12))
    b.op("RESHAPE", [x, new_shape], [y])
    b.output(y)
    assert check(b.build())["nodes_folded"] == 4


# ---------------------------------------------------------------------------- LOG_SOFTMAX
@pytest.mark.parametrize("scale", [1.0, 30.0])
@pytest.mark.parametrize("shape", [(2, 5), (1, 3, 17), (4,), (2, 1)], ids=str)  # stock crashes on (3, 0)
def test_log_softmax(shape, scale):
    check(single_op("LOG_SOFTMAX", [shape], shape), scale=scale)


# ---------------------------------------------------------------------------- EXPAND_DIMS
@pytest.mark.parametrize("axis_dtype", [I32, I64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("dtype", [F32, I32], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("axis", [0, 1, 3, -1, -4, -2])
def test_expand_dims(axis, dtype, axis_dtype):
    shape = (2, 3, 4)
    out = np.expand_dims(np.zeros(shape), axis).shape
    check(single_op("EXPAND_DIMS", [Input(shape, dtype), np.array([axis], axis_dtype)], out, out_dtype=dtype))


def test_expand_dims_axis_out_of_range_is_refused():
    stats = _refused(single_op("EXPAND_DIMS", [(2, 3), np.array(3, I32)], (2, 3, 1)))
    assert stats["nodes_delegated"] == 0


# ---------------------------------------------------------------------------- SLICE
@pytest.mark.parametrize("idx_dtype", [I32, I64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape,begin,size", [
    ((4, 5), [1, 0], [2, -1]), ((4, 5), [0, 0], [4, 5]), ((4, 5), [3, 4], [1, 1]), ((4, 5), [2, 1], [0, 3]),
    ((2, 3, 4, 5), [1, 0, 2, 1], [-1, 2, -1, 3]), ((1, 2, 3, 4, 5), [0, 1, 1, 0, 2], [1, 1, 2, -1, 3]),
    ((6,), [5], [-1]),
], ids=str)
def test_slice(shape, begin, size, idx_dtype):
    out = tuple(d - b if s == -1 else s for d, b, s in zip(shape, begin, size))
    check(single_op("SLICE", [shape, np.array(begin, idx_dtype), np.array(size, idx_dtype)], out))


def test_slice_int32_data():
    check(single_op("SLICE", [Input((3, 4), I32), np.array([1, 1], I32), np.array([2, 2], I32)], (2, 2), out_dtype=I32))


@pytest.mark.parametrize("begin,size", [([0, 3], [1, 3]), ([0, 0], [1, -2]), ([-1, 0], [1, 1])], ids=str)
def test_slice_outside_is_refused(begin, size):
    """A slice outside its input: LiteRT refuses it at Prepare, tflite-runtime 2.14 does not
    check (its kernel would read out of bounds); the delegate leaves the node to stock with a
    reason either way."""
    model = single_op("SLICE", [(2, 4), np.array(begin, I32), np.array(size, I32)], (1, 3))
    delegate = load_flex()
    try:
        make_interpreter(model, delegate=delegate)
    except RuntimeError:
        pass
    stats = delegate.stats()
    assert stats["nodes_delegated"] == 0, stats
    assert stats["fallback"][0]["reason"] in ("slice begins outside the input", "invalid begin and size")


# ---------------------------------------------------------------------------- BROADCAST_TO
@pytest.mark.parametrize("dtype", [F32, I32, I64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("x_shape,shape", [
    ((3, 1), (2, 3, 4)), ((1,), (5,)), ((2, 3), (2, 3)), ((4,), (3, 2, 4)), ((1, 1), (2, 3)), ((), (2, 2)),  # stock crashes on an empty result
], ids=str)
def test_broadcast_to(x_shape, shape, dtype):
    check(single_op("BROADCAST_TO", [Input(x_shape, dtype), np.array(shape, I32)], shape, out_dtype=dtype))


def test_broadcast_to_mismatch_is_refused():
    stats = _refused(single_op("BROADCAST_TO", [(3, 2), np.array([3, 4], I32)], (3, 4)))
    assert stats["nodes_delegated"] == 0


# ---------------------------------------------------------------------------- GATHER_ND
def _nd_indices(params_shape, n, nd, seed, dtype):
    rng = np.random.default_rng(seed)
    return np.stack([rng.integers(0, params_shape[j], size=n) for j in range(nd)], axis=-1).astype(dtype)


@pytest.mark.parametrize("idx_dtype", [I32, I64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("params,idx_shape", [
    ((4, 5, 6), (3, 1)), ((4, 5, 6), (3, 2)), ((4, 5, 6), (3, 3)), ((4, 5, 6), (2, 2, 2)), ((7,), (4, 1)),
], ids=str)
def test_gather_nd_runtime_indices(params, idx_shape, idx_dtype):
    nd = idx_shape[-1]
    out = idx_shape[:-1] + params[nd:]
    model = single_op("GATHER_ND", [params, Input(idx_shape, idx_dtype)], out)
    n = int(np.prod(idx_shape[:-1]))

    def inputs(it, seed):
        return [rand(params, seed), _nd_indices(params, n, nd, seed, idx_dtype).reshape(idx_shape)]
    check(model, inputs=inputs)


def test_gather_nd_const_indices_int32_params():
    idx = np.array([[0, 1], [2, 0]], I32)
    check(single_op("GATHER_ND", [Input((3, 2, 4), I32), idx], (2, 4), out_dtype=I32))


def test_gather_nd_index_past_the_tensor_fails_as_stock():
    """A slice past the end: stock's invoke fails, so does the delegate's (no read past)."""
    model = single_op("GATHER_ND", [(3, 4), Input((1, 2), I32)], (1,))
    x, idx = rand((3, 4)), np.array([[3, 0]], I32)
    with pytest.raises(RuntimeError):
        invoke(make_interpreter(model), [x, idx])
    delegate = load_flex()
    it = make_interpreter(model, delegate=delegate)
    assert delegate.stats()["nodes_delegated"] == 1
    with pytest.raises(RuntimeError):
        invoke(it, [x, idx])


def test_gather_nd_index_past_a_dim_fails():
    """An index past its dim whose slice still lies inside the tensor: LiteRT's invoke fails,
    tflite-runtime 2.14 checks only the flat position and reads the wrong element; the delegate
    fails on both (an error, never a value read through a bad index)."""
    model = single_op("GATHER_ND", [(3, 4), Input((1, 2), I32)], (1,))
    delegate = load_flex()
    it = make_interpreter(model, delegate=delegate)
    assert delegate.stats()["nodes_delegated"] == 1
    with pytest.raises(RuntimeError):
        invoke(it, [rand((3, 4)), np.array([[1, 5]], I32)])


def test_gather_nd_constant_index_past_a_dim_fails():
    """The same with the index a constant (the graph fuzzer's find: tflite-runtime 2.14 runs it,
    and its fuzz target counts that as stock's flat check, tests/fuzz/graph_spec.py)."""
    model = single_op("GATHER_ND", [(3, 4), np.array([[1, 5]], I32)], (1,))
    delegate = load_flex()
    it = make_interpreter(model, delegate=delegate)
    assert delegate.stats()["nodes_delegated"] == 1
    with pytest.raises(RuntimeError):
        invoke(it, [rand((3, 4))])


# ---------------------------------------------------------------------------- EMBEDDING_LOOKUP
@pytest.mark.parametrize("table", [(10, 4), (7, 3, 2)], ids=str)
def test_embedding_lookup(table):
    model = single_op("EMBEDDING_LOOKUP", [Input((5,), I32), rand(table, 3)], (5,) + table[1:])
    check(model, inputs=lambda it, seed: [_ints((5,), seed, 0, table[0])])


def test_embedding_lookup_id_out_of_range_fails_as_stock():
    model = single_op("EMBEDDING_LOOKUP", [Input((2,), I32), rand((4, 3), 3)], (2, 3))
    ids = np.array([1, 4], I32)
    with pytest.raises(RuntimeError):
        invoke(make_interpreter(model), [ids])
    delegate = load_flex()
    it = make_interpreter(model, delegate=delegate)
    assert delegate.stats()["nodes_delegated"] == 1
    with pytest.raises(RuntimeError):
        invoke(it, [ids])


# ---------------------------------------------------------------------------- FILL / RANGE
@pytest.mark.parametrize("dims_dtype", [I32, I64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("dtype", [F32, I32, I64, BOOL], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("dims", [(2, 3), (4,), (2, 0, 3)], ids=str)
def test_fill_runtime_value(dims, dtype, dims_dtype):
    model = single_op("FILL", [np.array(dims, dims_dtype).reshape(len(dims)), Input((), dtype)], dims, out_dtype=dtype)
    check(model, inputs=lambda it, seed: [np.array(seed + 3, dtype).reshape(())])


def _folded_then_added(op, ins, out_shape, dtype):
    """op over constants, then ADD with an input (the folded value used by a real node)."""
    b = ModelBuilder()
    y = b.tensor(out_shape, dtype=dtype)
    b.op(op, [b.const(a) for a in ins], [y])
    x = b.input(out_shape, dtype=dtype)
    z = b.tensor(out_shape, dtype=dtype)
    b.op("ADD", [x, y], [z])
    b.output(z)
    return b.build()


def test_fill_of_constants_folds():
    model = _folded_then_added("FILL", [np.array([2, 3], I32), np.array(1.5, F32)], (2, 3), F32)
    assert check(model)["nodes_folded"] == 1


@pytest.mark.parametrize("start,limit,delta,dtype", [
    (0, 10, 3, I32), (10, 0, -3, I32), (5, 5, 1, I32), (-4, 7, 2, I64), (0.0, 1.0, 0.1, F32),
    (2.5, -1.0, -0.7, F32), (1.0, 1.0, 0.5, F32),
], ids=str)
def test_range_folds(start, limit, delta, dtype):
    n = len(np.arange(start, limit, delta, dtype=np.float64 if dtype == F32 else dtype))
    ins = [np.array(v, dtype) for v in (start, limit, delta)]
    assert check(_folded_then_added("RANGE", ins, (n,), dtype),
                 inputs=lambda it, seed: [(np.arange(n) * (seed + 1)).astype(dtype)])["nodes_folded"] == 1


@pytest.mark.parametrize("start,limit,delta", [(0, 10, -1), (0, 10, 0)], ids=str)
def test_range_that_never_ends_is_refused(start, limit, delta):
    b = ModelBuilder()
    y = b.tensor((1,), dtype=I32)
    b.op("RANGE", [b.const(np.array(v, I32)) for v in (start, limit, delta)], [y])
    x = b.input((1,), dtype=I32)
    z = b.tensor((1,), dtype=I32)
    b.op("ADD", [x, y], [z])
    b.output(z)
    stats = _refused(b.build())
    assert any(f["op"] == "RANGE" and "delta" in f["reason"] for f in stats["fallback"])


# ---------------------------------------------------------------------------- CUMSUM
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", [F32, I32, I64], ids=lambda d: np.dtype(d).name)
def test_cumsum(dtype, axis, exclusive, reverse):
    shape = (3, 4, 5)
    model = single_op("CUMSUM", [Input(shape, dtype), np.array(axis, I32)], shape, out_dtype=dtype,
                      exclusive=exclusive, reverse=reverse)
    check(model, inputs=lambda it, seed: [rand(shape, seed) if dtype == F32 else _ints(shape, seed, -9, 10, dtype)])


def test_cumsum_empty_dim():
    check(single_op("CUMSUM", [(2, 0, 3), np.array(1, I32)], (2, 0, 3)))


# ---------------------------------------------------------------------------- SPLIT / SPLIT_V
def _split_model(op, x, sizes, axis, dtype=F32, axis_dtype=I32, size_splits=None, axis_value=None):
    """x (Input or constant) split along axis into outputs of `sizes` (SPLIT_V: size_splits as
    written, default sizes), each output ADDed to itself so it is computed in the graph."""
    b = ModelBuilder()
    xs = x.shape
    xi = b.input(xs, dtype=dtype) if isinstance(x, Input) else b.const(x)
    outs = []
    for s in sizes:
        shape = list(xs)
        shape[axis] = s
        outs.append(b.tensor(tuple(shape), dtype=dtype))
    ax = b.const(np.array(axis if axis_value is None else axis_value, axis_dtype))
    if op == "SPLIT":
        b.op("SPLIT", [ax, xi], outs)
    else:
        b.op("SPLIT_V", [xi, b.const(np.array(size_splits or sizes, I32)), ax], outs)
    for o in outs:
        y = b.tensor(b._tensors[o].shape, dtype=dtype)
        b.op("ADD", [o, o], [y])
        b.output(y)
    return b.build()


@pytest.mark.parametrize("dtype", [F32, I32], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape,parts,axis", [
    ((2, 6, 4), 3, 1), ((2, 6, 4), 2, -1), ((6,), 6, 0), ((4, 3), 1, 0), ((2, 0, 4), 2, 2),
], ids=str)
def test_split(shape, parts, axis, dtype):
    sizes = [shape[axis] // parts] * parts
    check(_split_model("SPLIT", Input(shape, dtype), sizes, axis, dtype),
          inputs=lambda it, seed: [rand(shape, seed) if dtype == F32 else _ints(shape, seed, -9, 9)])


@pytest.mark.parametrize("shape,sizes,axis,size_splits", [
    ((2, 7, 3), [2, 4, 1], 1, None), ((2, 7, 3), [2, 4, 1], 1, [2, -1, 1]), ((5, 3), [0, 5], 0, None),
    ((2, 7, 3), [3], -1, [-1]),
], ids=str)
def test_split_v(shape, sizes, axis, size_splits):
    check(_split_model("SPLIT_V", Input(shape), sizes, axis, size_splits=size_splits))


def test_split_of_a_constant_folds():
    model = _split_model("SPLIT", rand((4, 6), 2), [3, 3], 1)
    assert check(model, inputs=[])["nodes_folded"] == 3  # the SPLIT and both ADDs


@pytest.mark.parametrize("op,shape,sizes,axis_value,size_splits", [
    ("SPLIT", (2, 7), [3, 3], 1, None),            # 7 is not divisible by 2
    ("SPLIT_V", (2, 7), [2, 2], 1, [2, 2]),         # sizes do not add up
    ("SPLIT_V", (2, 7), [2, 5], 1, [-1, -1]),       # two -1
    ("SPLIT", (2, 6), [3, 3], 2, None),             # axis out of range
], ids=str)
def test_split_bad_parameters_are_refused(op, shape, sizes, axis_value, size_splits):
    model = _split_model(op, Input(shape), sizes, 1, size_splits=size_splits, axis_value=axis_value)
    delegate = load_flex()
    try:
        make_interpreter(model, delegate=delegate)
    except (RuntimeError, ValueError):
        pass
    stats = delegate.stats()
    assert any(f["op"] == op for f in stats["fallback"]), stats


def test_split_under_a_budget():
    """The budget planner takes SPLIT's per-output nodes like any other (its minimum: the input
    and both parts, 4.75 MB here)."""
    stats = check(_split_model("SPLIT_V", Input((64, 96, 32)), [32, 64], 1), flex={"budget": 6})
    assert stats["budget_mb"] == 6
