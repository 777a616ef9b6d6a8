"""1-D convolution graphs as converters write them: Conv1D / MaxPooling1D / AveragePooling1D as
EXPAND_DIMS (or RESHAPE) -> CONV_2D / MAX_POOL_2D / AVERAGE_POOL_2D -> SQUEEZE (or RESHAPE) on
(1, 1, T, C). All of it runs as one partition, agreeing with stock, and the unit-dim reshapes
between layers alias their input in the arena (no copy, no second buffer)."""
from __future__ import annotations

import numpy as np
import pytest

from opcheck import F32, check, rand
from flexdelegate import load_flex
from flexdelegate.run import make_interpreter
from flexdelegate.tflite.writer import ModelBuilder

I32 = np.int32
T, C = 96, 8


class Net:
    """A (1, T, C) signal through 1-D layers, written with a chosen reshape spelling."""

    def __init__(self, spelling, x_shape):
        self.b, self.spelling, self.seed = ModelBuilder(), spelling, 0
        self.x = self.b.input(x_shape)
        self.shape, self.in_rank, self.layers = tuple(x_shape), len(x_shape), 0

    def _to(self, shape):
        y = self.b.tensor(shape)
        if self.spelling == "direct":
            raise AssertionError("no reshapes in the direct spelling")
        if len(shape) > len(self.shape):  # (1, T, C) -> (1, 1, T, C)
            if self.spelling == "expand_squeeze":
                self.b.op("EXPAND_DIMS", [self.x, self.b.const(np.array(1, I32))], [y])
            else:
                self.b.op("RESHAPE", [self.x, self.b.const(np.array(shape, I32))], [y])
        elif self.spelling == "expand_squeeze":
            self.b.op("SQUEEZE", [self.x], [y], squeeze_dims=[1])
        else:
            self.b.op("RESHAPE", [self.x, self.b.const(np.array(shape, I32))], [y])
        self.x, self.shape = y, shape

    def _enter(self):
        """Before a layer: (1, T, C) -> (1, 1, T, C); between layers, the pair a converter writes
        (a (1, 1, T, C) input is taken as is: reshaping it would copy out of the caller's tensor)."""
        if len(self.shape) == 3:
            self._to((1, 1, *self.shape[1:]))
        elif self.spelling != "direct" and self.layers:
            self._to((1, *self.shape[2:]))
            self._to((1, 1, *self.shape[1:]))
        self.layers += 1

    def conv(self, cout, k, stride=1, act="RELU"):
        self._enter()
        n, _, t, cin = self.shape
        self.seed += 1
        out = (n, 1, -(-t // stride), cout)
        y = self.b.tensor(out)
        w = rand((cout, 1, k, cin), self.seed, 1 / np.sqrt(k * cin))
        self.b.op("CONV_2D", [self.x, self.b.const(w), self.b.const(rand((cout,), self.seed + 100))], [y],
                  padding="SAME", stride_w=stride, stride_h=1, fused_activation_function=act)
        self.x, self.shape = y, out

    def pool(self, op, k):
        self._enter()
        n, _, t, c = self.shape
        out = (n, 1, t // k, c)
        y = self.b.tensor(out)
        self.b.op(op, [self.x], [y], padding="VALID", stride_w=k, stride_h=1, filter_width=k, filter_height=1)
        self.x, self.shape = y, out

    def build(self):
        if self.in_rank == 3:
            self._to((1, *self.shape[2:]))
        self.b.output(self.x)
        return self.b.build()


def audio_net(spelling, x_shape=(1, T, C)):
    n = Net(spelling, x_shape)
    n.conv(16, 9, stride=2)
    n.pool("MAX_POOL_2D", 2)
    n.conv(16, 3)
    n.conv(24, 3)
    n.pool("AVERAGE_POOL_2D", 2)
    n.conv(32, 3, act="RELU6")
    return n.build()


@pytest.mark.parametrize("spelling", ["expand_squeeze", "reshape"])
@pytest.mark.parametrize("threads", [1, 2])
def test_one_partition_matching_stock(spelling, threads):
    stats = check(audio_net(spelling), num_threads=threads)
    assert stats["partitions"] == 1, stats


@pytest.mark.parametrize("spelling", ["expand_squeeze", "reshape"])
def test_reshapes_between_layers_take_no_memory(spelling):
    """The same layers on (1, 1, T, C) with and without a reshape pair around each: the arena is
    the same size (each reshape output shares its input's buffer); a copy would need both
    buffers live at the reshape."""
    def arena(model):
        d = load_flex(cache_path="")
        it = make_interpreter(model, delegate=d)  # noqa: F841 (the partition lives as long as it)
        s = d.stats()
        assert s["partitions"] == 1 and s["fallback"] == [], s
        return s["partitions_memory"][0]["arena_bytes"]

    def net(spelling):  # 1-tap convs: no im2col scratch, the arena is the activations alone
        n = Net(spelling, (1, 1, T, C))
        n.conv(16, 1)
        n.conv(32, 1)
        n.pool("MAX_POOL_2D", 2)
        n.conv(24, 1)
        n.conv(8, 1)
        return n.build()

    assert arena(net(spelling)) == arena(net("direct")) > 0
