"""A .tflite model as plain editable values, and back, for the graph fuzzer's mutator.

Unlike flexdelegate.tflite.reader (which decodes enums to names and refuses codes it does not
know) this keeps every field as its raw code, so a mutated model can be read and mutated
again; writing goes through ModelBuilder's serializer with its input checks bypassed, so
out-of-range tensor indices, unknown types and odd shapes reach the runtime as written.
Sparse tensors are not modelled: read_spec returns None for models holding one."""
from __future__ import annotations

import copy
import math
import struct
from dataclasses import dataclass, field

import numpy as np

from flexdelegate.tflite import schema as S
from flexdelegate.tflite.reader import _buffer_bytes, _read, _Table
from flexdelegate.tflite.writer import ModelBuilder, _Op, _Tensor

# struct formats of option scalars by kind (enums are bytes)
_SCALAR = {"bool": "<?", "int8": "<b", "uint8": "<B", "int32": "<i", "uint32": "<I", "int64": "<q",
           "float32": "<f"}
LIMITS = {"bool": (0, 1), "int8": (-128, 127), "uint8": (0, 255), "int32": (-(1 << 31), (1 << 31) - 1),
          "uint32": (0, (1 << 32) - 1), "int64": (-(1 << 63), (1 << 63) - 1)}


def kind_format(kind: str) -> str | None:
    if kind in S.ENUMS:
        return "<b"
    return _SCALAR.get(kind)


@dataclass
class TensorSpec:
    shape: list
    type: int
    buffer: int
    name: str
    shape_signature: list | None = None
    quant: tuple | None = None  # (scale float32 array, zero_point int64 array, dimension)


@dataclass
class OpSpec:
    code: int                    # builtin operator code
    inputs: list
    outputs: list
    table: str | None            # options table name (None: no options)
    options: list = field(default_factory=list)  # [(slot, kind, value)] as the writer takes them


@dataclass
class ModelSpec:
    buffers: list
    tensors: list
    ops: list
    inputs: list
    outputs: list

    @property
    def names(self) -> list:
        return [S.BUILTIN_OP_NAMES.get(o.code, str(o.code)) for o in self.ops]


def _ints(table, slot):
    v = table.vector(slot, "<i4")
    return None if v is None else [int(x) for x in v]


def _options(op_table, code) -> tuple[str | None, list]:
    kind_code = op_table.scalar(S.OPERATOR["builtin_options_type"], "<B")
    if kind_code == 0 or kind_code > len(S.BUILTIN_OPTIONS):
        return None, []
    name = S.BUILTIN_OPTIONS[kind_code - 1]
    fields = S.OPTION_TABLES.get(name)
    table = op_table.table(S.OPERATOR["builtin_options"])
    if fields is None or table is None:
        return None, []
    out = []
    for slot, (_, kind, _) in enumerate(fields):
        if kind == "deprecated" or table._field(slot) is None:
            continue
        if kind in ("[int32]", "[float32]"):
            v = table.vector(slot, "<i4" if kind == "[int32]" else "<f4")
            out.append((slot, kind, [x.item() for x in v]))
        elif kind == "string":
            out.append((slot, kind, table.string(slot) or ""))
        elif kind_format(kind):
            out.append((slot, kind, table.scalar(slot, kind_format(kind))))
    return name, out


def read_spec(data: bytes) -> ModelSpec | None:
    """The model's subgraph 0, or None if it cannot be modelled (not parseable, sparse, custom
    ops, several subgraphs)."""
    buf = bytes(data)
    try:
        if len(buf) < 8 or buf[4:8] != S.FILE_IDENTIFIER:
            return None
        model = _Table(buf, _read(buf, "<I", 0))
        M, G, T, O = S.MODEL, S.SUBGRAPH, S.TENSOR, S.OPERATOR
        buffers = [_buffer_bytes(buf, b) for b in model.tables(M["buffers"])]
        codes = [max(c.scalar(S.OPERATOR_CODE["deprecated_builtin_code"], "<b"),
                     c.scalar(S.OPERATOR_CODE["builtin_code"], "<i")) for c in model.tables(M["operator_codes"])]
        graphs = model.tables(M["subgraphs"])
        if len(graphs) != 1 or S.BUILTIN_OPS["CUSTOM"] in codes:
            return None
        g = graphs[0]
        tensors = []
        for t in g.tables(G["tensors"]):
            if t.table(T["sparsity"]) is not None:
                return None
            q = t.table(T["quantization"])
            quant = None
            if q is not None and q.vector(S.QUANTIZATION["scale"], "<f4") is not None:
                zp = q.vector(S.QUANTIZATION["zero_point"], "<i8")
                quant = (q.vector(S.QUANTIZATION["scale"], "<f4").copy(),
                         np.zeros(0, np.int64) if zp is None else zp.copy(),
                         q.scalar(S.QUANTIZATION["quantized_dimension"], "<i"))
            tensors.append(TensorSpec(_ints(t, T["shape"]) or [], t.scalar(T["type"], "<b"),
                                      t.scalar(T["buffer"], "<I"), t.string(T["name"]) or "",
                                      _ints(t, T["shape_signature"]), quant))
        ops = []
        for o in g.tables(G["operators"]):
            code = codes[o.scalar(O["opcode_index"], "<I")]
            table, options = _options(o, code)
            ops.append(OpSpec(code, _ints(o, O["inputs"]) or [], _ints(o, O["outputs"]) or [], table, options))
        return ModelSpec(buffers, tensors, ops, _ints(g, G["inputs"]) or [], _ints(g, G["outputs"]) or [])
    except (ValueError, IndexError, KeyError, struct.error, OverflowError, UnicodeDecodeError):
        return None


def write_spec(spec: ModelSpec) -> bytes:
    b = ModelBuilder()
    b._buffers = list(spec.buffers) or [b""]
    for t in spec.tensors:
        b._tensors.append(_Tensor(tuple(t.shape), t.type, t.buffer, t.name,
                                  None if t.shape_signature is None else tuple(t.shape_signature), t.quant, None))
    for o in spec.ops:
        index = b._opcodes.setdefault(o.code, len(b._opcodes))
        b._ops.append(_Op(index, list(o.inputs), list(o.outputs), o.table, list(o.options) if o.table else []))
    b._inputs, b._outputs = list(spec.inputs), list(spec.outputs)
    return b.build()


def _constants(spec: ModelSpec) -> set:
    """The tensors that carry constant data."""
    return {i for i, t in enumerate(spec.tensors) if 0 <= t.buffer < len(spec.buffers) and spec.buffers[t.buffer]}


def constant_inputs(spec: ModelSpec) -> set:
    """The graph inputs that also carry constant data: set_tensor writes over the constant, which
    stock then reads at invoke, while a delegate may have taken the constant at prepare (the C
    ABI does not tell a delegate which tensors are graph inputs)."""
    return set(spec.inputs) & _constants(spec)


def _const_ints(spec: ModelSpec, i: int):
    """Tensor i's constant int32 / int64 values (flat), or None."""
    if not 0 <= i < len(spec.tensors):
        return None
    t = spec.tensors[i]
    dtype = {S.TENSOR_TYPES["INT32"]: np.int32, S.TENSOR_TYPES["INT64"]: np.int64}.get(t.type)
    data = spec.buffers[t.buffer] if 0 <= t.buffer < len(spec.buffers) else b""
    if dtype is None or not data or len(data) % np.dtype(dtype).itemsize:
        return None
    return np.frombuffer(data, dtype)


def gathers_past_a_dim(spec: ModelSpec) -> bool:
    """Whether a GATHER (along its axis), GATHER_ND or EMBEDDING_LOOKUP takes a constant index past its
    dim: tflite-runtime 2.14 checks only the flat position there and reads another row, LiteRT
    and the delegate refuse it (tests/delegate/test_xops.py: an error, never a value read through
    a bad index)."""
    for o in spec.ops:
        name = S.BUILTIN_OP_NAMES.get(o.code)
        if name not in ("GATHER", "GATHER_ND", "EMBEDDING_LOOKUP") or len(o.inputs) < 2:
            continue
        src, idx = (o.inputs[1], o.inputs[0]) if name == "EMBEDDING_LOOKUP" else (o.inputs[0], o.inputs[1])
        values = _const_ints(spec, idx)
        if values is None or not 0 <= src < len(spec.tensors):
            continue
        dims, idx_shape = spec.tensors[src].shape, spec.tensors[idx].shape
        depth = (idx_shape[-1] if idx_shape else 1) if name == "GATHER_ND" else 1
        axis = 0
        if name == "GATHER":
            axis = dict((slot, v) for slot, _, v in o.options).get(0, 0)
            axis = axis + len(dims) if axis < 0 else axis
        for k, v in enumerate(values):
            d = axis + (k % depth if depth > 0 else 0)
            if d < len(dims) and not 0 <= v < dims[d]:
                return True
    return False


def ambiguous(spec: ModelSpec) -> bool:
    """Whether the model's answer is not defined by its inputs and constants: some op reads a
    tensor nothing wrote (not a graph input, not constant data, not an earlier op's output), a
    tensor is written twice, a graph output is never written, or a graph input also carries
    constant data (stock computes from what set_tensor wrote over it, a delegate may have
    taken the constant at prepare). Only "no crash, same refusal" can be asked of such a
    model, not the same numbers."""
    n = len(spec.tensors)
    const = _constants(spec)
    if const & set(spec.inputs):  # an input with constant data (constant_inputs)
        return True
    ready = {i for i in spec.inputs if 0 <= i < n} | const
    written = set()
    for o in spec.ops:
        for i in o.inputs:
            if i != -1 and i not in ready:
                return True
        for i in o.outputs:
            if i in ready or i in written:
                return True
            written.add(i)
            ready.add(i)
    return any(i not in ready for i in spec.outputs)


_HYBRID_OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "BATCH_MATMUL")


def hybrid_layers(spec: ModelSpec, skip=()) -> list:
    """Indices of the dynamic-range ("hybrid") layers not in `skip`: CONV_2D / DEPTHWISE_CONV_2D
    / FULLY_CONNECTED / BATCH_MATMUL with a float32 input and int8 weights."""
    n, out = len(spec.tensors), []
    for i, o in enumerate(spec.ops):
        if i in skip or S.BUILTIN_OP_NAMES.get(o.code) not in _HYBRID_OPS or len(o.inputs) < 2:
            continue
        x, w = o.inputs[0], o.inputs[1]
        if 0 <= x < n and 0 <= w < n and spec.tensors[x].type == S.TENSOR_TYPES["FLOAT32"] and \
                spec.tensors[w].type == S.TENSOR_TYPES["INT8"]:
            out.append(i)
    return out


def int8_path_layers(stats: dict, layers) -> set:
    """Those of `layers` (main-subgraph op indices) the delegate ran on its int8 GEMM (their
    kernel "hybrid ..." in stats()["ops"]): computed as stock's hybrid kernels compute them."""
    ran = {op["node"] for op in stats.get("ops", ())
           if op["subgraph"] == 0 and op["kernel"].startswith("hybrid ")}
    return ran & set(layers)


def stock_ignores_scales(spec: ModelSpec, i: int) -> bool:
    """Hybrid layer i has per-channel weight scales that tflite-runtime 2.14's hybrid kernel does
    not read (README): a FULLY_CONNECTED's, or a CONV_2D's that are all equal (it then runs the
    per-tensor kernel on the tensor's legacy scale, 0: the bias alone; test_hybrid's
    test_conv2d_equal_per_channel_scales). Its answer is no reference there."""
    from flexdelegate.runtime import detect
    o = spec.ops[i]
    t = spec.tensors[o.inputs[1]]
    if t.quant is None or len(t.quant[0]) < 2 or detect().name != "tflite_runtime":
        return False
    op = S.BUILTIN_OP_NAMES.get(o.code)
    return op == "FULLY_CONNECTED" or (op == "CONV_2D" and bool(np.all(t.quant[0] == t.quant[0][0])))


def float_twin(spec: ModelSpec, layers) -> bytes | None:
    """The model with the int8 weights of `layers` replaced by float32 constants of their
    dequantized values (float32 scale[c] x q, as the delegate packs them): stock on it gives the
    delegate's answer for hybrid layers (float math, where stock's hybrid kernels quantize the
    activations). None when some weights cannot be read so (the delegate refuses those)."""
    twin = copy.deepcopy(spec)
    for i in layers:
        o = twin.ops[i]
        t = twin.tensors[o.inputs[1]]
        if not (0 <= t.buffer < len(twin.buffers)) or t.quant is None or any(d < 0 for d in t.shape):
            return None
        count, (scale, zp, dim) = math.prod(t.shape), t.quant
        data = twin.buffers[t.buffer] or b""
        if len(data) < count or len(scale) < 1 or len(zp) != len(scale) or np.any(zp != 0):
            return None
        q = np.frombuffer(data, np.int8, count=count).astype(np.float32).reshape(t.shape)
        if len(scale) > 1:
            if not (0 <= dim < len(t.shape) and t.shape[dim] == len(scale)):
                return None
            s = scale.astype(np.float32).reshape([-1 if a == dim else 1 for a in range(len(t.shape))])
        else:
            s = np.float32(scale[0])
        twin.buffers.append((s * q).astype(np.float32).tobytes())
        twin.tensors.append(TensorSpec(list(t.shape), S.TENSOR_TYPES["FLOAT32"], len(twin.buffers) - 1, t.name + "_dq"))
        o.inputs[1] = len(twin.tensors) - 1
    return write_spec(twin)
