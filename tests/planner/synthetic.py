"""Synthetic graphs with realistic sizes and cost estimates, for the planner tests.

FP32 NHWC. Costs: GEMM 80 GFLOP/s (one Zen 4 core), Winograd F(6,3) 2.6x and
F(4,3) 2x faster than im2col on 3x3 s1, direct 0.9x (the runtime's DIRECT_SLOWDOWN: measured
0.93-1.07x im2col's time where im2col is kept), depthwise 10 GFLOP/s, elementwise and FC
weight streaming 10/20 GB/s, weight loading from the cache 2 GB/s. Like FlexNN, F(6,3) is offered
only up to 128 channels (its transformed weights are 64/9 = 7.1x the plain ones)."""
from __future__ import annotations

import random

from flexdelegate.planner.graph import Graph, KernelOption, Layer, Tensor

GEMM_FLOP_US = 80e3
WINO_SPEEDUP = {6: 2.6, 4: 2.0}
DIRECT_SPEED = 1 / 1.1
DW_FLOP_US = 10e3
MEM_BYTES_US = 10e3
FC_BYTES_US = 20e3
LOAD_BYTES_US = 2e3
F32 = 4


def _load(nbytes: int) -> float:
    return nbytes / LOAD_BYTES_US


class Builder:
    """Appends layers in compute order; each op returns its output tensor id."""

    def __init__(self, fuse: bool = True):
        self.fuse = fuse
        self.shapes: dict[int, tuple] = {}
        self.inputs: list[int] = []
        self.layers: list[Layer] = []

    def _tensor(self, shape) -> int:
        tid = len(self.shapes)
        self.shapes[tid] = tuple(shape)
        return tid

    def nbytes(self, tid: int) -> int:
        n = F32
        for d in self.shapes[tid]:
            n *= d
        return n

    def _layer(self, op, inputs, shape, options) -> int:
        out = self._tensor(shape)
        self.layers.append(Layer(len(self.layers), op, list(inputs), out, options))
        return out

    def input(self, *shape) -> int:
        tid = self._tensor(shape)
        self.inputs.append(tid)
        return tid

    def eltwise(self, op: str, *xs) -> int:
        shape = self.shapes[xs[0]]
        moved = sum(self.nbytes(x) for x in xs) + self.nbytes(xs[0])
        return self._layer(op, xs, shape, [KernelOption("ref", 0, 0, moved / MEM_BYTES_US, 0)])

    def act(self, x: int, op: str = "RELU") -> int:
        return x if self.fuse else self.eltwise(op, x)

    def bn(self, x: int) -> int:
        return x if self.fuse else self.eltwise("BATCH_NORM", x)

    def conv(self, x: int, cout: int, k: int = 3, stride: int = 1) -> int:
        h, w, cin = self.shapes[x]
        ho, wo = -(-h // stride), -(-w // stride)
        flops = 2.0 * ho * wo * cin * cout * k * k
        gemm_us = flops / GEMM_FLOP_US
        wbytes = k * k * cin * cout * F32
        opts = []
        if k == 3 and stride == 1:
            for m in (6, 4):
                if m == 6 and max(cin, cout) > 128:
                    continue
                a = m + 2
                tiles = -(-ho // m) * -(-wo // m)
                tw = a * a * cin * cout * F32
                opts.append(KernelOption(f"winograd{m}", tw, tiles * a * a * (cin + cout) * F32,
                                         gemm_us / WINO_SPEEDUP[m], _load(tw), "weights",
                                         out_channels=cout))
        if k == 1 and stride == 1:
            opts.append(KernelOption("gemm", wbytes, 0, gemm_us, _load(wbytes), "weights",
                                     out_channels=cout))
        else:
            opts.append(KernelOption("im2col", wbytes, ho * wo * k * k * cin * F32, gemm_us,
                                     _load(wbytes), "input", out_rows=ho * wo))
            opts.append(KernelOption("direct", wbytes, 0, gemm_us / DIRECT_SPEED, _load(wbytes),
                                     "weights", out_channels=cout))
        return self._layer("CONV_2D", [x], (ho, wo, cout), opts)

    def dwconv(self, x: int, k: int = 3, stride: int = 1) -> int:
        h, w, c = self.shapes[x]
        ho, wo = -(-h // stride), -(-w // stride)
        wbytes = k * k * c * F32
        us = 2.0 * ho * wo * c * k * k / DW_FLOP_US
        return self._layer("DEPTHWISE_CONV_2D", [x], (ho, wo, c),
                           [KernelOption("direct", wbytes, 0, us, _load(wbytes))])

    def fc(self, x: int, units: int) -> int:
        n_in = self.nbytes(x) // F32
        wbytes = n_in * units * F32
        us = max(2.0 * n_in * units / GEMM_FLOP_US, wbytes / FC_BYTES_US)
        return self._layer("FULLY_CONNECTED", [x], (units,),
                           [KernelOption("gemm", wbytes, 0, us, _load(wbytes), "weights",
                                         out_channels=units)])

    def pool(self, x: int, k: int = 2, stride: int = 2, op: str = "MAX_POOL_2D") -> int:
        h, w, c = self.shapes[x]
        shape = (-(-h // stride), -(-w // stride), c)
        us = (self.nbytes(x) * 1.0) / MEM_BYTES_US
        return self._layer(op, [x], shape, [KernelOption("ref", 0, 0, us, 0)])

    def mean(self, x: int) -> int:
        return self._layer("MEAN", [x], (self.shapes[x][-1],),
                           [KernelOption("ref", 0, 0, self.nbytes(x) / MEM_BYTES_US, 0)])

    def graph(self, *outputs: int) -> Graph:
        tensors = []
        for tid in self.shapes:
            kind = "input" if tid in self.inputs else "output" if tid in outputs else "activation"
            tensors.append(Tensor(tid, self.nbytes(tid), kind))
        return Graph(tensors, self.layers)


def vgg19(fuse: bool = False) -> Graph:
    """VGG-19 at 224x224: 16 conv 3x3 (up to 9.4 MB weights), FC 25088x4096 (392 MiB)."""
    b = Builder(fuse)
    x = b.input(224, 224, 3)
    for reps, c in ((2, 64), (2, 128), (4, 256), (4, 512), (4, 512)):
        for _ in range(reps):
            x = b.act(b.conv(x, c))
        x = b.pool(x)
    x = b.act(b.fc(x, 4096))
    x = b.act(b.fc(x, 4096))
    x = b.eltwise("SOFTMAX", b.fc(x, 1000))
    return b.graph(x)


def resnet(depth: int = 152, fuse: bool = False) -> Graph:
    """ResNet v1.5 bottleneck (50/101/152) at 224x224; unfused BN/ReLU make ResNet-152 ~500
    layers as in NCNN-style graphs. Residual inputs live across each block."""
    blocks = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3)}[depth]
    b = Builder(fuse)
    x = b.input(224, 224, 3)
    x = b.act(b.bn(b.conv(x, 64, 7, 2)))
    x = b.pool(x, 3, 2)
    for stage, n in enumerate(blocks):
        mid = 64 << stage
        for i in range(n):
            stride = 2 if (i == 0 and stage > 0) else 1
            y = b.act(b.bn(b.conv(x, mid, 1)))
            y = b.act(b.bn(b.conv(y, mid, 3, stride)))
            y = b.bn(b.conv(y, mid * 4, 1))
            sc = b.bn(b.conv(x, mid * 4, 1, stride)) if i == 0 else x
            x = b.act(b.eltwise("ADD", y, sc))
    x = b.eltwise("SOFTMAX", b.fc(b.mean(x), 1000))
    return b.graph(x)


def resnet152(fuse: bool = False) -> Graph:
    return resnet(152, fuse)


def mobilenet_v2(fuse: bool = False) -> Graph:
    """MobileNetV2 1.0 at 224x224: inverted residuals (1x1 expand, depthwise, 1x1 project)."""
    b = Builder(fuse)
    x = b.input(224, 224, 3)
    x = b.act(b.bn(b.conv(x, 32, 3, 2)), "RELU6")
    cin = 32
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)):
        for i in range(n):
            stride = s if i == 0 else 1
            y = x
            if t != 1:
                y = b.act(b.bn(b.conv(y, cin * t, 1)), "RELU6")
            y = b.act(b.bn(b.dwconv(y, 3, stride)), "RELU6")
            y = b.bn(b.conv(y, c, 1))
            x = b.eltwise("ADD", y, x) if stride == 1 and cin == c else y
            cin = c
    x = b.act(b.bn(b.conv(x, 1280, 1)), "RELU6")
    x = b.eltwise("SOFTMAX", b.fc(b.mean(x), 1000))
    return b.graph(x)


def random_graph(seed: int, max_layers: int = 12, max_mb: float = 4.0) -> Graph:
    """A random DAG: layers read 1-2 earlier tensors (residual-like long lifetimes included),
    with 1-3 random kernel options of every slicing kind. Sizes up to `max_mb` MiB."""
    rng = random.Random(seed)
    top = int(max_mb * (1 << 20))
    sizes = {}
    inputs = []
    for _ in range(rng.randint(1, 2)):
        tid = len(sizes)
        sizes[tid] = rng.randint(1, top)
        inputs.append(tid)
    layers = []
    avail = list(inputs)
    for i in range(rng.randint(1, max_layers)):
        k = min(len(avail), rng.choice((1, 1, 2)))
        ins = rng.sample(avail[-4:], k) if rng.random() < 0.7 else rng.sample(avail, k)
        out = len(sizes)
        sizes[out] = rng.randint(1, top)
        opts = []
        weighted = rng.random() < 0.6
        for n in range(rng.randint(1, 3)):
            slicing = rng.choice(("weights", "input", "none"))
            simd = rng.choice((1, 4, 16))
            w = rng.randint(64, 2 * top) if weighted else 0
            opts.append(KernelOption(
                f"k{n}", w, rng.choice((0, rng.randint(1, top))),
                rng.uniform(10, 5000), w / LOAD_BYTES_US, slicing,
                out_channels=rng.choice((0, 3, 16, 40, 256)) if slicing == "weights" else 0,
                out_rows=rng.choice((0, 5, 64, 500)) if slicing == "input" else 0,
                simd=simd))
        layers.append(Layer(i, rng.choice(("CONV_2D", "FULLY_CONNECTED", "ADD", "DEPTHWISE")),
                            ins, out, opts))
        avail.append(out)
    outputs = {layers[-1].output} | {t for t in avail[len(inputs):] if rng.random() < 0.15}
    tensors = [Tensor(t, n, "input" if t in inputs else "output" if t in outputs
                      else "activation") for t, n in sizes.items()]
    return Graph(tensors, layers)
