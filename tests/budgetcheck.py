"""Models whose weights dwarf their activations, so budgets force slicing and streaming, and
what every budget test asks of them."""
import numpy as np

from flexdelegate import BudgetError, load_flex
from flexdelegate.run import invoke, make_interpreter, random_inputs
from flexdelegate.tflite.writer import ModelBuilder


def stock_reference(model, seed):
    """(inputs, outputs) of `model` on stock TFLite."""
    it = make_interpreter(model)
    x = random_inputs(it, seed=seed)
    return x, invoke(it, x)


def min_budget(model, cache, **opts) -> float:
    """The minimum budget (MB) the delegate names when a load asks for too little."""
    try:
        make_interpreter(model, delegate=load_flex(budget=0.01, cache_path=str(cache), **opts))
    except BudgetError as e:  # make_interpreter raises the delegate's last_error()
        text = str(e)
    else:
        raise AssertionError("a 0.01 MB budget was accepted")
    assert "infeasible" in text and "minimum is" in text and "node" in text
    return float(text.split("minimum is ")[1].split(" MB")[0])


def heavy_model(seed=0, fc=1536, size=16, c=32) -> bytes:
    """CONV 3x3 -> CONV 3x3 -> RESHAPE -> FC(fc) (RELU) -> FC(fc) -> FC(10): ~2 x fc^2 x 4 bytes."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.input((1, size, size, 3), name="x")
    h1 = b.tensor((1, size, size, c))
    b.op("CONV_2D", [x, b.const((rng.standard_normal((c, 3, 3, 3)) * 0.3).astype(np.float32)),
                     b.const(np.zeros(c, np.float32))], [h1], padding="SAME", stride_w=1, stride_h=1,
         fused_activation_function="RELU")
    h2 = b.tensor((1, size // 2, size // 2, c))
    b.op("CONV_2D", [h1, b.const((rng.standard_normal((c, 3, 3, c)) * 0.1).astype(np.float32)),
                     b.const(np.zeros(c, np.float32))], [h2], padding="SAME", stride_w=2, stride_h=2)
    flat_n = (size // 2) ** 2 * c
    flat = b.tensor((1, flat_n))
    b.op("RESHAPE", [h2, b.const(np.array([1, flat_n], np.int32))], [flat])
    prev, prev_n = flat, flat_n
    for i, n in enumerate((fc, fc, 10)):
        y = b.tensor((1, n))
        w = (rng.standard_normal((n, prev_n)) / np.sqrt(prev_n)).astype(np.float32)
        b.op("FULLY_CONNECTED", [prev, b.const(w), b.const(np.zeros(n, np.float32))], [y],
             fused_activation_function="RELU" if i < 2 else "NONE")
        prev, prev_n = y, n
    b.output(prev)
    return b.build()


def winograd_model(seed=0, size=40, cin=16, cout=192) -> bytes:
    """CONV 3x3 stride 1 (RELU), big enough to run as Winograd -> CONV 1x1 back to cin channels.
    Its transformed weights (~0.8 MB) outweigh the plain ones 7x, so budgets decide between the
    whole Winograd blob, Winograd slices and the GEMM form."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.input((1, size, size, cin), name="x")
    h = b.tensor((1, size, size, cout))
    b.op("CONV_2D", [x, b.const((rng.standard_normal((cout, 3, 3, cin)) / np.sqrt(9 * cin)).astype(np.float32)),
                     b.const(rng.standard_normal(cout).astype(np.float32) * 0.1)], [h], padding="SAME",
         stride_w=1, stride_h=1, fused_activation_function="RELU")
    y = b.tensor((1, size, size, cin))
    b.op("CONV_2D", [h, b.const((rng.standard_normal((cin, 1, 1, cout)) / np.sqrt(cout)).astype(np.float32)),
                     b.const(np.zeros(cin, np.float32))], [y], padding="VALID", stride_w=1, stride_h=1)
    b.output(y)
    return b.build()
