"""GELU (exact and tanh), LayerNorm and BATCH_MATMUL kernels (flexdelegate/native/kernels/vgelu,
layernorm, batch-matmul) against the runtime's own path for the same graph: the single GELU op,
the converter's 11-op LayerNorm graph (MEAN, NEG, SQUARED_DIFFERENCE, MEAN, ADD, RSQRT, MUL x3,
ADD x2), a single BATCH_MATMUL (B constant: packed once, outside the timing; or an input), each on
the default XNNPack delegate, at transformer shapes.

    python bench/xfmr_ops.py [--rounds 7] [--iters 20]

One thread (the kernels are per-array; the delegate splits them). Builds the kernels with the
system C compiler and _build.py's flags into a temporary shared library called through ctypes.
Rounds alternate the engines; best-round median reported. Never run by pytest."""
import argparse
import ctypes
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from flexdelegate.tflite.writer import ModelBuilder  # noqa: E402

NATIVE = ROOT / "flexdelegate" / "native"
try:
    from ai_edge_litert.interpreter import Interpreter
    RUNTIME = "ai-edge-litert"
except ImportError:
    from tflite_runtime.interpreter import Interpreter
    RUNTIME = "tflite-runtime"


class Plan(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int) for n in ("m", "k", "n", "adj_x", "adj_y", "rank")] + [
        ("dims", ctypes.c_int * 6), ("batches", ctypes.c_size_t), ("a_batches", ctypes.c_size_t),
        ("b_batches", ctypes.c_size_t), ("a_step", ctypes.c_size_t * 6), ("b_step", ctypes.c_size_t * 6)]


def bmm_model(a_shape, b, b_shape, out_shape, adj_y):
    m = ModelBuilder()
    ai = m.input(a_shape)
    bi = m.const(b) if b is not None else m.input(b_shape)
    y = m.tensor(out_shape)
    m.op("BATCH_MATMUL", [ai, bi], [y], adj_x=False, adj_y=adj_y)
    m.output(y)
    return m.build()


class LnParams(ctypes.Structure):
    _fields_ = [("gamma", ctypes.c_void_p), ("beta", ctypes.c_void_p), ("eps", ctypes.c_float), ("mode", ctypes.c_int)]


def build_library(tmp):
    srcs = [NATIVE / "cpu.c", NATIVE / "threadpool.c", NATIVE / "gemm" / "config.c",
            *sorted((NATIVE / "gemm").glob("f32-gemm-*.c")), *sorted((NATIVE / "kernels" / "vgelu").glob("*.c")),
            *sorted((NATIVE / "kernels" / "layernorm").glob("*.c")), *sorted((NATIVE / "kernels" / "batch-matmul").glob("*.c"))]
    out = pathlib.Path(tmp) / "libxfmr_ops.so"
    subprocess.run([os.environ.get("CC", "cc"), "-std=gnu11", "-O3", "-pthread", "-fno-math-errno", "-fPIC", "-shared",
                    "-I", str(NATIVE), *map(str, srcs), "-o", str(out), "-lm"], check=True)
    lib = ctypes.CDLL(str(out))
    lib.fx_vgelu_f32.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    lib.fx_layernorm_f32.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p,
                                     ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(LnParams)]
    ip = ctypes.POINTER(ctypes.c_int)
    lib.fx_bmm_plan_init.argtypes = [ctypes.POINTER(Plan), ip, ctypes.c_int, ip, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    for f in ("fx_bmm_packed_floats", "fx_bmm_scratch_floats"):
        getattr(lib, f).restype = ctypes.c_size_t
    lib.fx_bmm_packed_floats.argtypes = [ctypes.POINTER(Plan), ctypes.c_void_p]
    lib.fx_bmm_scratch_floats.argtypes = [ctypes.POINTER(Plan), ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
    lib.fx_bmm_pack_b.argtypes = [ctypes.POINTER(Plan), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.fx_bmm_f32.argtypes = [ctypes.c_void_p, ctypes.POINTER(Plan), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                               ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.fx_vgelu_config_get.restype = ctypes.POINTER(ctypes.c_char_p)
    lib.fx_layernorm_config_get.restype = ctypes.POINTER(ctypes.c_char_p)
    return lib


def gelu_model(shape, approximate):
    b = ModelBuilder()
    x, y = b.input(shape), b.tensor(shape)
    b.op("GELU", [x], [y], approximate=approximate)
    b.output(y)
    return b.build()


def layernorm_model(shape, gamma, beta):
    b = ModelBuilder()
    x, axis = b.input(shape), b.const(np.array([-1], np.int32))
    red = tuple(shape[:-1]) + (1,)
    mean, neg, sq, var, ve, r, g, nmg, nb, xg, y = (b.tensor(s) for s in (red, red, shape, red, red, red, shape, shape,
                                                                        shape, shape, shape))
    b.op("MEAN", [x, axis], [mean], keep_dims=True)
    b.op("NEG", [mean], [neg])
    b.op("SQUARED_DIFFERENCE", [x, mean], [sq])
    b.op("MEAN", [sq, axis], [var], keep_dims=True)
    b.op("ADD", [var, b.const(np.array(1e-6, np.float32))], [ve])
    b.op("RSQRT", [ve], [r])
    b.op("MUL", [r, b.const(gamma.reshape(1, 1, -1))], [g])
    b.op("MUL", [neg, g], [nmg])
    b.op("ADD", [nmg, b.const(beta.reshape(1, 1, -1))], [nb])
    b.op("MUL", [x, g], [xg])
    b.op("ADD", [xg, nb], [y])
    b.output(y)
    return b.build()


def timed(fn, iters):
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def race(ours, theirs, rounds, iters):
    a = b = float("inf")
    for _ in range(rounds):
        a = min(a, timed(ours, iters))
        b = min(b, timed(theirs, iters))
    return a, b


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        lib = build_library(tmp)
        print(f"{lib.fx_vgelu_config_get().contents.value.decode()}, {lib.fx_layernorm_config_get().contents.value.decode()}"
              f" vs {RUNTIME} XNNPack, 1 thread; best-round median us")
        print(f"{'op':>14s} {'shape':>16s} {'ours us':>9s} {'runtime us':>10s} {'ours/runtime':>12s} {'max err':>8s}")
        for shape in [(1, 197, 768), (1, 197, 3072), (1, 128, 3072), (1, 1024, 3072)]:
            x = (rng.standard_normal(shape) * 3).astype(np.float32)
            y = np.empty_like(x)
            for approximate in (False, True):
                it = Interpreter(model_content=gelu_model(shape, approximate), num_threads=1)
                it.allocate_tensors()
                it.set_tensor(it.get_input_details()[0]["index"], x)
                a, b = race(lambda: lib.fx_vgelu_f32(x.ctypes.data, y.ctypes.data, x.size, int(approximate)), it.invoke,
                            args.rounds, args.iters)
                err = float(np.max(np.abs(y - it.get_tensor(it.get_output_details()[0]["index"]))))
                name = "GELU tanh" if approximate else "GELU exact"
                print(f"{name:>14s} {str(shape):>16s} {a * 1e6:9.1f} {b * 1e6:10.1f} {a / b:12.2f} {err:8.1e}")
        for shape in [(1, 197, 192), (1, 197, 768), (1, 128, 768), (1, 1024, 768)]:
            c = shape[-1]
            x = (rng.standard_normal(shape) + 0.5).astype(np.float32)
            y = np.empty_like(x)
            gamma, beta = (1 + 0.1 * rng.standard_normal(c)).astype(np.float32), rng.standard_normal(c).astype(np.float32)
            p = LnParams(gamma.ctypes.data, beta.ctypes.data, np.float32(1e-6), 0)
            it = Interpreter(model_content=layernorm_model(shape, gamma, beta), num_threads=1)
            it.allocate_tensors()
            it.set_tensor(it.get_input_details()[0]["index"], x)
            rows = int(np.prod(shape[:-1]))
            a, b = race(lambda: lib.fx_layernorm_f32(None, rows, c, x.ctypes.data, c, y.ctypes.data, c, ctypes.byref(p)),
                        it.invoke, args.rounds, args.iters)
            err = float(np.max(np.abs(y - it.get_tensor(it.get_output_details()[0]["index"]))))
            print(f"{'LayerNorm':>14s} {str(shape):>16s} {a * 1e6:9.1f} {b * 1e6:10.1f} {a / b:12.2f} {err:8.1e}")
        # (label, A shape, B shape, adj_y, B constant)
        for label, a_shape, b_shape, adj_y, const in [
                ("BMM Q.Kt", (1, 12, 197, 64), (1, 12, 197, 64), True, False),
                ("BMM P.V", (1, 12, 197, 197), (1, 12, 197, 64), False, False),
                ("BMM const", (1, 197, 768), (768, 768), False, True)]:
            x = rng.standard_normal(a_shape).astype(np.float32)
            w = (rng.standard_normal(b_shape) / np.sqrt(b_shape[-1])).astype(np.float32)
            p = Plan()
            ints = lambda t: (ctypes.c_int * len(t))(*t)
            assert lib.fx_bmm_plan_init(ctypes.byref(p), ints(a_shape), len(a_shape), ints(b_shape), len(b_shape), 0,
                                        int(adj_y)) == 0
            out_shape = tuple(p.dims[: p.rank])
            c = np.empty(out_shape, np.float32)
            packed = None
            if const:
                packed = np.empty(lib.fx_bmm_packed_floats(ctypes.byref(p), None), np.float32)
                lib.fx_bmm_pack_b(ctypes.byref(p), None, w.ctypes.data, packed.ctypes.data)
            scratch = np.empty(max(1, lib.fx_bmm_scratch_floats(ctypes.byref(p), None, 1, int(const))), np.float32)
            it = Interpreter(model_content=bmm_model(a_shape, w if const else None, b_shape, out_shape, adj_y),
                             num_threads=1)
            it.allocate_tensors()
            ins = it.get_input_details()
            it.set_tensor(ins[0]["index"], x)
            if not const:
                it.set_tensor(ins[1]["index"], w)
            a, b = race(lambda: lib.fx_bmm_f32(None, ctypes.byref(p), None, x.ctypes.data, None if const else w.ctypes.data,
                                               packed.ctypes.data if const else None, c.ctypes.data, scratch.ctypes.data),
                        it.invoke, args.rounds, args.iters)
            err = float(np.max(np.abs(c - it.get_tensor(it.get_output_details()[0]["index"]))))
            print(f"{label:>14s} {str(a_shape[-3:]):>16s} {a * 1e6:9.1f} {b * 1e6:10.1f} {a / b:12.2f} {err:8.1e}")


if __name__ == "__main__":
    main()
