"""A small MobileNetV2-style FP32 classifier built with ModelBuilder.

Input "image" 1x64x64x3 -> stem conv 3x3/2 + RELU6 -> three inverted-residual
blocks -> 1x1 conv + RELU6 -> global MEAN -> FULLY_CONNECTED(10) -> SOFTMAX.
Weights are seeded random (He init), so activations stay O(1) layer to layer.
"""

import numpy as np

from .writer import ModelBuilder

# (expansion factor, output channels, stride) per inverted-residual block.
_BLOCKS = [(4, 16, 1), (4, 24, 2), (4, 24, 1)]


def build_demo_model(seed=0) -> bytes:
    rng = np.random.default_rng(seed)
    b = ModelBuilder()

    def weights(shape, fan_in, gain=2.0):
        return b.const((rng.standard_normal(shape) * np.sqrt(gain / fan_in))
                       .astype(np.float32))

    def bias(n):
        return b.const(np.zeros(n, np.float32))

    def conv(x, shape, cout, k, stride, act):
        h, w, cin = shape[1:]
        out_shape = (1, -(-h // stride), -(-w // stride), cout)
        y = b.tensor(out_shape)
        b.op("CONV_2D", [x, weights((cout, k, k, cin), k * k * cin), bias(cout)], [y],
             padding="SAME", stride_w=stride, stride_h=stride,
             fused_activation_function=act)
        return y, out_shape

    def depthwise(x, shape, stride):
        h, w, c = shape[1:]
        out_shape = (1, -(-h // stride), -(-w // stride), c)
        y = b.tensor(out_shape)
        b.op("DEPTHWISE_CONV_2D", [x, weights((1, 3, 3, c), 9), bias(c)], [y],
             padding="SAME", stride_w=stride, stride_h=stride, depth_multiplier=1,
             fused_activation_function="RELU6")
        return y, out_shape

    image = b.input((1, 64, 64, 3), name="image")
    x, shape = conv(image, (1, 64, 64, 3), 16, 3, 2, "RELU6")
    for expand, cout, stride in _BLOCKS:
        h, shape_h = conv(x, shape, shape[3] * expand, 1, 1, "RELU6")
        h, shape_h = depthwise(h, shape_h, stride)
        # The projection is linear (no activation), as in MobileNetV2.
        h, shape_h = conv(h, shape_h, cout, 1, 1, "NONE")
        if shape_h == shape:
            y = b.tensor(shape)
            b.op("ADD", [x, h], [y])
            h = y
        x, shape = h, shape_h
    x, shape = conv(x, shape, 64, 1, 1, "RELU6")

    pooled = b.tensor((1, shape[3]))
    b.op("MEAN", [x, b.const(np.array([1, 2], np.int32))], [pooled], keep_dims=False)
    logits = b.tensor((1, 10))
    b.op("FULLY_CONNECTED", [pooled, weights((10, shape[3]), shape[3], gain=1.0),
                             bias(10)], [logits])
    probs = b.tensor((1, 10), name="probs")
    b.op("SOFTMAX", [logits], [probs], beta=1.0)
    b.output(probs)
    return b.build()
