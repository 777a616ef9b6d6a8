"""Which requantization rounding the stock interpreter in use applies, per integer op.

Stock TFLite is not one arithmetic: ruy's x86 kernels, gemmlowp, TFLite's own scalar code and
NEON_2_SSE paths round ties differently, and tflite-runtime 2.14 and ai-edge-litert 2.3 route
the same op to different ones (native/kernels/quant/README.md has the table and the evidence).
A delegate that promises bit-exact outputs therefore asks the interpreter: `detect()` runs three
tiny single-op models per type whose outputs hit exact ties in both rounding steps, and returns,
per (op, type), the rule of requant.h that reproduces every output, or None (leave that op to
the stock kernel). It costs a few milliseconds; call it once per process and runtime."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .tflite.writer import ModelBuilder

AWAY, UP, SINGLE, AWAY_SAT = 0, 1, 2, 3  # requant.h's FX_RQ_*
OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")


@dataclass(frozen=True)
class Rounding:
    """rounding for every channel, or for channels below C - C % 8 with tail_rounding on the
    last C % 8 (split8: LiteRT's int8 depthwise); as fx_qs8_out's rounding / tail fields."""
    rounding: int
    tail_rounding: int = AWAY
    split8: bool = False

    def tail_from(self, channels: int) -> int:
        return channels - channels % 8 if self.split8 else 2**31 - 1


# What detect() finds on x86-64 (measured; tests/quant/test_stock_rounding.py keeps it honest).
KNOWN_X86 = {
    "tflite-runtime": {
        ("CONV_2D", "int8"): Rounding(UP), ("FULLY_CONNECTED", "int8"): Rounding(UP),
        ("DEPTHWISE_CONV_2D", "int8"): Rounding(AWAY),
        ("CONV_2D", "uint8"): Rounding(AWAY_SAT), ("FULLY_CONNECTED", "uint8"): Rounding(AWAY_SAT),
        ("DEPTHWISE_CONV_2D", "uint8"): Rounding(AWAY),
    },
    "ai-edge-litert": {
        ("CONV_2D", "int8"): Rounding(UP), ("FULLY_CONNECTED", "int8"): Rounding(UP),
        ("DEPTHWISE_CONV_2D", "int8"): Rounding(UP, AWAY, True),
        ("CONV_2D", "uint8"): Rounding(UP), ("FULLY_CONNECTED", "uint8"): Rounding(UP),
        ("DEPTHWISE_CONV_2D", "uint8"): Rounding(AWAY),
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
        for op in OPS:
            cands = _CANDIDATES if op == "DEPTHWISE_CONV_2D" else _CANDIDATES[:4]
            for real, m, shift in _PROBES:
                model, xv, acc, zp = _probe(op, dtype, real)
                it = interpreter_cls(model_content=model, experimental_op_resolver_type=resolver_type)
                it.allocate_tensors()
                it.set_tensor(it.get_input_details()[0]["index"], xv)
                it.invoke()
                got = it.get_tensor(it.get_output_details()[0]["index"]).astype(np.int64).reshape(acc.shape)
                cands = [r for r in cands if np.array_equal(_expected(acc, m, shift, r, zp, lo, hi), got)]
            found[(op, name)] = cands[0] if cands else None
    return found


STOCK_PORTABLE, STOCK_NEON = 0, 1  # kernels/qs8-ops/qs8-ops.h's FX_STOCK_*


def stock_arithmetic(found: dict | None = None) -> int | None:
    """Which loops the stock build runs for the element-wise integer ops: STOCK_NEON when it was
    compiled with USE_NEON (x86 builds with SSE4.1 get TFLite's NEON loops through NEON_2_SSE:
    ai-edge-litert 2.3), STOCK_PORTABLE for the portable C++ loops (tflite-runtime 2.14), None if
    unknown. USE_NEON is one build-wide switch (optimized/neon_check.h), and its one visible trace
    among detect()'s probes is the int8 depthwise requantization's 8-channel split (the NEON
    Quantize loop): that decides. tests/quant/test_qs8_ops_vs_stock.py checks every op on both."""
    rule = (found or detect()).get(("DEPTHWISE_CONV_2D", "int8"))
    if rule is None:
        return None
    return STOCK_NEON if rule.split8 else STOCK_PORTABLE
