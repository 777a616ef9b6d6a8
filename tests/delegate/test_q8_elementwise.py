"""The integer element-wise ops through the delegate (ir/qop.c on kernels/qs8-ops), bit for bit
against the stock reference of the runtime in use, every node delegated: ADD and MUL with
broadcasting (squeeze-excite's [1,1,1,C] x [1,H,W,C], scalar, the generic walk) and fused
activations, MEAN over H, W with keep_dims (1 and 2 interpreter threads: stock splits channels
by them), SOFTMAX, LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU; and what must stay with stock."""
import numpy as np
import pytest

from qopcheck import Q, QModel, check_exact

S8, U8 = np.int8, np.uint8


def binary(op, a_shape, b_shape, qa, qb, qo, act="NONE"):
    m = QModel()
    a, b = m.input(a_shape, qa), m.input(b_shape, qb)
    y = m.tensor(np.broadcast_shapes(a_shape, b_shape), qo)
    m.op(op, [a, b], [y], fused_activation_function=act)
    return m.build(y)


BCAST = [((1, 8, 8, 24), (1, 8, 8, 24)), ((1, 1, 1, 40), (1, 7, 7, 40)), ((1, 6, 6, 33), (1, 1, 1, 33)),
         ((1,), (2, 5, 19)), ((3, 1, 6), (1, 4, 1))]


@pytest.mark.parametrize("dtype", [S8, U8])
@pytest.mark.parametrize("shapes", BCAST, ids=[f"{a}x{b}" for a, b in BCAST])
@pytest.mark.parametrize("act", ["NONE", "RELU6"])
def test_add(dtype, shapes, act):
    z = (-5, 7, -20) if dtype == S8 else (120, 131, 100)
    check_exact(binary("ADD", *shapes, Q(dtype, 0.05, z[0]), Q(dtype, 0.031, z[1]), Q(dtype, 0.07, z[2]), act),
                num_threads=2)


@pytest.mark.parametrize("dtype", [S8, U8])
@pytest.mark.parametrize("shapes", BCAST, ids=[f"{a}x{b}" for a, b in BCAST])
def test_sub(dtype, shapes):
    z = (-128, 127, 0) if dtype == S8 else (0, 255, 128)
    check_exact(binary("SUB", *shapes, Q(dtype, 0.05, z[0]), Q(dtype, 0.02, z[1]), Q(dtype, 0.09, z[2]), "RELU"))


@pytest.mark.parametrize("dtype", [S8, U8])
@pytest.mark.parametrize("shapes", BCAST, ids=[f"{a}x{b}" for a, b in BCAST])
def test_mul(dtype, shapes):
    z = (-128, 3, -10) if dtype == S8 else (0, 128, 10)
    check_exact(binary("MUL", *shapes, Q(dtype, 0.02, z[0]), Q(dtype, 1 / 256, z[1]), Q(dtype, 0.01, z[2]), "RELU"))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", [(1, 7, 7, 1280), (2, 4, 4, 40), (1, 3, 3, 17)])
def test_mean_hw(shape, threads):
    m = QModel()
    x = m.input(shape, Q(S8, 0.07, -9))
    y = m.tensor((shape[0], 1, 1, shape[3]), Q(S8, 0.05, 4))
    m.op("MEAN", [x, m.const(np.array([1, 2], np.int32))], [y], keep_dims=True)
    check_exact(m.build(y), num_threads=threads)


@pytest.mark.parametrize("dtype", [S8, U8])
@pytest.mark.parametrize("shape,axes,keep", [((1, 7, 7, 64), [1, 2], False), ((2, 5, 6), [-1], True),
                                             ((1, 5, 5, 8), [-3, -2], True)])
def test_mean_general(dtype, shape, axes, keep):
    """stock's general path (QuantizedMeanOrSum): global pooling without keep_dims and others."""
    m = QModel()
    x = m.input(shape, Q(dtype, 0.07, -9 if dtype == S8 else 119))
    res = {a % len(shape) for a in axes}
    out = [1 if i in res else d for i, d in enumerate(shape)] if keep else [d for i, d in enumerate(shape) if i not in res]
    y = m.tensor(out, Q(dtype, 0.05, 4 if dtype == S8 else 130))
    m.op("MEAN", [x, m.const(np.array(axes, np.int32))], [y], keep_dims=keep)
    fast_u8 = dtype == U8 and keep and len(shape) == 4  # LiteRT resolves [-3, -2] to its fast path
    stats = check_exact(m.build(y), delegated=not fast_u8)
    if not fast_u8:
        assert stats["nodes_delegated"] == 1, stats


def test_uint8_mean_fast_path_stays_with_stock():
    m = QModel()
    x = m.input((1, 5, 5, 8), Q(U8, 0.07, 119))
    y = m.tensor((1, 1, 1, 8), Q(U8, 0.05, 130))
    m.op("MEAN", [x, m.const(np.array([1, 2], np.int32))], [y], keep_dims=True)
    stats = check_exact(m.build(y), delegated=False)
    assert stats["nodes_delegated"] == 0, stats


@pytest.mark.parametrize("dtype", [S8, U8])
def test_softmax(dtype):
    m = QModel()
    x = m.input((3, 1001), Q(dtype, 0.11, 5 if dtype == S8 else 130))
    y = m.tensor((3, 1001), Q(dtype, 1 / 256, -128 if dtype == S8 else 0))
    m.op("SOFTMAX", [x], [y], beta=1.0)
    check_exact(m.build(y))


TABLE = [("LOGISTIC", (1 / 256, -128)), ("TANH", (1 / 128, 0)), ("HARD_SWISH", (0.03, -100)),
         ("LEAKY_RELU", (0.02, -40))]


@pytest.mark.parametrize("op,qo", TABLE, ids=[t[0] for t in TABLE])
def test_table_ops(op, qo):
    m = QModel()
    x = m.input((1, 9, 9, 35), Q(S8, 0.04, 3))
    y = m.tensor((1, 9, 9, 35), Q(S8, *qo))
    m.op(op, [x], [y], **({"alpha": 0.1} if op == "LEAKY_RELU" else {}))
    check_exact(m.build(y))


def test_squeeze_excite_block():
    """MEAN -> (1x1 convs elided) LOGISTIC -> MUL back onto the feature map, as in EfficientNet."""
    m = QModel()
    x = m.input((1, 10, 10, 48), Q(S8, 0.05, -7))
    s = m.tensor((1, 1, 1, 48), Q(S8, 0.04, 2))
    g = m.tensor((1, 1, 1, 48), Q(S8, 1 / 256, -128))
    y = m.tensor((1, 10, 10, 48), Q(S8, 0.03, -5))
    m.op("MEAN", [x, m.const(np.array([1, 2], np.int32))], [s], keep_dims=True)
    m.op("LOGISTIC", [s], [g])
    m.op("MUL", [x, g], [y])
    check_exact(m.build(y))


POOLS = [((1, 9, 9, 20), 3, 2, "SAME"), ((2, 8, 7, 300), 2, 2, "VALID"), ((1, 7, 7, 33), 7, 1, "VALID"),
         ((1, 10, 10, 16), 5, 3, "SAME")]


@pytest.mark.parametrize("dtype", [S8, U8])
@pytest.mark.parametrize("shape,k,s,pad", POOLS, ids=[f"{p[0]}k{p[1]}s{p[2]}{p[3]}" for p in POOLS])
@pytest.mark.parametrize("act", ["NONE", "RELU6"])
def test_average_pool(dtype, shape, k, s, pad, act):
    """AVERAGE_POOL_2D (kernels/qs8-ops/pool.c): sums of the in-bounds taps, rounded half away
    from zero by their count (edges of SAME windows: fewer taps), the activation's clamp."""
    from flexdelegate.run import make_interpreter
    m = QModel()
    q = Q(dtype, 0.05, -7 if dtype == S8 else 121)
    x = m.input(shape, q)
    oh = -(-shape[1] // s) if pad == "SAME" else (shape[1] - k) // s + 1
    ow = -(-shape[2] // s) if pad == "SAME" else (shape[2] - k) // s + 1
    y = m.tensor((shape[0], oh, ow, shape[3]), q)
    m.op("AVERAGE_POOL_2D", [x], [y], padding=pad, stride_h=s, stride_w=s, filter_height=k, filter_width=k,
         fused_activation_function=act)
    check_exact(m.build(y), seeds=(0, 1, 2), num_threads=2)


@pytest.mark.parametrize("dtype", [S8, U8])
@pytest.mark.parametrize("op", ["RELU", "RELU6", "RELU_N1_TO_1"])
def test_requantizing_relu(dtype, op):
    """RELU* whose output is quantized differently from its input (QuantizedReluX: a rescale,
    then the clamp) as a table."""
    m = QModel()
    x = m.input((2, 7, 5, 13), Q(dtype, 0.03, 4 if dtype == S8 else 131))
    y = m.tensor((2, 7, 5, 13), Q(dtype, 0.011, -100 if dtype == S8 else 20))
    m.op(op, [x], [y])
    check_exact(m.build(y), seeds=(0, 1, 2))


QUANTS = [(S8, S8, 0.025, 0.05), (S8, S8, 0.05, 0.0371), (U8, U8, 0.02, 0.08), (S8, U8, 0.03, 0.03 * 3),
          (U8, S8, 0.04, 0.01)]


@pytest.mark.parametrize("din,dout,si,so", QUANTS, ids=[f"{np.dtype(a).name}-{np.dtype(b).name}-{si}-{so}" for a, b, si, so in QUANTS])
@pytest.mark.parametrize("n", [16 * 37, 16 * 37 + 9])
def test_requantizing_quantize(din, dout, si, so, n):
    """QUANTIZE int -> int with another scale: MultiplyByQuantizedMultiplier of x - zi (on LiteRT
    ties go up on the first n - n % 16 elements: its NEON loop), + zo, saturated."""
    m = QModel()
    x = m.input((1, n), Q(din, si, 3 if din == S8 else 130))
    y = m.tensor((1, n), Q(dout, so, -7 if dout == S8 else 121))
    m.op("QUANTIZE", [x], [y])

    def every_value(it, seed):
        lo, hi = (-128, 127) if din == S8 else (0, 255)
        v = np.resize(np.random.default_rng(seed).permutation(np.arange(lo, hi + 1)), n)
        return [v.astype(din).reshape(1, n)]
    check_exact(m.build(y), inputs=every_value, seeds=(0, 1))


SWISH = [((1, 9, 9, 35), 0, "NONE", S8), ((1, 4, 4, 16), 1, "RELU6", S8), ((2, 3, 37), 0, "NONE", U8),
         ((1, 5, 5, 16), 1, "RELU", U8)]


@pytest.mark.parametrize("shape,x_at,act,dtype", SWISH, ids=[f"{s}-x{i}-{a}-{d.__name__}" for s, i, a, d in SWISH])
def test_swish_is_one_table(shape, x_at, act, dtype):
    """MUL(x, LOGISTIC(x)) (EfficientNet's swish) runs as one table of x (ir/fuse.c fuse_qswish):
    both input orders, a fused activation, element counts around LiteRT's NEON MUL blocks of 16
    (int8) / 8 (uint8), zero points at the ends; the LOGISTIC is skipped."""
    z = (-128, 127) if dtype == S8 else (0, 255)
    m = QModel()
    x = m.input(shape, Q(dtype, 0.07, z[x_at]))
    g = m.tensor(shape, Q(dtype, 1 / 256, z[0]))
    y = m.tensor(shape, Q(dtype, 0.021, z[1 - x_at] // 3))
    m.op("LOGISTIC", [x], [g])
    m.op("MUL", [x, g] if x_at == 0 else [g, x], [y], fused_activation_function=act)
    stats = check_exact(m.build(y), inputs=lambda it, seed: [np.resize(np.arange(256, dtype=np.uint8) + seed,
                                                                         shape).view(dtype)])
    assert sorted(o["kernel"] for o in stats["ops"]) == ["elementwise_q8", "fused (skipped)"], stats["ops"]


def test_swish_with_a_shared_sigmoid_is_not_fused():
    """The sigmoid read by another node too stays a node of its own (its output must exist)."""
    m = QModel()
    x = m.input((1, 6, 6, 20), Q(S8, 0.05, -3))
    g = m.tensor((1, 6, 6, 20), Q(S8, 1 / 256, -128))
    y = m.tensor((1, 6, 6, 20), Q(S8, 0.02, 4))
    z = m.tensor((1, 6, 6, 20), Q(S8, 0.03, 1))
    m.op("LOGISTIC", [x], [g])
    m.op("MUL", [x, g], [y])
    m.op("ADD", [y, g], [z])
    stats = check_exact(m.build(z))
    assert "fused (skipped)" not in [o["kernel"] for o in stats["ops"]], stats["ops"]


def _weights(shape, seed):
    return np.random.default_rng(seed).integers(-127, 128, shape).astype(np.int8)


@pytest.mark.parametrize("producer", ["CONV_2D", "CONV_2D_3x3", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"])
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("extra_reader", [False, True])
def test_swish_taken_by_its_int8_producer(producer, threads, extra_reader):
    """An int8 conv / FC / depthwise whose output only the swish reads applies the swish's
    table to each region it writes (ir/fuse.c, ir/qlayer.c): equal to stock at 1-3 threads
    (regions split by rows and by weight panels), 9 x 7 x 19 outputs (not whole NEON blocks of
    16: LiteRT's split of the MUL by element index holds inside each region). A second reader
    of the conv output keeps the swish a node of its own."""
    m = QModel()
    cin, cout = (19, 19) if producer == "DEPTHWISE_CONV_2D" else (6, 19)
    shape = (2, 9, 7, cout) if producer != "FULLY_CONNECTED" else (37, cout)
    x = m.input(shape[:-1] + (cin,), Q(S8, 0.05, -3))
    y = m.tensor(shape, Q(S8, 0.06, 5))
    b = m.const(np.random.default_rng(1).integers(-999, 999, cout).astype(np.int32), Q(np.int32, 0.05 * 0.01, 0))
    if producer == "FULLY_CONNECTED":
        m.op(producer, [x, m.const(_weights((cout, cin), 2), Q(S8, 0.01, 0)), b], [y])
    elif producer == "DEPTHWISE_CONV_2D":
        m.op(producer, [x, m.const(_weights((1, 3, 3, cout), 2), Q(S8, 0.01, 0)), b], [y], padding="SAME",
             stride_w=1, stride_h=1, depth_multiplier=1)
    else:
        k = 3 if producer == "CONV_2D_3x3" else 1
        m.op("CONV_2D", [x, m.const(_weights((cout, k, k, cin), 2), Q(S8, 0.01, 0)), b], [y], padding="SAME",
             stride_w=1, stride_h=1)
    g = m.tensor(shape, Q(S8, 1 / 256, -128))
    s = m.tensor(shape, Q(S8, 0.03, -100))
    m.op("LOGISTIC", [y], [g])
    m.op("MUL", [y, g], [s])
    outs = [s]
    if extra_reader:
        z = m.tensor(shape, Q(S8, 0.08, 2))
        m.op("ADD", [y, s], [z])
        outs = [z]
    stats = check_exact(m.build(*outs), num_threads=threads)
    kernels = [o["kernel"] for o in stats["ops"]]
    assert kernels[0].endswith("+swish") != extra_reader, kernels
    assert kernels[2] == ("elementwise_q8" if extra_reader else "fused (copy)"), kernels
