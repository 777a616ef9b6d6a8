"""Which requantization rounding the stock interpreter in use applies, per integer op.

Stock TFLite is not one arithmetic: ruy's x86 kernels, gemmlowp, TFLite's own scalar code and
NEON_2_SSE paths round ties differently, and tflite-runtime 2.14 and ai-edge-litert 2.3 route
the same op to different ones (native/kernels/quant/NOTES.md has the table and the evidence).
A delegate that promises bit-exact outputs therefore asks the interpreter: `detect()` runs three
tiny single-op models per type whose outputs hit exact ties in both rounding steps, and returns,
per (op, type), the rule of requant.h that reproduces every output, or None (leave that op to
the stock kernel). It costs a few milliseconds; call it once per process and runtime."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._native import lib
from .tflite.writer import ModelBuilder

# The "_rounding" option's values (flex_api.h): requantization rules (kernels/quant/requant.h)
AWAY, UP, SINGLE, AWAY_SAT = lib.FLEX_RQ_AWAY, lib.FLEX_RQ_UP, lib.FLEX_RQ_SINGLE, lib.FLEX_RQ_AWAY_SAT
OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")  # and QUANTIZE from float (AWAY or None)
# Probed on int8 only (stock's uint8 TRANSPOSE_CONV stays with it; its BATCH_MATMUL has none):
# an int32 map requantized per channel (TRANSPOSE_CONV: a split rule, like the depthwise), or
# one multiplier through the GEMM library (BATCH_MATMUL).
INT8_OPS = ("TRANSPOSE_CONV", "BATCH_MATMUL")
# (Adding to these: bump flexdelegate._ROUNDING_ENTRIES, which keys load_flex's stored answers.)


@dataclass(frozen=True)
class Rounding:
    """rounding for every channel, or for channels below C - C % 8 with tail_rounding on the
    last C % 8 (split8: LiteRT's int8 depthwise); as fx_qs8_out's rounding / tail fields."""
    rounding: int
    tail_rounding: int = AWAY
    split8: bool = False

    def tail_from(self, channels: int) -> int:
        return channels - channels % 8 if self.split8 else 2**31 - 1


# Float QUANTIZE / DEQUANTIZE's rules are flex_api.h's FLEX_QUANT_*, in the Rounding fields
# (Q_* and DQ_* below name them per op): LiteRT's NEON loop on whole groups of 8, scalar on the rest.
_NEON8_QUANT = Rounding(lib.FLEX_QUANT_RECIP_EVEN, lib.FLEX_QUANT_AWAY, True)

# What detect() finds on x86-64 (measured; tests/quant/test_stock_rounding.py keeps it honest).
KNOWN_X86 = {
    "tflite-runtime": {
        ("CONV_2D", "int8"): Rounding(UP), ("FULLY_CONNECTED", "int8"): Rounding(UP),
        ("DEPTHWISE_CONV_2D", "int8"): Rounding(AWAY),
        ("CONV_2D", "uint8"): Rounding(AWAY_SAT), ("FULLY_CONNECTED", "uint8"): Rounding(AWAY_SAT),
        ("DEPTHWISE_CONV_2D", "uint8"): Rounding(AWAY),
        # TRANSPOSE_CONV: TFLite's scalar per-channel Quantize; BATCH_MATMUL: ruy's x86 kernel
        ("TRANSPOSE_CONV", "int8"): Rounding(AWAY), ("BATCH_MATMUL", "int8"): Rounding(UP),
        ("QUANTIZE", "int8"): Rounding(AWAY), ("QUANTIZE", "uint8"): Rounding(AWAY),
        ("DEQUANTIZE", "int8"): Rounding(AWAY), ("DEQUANTIZE", "uint8"): Rounding(AWAY),
    },
    "ai-edge-litert": {
        ("CONV_2D", "int8"): Rounding(UP), ("FULLY_CONNECTED", "int8"): Rounding(UP),
        ("DEPTHWISE_CONV_2D", "int8"): Rounding(UP, AWAY, True),
        ("CONV_2D", "uint8"): Rounding(UP), ("FULLY_CONNECTED", "uint8"): Rounding(UP),
        ("DEPTHWISE_CONV_2D", "uint8"): Rounding(AWAY),
        # TRANSPOSE_CONV: the NEON Quantize loop, as the int8 depthwise; BATCH_MATMUL: TFLite's
        # MultiplyByQuantizedMultiplier (not ruy's rounding)
        ("TRANSPOSE_CONV", "int8"): Rounding(UP, AWAY, True), ("BATCH_MATMUL", "int8"): Rounding(AWAY),
        # QUANTIZE / DEQUANTIZE: the NEON loop (Q_RECIP_EVEN / DQ_MUL_SUB) on whole groups of 8,
        # the scalar one on the tail
        ("QUANTIZE", "int8"): _NEON8_QUANT, ("QUANTIZE", "uint8"): _NEON8_QUANT,
        ("DEQUANTIZE", "int8"): _NEON8_QUANT, ("DEQUANTIZE", "uint8"): _NEON8_QUANT,
    },
}

_CANDIDATES = [Rounding(AWAY), Rounding(UP), Rounding(SINGLE), Rounding(AWAY_SAT),
               Rounding(UP, AWAY, True), Rounding(AWAY, UP, True)]
# The probes' real multipliers, as QuantizeMultiplier gives them: ties in both rounding steps,
# then a left shift that overflows int32 for |acc| >= 64 (wrapping vs saturating).
_PROBES = [(0.25, 1 << 30, -1), (2.0**24, 1 << 30, 25)]


def requant(acc, m: int, shift: int, rule: int) -> np.ndarray:
    """requant.h's fx_rq_apply on an int64 array (one multiplier)."""
    acc = np.asarray(acc, np.int64)
    if rule == SINGLE:
        total = 31 - shift
        r = (acc * m + (1 << (total - 1))) >> total
        return ((r + 2**31) % 2**32) - 2**31
    ls, rs = max(shift, 0), max(-shift, 0)
    x = acc << ls
    x = np.clip(x, -2**31, 2**31 - 1) if rule == AWAY_SAT else (x + 2**31) % 2**32 - 2**31
    high = (x * m + (1 << 30)) >> 31
    mask = (1 << rs) - 1
    thr = (mask >> 1) + ((high < 0) if rule != UP else 0)
    return (high >> rs) + ((high & mask) > thr)


def _probe(op: str, dtype, real: float) -> tuple[bytes, np.ndarray, np.ndarray, int]:
    """(model, input, int accumulators, output zero point): every value of the type through a
    weight of 1 (w - zw), input and output scales 1, weight scale `real`."""
    u8 = dtype == np.uint8
    z = 128 if u8 else 0
    vals = np.arange(256) if u8 else np.arange(-128, 128)
    one = np.array(129 if u8 else 1, dtype)
    b = ModelBuilder()
    q = dict(scale=[1.0], zero_point=[z])
    if op == "FULLY_CONNECTED":
        xv = vals.reshape(256, 1).astype(dtype)
        x, y = b.input(xv.shape, dtype=dtype, **q), b.tensor((256, 1), dtype=dtype, **q)
        ins = [x, b.const(one.reshape(1, 1), scale=[real], zero_point=[z]),
               b.const(np.zeros(1, np.int32), scale=[real], zero_point=[0])]
        b.op(op, ins, [y])
    elif op == "TRANSPOSE_CONV":  # 1x1 stride 1: channel c of x through an identity filter
        xv = np.stack([np.roll(vals, 29 * c) for c in range(9)], -1).reshape(1, 16, 16, 9).astype(dtype)
        x, y = b.input(xv.shape, dtype=dtype, **q), b.tensor(xv.shape, dtype=dtype, **q)
        w = np.eye(9, dtype=np.int64).reshape(9, 1, 1, 9) * int(one)
        ins = [b.const(np.array(xv.shape, np.int32)), b.const(w.astype(dtype), scale=[real] * 9, zero_point=[0] * 9),
               x, b.const(np.zeros(9, np.int32), scale=[real] * 9, zero_point=[0] * 9)]
        b.op(op, ins, [y], padding="VALID", stride_w=1, stride_h=1)
    elif op == "BATCH_MATMUL":  # 256 rows of 9 columns times a constant identity
        xv = np.stack([np.roll(vals, 29 * c) for c in range(9)], -1).reshape(1, 256, 9).astype(dtype)
        x, y = b.input(xv.shape, dtype=dtype, **q), b.tensor(xv.shape, dtype=dtype, **q)
        b.op(op, [x, b.const(np.eye(9, dtype=dtype), scale=[real], zero_point=[z])], [y])
    elif op == "CONV_2D":
        xv = vals.reshape(1, 16, 16, 1).astype(dtype)
        x, y = b.input(xv.shape, dtype=dtype, **q), b.tensor(xv.shape, dtype=dtype, **q)
        ins = [x, b.const(one.reshape(1, 1, 1, 1), scale=[real], zero_point=[z]),
               b.const(np.zeros(1, np.int32), scale=[real], zero_point=[0])]
        b.op(op, ins, [y], padding="VALID", stride_w=1, stride_h=1)
    else:  # 9 channels: 8 in a group of 8, one in the tail; channel c sees the values rolled by c
        xv = np.stack([np.roll(vals, 29 * c) for c in range(9)], -1).reshape(1, 16, 16, 9).astype(dtype)
        x, y = b.input(xv.shape, dtype=dtype, **q), b.tensor(xv.shape, dtype=dtype, **q)
        per = 1 if u8 else 9  # uint8 weights are per-tensor only
        ins = [x, b.const(np.full((1, 1, 1, 9), one, dtype), scale=[real] * per,
                          zero_point=[z] * per, quantized_dimension=3),
               b.const(np.zeros(9, np.int32), scale=[real] * per, zero_point=[0] * per)]
        b.op(op, ins, [y], padding="VALID", stride_w=1, stride_h=1, depth_multiplier=1)
    b.output(y)
    return b.build(), xv, xv.astype(np.int64) - z, z


def _expected(acc, m: int, shift: int, rule: Rounding, zp: int, lo: int, hi: int) -> np.ndarray:
    c = acc.shape[-1]
    main = c - c % 8 if rule.split8 else c
    r = np.concatenate([requant(acc[..., :main], m, shift, rule.rounding),
                        requant(acc[..., main:], m, shift, rule.tail_rounding)], axis=-1)
    return np.clip(r + zp, lo, hi)


# Float QUANTIZE's rules (the Rounding fields reused: rounding of the first n - n % 8 elements
# of the flat tensor when split8, tail_rounding of the rest): Q_AWAY = TFLite's scalar loop,
# (int32)round_half_away((double)x / scale); Q_RECIP_EVEN = its NEON loop (LiteRT's x86 build
# via NEON_2_SSE): x * (float)(1 / scale) in float, rounded half to even, 8 values at a time.
Q_AWAY, Q_RECIP_EVEN = lib.FLEX_QUANT_AWAY, lib.FLEX_QUANT_RECIP_EVEN
_QUANTIZE_CANDIDATES = [Rounding(Q_AWAY), Rounding(Q_RECIP_EVEN, Q_AWAY, True)]


def quantize(x, scale: float, zp: int, lo: int, hi: int, rule: Rounding) -> np.ndarray:
    """Float QUANTIZE under rule (what the delegate's QUANTIZE computes)."""
    x = np.asarray(x, np.float32).reshape(-1)
    s = np.float64(np.float32(scale))
    q = x.astype(np.float64) / s
    away = np.where(q >= 0, np.floor(q + 0.5), np.ceil(q - 0.5))
    even = np.rint((x * np.float32(1.0 / s)).astype(np.float32)).astype(np.float64)
    main = x.size - x.size % 8 if rule.split8 else x.size
    r = np.concatenate([(even if rule.rounding == Q_RECIP_EVEN else away)[:main],
                        (even if rule.tail_rounding == Q_RECIP_EVEN else away)[main:]])
    return np.clip(r + zp, lo, hi).astype(np.int64)


def _quantize_probe_inputs() -> list[tuple[float, np.ndarray]]:
    """(scale, float inputs): exact ties at a dyadic scale (half away vs half even), and at 0.1
    values within an ulp of ties (a double division vs a float multiply by 1/scale); sizes
    that leave a tail past a multiple of 8."""
    k = np.arange(-130, 127, dtype=np.float64)
    ties = ((k + 0.5) * 0.25).astype(np.float32)
    near = (k + 0.5) * np.float64(np.float32(0.1))
    near = np.concatenate([np.nextafter(near.astype(np.float32), np.float32(d)) for d in (-np.inf, np.inf)]
                          + [near.astype(np.float32)])
    return [(0.25, ties), (0.1, near.astype(np.float32)), (0.25, ties[140:153])]


def _stock_run(interpreter_cls, resolver_type, model: bytes, xv: np.ndarray) -> np.ndarray:
    """The stock interpreter's output of a one-input, one-output model on xv."""
    it = interpreter_cls(model_content=model, experimental_op_resolver_type=resolver_type)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], xv)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


def _one_op(op: str, shape, x_type: dict, y_type: dict) -> bytes:
    """A model of one op from an input of `shape` to an output of that shape (dtype, scale, ...)."""
    b = ModelBuilder()
    x = b.input(shape, **x_type)
    y = b.tensor(shape, **y_type)
    b.op(op, [x], [y])
    b.output(y)
    return b.build()


def _detect_quantize(interpreter_cls, resolver_type, dtype) -> Rounding | None:
    lo, hi = (0, 255) if dtype == np.uint8 else (-128, 127)
    zp = 128 if dtype == np.uint8 else 3
    cands = list(_QUANTIZE_CANDIDATES)
    for scale, xv in _quantize_probe_inputs():
        model = _one_op("QUANTIZE", xv.shape, dict(dtype=np.float32), dict(dtype=dtype, scale=[scale], zero_point=[zp]))
        got = _stock_run(interpreter_cls, resolver_type, model, xv).astype(np.int64)
        cands = [r for r in cands if np.array_equal(got, quantize(xv, scale, zp, lo, hi, r))]
    return cands[0] if cands else None


# DEQUANTIZE's rules, as QUANTIZE's: DQ_EXACT = TFLite's scalar loop, scale * (float)(q - zp)
# (one rounding); DQ_MUL_SUB = its NEON loop, (float)q * scale - (float)zp * scale in float
# (three roundings), 8 values at a time.
DQ_EXACT, DQ_MUL_SUB = lib.FLEX_QUANT_AWAY, lib.FLEX_QUANT_RECIP_EVEN
_DEQUANTIZE_CANDIDATES = [Rounding(DQ_EXACT), Rounding(DQ_MUL_SUB, DQ_EXACT, True)]


def dequantize(q, scale: float, zp: int, rule: Rounding) -> np.ndarray:
    """DEQUANTIZE under rule (what the delegate's DEQUANTIZE computes)."""
    q = np.asarray(q).reshape(-1).astype(np.int64)
    s = np.float32(scale)
    exact = (s * (q - zp).astype(np.float32)).astype(np.float32)
    mul_sub = (q.astype(np.float32) * s - np.float32(zp) * s).astype(np.float32)
    main = q.size - q.size % 8 if rule.split8 else q.size
    return np.concatenate([(mul_sub if rule.rounding == DQ_MUL_SUB else exact)[:main],
                           (mul_sub if rule.tail_rounding == DQ_MUL_SUB else exact)[main:]])


def _detect_dequantize(interpreter_cls, resolver_type, dtype) -> Rounding | None:
    lo, hi = (0, 255) if dtype == np.uint8 else (-128, 127)
    cands = list(_DEQUANTIZE_CANDIDATES)
    for scale, zp, n in ((0.1, (lo + hi) // 2 + 1, 256), (0.1, lo + 3, 13), (0.0123, hi - 5, 256)):
        qv = np.resize(np.arange(lo, hi + 1), n).astype(dtype)
        model = _one_op("DEQUANTIZE", qv.shape, dict(dtype=dtype, scale=[scale], zero_point=[zp]), dict(dtype=np.float32))
        got = _stock_run(interpreter_cls, resolver_type, model, qv).reshape(-1)
        cands = [r for r in cands if np.array_equal(got.view(np.uint32), dequantize(qv, scale, zp, r).view(np.uint32))]
    return cands[0] if cands else None


def detect(interpreter_cls=None, resolver_type=None) -> dict:
    """{(op, "int8" | "uint8"): Rounding or None} for the stock kernels of interpreter_cls
    (default: tflite_runtime's Interpreter, else ai_edge_litert's), default delegates off."""
    if interpreter_cls is None:
        try:
            from tflite_runtime.interpreter import Interpreter as interpreter_cls, OpResolverType
        except ImportError:
            from ai_edge_litert.interpreter import Interpreter as interpreter_cls, OpResolverType
        resolver_type = OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    found = {}
    for dtype, name in ((np.int8, "int8"), (np.uint8, "uint8")):
        lo, hi = (0, 255) if dtype == np.uint8 else (-128, 127)
        for op in OPS + (INT8_OPS if dtype == np.int8 else ()):
            cands = _CANDIDATES if op in ("DEPTHWISE_CONV_2D", *INT8_OPS) else _CANDIDATES[:4]
            for real, m, shift in _PROBES:
                model, xv, acc, zp = _probe(op, dtype, real)
                got = _stock_run(interpreter_cls, resolver_type, model, xv).astype(np.int64).reshape(acc.shape)
                cands = [r for r in cands if np.array_equal(_expected(acc, m, shift, r, zp, lo, hi), got)]
            found[(op, name)] = cands[0] if cands else None
        found[("QUANTIZE", name)] = _detect_quantize(interpreter_cls, resolver_type, dtype)
        found[("DEQUANTIZE", name)] = _detect_dequantize(interpreter_cls, resolver_type, dtype)
    return found


def option_text(found: dict) -> str:
    """detect()'s findings as the plugin's internal "_rounding" option (tflite/options.c):
    OP.TYPE=RULE, or OP.TYPE=RULE:TAIL for a split8 rule; unknown ones left out."""
    parts = []
    for (op, dtype), r in sorted(found.items()):
        if r is not None:
            parts.append(f"{op}.{dtype}={r.rounding}" + (f":{r.tail_rounding}" if r.split8 else ""))
    stock = stock_arithmetic(found)  # the element-wise ops: the number is qs8-ops' FLEX_STOCK_*
    if stock is not None:
        parts += [f"{op}.{dtype}={stock}" for op, dtype in ELEMENTWISE + HYBRID]
    return ",".join(parts)


STOCK_PORTABLE, STOCK_NEON = lib.FLEX_STOCK_PORTABLE, lib.FLEX_STOCK_NEON  # kernels/qs8-ops' arithmetic
# The element-wise integer ops whose arithmetic (or, for PRELU, what the kernel accepts: beyond 4-D
# only LiteRT's runs) differs between the two stock builds: their "_rounding" entry carries
# stock_arithmetic() (tflite/ops.c read_qelem).
ELEMENTWISE = [("ADD", "int8"), ("ADD", "uint8"), ("MUL", "int8"), ("MUL", "uint8"), ("MEAN", "int8"),
               ("MEAN", "uint8"), ("PRELU", "int8"), ("PRELU", "uint8")]
# The dynamic-range ("hybrid") layers' quantization of their float input (tensor_utils'
# Symmetric/AsymmetricQuantizeFloats: portable or NEON loops, the same build-wide switch;
# native/kernels/quant/dynamic.h): their "_rounding" entry, type f32, carries it too.
HYBRID = [("CONV_2D", "f32"), ("FULLY_CONNECTED", "f32")]


def stock_arithmetic(found: dict | None = None) -> int | None:
    """Which loops the stock build runs for the element-wise integer ops: STOCK_NEON when it was
    compiled with USE_NEON (x86 builds with SSE4.1 get TFLite's NEON loops through NEON_2_SSE:
    ai-edge-litert 2.3), STOCK_PORTABLE for the portable C++ loops (tflite-runtime 2.14), None if
    unknown. USE_NEON is one build-wide switch (optimized/neon_check.h), and its one visible trace
    among detect()'s probes is the int8 depthwise requantization's 8-channel split (the NEON
    Quantize loop): that decides. tests/quant/test_qs8_*_vs_stock.py check every op on both."""
    rule = (detect() if found is None else found).get(("DEPTHWISE_CONV_2D", "int8"))
    if rule is None:
        return None
    return STOCK_NEON if rule.split8 else STOCK_PORTABLE
