"""Fuzz target: the delegate's graph translation (what it claims, folds, shapes and runs).

Each input is a .tflite model, run by the stock interpreter (the reference: no default
delegates) and by flexdelegate, each in its own child process:
  * stock crashes or hangs: not ours, skipped (counted);
  * flexdelegate crashes or hangs: a finding, unless the crash does not recur in a fresh
    process, or a sanitizer report shows only the runtime's frames (a stock kernel's own
    overflow, which lands elsewhere once the delegate changed the arena): counted apart;
  * stock refuses it: flexdelegate must refuse it too; stock runs it: flexdelegate must too,
    and, if no op reads memory nothing wrote, give the same numbers (tests/opcheck.py's
    tolerance; NaN and infinities in the same places).

The mutator reads the model into plain values (graph_spec.py), applies one to three edits
(shapes, options, tensor indices, types, buffers, op order and codes, graph inputs and
outputs, quantization) and writes it with our own .tflite writer. No byte-level edits: those
exercise TFLite's flatbuffer parser (which crashes on some malformed files before any
delegate is involved), not the delegate."""
from __future__ import annotations

import copy
import math
import random
import struct
import zlib
from pathlib import Path

import numpy as np

from flexdelegate.run import max_error
from flexdelegate.tflite import schema as S

from engine import Engine, EngineDied
from graph_spec import (LIMITS, ModelSpec, ambiguous, constant_inputs, float_twin, gathers_past_a_dim, hybrid_layers,
                        int8_path_layers, read_spec, stock_ignores_scales, write_spec)
from oracle import Finding, coarse

TOL = 1e-4  # tests/opcheck.py
# The ops the delegate runs (README "What runs on it") plus the ones it folds: the op-code
# edit swaps between these, where the delegate has something to get wrong.
OPS = """CONV_2D DEPTHWISE_CONV_2D FULLY_CONNECTED TRANSPOSE_CONV ADD SUB MUL DIV MAXIMUM MINIMUM PRELU
MAX_POOL_2D AVERAGE_POOL_2D MEAN PAD PADV2 CONCATENATION PACK RESHAPE SQUEEZE SOFTMAX RELU RELU6 RELU_N1_TO_1
LOGISTIC TANH HARD_SWISH LEAKY_RELU GELU RESIZE_BILINEAR RESIZE_NEAREST_NEIGHBOR DEPTH_TO_SPACE SPACE_TO_DEPTH
STRIDED_SLICE TRANSPOSE GATHER SHAPE CAST DEQUANTIZE SUM REDUCE_MAX REDUCE_MIN REDUCE_PROD LOG_SOFTMAX
EXPAND_DIMS SLICE BROADCAST_TO GATHER_ND EMBEDDING_LOOKUP FILL RANGE CUMSUM SPLIT SPLIT_V BATCH_MATMUL""".split()
F32, INT32 = S.TENSOR_TYPES["FLOAT32"], S.TENSOR_TYPES["INT32"]


class GraphTarget:
    def __init__(self):
        self.stock = Engine()
        self.flex = Engine()
        self.counts = {}

    def close(self):
        self.stock.close()
        self.flex.close()

    def _stock_disagrees_with_itself(self, data: bytes, ref) -> bool:
        again = self.flex.run(data, None)  # stock, in the other process (another heap)
        return again[0] != "ok" or not max_error(ref, again[1]) <= TOL

    def _judged_next_to_stock_variants(self, data: bytes, ref, got, err: float, threads: int):
        """DEVELOPERS.md: judge FP32 error next to the runtime's other paths against the same
        reference. Stock's reference kernels (BUILTIN_REF, the ops' definitions) and XNNPack
        disagree with stock's optimized kernels too on some models: NaN through a clamp, inf
        weights (inf - inf where a padded tap is skipped or not), rounding amplified by a stock
        kernel reinterpreting a type-mismatched tensor. flexdelegate answering as the
        reference kernels do, or straying no further than twice the farthest of those two,
        is not a finding."""
        spread = 0.0
        for variant in ("ref-kernels", "xnnpack"):
            try:
                out = self.stock.run(data, None, threads=threads, stock=variant)
            except EngineDied:  # that variant's own crash: it says nothing here
                continue
            if out[0] != "ok":
                continue
            if variant == "ref-kernels" and max_error(out[1], got) <= TOL:
                return "matches-reference-kernels"
            spread = max(spread, max_error(ref, out[1]))
        return "within-stock-spread" if err <= 2 * spread else None

    def _poisoned_where_float_is_not_finite(self, spec, layers, ref, got, threads: int) -> bool:
        """Every output where flexdelegate differs from stock is NaN in flexdelegate's answer, or
        what a hybrid FULLY_CONNECTED's activation makes of a NaN (its lower bound, 0 or -1: stock's
        hybrid FC clamps as max(lo, min(y, hi))), and float math (stock on the float twin of
        `layers`) meets a NaN or an infinity in the outputs too."""
        twin = float_twin(spec, sorted(layers))
        try:
            ran = self.stock.run(twin, None, threads=threads) if twin is not None else ("unreadable",)
        except EngineDied:
            return False
        if ran[0] != "ok":
            return False
        for r, g, f in zip(ref, got, ran[1]):
            r, g, f = (np.asarray(a, np.float64) for a in (r, g, f))
            differ = ~((r == g) | (np.isnan(r) & np.isnan(g)))
            flushed = np.isnan(g) | (g == 0) | (g == -1)
            if differ.any() and (not flushed[differ].all() or np.isfinite(f).all()):
                return False
        return True

    def _verdicts_agree_fresh(self, data: bytes, threads: int) -> bool:
        try:
            with Engine() as a, Engine() as b:
                return a.run(data, None, threads=threads)[0] == b.run(data, {"cache_path": ""}, threads=threads)[0]
        except EngineDied:
            return False

    def _flex_died(self, data: bytes, stock, threads: int, report: str) -> str:
        if stock[0] == "refused" and stock[2] == "build":
            # Stock refused it while building the interpreter from the flatbuffer, before any
            # delegate is applied: that parser reads out of bounds on some malformed files, so
            # the same bytes may crash the other process. Not the delegate's code.
            return self._count("runtime-parser-crashed")
        # The engine runs model after model: a stock kernel that overflowed on an earlier one
        # (nodes the delegate leaves to stock run there too) may crash it later. Again, fresh.
        try:
            with Engine() as fresh:
                fresh.run(data, {"cache_path": ""}, threads=threads)
        except EngineDied as again:
            report = str(again)
        else:
            print(f"[graph] a crash that did not recur in a fresh process (an earlier input's damage?):\n"
                  f"{report[-1500:]}", flush=True)
            return self._count("crash-not-reproducible")
        sanitized = "AddressSanitizer" in report or "runtime error:" in report
        ours = any(frame in report for frame in ("_native_ext", "flexdelegate/native"))
        if sanitized and not ours:
            # A sanitizer report with no frame of ours: a stock kernel's own bug on this model,
            # hit at another place than in the stock process because the arenas differ.
            return self._count("runtime-crashed", report.split("SUMMARY:")[-1][:80])
        if not ours:
            # Nothing claimed: at invoke only stock kernels run (e.g. a RESHAPE between types
            # whose memcpy overflows the output); the crash is the runtime's own.
            try:
                with Engine() as fresh:
                    claimed = fresh.claimed(data, {"cache_path": ""}, threads=threads)
            except EngineDied:
                claimed = None
            if claimed is not None and claimed[0] == "ok" and claimed[2]["nodes_delegated"] == 0:
                return self._count("crashed-nothing-claimed")
        spec = read_spec(data)
        if not ours and (spec is None or ambiguous(spec)):
            # An op reads a tensor nothing wrote, or past the tensor list (the 2.14 parser lets
            # an index == tensors_size through), or a graph output is -1: TFLite itself reads
            # out of bounds there (SoftmaxPrepare, EnsureTensorDataIsReadable(-1); see
            # open/graph/README.md), so whether it crashes depends on the heap layout. Only a
            # crash with a frame of ours (a sanitizer build) is ours.
            return self._count("ambiguous-crashed")
        raise Finding(f"flexdelegate crashed or hung where stock {stock[0] == 'ok' and 'ran' or 'refused'} "
                      f"the model: {report}")

    def _count(self, what, *detail):
        self.counts[what] = self.counts.get(what, 0) + 1
        spec = read_spec(self._data)
        ops = ",".join(sorted(set(spec.names))) if spec else "?"
        self.signature = "|".join([what, ops, *map(coarse, detail)])
        return what

    def check(self, data: bytes) -> str:
        self._data = data
        threads = 1 + zlib.crc32(data) % 2  # the thread pool's paths too
        try:
            # Stock with flexdelegate's thread count: some stock kernels take other paths
            # (and crash on other models) at 1 thread than at many.
            stock = self.stock.run(data, None, threads=threads)
        except EngineDied:
            return self._count("stock-crashed")
        if stock[0] == "skipped":
            return self._count("too-big")
        try:
            flex = self.flex.run(data, {"cache_path": ""}, threads=threads)
        except EngineDied as e:
            return self._flex_died(data, stock, threads, str(e))
        if flex[0] == "skipped":
            return self._count("too-big")
        if stock[0] != flex[0] and self._verdicts_agree_fresh(data, threads):
            # An earlier input's damage to either engine (a stock kernel writing out of bounds
            # left the heap so that a later allocation failed: MemoryError).
            print(f"[graph] verdicts stock {stock[0]}, flexdelegate {flex[0]} ({stock[1:2]}, {flex[1:2]}) "
                  f"agree in fresh processes (an earlier input's damage?)", flush=True)
            return self._count("verdict-not-reproducible")
        spec = read_spec(data)
        if stock[0] == "refused" and flex[0] == "ok" and spec is not None and constant_inputs(spec):
            # stock refused the values the engine's set_tensor wrote over a constant (a SUM's axis
            # made random), which the delegate had taken at prepare: the refusal is the data's
            return self._count("stock-refused-overwritten-constant", stock[1])
        if stock[0] == "ok" and flex[0] == "refused" and spec is not None and gathers_past_a_dim(spec):
            return self._count("stock-read-past-a-dim", flex[1])
        if stock[0] != flex[0]:
            said = stock[1] if stock[0] == "refused" else flex[1]
            raise Finding(f"stock {stock[0]}, flexdelegate {flex[0]}: {said}")
        if stock[0] == "refused":
            return self._count("refused", stock[1])
        reasons = sorted({f["reason"] for f in flex[2]["fallback"]})
        if spec is None or ambiguous(spec):
            return self._count("ran-ambiguous", *reasons)
        if not flex[2]["nodes_delegated"]:  # all stock: the delegate cannot change the answer
            return self._count("ran-undelegated", *reasons)
        ref, got, ref_data = stock[1], flex[1], data
        hybrid = hybrid_layers(spec, skip={f["node"] for f in flex[2]["fallback"]})
        on_int8 = int8_path_layers(flex[2], hybrid)
        if any(stock_ignores_scales(spec, i) for i in on_int8):
            return self._count("hybrid-unchecked", "per-channel scales stock ignores", *reasons)
        hybrid = [i for i in hybrid if i not in on_int8]
        if hybrid:
            # Hybrid layers on the FP32 kernels compute float math on the dequantized weights
            # (README), not stock's on-the-fly int8 activations: stock on the float twin of those
            # layers is the reference (those on the int8 GEMM compute as stock: they stay).
            twin = float_twin(spec, hybrid)
            try:
                ran = self.stock.run(twin, None, threads=threads) if twin is not None else ("unreadable",)
            except EngineDied:
                ran = ("stock-crashed",)
            if ran[0] != "ok":
                return self._count("hybrid-unchecked", ran[0], *reasons)
            ref, ref_data = ran[1], twin
        if [a.dtype for a in ref] != [a.dtype for a in got]:
            raise Finding(f"output types differ: stock {[a.dtype for a in ref]}, flex {[a.dtype for a in got]}")
        err = max_error(ref, got)
        if not err <= TOL and on_int8 and self._poisoned_where_float_is_not_finite(spec, on_int8, ref, got, threads):
            # A NaN or an infinity reached an int8-path layer's quantized input: its row or
            # image is poisoned, NaN (dynamic.h), where stock's casts make finite numbers.
            return self._count("hybrid-poisoned", *reasons)
        if not err <= TOL and self._stock_disagrees_with_itself(ref_data, ref):
            # Stock itself answers otherwise in the other process: it reads memory nothing
            # wrote (e.g. a kernel reinterpreting a type-mismatched tensor).
            return self._count("stock-nondeterministic", *reasons)
        if not err <= TOL:
            outcome = self._judged_next_to_stock_variants(ref_data, ref, got, err, threads)
            if outcome:
                return self._count(outcome, *reasons)
        if not err <= TOL:
            raise Finding(f"flexdelegate answers differently from stock: max_error {err:.3g} "
                          f"(stats: fallback {flex[2]['fallback']}, {flex[2]['nodes_delegated']} of "
                          f"{flex[2]['nodes_total']} nodes delegated)")
        delegated = flex[2]["nodes_delegated"] if flex[2] else 0
        reasons = sorted({f["reason"] for f in flex[2]["fallback"]}) if flex[2] else []
        return self._count("ran-same" if delegated else "ran-undelegated", *reasons)


# ------------------------------------------------------------------------------------ mutator

def _int_near(rng, old, lo=-(1 << 31), hi=(1 << 31) - 1):
    v = rng.choice([0, 1, 2, 3, -1, -2, old + 1, old - 1, old * 2, old // 2 if old else 5, 7, 16, 255, 256,
                    1 << 15, (1 << 31) - 1, -(1 << 31), rng.randrange(-4, 65)])
    return min(max(v, lo), hi)


def _edit_shape(spec: ModelSpec, rng):
    t = rng.choice(spec.tensors)
    roll = rng.random()
    if t.shape and roll < 0.7:
        i = rng.randrange(len(t.shape))
        t.shape[i] = _int_near(rng, t.shape[i])
    elif t.shape and roll < 0.85:
        t.shape.pop(rng.randrange(len(t.shape)))
    else:
        t.shape.insert(rng.randrange(len(t.shape) + 1), rng.choice([1, 1, 2, 3]))
    t.shape_signature = None


def _option_value(rng, kind, old):
    if kind in S.ENUMS:
        return rng.randrange(-1, len(S.ENUMS[kind]) + 2)
    if kind == "bool":
        return not old
    if kind == "float32":
        return rng.choice([0.0, -1.0, 1.0, 0.5, 2.0, 1e-30, 1e30, math.inf, -math.inf, math.nan, float(old) * 2])
    if kind in ("[int32]", "[float32]"):
        vals = list(old)
        action = rng.randrange(3)
        if action == 0 and vals:
            vals.pop(rng.randrange(len(vals)))
        elif action == 1:
            vals.insert(rng.randrange(len(vals) + 1), rng.choice([0, 1, -1, 2, 3]))
        elif vals:
            i = rng.randrange(len(vals))
            vals[i] = _int_near(rng, int(vals[i])) if kind == "[int32]" else float(rng.choice([0, -1, 1e30]))
        return vals
    lo, hi = LIMITS.get(kind, LIMITS["int32"])
    return _int_near(rng, int(old), lo, hi)


def _edit_options(spec: ModelSpec, rng):
    ops = [o for o in spec.ops if o.table in S.OPTION_TABLES]
    if not ops:
        return _edit_shape(spec, rng)
    o = rng.choice(ops)
    fields = S.OPTION_TABLES[o.table]
    slots = [s for s, f in enumerate(fields) if f[1] not in ("deprecated", "string")]
    if not slots:
        return
    slot = rng.choice(slots)
    kind = fields[slot][1]
    have = {s: v for s, _, v in o.options}
    old = have.get(slot, fields[slot][2] if fields[slot][2] is not None else [])
    value = _option_value(rng, kind, old)
    o.options = [(s, k, v) for s, k, v in o.options if s != slot] + [(slot, kind, value)]


def _edit_index(spec: ModelSpec, rng):
    o = rng.choice(spec.ops)
    slots = o.inputs if (rng.random() < 0.75 or not o.outputs) else o.outputs
    n = len(spec.tensors)
    choices = [rng.randrange(n), rng.randrange(n), -1, n, n + 5, 1 << 20]
    if not slots or rng.random() < 0.15:
        (slots.append if rng.random() < 0.7 or not slots else lambda _: slots.pop())(rng.choice(choices))
    else:
        slots[rng.randrange(len(slots))] = rng.choice(choices)


def _edit_type(spec: ModelSpec, rng):
    t = rng.choice(spec.tensors)
    t.type = rng.choice([F32, F32, INT32, S.TENSOR_TYPES["FLOAT16"], S.TENSOR_TYPES["INT8"],
                         S.TENSOR_TYPES["INT64"], S.TENSOR_TYPES["BOOL"], S.TENSOR_TYPES["UINT8"],
                         rng.randrange(0, len(S.TENSOR_TYPES) + 3)])


def _edit_buffer(spec: ModelSpec, rng):
    t = rng.choice(spec.tensors)
    consts = [i for i, b in enumerate(spec.buffers) if b]
    roll = rng.random()
    if t.buffer and 0 <= t.buffer < len(spec.buffers) and spec.buffers[t.buffer] and roll < 0.6:
        data = bytearray(spec.buffers[t.buffer])
        action = rng.randrange(4)
        if action == 0:
            data = data[:rng.randrange(len(data) + 1)]
        elif action == 1:
            data += bytes(rng.choice([1, 4, 16, len(data)]))
        else:  # special floats in place
            for _ in range(rng.randrange(1, 4)):
                at = rng.randrange(max(1, len(data) // 4)) * 4
                special = rng.choice([math.nan, math.inf, -math.inf, 1e30, -1e30, 0.0, 1e-40])
                data[at:at + 4] = np.float32(special).tobytes()[: max(0, len(data) - at)]
        spec.buffers.append(bytes(data))
        t.buffer = len(spec.buffers) - 1
    elif roll < 0.8 and consts:
        t.buffer = rng.choice(consts + [0, len(spec.buffers), 1 << 20])
    else:  # constant data of the declared size (an activation becomes a constant)
        n = math.prod(max(d, 0) for d in t.shape)  # Python ints: no int64 wrap-around
        if n <= 1 << 16:
            spec.buffers.append(np.random.default_rng(rng.randrange(1 << 30)).standard_normal(n)
                                .astype(np.float32).tobytes())
            t.buffer = len(spec.buffers) - 1


def _edit_order(spec: ModelSpec, rng):
    ops = spec.ops
    action = rng.randrange(4)
    if action == 0 and len(ops) > 1:
        i, j = rng.sample(range(len(ops)), 2)
        ops[i], ops[j] = ops[j], ops[i]
    elif action == 1 and len(ops) > 1:
        ops.pop(rng.randrange(len(ops)))
    elif action == 2:
        ops.insert(rng.randrange(len(ops) + 1), copy.deepcopy(rng.choice(ops)))
    else:
        o = rng.choice(ops)
        name = rng.choice(OPS)
        o.code = S.BUILTIN_OPS[name]
        table = S.OP_OPTIONS.get(name)
        if table != o.table:
            o.table, o.options = (table, []) if table in S.OPTION_TABLES else (None, [])


def _edit_io(spec: ModelSpec, rng):
    lst = spec.inputs if rng.random() < 0.5 else spec.outputs
    n = len(spec.tensors)
    action = rng.randrange(3)
    if action == 0 and lst:
        lst.pop(rng.randrange(len(lst)))
    elif action == 1:
        lst.append(rng.randrange(n))
    elif lst:
        lst[rng.randrange(len(lst))] = rng.choice([rng.randrange(n), -1, n])


def _edit_quant(spec: ModelSpec, rng):
    t = rng.choice(spec.tensors)
    if t.quant is None or rng.random() < 0.3:
        k = rng.choice([1, 1, min(max(1, t.shape[0] if t.shape else 1), 4096)])  # per channel, bounded
        t.quant = (np.full(k, rng.choice([0.1, 1.0, 0.0, math.nan]), np.float32), np.zeros(k, np.int64),
                   rng.choice([0, 0, 1, 3, 9]))
    else:
        scale, zp, dim = t.quant
        scale = scale.copy()
        if scale.size:
            scale[rng.randrange(scale.size)] = rng.choice([0.0, -1.0, math.nan, math.inf, 1e-30])
        t.quant = (scale, zp, rng.choice([dim, dim + 1, -1]))


EDITS = [_edit_shape, _edit_shape, _edit_options, _edit_options, _edit_index, _edit_type, _edit_buffer,
         _edit_buffer, _edit_order, _edit_io, _edit_quant]


def mutate_spec(spec: ModelSpec, rng: random.Random) -> None:
    for _ in range(rng.choice((1, 1, 2, 3))):
        if spec.tensors and spec.ops:
            rng.choice(EDITS)(spec, rng)


_SEEDS = []


def _seeds() -> list:
    if not _SEEDS:
        _SEEDS.extend(f.read_bytes() for f in sorted((Path(__file__).parent / "corpus" / "graph").glob("seed-*")))
    return _SEEDS


def mutate(data: bytes, max_size: int, seed: int) -> bytes:
    rng = random.Random(seed)
    spec = read_spec(data)
    if spec is None:  # no byte-level edits (they test TFLite's flatbuffer parser): start over
        spec = read_spec(rng.choice(_seeds()))
    elif rng.random() < 0.2:  # most edits of a refused model stay refused: back to a seed
        spec = read_spec(_seeds()[rng.randrange(len(_SEEDS))])
    mutate_spec(spec, rng)
    try:
        out = write_spec(spec)
    except (ValueError, OverflowError, TypeError, struct.error):
        return data  # a value the serializer cannot write: no edit this time
    return out if len(out) <= max_size else data
