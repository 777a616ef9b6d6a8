"""Shared helpers for the cache tests: models with known weights, loads, and checks."""
import numpy as np

from flexdelegate import load_flex
from flexdelegate.run import invoke, make_interpreter, max_error, random_inputs
from flexdelegate.tflite.writer import ModelBuilder


# What a load of two_conv_model packs: each 3x3 conv runs Winograd, stored with its GEMM form
# (the form a budget plan falls back on), and the FC its GEMM panels.
CONV_BLOBS = 2
TWO_CONV_BLOBS = 2 * CONV_BLOBS + 1


def two_conv_model(seed=0, cin=8, cout=16, size=12, same_weights=False, head_seed=None) -> bytes:
    """CONV 3x3 -> CONV 3x3 -> FC. same_weights: both convs share one weight array (dedup)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.input((1, size, size, cin), name="x")
    w1 = (rng.standard_normal((cout, 3, 3, cin)) * 0.2).astype(np.float32)
    w2 = w1.copy() if same_weights and cin == cout else (rng.standard_normal((cout, 3, 3, cout)) * 0.2).astype(np.float32)
    zero = np.zeros(cout, np.float32)
    h1 = b.tensor((1, size, size, cout))
    b.op("CONV_2D", [x, b.const(w1), b.const(zero)], [h1], padding="SAME", stride_w=1, stride_h=1,
         fused_activation_function="RELU")
    h2 = b.tensor((1, size, size, cout))
    b.op("CONV_2D", [h1, b.const(w2), b.const(zero)], [h2], padding="SAME", stride_w=1, stride_h=1)
    flat = b.tensor((1, size * size * cout))
    b.op("RESHAPE", [h2, b.const(np.array([1, size * size * cout], np.int32))], [flat])
    hr = np.random.default_rng(seed if head_seed is None else head_seed)
    y = b.tensor((1, 10))
    b.op("FULLY_CONNECTED", [flat, b.const((hr.standard_normal((10, size * size * cout)) * 0.01).astype(np.float32)),
                             b.const(np.zeros(10, np.float32))], [y])
    b.output(y)
    return b.build()


def run_flex(model, cache_path, **opts):
    """(outputs, stats) for one load + invoke with the given cache file."""
    d = load_flex(cache_path=str(cache_path), **opts)
    it = make_interpreter(model, delegate=d)
    x = random_inputs(it, seed=1)
    return invoke(it, x), d.stats()


def reference(model):
    it = make_interpreter(model)
    return invoke(it, random_inputs(it, seed=1))


def assert_correct(model, cache_path, **opts):
    out, stats = run_flex(model, cache_path, **opts)
    assert max_error(reference(model), out) <= 1e-4
    assert stats["nodes_delegated"] == stats["nodes_total"]
    return stats
