"""Models whose weights dwarf their activations, so budgets force slicing and streaming, and
what every budget test asks of them."""
import contextlib

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
        assert "infeasible" in str(e) and e.node >= 0 and e.op
        return e.min_budget_mb
    raise AssertionError("a 0.01 MB budget was accepted")


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


def _q8_layers(seed, dtype=np.int8):
    """A QModel and its layer(op, x, (scale, zp) of x, weight shape, channel axis, output shape,
    per_channel, **options) -> (y, (scale, zp) of y): random int8 weights and int32 bias, output
    scales that keep the accumulators' spread at a few dozen steps, so outputs span the int8
    range rather than saturate (a wrong channel shows). dtype uint8: uint8 weights around a random
    zero point (per tensor, as uint8 layers must be) and uint8 activations around 128."""
    from qopcheck import Q, QModel  # tests/ is on the path wherever budgetcheck is imported

    rng = np.random.default_rng(seed)
    m = QModel()
    u8 = dtype == np.uint8

    def layer(op, x, xq, wshape, axis, out_shape, per_channel=True, **opts):
        cout, k = wshape[axis], int(np.prod(wshape)) // wshape[axis]
        scales = 0.01 * rng.uniform(0.5, 1.5, 1 if u8 or not per_channel else cout)
        zeros = (0,) * len(scales)
        if u8:
            zw = int(rng.integers(0, 256))
            w = m.const(np.clip(rng.integers(-127, 128, wshape) + zw, 0, 255), Q(np.uint8, float(scales[0]), zw))
        else:
            w = m.const(rng.integers(-127, 128, wshape).astype(np.int8),
                        Q(np.int8, tuple(float(s) for s in scales), zeros, axis))
        b = m.const(rng.integers(-2000, 2000, cout).astype(np.int32),
                    Q(np.int32, tuple(float(xq[0] * s) for s in scales), zeros, 0))
        # |x - zp| ~ 50 and |w| ~ 73 rms: an accumulator spread of ~40 output steps
        yq = (float(xq[0] * 0.01 * 50 * 73 * np.sqrt(k) / 40), int(rng.integers(-20, 20)) + (128 if u8 else 0))
        y = m.tensor(out_shape, Q(dtype, *yq))
        m.op(op, [x, w, b], [y], **opts)
        return y, yq

    return m, layer


def q8_heavy_model(seed=0, fc=1024, size=16, c=32) -> bytes:
    """The int8 heavy_model (full-integer, int8 in and out; per-channel weight scales on the
    convolutions, per-tensor on FC as the converter makes them): CONV 3x3 (RELU) -> DEPTHWISE 3x3
    stride 2 -> CONV 1x1 -> RESHAPE -> FC(fc) (RELU) -> FC(fc) -> FC(10): ~2 x fc^2 bytes of
    weights. Output scales keep the accumulators' spread at a few dozen steps, so outputs span
    the int8 range rather than saturate (a wrong channel shows)."""
    from qopcheck import Q

    m, layer = _q8_layers(seed)
    xq = (0.05, -3)
    x = m.input((1, size, size, 3), Q(np.int8, *xq))
    h, hq = layer("CONV_2D", x, xq, (c, 3, 3, 3), 0, (1, size, size, c), padding="SAME", stride_w=1, stride_h=1,
                  fused_activation_function="RELU")
    half = size // 2
    h, hq = layer("DEPTHWISE_CONV_2D", h, hq, (1, 3, 3, c), 3, (1, half, half, c), padding="SAME", stride_w=2,
                  stride_h=2, depth_multiplier=1)
    h, hq = layer("CONV_2D", h, hq, (c, 1, 1, c), 0, (1, half, half, c), padding="VALID", stride_w=1, stride_h=1)
    flat_n = half * half * c
    flat = m.tensor((1, flat_n), Q(np.int8, *hq))
    m.op("RESHAPE", [h, m.const(np.array([1, flat_n], np.int32))], [flat], new_shape=[1, flat_n])
    prev, prev_q, prev_n, outs = flat, hq, flat_n, []
    for i, n in enumerate((fc, fc, 10)):
        prev, prev_q = layer("FULLY_CONNECTED", prev, prev_q, (n, prev_n), 0, (1, n), per_channel=False,
                             fused_activation_function="RELU" if i < 2 else "NONE")
        prev_n = n
        outs.append(prev)
    return m.build(*outs[1:])  # the second FC's too: its channels are the ones sliced most


def q8_conv_model(seed=0, size=8, c=256, dtype=np.int8) -> bytes:
    """int8 convolutions whose weights dwarf their activations, one per driver path: CONV 3x3 on
    3 channels (im2col rows) -> CONV 3x3 c (IGEMM) -> CONV 3x3 stride 2 -> CONV 1x1 (pointwise
    GEMM) -> DEPTHWISE 3x3 -> RESHAPE to (pixels, c) -> FC(c) over those rows. Both the last CONV's
    and the FC's outputs are model outputs. dtype uint8: the same on uint8 (_q8_layers)."""
    from qopcheck import Q

    m, layer = _q8_layers(seed, dtype)
    xq = (0.05, 1 if dtype == np.int8 else 129)
    x = m.input((1, size, size, 3), Q(dtype, *xq))
    h, hq = layer("CONV_2D", x, xq, (c // 4, 3, 3, 3), 0, (1, size, size, c // 4), padding="SAME", stride_w=1,
                  stride_h=1, fused_activation_function="RELU6")
    h, hq = layer("CONV_2D", h, hq, (c, 3, 3, c // 4), 0, (1, size, size, c), padding="SAME", stride_w=1, stride_h=1,
                  fused_activation_function="RELU")
    half = size // 2
    h, hq = layer("CONV_2D", h, hq, (c, 3, 3, c), 0, (1, half, half, c), padding="SAME", stride_w=2, stride_h=2)
    conv, hq = layer("CONV_2D", h, hq, (c, 1, 1, c), 0, (1, half, half, c), padding="VALID", stride_w=1, stride_h=1)
    h, hq = layer("DEPTHWISE_CONV_2D", conv, hq, (1, 3, 3, c), 3, (1, half, half, c), padding="SAME", stride_w=1,
                  stride_h=1, depth_multiplier=1)
    rows = m.tensor((half * half, c), Q(dtype, *hq))
    m.op("RESHAPE", [h, m.const(np.array([half * half, c], np.int32))], [rows], new_shape=[half * half, c])
    fc, _ = layer("FULLY_CONNECTED", rows, hq, (c, c), 0, (half * half, c), per_channel=False)
    return m.build(conv, fc)


def q8_matmul_model(seed=0, size=6, c=64) -> bytes:
    """int8 TRANSPOSE_CONV 3x3 stride 2 (c -> 6c, RELU) -> TRANSPOSE_CONV 2x2 stride 2 (6c -> 96)
    -> RESHAPE to rows -> BATCH_MATMUL by a constant (96 x 40) -> BATCH_MATMUL of that with
    itself (adj_x, both operands at run time: 40 x 40). The transpose convolutions' packed
    weights (~370 KB) dwarf the activations; the BATCH_MATMULs pack B per run into scratch."""
    from qopcheck import Q, QModel

    rng = np.random.default_rng(seed)
    m = QModel()

    def qscale(xs, k):  # |x - zp| ~ 50, |w| ~ 73 rms: an accumulator spread of ~40 output steps
        return float(xs * 0.01 * 50 * 73 * np.sqrt(k) / 40)

    def tconv(x, xs, cin, cout, k, s, out_hw, padding, act="NONE"):
        scales = tuple(float(v) for v in 0.01 * rng.uniform(0.5, 1.5, cout))
        w = m.const(rng.integers(-127, 128, (cout, k, k, cin)).astype(np.int8), Q(np.int8, scales, (0,) * cout, 0))
        b = m.const(rng.integers(-2000, 2000, cout).astype(np.int32),
                    Q(np.int32, tuple(xs * v for v in scales), (0,) * cout, 0))
        ys = qscale(xs, cin * ((k + s - 1) // s) ** 2)  # the taps an output sums
        y = m.tensor((1, out_hw, out_hw, cout), Q(np.int8, ys, int(rng.integers(-20, 20))))
        shape = m.const(np.array([1, out_hw, out_hw, cout], np.int32))
        m.op("TRANSPOSE_CONV", [shape, w, x, b], [y], padding=padding, stride_w=s, stride_h=s,
             fused_activation_function=act)
        return y, ys

    x = m.input((1, size, size, c), Q(np.int8, 0.05, -3))
    h, hs = tconv(x, 0.05, c, 6 * c, 3, 2, 2 * size, "SAME", "RELU")
    h, hs = tconv(h, hs, 6 * c, 96, 2, 2, 4 * size, "VALID")
    rows = (4 * size) ** 2
    r = m.tensor((1, rows, 96), Q(np.int8, hs, 0))
    m.op("RESHAPE", [h, m.const(np.array([1, rows, 96], np.int32))], [r], new_shape=[1, rows, 96])
    bq = Q(np.int8, 0.01, 3)
    y1s = qscale(hs, 96)
    y1 = m.tensor((1, rows, 40), Q(np.int8, y1s, -5))
    m.op("BATCH_MATMUL", [r, m.const(rng.integers(-127, 128, (96, 40)).astype(np.int8), bq)], [y1])
    y2 = m.tensor((1, 40, 40), Q(np.int8, float(y1s * y1s * 50 * 50 * np.sqrt(rows) / 40), 2))
    m.op("BATCH_MATMUL", [y1, y1], [y2], adj_x=True)
    return m.build(y2)


_PEAK = """
import json, subprocess, sys
import flexdelegate.planner.bridge, flexdelegate.planner.arena  # imported before measuring
from flexdelegate import load_flex
from flexdelegate.memstat import drop_page_cache, peak_rss_bytes, release_heap, rss_bytes
from flexdelegate.run import invoke, make_interpreter, random_inputs
model, cache, budget, cold, from_disk = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4] == "1", sys.argv[5] == "1"
if from_disk:
    drop_page_cache(model)
if budget and not cold:  # build the cache first, in a process of its own (what it leaves would hide the peak)
    subprocess.run([sys.executable, "-c", "import sys; from flexdelegate import load_flex; from flexdelegate.run "
                    "import make_interpreter; make_interpreter(sys.argv[1], delegate=load_flex(cache_path=sys.argv[2]))",
                    model, cache], check=True)
release_heap()  # what building the model freed: reused unseen, it would hide as much of the peak
open("/proc/self/clear_refs", "w").write("5")
r0 = rss_bytes()
d = load_flex(budget=budget, cache_path=cache) if budget else None
it = make_interpreter(model, delegate=d)
x = random_inputs(it)
for _ in range(3):
    invoke(it, x)
kernels = [o["kernel"] for o in d.stats()["ops"]] if d else []
print(json.dumps({"peak": peak_rss_bytes() - r0, "kernels": kernels}))
"""


def measured_peak(model: bytes, model_path, cache, budget, *, cold=True, from_disk=False, env=None) -> dict:
    """VmHWM increase (bytes, "peak") over a fresh process from before the Interpreter through
    its load and three invokes, with load_flex(budget, cache) (budget 0: stock alone, the
    runtime's fixed cost), and the delegate's kernels. The model is written to model_path;
    from_disk: read back from disk, as a model on a device is (a file just written is cached in
    large folios, and each of the stock runtime's own touches of its mapping then maps 2 MB);
    cold=False: the cache file is built first, in a process of its own."""
    import json
    import os
    import subprocess
    import sys
    with open(model_path, "wb") as f:
        f.write(model)
    r = subprocess.run([sys.executable, "-c", _PEAK, str(model_path), str(cache), str(float(budget)),
                        str(int(cold)), str(int(from_disk))],
                       capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})})
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


_WARM_LOAD = """
import json, sys
import numpy as np
from flexdelegate import load_flex
from flexdelegate.run import invoke, make_interpreter
def anon():
    for line in open("/proc/self/smaps_rollup"):
        if line.startswith("Anonymous:"):
            return int(line.split()[1]) * 1024
model, cache, width = sys.argv[1], sys.argv[2], int(sys.argv[3])
x = [np.random.default_rng(0).standard_normal((1, width)).astype(np.float32)]
a0 = anon()
d = load_flex(cache_path=cache)
it = make_interpreter(model, delegate=d)
y = invoke(it, x)
grown = anon() - a0  # while the interpreter holds its partitions (and whatever they keep)
print(json.dumps({"anon": grown, "cache": d.stats()["cache"], "y": [float(v) for v in y[0].ravel()]}))
"""


def cold_then_warm(model_path, cache_path, width: int) -> tuple[dict, dict]:
    """Loads and invokes a model of input (1, width) twice, each in a fresh process with one
    cache file (cold, then warm): per run, the anonymous memory the load and invoke added, the
    interpreter still alive ("anon", bytes), stats()["cache"] and the outputs ("y")."""
    import json
    import subprocess
    import sys
    runs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", _WARM_LOAD, str(model_path), str(cache_path), str(width)],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    return runs[0], runs[1]


def change_cache_file(cache, change: str) -> None:
    """What a live mapping may meet: the file "truncated" to 4 KiB, or else rewritten in place
    past its first 4 KiB (same size, other bytes)."""
    import os
    size = cache.stat().st_size
    if change == "truncated":
        os.truncate(cache, 4096)
    else:
        with open(cache, "r+b") as f:
            f.seek(4096)
            f.write(b"\x55" * (size - 8192))


@contextlib.contextmanager
def scratch_shrunk(monkeypatch, pick):
    """While inside, the planner hands the runtime plans whose first step `pick(step)` accepts
    (a flex_step_plan tuple, bridge._steps) has 64 bytes less scratch, still aligned: what the C
    loader must refuse."""
    from flexdelegate.planner import bridge
    steps = bridge._steps

    def shrunk(p):
        out = steps(p)
        i = next(i for i, s in enumerate(out) if pick(s))
        out[i] = out[i][:11] + (out[i][11] - 64,) + out[i][12:]  # s_bytes
        return out
    monkeypatch.setattr(bridge, "_steps", shrunk)
    bridge._memo.clear()
    try:
        yield
    finally:
        bridge._memo.clear()


def simulated_planning_heap(monkeypatch, kept_mb) -> list:
    """For the rest of the test, what planning leaves resident is simulated (also under a
    sanitizer): the RSS reads 10**9 before the first plan, then 10**9 + kept_mb[i] MB (plus the
    reserve's share, bridge.HEAP_KEPT) after plan i. Returns the list the arena limits the
    planner is called with are appended to."""
    from flexdelegate.planner import bridge
    limits, plan = [], bridge.make_plan

    def planning(graph, limit, **kw):
        limits.append(limit)
        return plan(graph, limit, **kw)
    rss = iter([10**9] + [10**9 + int(k * (1 << 20)) + bridge.HEAP_KEPT for k in kept_mb])
    monkeypatch.setattr(bridge, "make_plan", planning)
    monkeypatch.setattr(bridge, "rss_bytes", lambda: next(rss))
    monkeypatch.setattr(bridge, "MEASURE_HEAP", True)
    bridge._memo.clear()
    return limits
