"""A small .tflite reader: walks the flatbuffer by vtable slot (no generated code).

Reads subgraph 0 only: tensors (with constant data), operators (with decoded
builtin options), graph inputs/outputs and raw buffers.
"""

from __future__ import annotations  # X | None annotations on Python 3.9

import struct
from dataclasses import dataclass

import numpy as np

from . import schema as S


@dataclass
class Tensor:
    name: str
    shape: tuple
    dtype: np.dtype | None          # None for types numpy lacks (INT4, ...)
    type: str                       # TensorType name
    buffer: int
    data: np.ndarray | None         # shaped; flat if the tensor is sparse
    shape_signature: tuple | None
    quantization: dict | None       # scale, zero_point, quantized_dimension
    sparse: bool


@dataclass
class Operator:
    op: str                         # builtin name, or the custom code
    inputs: list
    outputs: list
    options: dict                   # every field of the options table


@dataclass
class Model:
    version: int
    description: str | None
    operator_codes: list            # op names, in operator_codes order
    tensors: list
    operators: list
    inputs: list
    outputs: list
    buffers: list                   # bytes per buffer


class _Table:
    """A flatbuffer table at `pos`; every read is bounds-checked."""

    def __init__(self, buf, pos):
        self.buf, self.pos = buf, pos
        self.vtable = pos - _read(buf, "<i", pos)
        self.vtable_size = _read(buf, "<H", self.vtable)

    def _field(self, slot):
        entry = 4 + 2 * slot        # vtable: size, table size, then field offsets
        if entry + 2 > self.vtable_size:
            return None
        offset = _read(self.buf, "<H", self.vtable + entry)
        return self.pos + offset if offset else None

    def scalar(self, slot, fmt, default=0):
        pos = self._field(slot)
        return default if pos is None else _read(self.buf, fmt, pos)

    def _target(self, slot):
        pos = self._field(slot)
        return None if pos is None else pos + _read(self.buf, "<I", pos)

    def table(self, slot):
        pos = self._target(slot)
        return None if pos is None else _Table(self.buf, pos)

    def vector(self, slot, dtype):
        pos = self._target(slot)
        if pos is None:
            return None
        dtype = np.dtype(dtype)
        count = _read(self.buf, "<I", pos)
        _check(self.buf, pos + 4, count * dtype.itemsize)
        return np.frombuffer(self.buf, dtype, count, pos + 4)

    def string(self, slot):
        raw = self.vector(slot, np.uint8)
        return None if raw is None else raw.tobytes().decode("utf-8")

    def tables(self, slot):
        offsets = self.vector(slot, "<u4")
        if offsets is None:
            return []
        start = self._target(slot) + 4
        return [_Table(self.buf, start + 4 * i + int(off))
                for i, off in enumerate(offsets)]


def _check(buf, pos, size):
    if pos < 0 or pos + size > len(buf):
        raise ValueError(f"offset {pos}+{size} outside the {len(buf)}-byte file")


def _read(buf, fmt, pos):
    _check(buf, pos, struct.calcsize(fmt))
    return struct.unpack_from(fmt, buf, pos)[0]


def _ints(table, slot):
    values = table.vector(slot, "<i4")
    return None if values is None else tuple(int(v) for v in values)


def read_model(data) -> Model:
    buf = bytes(data)
    if len(buf) < 8 or buf[4:8] != S.FILE_IDENTIFIER:
        raise ValueError("not a TFLite model: missing the TFL3 file identifier")
    try:
        return _read_model(buf)
    except (ValueError, IndexError, KeyError, struct.error, OverflowError) as e:
        raise ValueError(f"not a TFLite model: {e}") from None


def _read_model(buf):
    model = _Table(buf, _read(buf, "<I", 0))
    M = S.MODEL
    buffers = [_buffer_bytes(buf, b) for b in model.tables(M["buffers"])]
    opcodes = [_opcode_name(c) for c in model.tables(M["operator_codes"])]
    subgraphs = model.tables(M["subgraphs"])
    if not subgraphs:
        raise ValueError("no subgraphs")
    graph = subgraphs[0]
    G = S.SUBGRAPH
    return Model(
        version=model.scalar(M["version"], "<I"),
        description=model.string(M["description"]),
        operator_codes=opcodes,
        tensors=[_tensor(t, buffers) for t in graph.tables(G["tensors"])],
        operators=[_operator(o, opcodes) for o in graph.tables(G["operators"])],
        inputs=list(_ints(graph, G["inputs"]) or ()),
        outputs=list(_ints(graph, G["outputs"]) or ()),
        buffers=buffers,
    )


def _buffer_bytes(buf, table):
    B = S.BUFFER
    offset, size = table.scalar(B["offset"], "<Q"), table.scalar(B["size"], "<Q")
    if offset > 1:                  # >2 GB models keep data after the flatbuffer
        _check(buf, offset, size)
        return buf[offset:offset + size]
    data = table.vector(B["data"], np.uint8)
    return b"" if data is None else data.tobytes()


def _opcode_name(table):
    C = S.OPERATOR_CODE
    # Old files only fill the byte field, newer ones both: take the larger.
    code = max(table.scalar(C["deprecated_builtin_code"], "<b"),
               table.scalar(C["builtin_code"], "<i"))
    if code == S.BUILTIN_OPS["CUSTOM"]:
        return table.string(C["custom_code"]) or "CUSTOM"
    return S.BUILTIN_OP_NAMES.get(code, str(code))


def _tensor(table, buffers):
    T = S.TENSOR
    type_code = table.scalar(T["type"], "<b")
    dtype = S.TYPE_TO_DTYPE.get(type_code)
    shape = _ints(table, T["shape"]) or ()
    buffer = table.scalar(T["buffer"], "<I")
    raw = buffers[buffer]
    data = None
    if raw and dtype is not None:
        data = np.frombuffer(raw, dtype.newbyteorder("<"))
        if data.size == int(np.prod(shape)):
            data = data.reshape(shape)
    quant = None
    q, Q = table.table(T["quantization"]), S.QUANTIZATION
    scale = None if q is None else q.vector(Q["scale"], "<f4")
    if scale is not None:
        zero_point = q.vector(Q["zero_point"], "<i8")
        quant = dict(scale=scale.tolist(),
                     zero_point=[] if zero_point is None else zero_point.tolist(),
                     quantized_dimension=q.scalar(Q["quantized_dimension"], "<i"))
    return Tensor(
        name=table.string(T["name"]) or "",
        shape=shape,
        dtype=dtype,
        type=list(S.TENSOR_TYPES)[type_code],
        buffer=buffer,
        data=data,
        shape_signature=_ints(table, T["shape_signature"]),
        quantization=quant,
        sparse=table.table(T["sparsity"]) is not None,
    )


_SCALAR_FMT = {"bool": "<?", "int32": "<i", "uint32": "<I", "int64": "<q",
               "float32": "<f"}


def _operator(table, opcodes):
    O = S.OPERATOR
    return Operator(
        op=opcodes[table.scalar(O["opcode_index"], "<I")],
        inputs=list(_ints(table, O["inputs"]) or ()),
        outputs=list(_ints(table, O["outputs"]) or ()),
        options=_options(table),
    )


def _options(op):
    kind_code = op.scalar(S.OPERATOR["builtin_options_type"], "<B")
    if kind_code == 0:
        return {}
    fields = S.OPTION_TABLES.get(S.BUILTIN_OPTIONS[kind_code - 1])
    table = op.table(S.OPERATOR["builtin_options"])
    if fields is None or table is None:
        return {}
    options = {}
    for slot, (name, kind, default) in enumerate(fields):
        if kind == "deprecated":
            continue
        if kind in S.ENUMS:
            options[name] = S.ENUMS[kind][table.scalar(slot, "<b", default)]
        elif kind in ("[int32]", "[float32]"):
            values = table.vector(slot, "<i4" if kind == "[int32]" else "<f4")
            options[name] = None if values is None else values.tolist()
        elif kind == "string":
            options[name] = table.string(slot)
        else:
            options[name] = table.scalar(slot, _SCALAR_FMT[kind], default)
    return options
