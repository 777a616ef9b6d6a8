"""Build .tflite flatbuffers directly with `flatbuffers.Builder` (no TensorFlow).

    b = ModelBuilder()
    x = b.input((1, 8, 8, 3), name="x")
    w = b.const(weights)
    y = b.tensor((1, 8, 8, 4))
    b.op("CONV_2D", [x, w, -1], [y], padding="SAME", stride_w=1, stride_h=1)
    b.output(y)
    data = b.build()

Table layouts and slot numbers come from `schema.py`.
"""

from __future__ import annotations  # X | None annotations on Python 3.9

from dataclasses import dataclass

import flatbuffers
import numpy as np

from . import schema as S

# Constant data alignment: lets the runtime use buffers in place when mmapped
# (schema.fbs declares Buffer.data with force_align: 16).
_DATA_ALIGN = 16


@dataclass
class _Tensor:
    shape: tuple
    type: int
    buffer: int
    name: str
    shape_signature: tuple | None
    quant: tuple | None          # (scale, zero_point, quantized_dimension)
    sparsity: tuple | None       # (traversal_order, block_map, dim_metadata)


@dataclass
class _Op:
    opcode_index: int
    inputs: list
    outputs: list
    options_table: str | None
    options: list                # [(slot, kind, value)] fields to write


def _type_code(dtype):
    try:
        return S.DTYPE_TO_TYPE[np.dtype(dtype)]
    except (KeyError, TypeError):
        raise ValueError(f"dtype {dtype!r} has no TFLite tensor type") from None


def _enum_code(kind, value):
    if isinstance(value, str):
        try:
            return S.ENUMS[kind].index(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a {kind}: {S.ENUMS[kind]}") from None
    if kind == "TensorType" and not isinstance(value, (int, np.integer)):
        return _type_code(value)
    return int(value)


def _encode_options(op_name, table, options):
    """Validate **options against the table; return [(slot, kind, value)]."""
    if table is None:
        if options:
            raise ValueError(f"{op_name} takes no options, got {sorted(options)}")
        return []
    fields = {f[0]: (slot, f[1]) for slot, f in enumerate(S.OPTION_TABLES[table])}
    encoded = []
    for name, value in options.items():
        if name not in fields or fields[name][1] == "deprecated":
            raise ValueError(f"{op_name} ({table}) has no option {name!r}; "
                             f"valid: {[f[0] for f in S.OPTION_TABLES[table]]}")
        slot, kind = fields[name]
        if kind in S.ENUMS:
            value = _enum_code(kind, value)
        elif kind.startswith("["):
            value = np.asarray(value).reshape(-1).tolist()
        elif kind == "bool":
            value = bool(value)
        elif kind == "float32":
            value = float(value)
        elif kind != "string":
            value = int(value)
        encoded.append((slot, kind, value))
    return encoded


class ModelBuilder:
    """Accumulates tensors and operators of one subgraph; build() serializes."""

    def __init__(self):
        self._tensors: list[_Tensor] = []
        self._buffers: list[bytes] = [b""]   # buffer 0: the mandatory empty one
        self._opcodes: dict[int, int] = {}   # builtin code -> operator_codes index
        self._ops: list[_Op] = []
        self._inputs: list[int] = []
        self._outputs: list[int] = []
        self._signature_key: str | None = None

    # -- tensors -----------------------------------------------------------
    def tensor(self, shape, name=None, dtype=np.float32, shape_signature=None,
               scale=None, zero_point=None, quantized_dimension=0):
        """An activation tensor (no data). Returns its index."""
        return self._add(shape, _type_code(dtype), 0, name, shape_signature,
                         self._quant(scale, zero_point, quantized_dimension))

    def input(self, shape, name=None, dtype=np.float32, shape_signature=None,
              **quantization):
        """A graph input tensor. Returns its index."""
        t = self.tensor(shape, name, dtype, shape_signature, **quantization)
        self._inputs.append(t)
        return t

    def const(self, array, name=None, scale=None, zero_point=None,
              quantized_dimension=0):
        """A constant tensor with its own buffer; dtype comes from the array."""
        array = np.asarray(array)
        return self._add(array.shape, _type_code(array.dtype),
                         self._buffer(array), name, None,
                         self._quant(scale, zero_point, quantized_dimension))

    def sparse_const(self, dense, name=None, block=None):
        """A constant stored sparse, to be expanded by DENSIFY.

        Leading dimensions are DENSE and the last one SPARSE_CSR (identity
        traversal order). With block=(k,), the last dimension is split into
        blocks of k elements: whole blocks are kept or dropped, and an extra
        DENSE block dimension of size k (block_map -> last dim) is appended.
        """
        dense = np.asarray(dense)
        if dense.ndim == 0:
            raise ValueError("sparse_const needs at least one dimension")
        k = 1 if block is None else int(np.prod(block))
        if block is not None and (len(block) != 1 or dense.shape[-1] % k):
            raise ValueError(f"block must be (k,) with k dividing {dense.shape[-1]}")
        blocks = dense.reshape(-1, dense.shape[-1] // k, k)
        keep = np.any(blocks != 0, axis=2)              # (rows, blocks per row)
        segments = np.concatenate([[0], np.cumsum(keep.sum(axis=1))])
        indices = np.nonzero(keep)[1]                   # row-major order
        dims = [(S.DIMENSION_TYPES["DENSE"], d, None, None) for d in dense.shape[:-1]]
        dims.append((S.DIMENSION_TYPES["SPARSE_CSR"], 0, segments, indices))
        n = dense.ndim
        block_map = None
        if block is not None:
            dims.append((S.DIMENSION_TYPES["DENSE"], k, None, None))
            block_map = [n - 1]
        sparsity = (list(range(len(dims))), block_map, dims)
        return self._add(dense.shape, _type_code(dense.dtype),
                         self._buffer(blocks[keep]), name, None, None, sparsity)

    # -- graph -------------------------------------------------------------
    def op(self, name, inputs, outputs, **options):
        """Append a builtin operator; -1 in inputs marks an absent optional
        input. Returns the operator's index."""
        if name not in S.BUILTIN_OPS:
            raise ValueError(f"unknown builtin operator {name!r}")
        for t in [*outputs, *(i for i in inputs if i != -1)]:
            if not 0 <= t < len(self._tensors):
                raise ValueError(f"{name}: no tensor {t}")
        table = S.OP_OPTIONS.get(name)
        options = {**self._implied_options(name, inputs, outputs), **options}
        code = S.BUILTIN_OPS[name]
        index = self._opcodes.setdefault(code, len(self._opcodes))
        self._ops.append(_Op(index, list(inputs), list(outputs), table,
                             _encode_options(name, table, options)))
        return len(self._ops) - 1

    def output(self, *tensors):
        self._outputs.extend(tensors)

    def signature(self, key="serving_default"):
        """Add a SignatureDef over the graph inputs/outputs, keyed by tensor name."""
        self._signature_key = key

    # -- helpers -----------------------------------------------------------
    def _implied_options(self, name, inputs, outputs):
        """Defaults for fields whose schema default (0) is never what a model
        means: they follow from the op's tensors, as the TF converter writes
        them. Explicit options override these."""
        out_type = self._tensors[outputs[0]].type if outputs else 0
        in_type = self._tensors[inputs[0]].type if inputs and inputs[0] != -1 else 0
        return {
            "SOFTMAX": {"beta": 1.0},
            "PACK": {"values_count": len(inputs)},
            "UNPACK": {"num": len(outputs)},
            "SPLIT": {"num_splits": len(outputs)},
            "SPLIT_V": {"num_splits": len(outputs)},
            "SHAPE": {"out_type": out_type},
            "ARG_MAX": {"output_type": out_type},
            "ARG_MIN": {"output_type": out_type},
            "CAST": {"in_data_type": in_type, "out_data_type": out_type},
        }.get(name, {})

    def _add(self, shape, type_code, buffer, name, shape_signature, quant,
             sparsity=None):
        shape = tuple(int(d) for d in shape)
        if shape_signature is not None:
            shape_signature = tuple(int(d) for d in shape_signature)
            if len(shape_signature) != len(shape):
                raise ValueError("shape_signature must have the rank of shape")
        index = len(self._tensors)
        self._tensors.append(_Tensor(shape, type_code, buffer,
                                     name or f"tensor_{index}",
                                     shape_signature, quant, sparsity))
        return index

    def _buffer(self, array):
        self._buffers.append(np.ascontiguousarray(array).astype(
            array.dtype.newbyteorder("<"), copy=False).tobytes())
        return len(self._buffers) - 1

    @staticmethod
    def _quant(scale, zero_point, quantized_dimension):
        if scale is None:
            return None
        scale = np.atleast_1d(np.asarray(scale, np.float32))
        if zero_point is None:
            zero_point = np.zeros(scale.shape, np.int64)
        zero_point = np.atleast_1d(np.asarray(zero_point, np.int64))
        if scale.shape != zero_point.shape:
            raise ValueError("scale and zero_point must have the same length")
        return scale, zero_point, int(quantized_dimension)

    # -- serialization -----------------------------------------------------
    def build(self) -> bytes:
        fb = flatbuffers.Builder(1024 + sum(len(b) + _DATA_ALIGN for b in self._buffers))
        # Flatbuffers are written back to front; buffers go first so the bulk
        # data ends up at the end of the file, after all the metadata.
        buffers = [_write_buffer(fb, data) for data in self._buffers]
        opcodes = [_write_opcode(fb, code) for code in self._opcodes]
        tensors = [_write_tensor(fb, t) for t in self._tensors]
        operators = [_write_operator(fb, op) for op in self._ops]

        subgraph = _table(fb, S.SUBGRAPH, [
            ("tensors", "offset", _offsets(fb, tensors)),
            ("inputs", "offset", _ints(fb, self._inputs)),
            ("outputs", "offset", _ints(fb, self._outputs)),
            ("operators", "offset", _offsets(fb, operators)),
            ("name", "offset", fb.CreateString("main")),
        ])
        model_fields = [
            ("version", "uint32", S.SCHEMA_VERSION),
            ("operator_codes", "offset", _offsets(fb, opcodes)),
            ("subgraphs", "offset", _offsets(fb, [subgraph])),
            ("description", "offset", fb.CreateString("flexdelegate")),
            ("buffers", "offset", _offsets(fb, buffers)),
        ]
        if self._signature_key is not None:
            model_fields.append(("signature_defs", "offset",
                                 _offsets(fb, [self._write_signature(fb)])))
        fb.Finish(_table(fb, S.MODEL, model_fields),
                  file_identifier=S.FILE_IDENTIFIER)
        return bytes(fb.Output())

    def _write_signature(self, fb):
        def tensor_maps(indices):
            return _offsets(fb, [_table(fb, S.TENSOR_MAP, [
                ("name", "offset", fb.CreateString(self._tensors[i].name)),
                ("tensor_index", "uint32", i)]) for i in indices])
        return _table(fb, S.SIGNATURE_DEF, [
            ("inputs", "offset", tensor_maps(self._inputs)),
            ("outputs", "offset", tensor_maps(self._outputs)),
            ("signature_key", "offset", fb.CreateString(self._signature_key)),
            ("subgraph_index", "uint32", 0),
        ])


# Builder method per scalar kind; enums are all `byte` in the schema.
_PREPEND = {"bool": "PrependBoolSlot", "int8": "PrependInt8Slot",
            "uint8": "PrependUint8Slot", "int32": "PrependInt32Slot",
            "uint32": "PrependUint32Slot", "int64": "PrependInt64Slot",
            "float32": "PrependFloat32Slot", "offset": "PrependUOffsetTRelativeSlot"}


def _table(fb, slots, fields):
    """Write a table; fields are (name, kind, value) with every offset already
    created. Values equal to the zero default are omitted by the builder."""
    fb.StartObject(len(slots))
    for name, kind, value in fields:
        getattr(fb, _PREPEND[kind])(slots[name], value, 0)
    return fb.EndObject()


def _ints(fb, values, dtype=np.int32):
    return fb.CreateNumpyVector(np.asarray(values, dtype).reshape(-1))


def _offsets(fb, offsets):
    fb.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        fb.PrependUOffsetTRelative(off)
    return fb.EndVector()


def _write_buffer(fb, data):
    if not data:
        return _table(fb, S.BUFFER, [])
    fb.StartVector(1, len(data), _DATA_ALIGN)
    fb.head -= len(data)
    fb.Bytes[fb.head:fb.head + len(data)] = data
    return _table(fb, S.BUFFER, [("data", "offset", fb.EndVector())])


# Builtins whose TFLite kernels register no version 1 (BROADCAST_TO's version 1 was the
# TensorFlow op run through Flex): the oldest version the builtin registration takes.
_FIRST_VERSION = {S.BUILTIN_OPS["BROADCAST_TO"]: 2}


def _write_opcode(fb, code):
    return _table(fb, S.OPERATOR_CODE, [
        ("deprecated_builtin_code", "int8",
         min(code, S.PLACEHOLDER_FOR_GREATER_OP_CODES)),
        ("version", "int32", _FIRST_VERSION.get(code, 1)),
        ("builtin_code", "int32", code),
    ])


def _write_tensor(fb, t):
    fields = [("shape", "offset", _ints(fb, t.shape)),
              ("type", "int8", t.type),
              ("buffer", "uint32", t.buffer),
              ("name", "offset", fb.CreateString(t.name)),
              ("has_rank", "bool", True)]
    if t.shape_signature is not None:
        fields.append(("shape_signature", "offset", _ints(fb, t.shape_signature)))
    if t.quant is not None:
        scale, zero_point, dim = t.quant
        fields.append(("quantization", "offset", _table(fb, S.QUANTIZATION, [
            ("scale", "offset", fb.CreateNumpyVector(scale)),
            ("zero_point", "offset", fb.CreateNumpyVector(zero_point)),
            ("quantized_dimension", "int32", dim)])))
    if t.sparsity is not None:
        fields.append(("sparsity", "offset", _write_sparsity(fb, *t.sparsity)))
    return _table(fb, S.TENSOR, fields)


def _write_sparsity(fb, traversal_order, block_map, dims):
    def index_vector(values):  # union SparseIndexVector member Int32Vector
        return _table(fb, {"values": 0}, [("values", "offset", _ints(fb, values))])

    metadata = []
    for fmt, dense_size, segments, indices in dims:
        fields = [("format", "int8", fmt), ("dense_size", "int32", dense_size)]
        if segments is not None:
            int32 = S.SPARSE_INDEX_VECTORS["Int32Vector"]
            fields += [("array_segments_type", "uint8", int32),
                       ("array_segments", "offset", index_vector(segments)),
                       ("array_indices_type", "uint8", int32),
                       ("array_indices", "offset", index_vector(indices))]
        metadata.append(_table(fb, S.DIMENSION_METADATA, fields))
    fields = [("traversal_order", "offset", _ints(fb, traversal_order)),
              ("dim_metadata", "offset", _offsets(fb, metadata))]
    if block_map is not None:
        fields.append(("block_map", "offset", _ints(fb, block_map)))
    return _table(fb, S.SPARSITY, fields)


def _write_options(fb, table, options):
    # Vectors and strings must exist before the table is started.
    values = []
    for slot, kind, value in options:
        if kind == "[int32]":
            value = _ints(fb, value)
        elif kind == "[float32]":
            value = _ints(fb, value, np.float32)
        elif kind == "string":
            value = fb.CreateString(value)
        values.append((slot, kind, value))
    fields = S.OPTION_TABLES[table]
    fb.StartObject(len(fields))
    for slot, kind, value in values:
        if kind in S.ENUMS:
            fb.PrependInt8Slot(slot, value, fields[slot][2])
        elif kind in _PREPEND:
            getattr(fb, _PREPEND[kind])(slot, value, fields[slot][2])
        else:
            fb.PrependUOffsetTRelativeSlot(slot, value, 0)
    return fb.EndObject()


def _write_operator(fb, op):
    fields = [("opcode_index", "uint32", op.opcode_index),
              ("inputs", "offset", _ints(fb, op.inputs)),
              ("outputs", "offset", _ints(fb, op.outputs))]
    if op.options_table is not None:
        fields += [("builtin_options_type", "uint8", S.OPTIONS_TYPE[op.options_table]),
                   ("builtin_options", "offset",
                    _write_options(fb, op.options_table, op.options))]
    return _table(fb, S.OPERATOR, fields)
