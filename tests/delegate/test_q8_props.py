"""Hypothesis over int8 layer shapes and quantization parameters: CONV_2D / DEPTHWISE_CONV_2D /
FULLY_CONNECTED with random geometry, zero points anywhere in int8, per-tensor or per-channel
scales over three decades, every fused activation: bit-identical to stock, or (a multiplier the
kernels do not take) left to stock with a reason, never a wrong answer."""
import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from qopcheck import Q, QModel, check_exact

S8 = np.int8
ACTS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


@st.composite
def layers(draw):
    kind = draw(st.sampled_from(["CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    scale = lambda: float(10 ** draw(st.floats(-3, 0)))  # noqa: E731
    zx, zy = draw(st.integers(-128, 127)), draw(st.integers(-128, 127))
    sx, sy = scale(), scale() * 4
    act = draw(st.sampled_from(ACTS))
    m = QModel()
    if kind == "FULLY_CONNECTED":
        batch, k, n = draw(st.integers(1, 9)), draw(st.integers(1, 70)), draw(st.integers(1, 40))
        x = m.input((batch, k), Q(S8, sx, zx))
        y = m.tensor((batch, n), Q(S8, sy, zy))
        sw = scale() * 0.05
        w = m.const(rng.integers(-127, 128, (n, k)).astype(S8), Q(S8, sw, 0))
        bq = Q(np.int32, float(np.float32(sx) * np.float32(sw)), 0)  # stock FC checks it
        m.op(kind, [x, w, m.const(rng.integers(-2000, 2000, n).astype(np.int32), bq)], [y],
             fused_activation_function=act)
        return m.build(y)
    h, wd = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    stride, padding = draw(st.integers(1, 3)), draw(st.sampled_from(["SAME", "VALID"]))
    if padding == "VALID" and (kh > h or kw > wd):
        padding = "SAME"
    cin = draw(st.integers(1, 20))
    mult = draw(st.integers(1, 3)) if kind == "DEPTHWISE_CONV_2D" else 1
    cout = cin * mult if kind == "DEPTHWISE_CONV_2D" else draw(st.integers(1, 40))
    oh = -(-h // stride) if padding == "SAME" else (h - kh) // stride + 1
    ow = -(-wd // stride) if padding == "SAME" else (wd - kw) // stride + 1
    x = m.input((1, h, wd, cin), Q(S8, sx, zx))
    y = m.tensor((1, oh, ow, cout), Q(S8, sy, zy))
    per_channel = draw(st.booleans()) or kind == "DEPTHWISE_CONV_2D"
    ws = tuple(float(s) for s in rng.uniform(0.2, 2.0, cout) * scale() * 0.05) if per_channel else scale() * 0.05
    axis = 3 if kind == "DEPTHWISE_CONV_2D" else 0
    wq = Q(S8, ws, (0,) * cout, axis) if per_channel else Q(S8, ws, 0)
    wshape = (1, kh, kw, cout) if kind == "DEPTHWISE_CONV_2D" else (cout, kh, kw, cin)
    w = m.const(rng.integers(-127, 128, wshape).astype(S8), wq)
    b = m.const(rng.integers(-2000, 2000, cout).astype(np.int32), Q(np.int32, 1e-3, 0))
    opts = dict(padding=padding, stride_w=stride, stride_h=stride, fused_activation_function=act)
    if kind == "DEPTHWISE_CONV_2D":
        opts["depth_multiplier"] = mult
    m.op(kind, [x, w, b], [y], **opts)
    return m.build(y)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(layers())
def test_int8_layers_bit_identical_or_left_to_stock(model):
    stats = check_exact(model, delegated=False)
    if stats["nodes_delegated"] != stats["nodes_total"]:
        assert stats["fallback"] and all(f["reason"] for f in stats["fallback"]), stats
        assert all("2^30" in f["reason"] for f in stats["fallback"]), stats


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
