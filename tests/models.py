"""Small models for the delegate tests, built with our own .tflite writer."""
import numpy as np

from flexdelegate.tflite.writer import ModelBuilder


def he(rng, shape, fan_in):
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


def conv_net(batch=1, size=8, cin=3, cout=8, seed=0, middle_op=None) -> bytes:
    """x -> CONV 3x3 (RELU) -> [middle_op] -> CONV 1x1 -> MEAN(H,W) -> FC(5) -> SOFTMAX."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.input((batch, size, size, cin), name="x")
    h1 = b.tensor((batch, size, size, cout))
    b.op("CONV_2D", [x, b.const(he(rng, (cout, 3, 3, cin), 9 * cin)), b.const(np.zeros(cout, np.float32))],
         [h1], padding="SAME", stride_w=1, stride_h=1, fused_activation_function="RELU")
    if middle_op:
        h1b = b.tensor((batch, size, size, cout))
        b.op(middle_op, [h1], [h1b])
        h1 = h1b
    h2 = b.tensor((batch, size, size, cout))
    b.op("CONV_2D", [h1, b.const(he(rng, (cout, 1, 1, cout), cout)), b.const(np.full(cout, 0.1, np.float32))],
         [h2], padding="VALID", stride_w=1, stride_h=1)
    m = b.tensor((batch, cout))
    b.op("MEAN", [h2, b.const(np.array([1, 2], np.int32))], [m], keep_dims=False)
    f = b.tensor((batch, 5))
    b.op("FULLY_CONNECTED", [m, b.const(he(rng, (5, cout), cout)), b.const(np.zeros(5, np.float32))], [f])
    y = b.tensor((batch, 5))
    b.op("SOFTMAX", [f], [y], beta=1.0)
    b.output(y)
    return b.build()
