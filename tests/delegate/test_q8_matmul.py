"""int8 TRANSPOSE_CONV and BATCH_MATMUL through the delegate, bit for bit against the stock
reference of the runtime in use (its rounding found by quant_rounding.detect(): tflite-runtime
2.14 requantizes TRANSPOSE_CONV half away, BATCH_MATMUL half up (ruy); LiteRT 2.3 the first
C - C % 8 channels of TRANSPOSE_CONV half up and the rest half away, BATCH_MATMUL half away),
every node delegated; and the variants stock computes otherwise, left to it with a reason."""
import numpy as np
import pytest

from flexdelegate import load_flex
from flexdelegate.run import invoke, make_interpreter
from qopcheck import Q, QModel, check_exact, random_input

S8 = np.int8
ACTS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


def weights(shape, seed):
    return np.random.default_rng(seed).integers(-127, 128, shape).astype(np.int8)


def wq(scale, cout, per_channel):
    if not per_channel:
        return Q(S8, scale, 0)
    s = tuple(float(v) for v in scale * np.linspace(0.5, 1.5, cout))
    return Q(S8, s, (0,) * cout, 0)


def tconv_out(size, k, stride, padding):
    return size * stride if padding == "SAME" else (size - 1) * stride + k


def tconv_model(x_shape, cout, k, stride, padding, *, act="NONE", per_channel=True, bias=True, xq=Q(S8, 0.05, 3),
                yq=Q(S8, 0.1, -4), sw=0.02, seed=0):
    """TRANSPOSE_CONV of an int8 input (batch, h, w, cin) to cout channels, k x k (or (kh, kw))
    filter, stride s (or (sh, sw)); output_shape a constant, as the converter writes it."""
    kh, kw = (k, k) if np.isscalar(k) else k
    sh, sw_ = (stride, stride) if np.isscalar(stride) else stride
    b_, h, w, cin = x_shape
    out = (b_, tconv_out(h, kh, sh, padding), tconv_out(w, kw, sw_, padding), cout)
    m = QModel()
    x = m.input(x_shape, xq)
    y = m.tensor(out, yq)
    wt = wq(sw, cout, per_channel)
    ins = [m.const(np.array(out, np.int32)), m.const(weights((cout, kh, kw, cin), seed + cin), wt), x]
    if bias:
        bs = np.atleast_1d(xq.scale * np.asarray(wt.scale))
        bv = np.random.default_rng(seed + 7).integers(-3000, 3000, cout).astype(np.int32)
        ins.append(m.const(bv, Q(np.int32, tuple(float(v) for v in bs), (0,) * bs.size, 0)))
    m.op("TRANSPOSE_CONV", ins, [y], padding=padding, stride_w=sw_, stride_h=sh, fused_activation_function=act)
    return m.build(y)


def kernels(stats):
    """The ops' kernels without the int8 GEMM variant's name ("transpose_conv_q8 qs8-gemm-...")."""
    return sorted(o["kernel"].split(" qs8-gemm-")[0] for o in stats["ops"])


# ---- TRANSPOSE_CONV ----

@pytest.mark.parametrize("per_channel", [True, False])
@pytest.mark.parametrize("act", ACTS)
def test_transpose_conv_activations(per_channel, act):
    """The fused activation of op version 4 applies on both runtimes; 11 channels: 8 + a tail
    of 3 under LiteRT's split rule; per-tensor weight scales too."""
    stats = check_exact(tconv_model((2, 5, 4, 6), 11, 3, 2, "SAME", act=act, per_channel=per_channel))
    assert kernels(stats) == ["transpose_conv_q8"], stats["ops"]


@pytest.mark.parametrize("k,stride,padding,cin,cout", [
    (3, 1, "SAME", 8, 16), (3, 1, "VALID", 5, 7), (3, 2, "SAME", 16, 24), (3, 2, "VALID", 3, 19),
    (2, 2, "VALID", 12, 8), (4, 2, "SAME", 7, 33), (5, 3, "SAME", 4, 9), (3, 3, "VALID", 9, 40),
    (1, 2, "SAME", 6, 5), (1, 1, "VALID", 20, 3), ((2, 3), (1, 2), "SAME", 5, 13), ((3, 1), (3, 1), "VALID", 4, 17),
    (2, 3, "VALID", 3, 6)])
def test_transpose_conv_windows(k, stride, padding, cin, cout):
    """Strides 1-3 (and mixed), kernels smaller than, equal to and larger than the stride (no
    tap at some outputs: bias alone), SAME / VALID, batch 2, channel counts across panels and
    with C % 8 tails."""
    check_exact(tconv_model((2, 6, 5, cin), cout, k, stride, padding, act="RELU6"))


def test_transpose_conv_without_bias():
    check_exact(tconv_model((1, 4, 4, 8), 12, 3, 2, "SAME", bias=False))


@pytest.mark.parametrize("zx,zy,sy", [(-128, 127, 0.3), (127, -128, 0.3), (0, 0, 1e-4), (5, -5, 500.0),
                                      (-128, -128, 3e-3)])
def test_transpose_conv_saturation_edges(zx, zy, sy):
    """Zero points at the ends of int8 (the zero-point taps of a stride), outputs saturating
    both ways, a huge and a tiny real multiplier (the tiny one flushes to 0)."""
    check_exact(tconv_model((2, 5, 5, 8), 21, 3, 2, "SAME", xq=Q(S8, 0.5, zx), yq=Q(S8, sy, zy), sw=0.05,
                            act="RELU_N1_TO_1"))


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("hw,cin,cout", [(3, 16, 200), (12, 24, 40), (20, 3, 9)])
def test_transpose_conv_split_between_threads(threads, hw, cin, cout):
    """Few output pixels split panels between the threads as well, many their pixels."""
    check_exact(tconv_model((1, hw, hw, cin), cout, 3, 2, "SAME", act="RELU"), num_threads=threads)


def test_transpose_conv_large_gather_blocks():
    """Output rows past one gathered block of the GEMM (AMX: 64-row blocks of K = 3 x 3 x 64)."""
    check_exact(tconv_model((1, 16, 16, 64), 48, 3, 2, "SAME"), num_threads=2)


def test_transpose_conv_weights_are_cached(tmp_path):
    """The packed weights are cache-file blobs: a warm load maps them, same answer."""
    model = tconv_model((1, 6, 6, 16), 24, 3, 2, "SAME")
    cache = str(tmp_path / "t.fxc")
    cold = check_exact(model, flex={"cache_path": cache})
    warm = check_exact(model, flex={"cache_path": cache})
    assert cold["cache"]["blobs_packed"] == 1 and warm["cache"]["blobs_packed"] == 0, (cold["cache"], warm["cache"])
    assert warm["cache"]["blobs_mapped"] == 1, warm["cache"]


def _stats_left(model, reason):
    d = load_flex()
    make_interpreter(model, delegate=d)
    s = d.stats()
    assert s["nodes_delegated"] == 0 and reason in s["fallback"][0]["reason"], s
    return s


def test_transpose_conv_with_a_run_time_output_shape_stays_with_stock():
    m = QModel()
    shape = m.input((4,), Q(np.int32, None))
    x = m.input((1, 3, 3, 4), Q(S8, 0.05, 0))
    y = m.tensor((1, 6, 6, 5), Q(S8, 0.1, 0))
    m.op("TRANSPOSE_CONV", [shape, m.const(weights((5, 3, 3, 4), 1), wq(0.02, 5, True)), x], [y], padding="SAME",
         stride_w=2, stride_h=2)
    _stats_left(m.build(y), "non-constant")


def test_transpose_conv_with_a_run_time_bias_stays_with_stock():
    """The bias is TRANSPOSE_CONV's input 3 (read as input 4, past the node's inputs: ASan)."""
    m = QModel()
    x = m.input((1, 3, 3, 4), Q(S8, 0.05, 0))
    bias = m.input((5,), Q(np.int32, 0.05 * 0.02, 0))
    y = m.tensor((1, 6, 6, 5), Q(S8, 0.1, 0))
    m.op("TRANSPOSE_CONV", [m.const(np.array([1, 6, 6, 5], np.int32)), m.const(weights((5, 3, 3, 4), 1),
         wq(0.02, 5, False)), x, bias], [y], padding="SAME", stride_w=2, stride_h=2)
    _stats_left(m.build(y), "non-constant")


def test_transpose_conv_with_nonzero_weight_zero_point_stays_with_stock():
    m = QModel()
    x = m.input((1, 3, 3, 4), Q(S8, 0.05, 0))
    y = m.tensor((1, 6, 6, 5), Q(S8, 0.1, 0))
    w = m.const(weights((5, 3, 3, 4), 1), Q(S8, 0.02, 3))
    m.op("TRANSPOSE_CONV", [m.const(np.array([1, 6, 6, 5], np.int32)), w, x], [y], padding="SAME", stride_w=2,
         stride_h=2)
    model = m.build(y)
    _stats_left(model, "nonzero zero point")
    ref = make_interpreter(model)
    xs = random_input(ref, 0)
    got = make_interpreter(model, delegate=load_flex())
    assert np.array_equal(invoke(ref, xs)[0], invoke(got, xs)[0])


# ---- BATCH_MATMUL ----

def bmm_model(a_shape, b_shape, *, adj_x=False, adj_y=False, const_b=False, aq=Q(S8, 0.05, 3), bq=Q(S8, 0.03, -7),
              yq=Q(S8, 0.2, 5), seed=0):
    m = QModel()
    a = m.input(a_shape, aq)
    b = m.const(weights(b_shape, seed), bq) if const_b else m.input(b_shape, bq)
    A = np.zeros(a_shape)[..., :, :]
    A = np.swapaxes(A, -1, -2) if adj_x else A
    B = np.swapaxes(np.zeros(b_shape), -1, -2) if adj_y else np.zeros(b_shape)
    y = m.tensor(np.matmul(A, B).shape, yq)
    m.op("BATCH_MATMUL", [a, b], [y], adj_x=adj_x, adj_y=adj_y)
    return m.build(y)


@pytest.mark.parametrize("const_b", [False, True])
@pytest.mark.parametrize("adj_x,adj_y", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("a_shape,b_shape", [
    ((7, 33), (33, 12)), ((3, 7, 33), (3, 33, 12)), ((2, 3, 5, 40), (2, 3, 40, 21)), ((2, 1, 9, 16), (1, 3, 16, 8)),
    ((4, 6, 20), (20, 17)), ((6, 20), (2, 20, 5)), ((1, 2, 1, 3, 4), (2, 3, 4, 9)), ((2, 1, 3, 3, 4), (3, 4, 9)),
    ((1, 7, 33), (1, 33, 12)), ((2, 1, 7, 33), (1, 33, 12))])
def test_batch_matmul(const_b, adj_x, adj_y, a_shape, b_shape):
    """adj_x / adj_y (the shapes given before adjoint: swapped here where adj asks), broadcast
    batch dims both ways, ranks 2-5, both operands at run time or B a constant; columns across
    panels and with N % 8 tails; both zero points nonzero. (A B batch dim of 1 right before the
    matrix with adj_x stays with stock when A's is not 1: the test below.)"""
    if adj_x:
        a_shape = a_shape[:-2] + (a_shape[-1], a_shape[-2])
    if adj_y:
        b_shape = b_shape[:-2] + (b_shape[-1], b_shape[-2])
    stats = check_exact(bmm_model(a_shape, b_shape, adj_x=adj_x, adj_y=adj_y, const_b=const_b))
    assert kernels(stats) == ["batch_matmul_q8"], stats["ops"]


@pytest.mark.parametrize("za,zb,zy,sy", [(-128, 127, -128, 0.2), (127, -128, 127, 0.2), (0, 0, 0, 1e3),
                                         (-3, 5, 7, 1e-5), (-128, -128, 127, 3e-3)])
def test_batch_matmul_saturation_edges(za, zb, zy, sy):
    """Zero points at the ends (B's as the row correction), saturating outputs, a multiplier
    that flushes to 0 and one of 2^17 whose left shift wraps int32 accumulators."""
    check_exact(bmm_model((2, 9, 70), (2, 70, 19), aq=Q(S8, 0.5, za), bq=Q(S8, 0.25, zb), yq=Q(S8, sy, zy)))


def test_batch_matmul_multiplier_from_the_float32_product():
    """Stock multiplies the two scales in float32 before the division in double: with these
    scales that gives Q31 multiplier 1420405235 (the double product 1420405170), and for these
    sums of 3000 products the two round to different outputs (a search over every sum the
    outputs can hold found them)."""
    sa, sb, sy = 0.09059034287929535, 0.088497593998909, 99.29352569580078
    k, accs = 3000, [687385, 724541, 761697, 5]
    m = QModel()
    a = m.input((1, len(accs), k), Q(S8, sa, -128))
    y = m.tensor((1, len(accs), 1), Q(S8, sy, 0))
    m.op("BATCH_MATMUL", [a, m.const(np.ones((k, 1), np.int8), Q(S8, sb, 0))], [y])
    rows = np.full((1, len(accs), k), -128, np.int8)  # a - za = 0
    for i, acc in enumerate(accs):  # acc = sum (a + 128) * 1
        rows[0, i, :acc // 255] = 127
        rows[0, i, acc // 255] = acc % 255 - 128
    check_exact(m.build(y), inputs=[rows], seeds=(0,))


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("a_shape,b_shape,adj_x", [((1, 3, 300), (300, 200), False), ((8, 100, 32), (8, 32, 64), False),
                                                   ((2, 2, 130, 48), (2, 2, 48, 40), False),
                                                   ((2, 48, 130), (2, 48, 40), True)])
def test_batch_matmul_split_between_threads(threads, a_shape, b_shape, adj_x):
    """Few rows split panels, many rows split rows (in groups of 64: adj_x transposes each
    group's rows of A); attention-like shapes."""
    check_exact(bmm_model(a_shape, b_shape, adj_x=adj_x), num_threads=threads)


def test_batch_matmul_attention_scores():
    """Q x K^T (adj_y) of 2 heads, run-time operands, as a transformer's scores."""
    check_exact(bmm_model((1, 2, 24, 16), (1, 2, 24, 16), adj_y=True), num_threads=2)


@pytest.mark.parametrize("a_shape,b_shape", [((4, 33, 7), (1, 33, 12)), ((2, 4, 33, 7), (2, 1, 33, 12)),
                                             ((1, 2, 3, 5, 6), (1, 5, 8))])
def test_batch_matmul_adj_x_with_a_broadcast_b_batch_stays_with_stock(a_shape, b_shape):
    """tflite-runtime 2.14 folds A's last batch dim into its rows when B's is 1, which with adj_x
    mixes A's depth into its rows where that dim of A is above 1 (its answer then even depends on
    memory past A): such a node is left to stock on either runtime."""
    _stats_left(bmm_model(a_shape, b_shape, adj_x=True), "adj_x")


@pytest.mark.parametrize("per", ["a", "b"])
def test_batch_matmul_per_channel_operand_stays_with_stock(per):
    chan = Q(S8, tuple(0.01 * (i + 1) for i in range(12)), (0,) * 12, 1)
    model = bmm_model((3, 33), (33, 12), const_b=True, bq=chan) if per == "b" else \
        bmm_model((12, 33), (33, 5), aq=Q(S8, tuple(0.01 * (i + 1) for i in range(12)), (0,) * 12, 0))
    _stats_left(model, "per-channel")


@pytest.mark.parametrize("op", ["TRANSPOSE_CONV", "BATCH_MATMUL"])
def test_multiplier_of_2_to_the_30_or_more_stays_with_stock(op):
    """A real multiplier >= 2^30 needs a left shift past 30, which the output stages do not take."""
    yq = Q(S8, 1e-9, 0)
    model = tconv_model((1, 3, 3, 4), 5, 3, 2, "SAME", xq=Q(S8, 2.0, 0), sw=2.0, yq=yq) if op == "TRANSPOSE_CONV" \
        else bmm_model((3, 8), (8, 4), aq=Q(S8, 2.0, 0), bq=Q(S8, 2.0, 0), yq=yq)
    _stats_left(model, "2^30 or more")


def test_batch_matmul_to_int32_stays_with_stock():
    m = QModel()
    a = m.input((3, 8), Q(S8, 0.05, 0))
    b = m.input((8, 4), Q(S8, 0.05, 0))
    y = m.tensor((3, 4), Q(np.int32, None))
    m.op("BATCH_MATMUL", [a, b], [y])
    _stats_left(m.build(y), "non-int8 output")


def test_rounding_answer_stored_by_other_probes_is_not_reused(tmp_path, monkeypatch):
    """load_flex keeps quant_rounding.detect()'s answer per runtime build (rounding.json); one
    stored when detect() probed other ops (an older version's: no TRANSPOSE_CONV or
    BATCH_MATMUL entry) is not taken for this version's, which would leave these ops to stock."""
    import json

    import flexdelegate
    from flexdelegate.paths import default_dir
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(flexdelegate, "_roundings", {})
    monkeypatch.setattr(flexdelegate, "_ROUNDING_ENTRIES", flexdelegate._ROUNDING_ENTRIES - 1)
    load_flex()  # detects and stores under the other probes' key
    path = f"{default_dir()}/rounding.json"
    stored = json.load(open(path))
    older = {key: ",".join(e for e in text.split(",") if not e.startswith(("TRANSPOSE_CONV.", "BATCH_MATMUL.")))
             for key, text in stored.items()}
    json.dump(older, open(path, "w"))
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(flexdelegate, "_roundings", {})
    check_exact(tconv_model((1, 4, 4, 8), 12, 3, 2, "SAME"))
    check_exact(bmm_model((3, 7, 33), (3, 33, 12)))


def test_a_stored_rounding_answer_the_plugin_refuses_is_asked_again(tmp_path, monkeypatch):
    """A rounding.json entry under this version's key that the plugin cannot parse (written by
    another build of the package, or damaged) is detected again and replaced, not a failed load."""
    import json

    import flexdelegate
    from flexdelegate.paths import default_dir
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(flexdelegate, "_roundings", {})
    load_flex()  # detects and stores
    path = f"{default_dir()}/rounding.json"
    stored = json.load(open(path))
    json.dump({key: text + ",NOT_AN_OP.f32=0" for key, text in stored.items()}, open(path, "w"))
    monkeypatch.setattr(flexdelegate, "_roundings", {})
    check_exact(tconv_model((1, 4, 4, 8), 12, 3, 2, "SAME"))
    assert json.load(open(path)) == stored
