"""Hypothesis over int8 and uint8 layer shapes and quantization parameters: CONV_2D /
DEPTHWISE_CONV_2D / FULLY_CONNECTED with random geometry, zero points anywhere in the type
(uint8 weights' too), per-tensor or (int8) per-channel scales over three decades, every fused
activation: bit-identical to stock, or (what the kernels do not take) left to stock with a
reason, never a wrong answer."""
import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from qopcheck import Q, QModel, check_exact

S8, U8 = np.int8, np.uint8
ACTS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


@st.composite
def layers(draw, dtype=S8):
    kind = draw(st.sampled_from(["CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    scale = lambda: float(10 ** draw(st.floats(-3, 0)))  # noqa: E731
    lo, hi = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
    zx, zy = draw(st.integers(lo, hi)), draw(st.integers(lo, hi))
    zw = draw(st.integers(0, 255)) if dtype == U8 else 0
    sx, sy = scale(), scale() * 4
    act = draw(st.sampled_from(ACTS))
    dw = kind == "DEPTHWISE_CONV_2D"

    def weights(shape, cout, per_channel):
        """(values, Q): uint8 per tensor around zw; int8 per tensor or per channel, zero point 0."""
        axis = 3 if dw else 0
        if dtype == U8:
            return rng.integers(0, 256, shape), Q(U8, scale() * 0.05, zw, axis)
        ws = tuple(float(s) for s in rng.uniform(0.2, 2.0, cout) * scale() * 0.05) if per_channel else scale() * 0.05
        return rng.integers(-127, 128, shape), Q(S8, ws, (0,) * cout, axis) if per_channel else Q(S8, ws, 0)

    def bias(cout, wq):  # the converter's scale s_x * s_w (stock's FC and uint8 layers check it)
        s = float(np.float32(sx) * np.float32(np.atleast_1d(wq.scale)[0]))
        return m.const(rng.integers(-2000, 2000, cout).astype(np.int32), Q(np.int32, s, 0))

    m = QModel()
    if kind == "FULLY_CONNECTED":
        batch, k, n = draw(st.integers(1, 9)), draw(st.integers(1, 70)), draw(st.integers(1, 40))
        x, y = m.input((batch, k), Q(dtype, sx, zx)), m.tensor((batch, n), Q(dtype, sy, zy))
        w, wq = weights((n, k), n, False)
        m.op(kind, [x, m.const(w, wq), bias(n, wq)], [y], fused_activation_function=act)
        return m.build(y)
    h, wd = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    stride, dil = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    padding = draw(st.sampled_from(["SAME", "VALID"]))
    if padding == "VALID" and ((kh - 1) * dil + 1 > h or (kw - 1) * dil + 1 > wd):
        padding = "SAME"
    cin = draw(st.integers(1, 20))
    mult = draw(st.integers(1, 3)) if dw else 1
    cout = cin * mult if dw else draw(st.integers(1, 40))
    oh = -(-h // stride) if padding == "SAME" else (h - (kh - 1) * dil - 1) // stride + 1
    ow = -(-wd // stride) if padding == "SAME" else (wd - (kw - 1) * dil - 1) // stride + 1
    x, y = m.input((1, h, wd, cin), Q(dtype, sx, zx)), m.tensor((1, oh, ow, cout), Q(dtype, sy, zy))
    w, wq = weights((1, kh, kw, cout) if dw else (cout, kh, kw, cin), cout, dw or draw(st.booleans()))
    opts = dict(padding=padding, stride_w=stride, stride_h=stride, dilation_w_factor=dil, dilation_h_factor=dil,
                fused_activation_function=act)
    if dw:
        opts["depth_multiplier"] = mult
    m.op(kind, [x, m.const(w, wq), bias(cout, wq)], [y], **opts)
    return m.build(y)


def bit_identical_or_left_to_stock(model, reasons):
    stats = check_exact(model, delegated=False)
    if stats["nodes_delegated"] != stats["nodes_total"]:
        assert stats["fallback"] and all(any(r in f["reason"] for r in reasons) for f in stats["fallback"]), stats


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(layers())
def test_int8_layers_bit_identical_or_left_to_stock(model):
    bit_identical_or_left_to_stock(model, ["2^30"])


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(layers(U8))
def test_uint8_layers_bit_identical_or_left_to_stock(model):
    """uint8: the int8 kernels in the int8 domain (ir/qlayer.c); a multiplier whose output zero
    point may wrap int32 stays with stock too."""
    bit_identical_or_left_to_stock(model, ["2^30", "wraps"])


def test_fc_bias_scale_stock_refuses_is_not_claimed():
    """A bias scale stock's FULLY_CONNECTED refuses: the delegate leaves the node to stock, which
    then refuses the model exactly as without the delegate (never a silent answer)."""
    import pytest
    from flexdelegate import load_flex
    from flexdelegate.run import make_interpreter
    m = QModel()
    x = m.input((2, 8), Q(S8, 0.1, 0))
    y = m.tensor((2, 4), Q(S8, 0.01, 0))
    w = m.const(np.ones((4, 8), S8), Q(S8, 0.01, 0))
    m.op("FULLY_CONNECTED", [x, w, m.const(np.zeros(4, np.int32), Q(np.int32, 0.5, 0))], [y])
    model = m.build(y)
    with pytest.raises(RuntimeError, match="scale"):
        make_interpreter(model)
    d = load_flex()
    with pytest.raises(RuntimeError, match="scale"):
        make_interpreter(model, delegate=d)
    assert d.stats()["nodes_delegated"] == 0
    assert "bias scale" in d.stats()["fallback"][0]["reason"]
