"""Fused attention (flexdelegate/native/kernels/attention) against the unfused sub-graph the
TFLite converter emits for Keras' MultiHeadAttention (TRANSPOSE x3 -> BATCH_MATMUL -> MUL scale ->
[SELECT_V2 causal mask] -> SOFTMAX -> BATCH_MATMUL -> TRANSPOSE, inputs and output [B,S,H,D]) on
the runtime's default XNNPack delegate, at ViT-Tiny, ViT-B/16, BERT-base and GPT-2-small shapes.

    python bench/attention.py [--threads 1 2] [--rounds 7] [--only gpt]

Runs under either venv (tflite-runtime or ai-edge-litert). Builds the kernels with the system C
compiler and _build.py's flags into a temporary shared library (called through ctypes, no
interpreter around it: the kernel alone). Rounds alternate the engines (a busy neighbour hurts
both alike); each round times `--iters` runs, best round median reported. GFLOP/s counts the
dense work 4*Sq*Sk*D*H for both (causal runs do about half of it in the fused kernel). Never run
by pytest."""
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
FILL = np.float32(-2.3726709e38)  # Keras 3's masked-score value
# (label, S, H, D, causal)
SHAPES = [
    ("ViT-Tiny", 197, 3, 64, False),
    ("ViT-B/16", 197, 12, 64, False),
    ("BERT-base", 128, 12, 64, False),
    ("GPT-2 128", 128, 12, 64, True),
    ("GPT-2 1024", 1024, 12, 64, True),
]


class View(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("batch", ctypes.c_ssize_t), ("head", ctypes.c_ssize_t),
                ("seq", ctypes.c_ssize_t)]


class Params(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int) for n in ("batch", "heads", "q_len", "kv_len", "head_dim", "value_dim")] + [
        ("scale", ctypes.c_float), ("causal", ctypes.c_int), ("causal_offset", ctypes.c_int), ("fill", ctypes.c_float),
        ("mask_kind", ctypes.c_int), ("mask", ctypes.c_void_p), ("mask_batch", ctypes.c_ssize_t),
        ("mask_head", ctypes.c_ssize_t), ("mask_row", ctypes.c_ssize_t)]


def build_library(tmp):
    srcs = [NATIVE / "cpu.c", NATIVE / "threadpool.c", NATIVE / "gemm" / "config.c",
            *sorted((NATIVE / "gemm").glob("f32-gemm-*.c")), *sorted((NATIVE / "kernels" / "attention").glob("*.c"))]
    out = pathlib.Path(tmp) / "libattention.so"
    cc = os.environ.get("CC", "cc")
    cmd = [cc, "-std=gnu11", "-O3", "-pthread", "-fno-math-errno", "-fPIC", "-shared", "-I", str(NATIVE),
           *map(str, srcs), "-o", str(out), "-lm"]
    subprocess.run(cmd, check=True)
    lib = ctypes.CDLL(str(out))
    lib.fx_pool_new.restype = ctypes.c_void_p
    lib.fx_pool_new.argtypes = [ctypes.c_int]
    lib.fx_pool_free.argtypes = [ctypes.c_void_p]
    lib.fx_pool_set_active.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.fx_attention_config_get.restype = ctypes.POINTER(ctypes.c_char_p)
    lib.fx_attention_scratch_bytes.restype = ctypes.c_size_t
    lib.fx_attention_scratch_bytes.argtypes = [ctypes.c_void_p, ctypes.POINTER(Params), ctypes.c_int]
    lib.fx_attention_f32.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(Params), View, View, View, View,
                                     ctypes.c_void_p]
    return lib


def unfused_model(s, h, d, causal):
    """The converter's attention core between the Q/K/V projections and the output one."""
    b = ModelBuilder()
    q, k, v = (b.input((1, s, h, d)) for _ in range(3))
    perm = b.const(np.array([0, 2, 1, 3], np.int32))
    qt, kt, vt = b.tensor((1, h, s, d)), b.tensor((1, h, d, s)), b.tensor((1, h, s, d))
    b.op("TRANSPOSE", [q, perm], [qt])
    b.op("TRANSPOSE", [k, b.const(np.array([0, 2, 3, 1], np.int32))], [kt])
    b.op("TRANSPOSE", [v, perm], [vt])
    sc, ss = b.tensor((1, h, s, s)), b.tensor((1, h, s, s))
    b.op("BATCH_MATMUL", [qt, kt], [sc])
    b.op("MUL", [sc, b.const(np.array(1 / np.sqrt(d), np.float32))], [ss])
    if causal:
        sel = b.tensor((1, h, s, s))
        b.op("SELECT_V2", [b.const(np.tril(np.ones((1, 1, s, s), bool))), ss, b.const(FILL)], [sel])
        ss = sel
    p, o, ot = b.tensor((1, h, s, s)), b.tensor((1, h, s, d)), b.tensor((1, s, h, d))
    b.op("SOFTMAX", [ss], [p], beta=1.0)
    b.op("BATCH_MATMUL", [p, vt], [o])
    b.op("TRANSPOSE", [o, perm], [ot])
    b.output(ot)
    return b.build()


try:
    from ai_edge_litert.interpreter import Interpreter
    RUNTIME = "ai-edge-litert"
except ImportError:
    from tflite_runtime.interpreter import Interpreter
    RUNTIME = "tflite-runtime"


def interpreter(model, threads):
    it = Interpreter(model_content=model, num_threads=threads)  # default delegates: XNNPack
    it.allocate_tensors()
    return it


def timed(fn, iters):
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--only", help="only shapes whose label contains this (case-insensitive)")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        lib = build_library(tmp)
        name = lib.fx_attention_config_get().contents.value.decode()
        rt = RUNTIME
        print(f"fused {name} vs unfused on {rt} XNNPack; best-round median ms; GFLOP/s of 4*S*S*D*H")
        print(f"{'shape':>11s} {'S':>5s} {'H':>3s} {'D':>3s} {'causal':>6s} {'thr':>3s} {'fused ms':>9s} "
              f"{'unfused ms':>10s} {'fused GF/s':>10s} {'unfused GF/s':>12s} {'fused/unfused':>13s} {'max err':>8s}")
        for label, s, h, d, causal in SHAPES:
            if args.only and args.only.lower() not in label.lower():
                continue
            q, k, v = (rng.standard_normal((1, s, h, d)).astype(np.float32) for _ in range(3))
            o = np.empty_like(q)
            row = h * d
            views = [View(a.ctypes.data, s * row, d, row) for a in (q, k, v, o)]
            p = Params(1, h, s, s, d, d, 1 / np.sqrt(d), int(causal), 0, FILL, 0, None, 0, 0, 0)
            for threads in args.threads:
                pool = lib.fx_pool_new(threads)
                lib.fx_pool_set_active(pool, 1)
                scratch = np.empty(lib.fx_attention_scratch_bytes(None, ctypes.byref(p), threads) // 4 + 16, np.float32)
                it = interpreter(unfused_model(s, h, d, causal), threads)
                ins = it.get_input_details()
                for det, a in zip(ins, (q, k, v)):
                    it.set_tensor(det["index"], a)
                out_index = it.get_output_details()[0]["index"]

                def fused():
                    lib.fx_attention_f32(None, pool, ctypes.byref(p), *views, scratch.ctypes.data)

                best_f = best_u = float("inf")
                for _ in range(args.rounds):
                    best_f = min(best_f, timed(fused, args.iters))
                    best_u = min(best_u, timed(it.invoke, args.iters))
                err = float(np.max(np.abs(o - it.get_tensor(out_index))) / max(1.0, np.max(np.abs(v))))
                lib.fx_pool_set_active(pool, 0)
                lib.fx_pool_free(pool)
                gf = 4.0 * s * s * d * h * 1e-9
                print(f"{label:>11s} {s:5d} {h:3d} {d:3d} {str(causal):>6s} {threads:3d} {best_f * 1e3:9.3f} "
                      f"{best_u * 1e3:10.3f} {gf / best_f:10.1f} {gf / best_u:12.1f} {best_f / best_u:13.2f} {err:8.1e}")


if __name__ == "__main__":
    main()
