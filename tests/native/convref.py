"""What the conv reference implementations of the native tests share: the fused activation
as TFLite's float kernels apply it, and the error measure."""
import numpy as np

BOUNDS = {"NONE": (-np.inf, np.inf), "RELU": (0, np.inf), "RELU6": (0, 6), "RELU_N1_TO_1": (-1, 1)}


def finish(y, bias, act):
    """Adds the bias and applies the fused activation to a float64 conv result."""
    if bias is not None:
        y = y + bias
    lo, hi = BOUNDS.get(act, (-np.inf, np.inf))
    y = np.clip(y, lo, hi)
    if act in ("SIGMOID", "SWISH"):  # the delegate's fused LOGISTIC (and MUL by the input)
        s = 1 / (1 + np.exp(-y))
        return y * s if act == "SWISH" else s
    return np.tanh(y) if act == "TANH" else y


def rel_err(got, ref):
    """max |got - ref| / max |ref| (0 for empty tensors)."""
    scale = max(float(np.abs(ref).max()), 1e-30) if ref.size else 1.0
    return float(np.abs(got.astype(np.float64) - ref).max()) / scale if ref.size else 0.0
