"""Constants from TensorFlow Lite's schema.fbs (namespace tflite, identifier "TFL3").

Flatbuffer tables are addressed by vtable slot: a field's slot is its position
in the table declaration, deprecated fields included, and a union field takes
two slots (its type byte, then the value). Everything below is listed in
declaration order so that list positions *are* slots / enum codes.
"""

import numpy as np

FILE_IDENTIFIER = b"TFL3"
SCHEMA_VERSION = 3

# enum BuiltinOperator : int32 -- contiguous codes from 0, in declaration order.
BUILTIN_OPS = {name: code for code, name in enumerate("""
ADD AVERAGE_POOL_2D CONCATENATION CONV_2D DEPTHWISE_CONV_2D DEPTH_TO_SPACE
DEQUANTIZE EMBEDDING_LOOKUP FLOOR FULLY_CONNECTED HASHTABLE_LOOKUP
L2_NORMALIZATION L2_POOL_2D LOCAL_RESPONSE_NORMALIZATION LOGISTIC
LSH_PROJECTION LSTM MAX_POOL_2D MUL RELU RELU_N1_TO_1 RELU6 RESHAPE
RESIZE_BILINEAR RNN SOFTMAX SPACE_TO_DEPTH SVDF TANH CONCAT_EMBEDDINGS
SKIP_GRAM CALL CUSTOM EMBEDDING_LOOKUP_SPARSE PAD UNIDIRECTIONAL_SEQUENCE_RNN
GATHER BATCH_TO_SPACE_ND SPACE_TO_BATCH_ND TRANSPOSE MEAN SUB DIV SQUEEZE
UNIDIRECTIONAL_SEQUENCE_LSTM STRIDED_SLICE BIDIRECTIONAL_SEQUENCE_RNN EXP
TOPK_V2 SPLIT LOG_SOFTMAX DELEGATE BIDIRECTIONAL_SEQUENCE_LSTM CAST PRELU
MAXIMUM ARG_MAX MINIMUM LESS NEG PADV2 GREATER GREATER_EQUAL LESS_EQUAL SELECT
SLICE SIN TRANSPOSE_CONV SPARSE_TO_DENSE TILE EXPAND_DIMS EQUAL NOT_EQUAL LOG
SUM SQRT RSQRT SHAPE POW ARG_MIN FAKE_QUANT REDUCE_PROD REDUCE_MAX PACK
LOGICAL_OR ONE_HOT LOGICAL_AND LOGICAL_NOT UNPACK REDUCE_MIN FLOOR_DIV
REDUCE_ANY SQUARE ZEROS_LIKE FILL FLOOR_MOD RANGE RESIZE_NEAREST_NEIGHBOR
LEAKY_RELU SQUARED_DIFFERENCE MIRROR_PAD ABS SPLIT_V UNIQUE CEIL REVERSE_V2
ADD_N GATHER_ND COS WHERE RANK ELU REVERSE_SEQUENCE MATRIX_DIAG QUANTIZE
MATRIX_SET_DIAG ROUND HARD_SWISH IF WHILE NON_MAX_SUPPRESSION_V4
NON_MAX_SUPPRESSION_V5 SCATTER_ND SELECT_V2 DENSIFY SEGMENT_SUM BATCH_MATMUL
PLACEHOLDER_FOR_GREATER_OP_CODES CUMSUM CALL_ONCE BROADCAST_TO RFFT2D CONV_3D
IMAG REAL COMPLEX_ABS HASHTABLE HASHTABLE_FIND HASHTABLE_IMPORT HASHTABLE_SIZE
REDUCE_ALL CONV_3D_TRANSPOSE VAR_HANDLE READ_VARIABLE ASSIGN_VARIABLE
BROADCAST_ARGS RANDOM_STANDARD_NORMAL BUCKETIZE RANDOM_UNIFORM MULTINOMIAL GELU
DYNAMIC_UPDATE_SLICE RELU_0_TO_1 UNSORTED_SEGMENT_PROD UNSORTED_SEGMENT_MAX
UNSORTED_SEGMENT_SUM ATAN2 UNSORTED_SEGMENT_MIN SIGN BITCAST BITWISE_XOR
RIGHT_SHIFT STABLEHLO_LOGISTIC STABLEHLO_ADD STABLEHLO_DIVIDE STABLEHLO_MULTIPLY
STABLEHLO_MAXIMUM STABLEHLO_RESHAPE STABLEHLO_CLAMP STABLEHLO_CONCATENATE
STABLEHLO_BROADCAST_IN_DIM STABLEHLO_CONVOLUTION STABLEHLO_SLICE
STABLEHLO_CUSTOM_CALL STABLEHLO_REDUCE STABLEHLO_ABS STABLEHLO_AND
STABLEHLO_COSINE STABLEHLO_EXPONENTIAL STABLEHLO_FLOOR STABLEHLO_LOG
STABLEHLO_MINIMUM STABLEHLO_NEGATE STABLEHLO_OR STABLEHLO_POWER
STABLEHLO_REMAINDER STABLEHLO_RSQRT STABLEHLO_SELECT STABLEHLO_SUBTRACT
STABLEHLO_TANH STABLEHLO_SCATTER STABLEHLO_COMPARE STABLEHLO_CONVERT
STABLEHLO_DYNAMIC_SLICE STABLEHLO_DYNAMIC_UPDATE_SLICE STABLEHLO_PAD
STABLEHLO_IOTA STABLEHLO_DOT_GENERAL STABLEHLO_REDUCE_WINDOW STABLEHLO_SORT
STABLEHLO_WHILE STABLEHLO_GATHER STABLEHLO_TRANSPOSE DILATE
STABLEHLO_RNG_BIT_GENERATOR REDUCE_WINDOW STABLEHLO_COMPOSITE COMPLEX
""".split())}
BUILTIN_OP_NAMES = {code: name for name, code in BUILTIN_OPS.items()}
# OperatorCode.deprecated_builtin_code is a byte; larger codes store this there.
PLACEHOLDER_FOR_GREATER_OP_CODES = BUILTIN_OPS["PLACEHOLDER_FOR_GREATER_OP_CODES"]

# enum TensorType : byte
TENSOR_TYPES = {name: code for code, name in enumerate("""
FLOAT32 FLOAT16 INT32 UINT8 INT64 STRING BOOL INT16 COMPLEX64 INT8 FLOAT64
COMPLEX128 UINT64 RESOURCE VARIANT UINT32 UINT16 INT4 BFLOAT16
""".split())}
# numpy dtype <-> TensorType code, for the types numpy can represent.
DTYPE_TO_TYPE = {np.dtype(dt): TENSOR_TYPES[name] for name, dt in [
    ("FLOAT32", np.float32), ("FLOAT16", np.float16), ("INT32", np.int32),
    ("UINT8", np.uint8), ("INT64", np.int64), ("BOOL", np.bool_),
    ("INT16", np.int16), ("COMPLEX64", np.complex64), ("INT8", np.int8),
    ("FLOAT64", np.float64), ("COMPLEX128", np.complex128),
    ("UINT64", np.uint64), ("UINT32", np.uint32), ("UINT16", np.uint16)]}
TYPE_TO_DTYPE = {code: dt for dt, code in DTYPE_TO_TYPE.items()}

# Byte-sized enums used by option fields: name -> list of member names (= codes).
ENUMS = {
    "Padding": ["SAME", "VALID"],
    "ActivationFunctionType": ["NONE", "RELU", "RELU_N1_TO_1", "RELU6", "TANH",
                               "SIGN_BIT"],
    "FullyConnectedOptionsWeightsFormat": ["DEFAULT", "SHUFFLED4x16INT8"],
    "LSHProjectionType": ["UNKNOWN", "SPARSE", "DENSE"],
    "LSTMKernelType": ["FULL", "BASIC"],
    "CombinerType": ["SUM", "MEAN", "SQRTN"],
    "MirrorPadMode": ["REFLECT", "SYMMETRIC"],
    "TensorType": list(TENSOR_TYPES),
}
DIMENSION_TYPES = {"DENSE": 0, "SPARSE_CSR": 1}
# union SparseIndexVector (0 = NONE).
SPARSE_INDEX_VECTORS = {"Int32Vector": 1, "Uint16Vector": 2, "Uint8Vector": 3}

# union BuiltinOptions, declaration order; the union type code is index + 1.
BUILTIN_OPTIONS = """
Conv2DOptions DepthwiseConv2DOptions ConcatEmbeddingsOptions LSHProjectionOptions
Pool2DOptions SVDFOptions RNNOptions FullyConnectedOptions SoftmaxOptions
ConcatenationOptions AddOptions L2NormOptions LocalResponseNormalizationOptions
LSTMOptions ResizeBilinearOptions CallOptions ReshapeOptions SkipGramOptions
SpaceToDepthOptions EmbeddingLookupSparseOptions MulOptions PadOptions
GatherOptions BatchToSpaceNDOptions SpaceToBatchNDOptions TransposeOptions
ReducerOptions SubOptions DivOptions SqueezeOptions SequenceRNNOptions
StridedSliceOptions ExpOptions TopKV2Options SplitOptions LogSoftmaxOptions
CastOptions DequantizeOptions MaximumMinimumOptions ArgMaxOptions LessOptions
NegOptions PadV2Options GreaterOptions GreaterEqualOptions LessEqualOptions
SelectOptions SliceOptions TransposeConvOptions SparseToDenseOptions TileOptions
ExpandDimsOptions EqualOptions NotEqualOptions ShapeOptions PowOptions
ArgMinOptions FakeQuantOptions PackOptions LogicalOrOptions OneHotOptions
LogicalAndOptions LogicalNotOptions UnpackOptions FloorDivOptions SquareOptions
ZerosLikeOptions FillOptions BidirectionalSequenceLSTMOptions
BidirectionalSequenceRNNOptions UnidirectionalSequenceLSTMOptions
FloorModOptions RangeOptions ResizeNearestNeighborOptions LeakyReluOptions
SquaredDifferenceOptions MirrorPadOptions AbsOptions SplitVOptions UniqueOptions
ReverseV2Options AddNOptions GatherNdOptions CosOptions WhereOptions RankOptions
ReverseSequenceOptions MatrixDiagOptions QuantizeOptions MatrixSetDiagOptions
HardSwishOptions IfOptions WhileOptions DepthToSpaceOptions
NonMaxSuppressionV4Options NonMaxSuppressionV5Options ScatterNdOptions
SelectV2Options DensifyOptions SegmentSumOptions BatchMatMulOptions
CumsumOptions CallOnceOptions BroadcastToOptions Rfft2dOptions Conv3DOptions
HashtableOptions HashtableFindOptions HashtableImportOptions
HashtableSizeOptions VarHandleOptions ReadVariableOptions AssignVariableOptions
RandomOptions BucketizeOptions GeluOptions DynamicUpdateSliceOptions
UnsortedSegmentProdOptions UnsortedSegmentMaxOptions UnsortedSegmentMinOptions
UnsortedSegmentSumOptions ATan2Options SignOptions BitcastOptions
BitwiseXorOptions RightShiftOptions
""".split()
OPTIONS_TYPE = {name: i + 1 for i, name in enumerate(BUILTIN_OPTIONS)}

# Field kinds: scalars "bool" "int32" "uint32" "int64" "float32"; vectors
# "[int32]" "[float32]"; "string"; an ENUMS key (stored as a byte);
# "deprecated" (occupies a slot, never written).
_ACT = ("fused_activation_function", "ActivationFunctionType", 0)
_PAD = ("padding", "Padding", 0)
_ASYM = ("asymmetric_quantize_inputs", "bool", False)
_BIAS_T = ("quantized_bias_type", "TensorType", 0)


def _i(name, default=0):
    return (name, "int32", default)


def _b(name, default=False):
    return (name, "bool", default)


def _f(name):
    return (name, "float32", 0.0)


# Option tables that have fields: name -> [(field, kind, default)] in slot order.
# Tables without fields (PadOptions, TransposeOptions, ...) carry no information,
# so ops using them are written with no options at all.
OPTION_TABLES = {
    "Conv2DOptions": [_PAD, _i("stride_w"), _i("stride_h"), _ACT,
                      _i("dilation_w_factor", 1), _i("dilation_h_factor", 1),
                      _BIAS_T],
    "DepthwiseConv2DOptions": [_PAD, _i("stride_w"), _i("stride_h"),
                               _i("depth_multiplier"), _ACT,
                               _i("dilation_w_factor", 1),
                               _i("dilation_h_factor", 1)],
    "ConcatEmbeddingsOptions": [_i("num_channels"),
                                ("num_columns_per_channel", "[int32]", None),
                                ("embedding_dim_per_channel", "[int32]", None)],
    "LSHProjectionOptions": [("type", "LSHProjectionType", 0)],
    "Pool2DOptions": [_PAD, _i("stride_w"), _i("stride_h"), _i("filter_width"),
                      _i("filter_height"), _ACT],
    "SVDFOptions": [_i("rank"), _ACT, _ASYM],
    "RNNOptions": [_ACT, _ASYM],
    "FullyConnectedOptions": [_ACT, ("weights_format",
                                     "FullyConnectedOptionsWeightsFormat", 0),
                              _b("keep_num_dims"), _ASYM, _BIAS_T],
    "SoftmaxOptions": [_f("beta")],
    "ConcatenationOptions": [_i("axis"), _ACT],
    "AddOptions": [_ACT, _b("pot_scale_int16", True)],
    "L2NormOptions": [_ACT],
    "LocalResponseNormalizationOptions": [_i("radius"), _f("bias"), _f("alpha"),
                                          _f("beta")],
    "LSTMOptions": [_ACT, _f("cell_clip"), _f("proj_clip"),
                    ("kernel_type", "LSTMKernelType", 0), _ASYM],
    "ResizeBilinearOptions": [("new_height", "deprecated", None),
                              ("new_width", "deprecated", None),
                              _b("align_corners"), _b("half_pixel_centers")],
    "CallOptions": [("subgraph", "uint32", 0)],
    "ReshapeOptions": [("new_shape", "[int32]", None)],
    "SkipGramOptions": [_i("ngram_size"), _i("max_skip_size"),
                        _b("include_all_ngrams")],
    "SpaceToDepthOptions": [_i("block_size")],
    "EmbeddingLookupSparseOptions": [("combiner", "CombinerType", 0)],
    "MulOptions": [_ACT],
    "GatherOptions": [_i("axis"), _i("batch_dims")],
    "ReducerOptions": [_b("keep_dims")],
    "SubOptions": [_ACT, _b("pot_scale_int16", True)],
    "DivOptions": [_ACT],
    "SqueezeOptions": [("squeeze_dims", "[int32]", None)],
    "SequenceRNNOptions": [_b("time_major"), _ACT, _ASYM],
    "StridedSliceOptions": [_i("begin_mask"), _i("end_mask"),
                            _i("ellipsis_mask"), _i("new_axis_mask"),
                            _i("shrink_axis_mask"), _b("offset")],
    "SplitOptions": [_i("num_splits")],
    "CastOptions": [("in_data_type", "TensorType", 0),
                    ("out_data_type", "TensorType", 0)],
    "ArgMaxOptions": [("output_type", "TensorType", 0)],
    "TransposeConvOptions": [_PAD, _i("stride_w"), _i("stride_h"), _ACT,
                             _BIAS_T],
    "SparseToDenseOptions": [_b("validate_indices")],
    "ShapeOptions": [("out_type", "TensorType", 0)],
    "ArgMinOptions": [("output_type", "TensorType", 0)],
    "FakeQuantOptions": [_f("min"), _f("max"), _i("num_bits"),
                         _b("narrow_range")],
    "PackOptions": [_i("values_count"), _i("axis")],
    "OneHotOptions": [_i("axis")],
    "UnpackOptions": [_i("num"), _i("axis")],
    "BidirectionalSequenceLSTMOptions": [_ACT, _f("cell_clip"), _f("proj_clip"),
                                         _b("merge_outputs"),
                                         _b("time_major", True), _ASYM],
    "BidirectionalSequenceRNNOptions": [_b("time_major"), _ACT,
                                        _b("merge_outputs"), _ASYM],
    "UnidirectionalSequenceLSTMOptions": [_ACT, _f("cell_clip"),
                                          _f("proj_clip"), _b("time_major"),
                                          _ASYM,
                                          _b("diagonal_recurrent_tensors")],
    "ResizeNearestNeighborOptions": [_b("align_corners"),
                                     _b("half_pixel_centers")],
    "LeakyReluOptions": [_f("alpha")],
    "MirrorPadOptions": [("mode", "MirrorPadMode", 0)],
    "SplitVOptions": [_i("num_splits")],
    "UniqueOptions": [("idx_out_type", "TensorType", TENSOR_TYPES["INT32"])],
    "ReverseSequenceOptions": [_i("seq_dim"), _i("batch_dim")],
    "IfOptions": [_i("then_subgraph_index"), _i("else_subgraph_index")],
    "WhileOptions": [_i("cond_subgraph_index"), _i("body_subgraph_index")],
    "DepthToSpaceOptions": [_i("block_size")],
    "BatchMatMulOptions": [_b("adj_x"), _b("adj_y"), _ASYM],
    "CumsumOptions": [_b("exclusive"), _b("reverse")],
    "CallOnceOptions": [_i("init_subgraph_index")],
    "Conv3DOptions": [_PAD, _i("stride_d"), _i("stride_w"), _i("stride_h"),
                      _ACT, _i("dilation_d_factor", 1),
                      _i("dilation_w_factor", 1), _i("dilation_h_factor", 1)],
    "HashtableOptions": [_i("table_id"), ("key_dtype", "TensorType", 0),
                         ("value_dtype", "TensorType", 0)],
    "VarHandleOptions": [("container", "string", None),
                         ("shared_name", "string", None)],
    "RandomOptions": [("seed", "int64", 0), ("seed2", "int64", 0)],
    "BucketizeOptions": [("boundaries", "[float32]", None)],
    "GeluOptions": [_b("approximate")],
}

# Which option table each builtin op uses (only ops whose table has fields).
OP_OPTIONS = {
    "CONV_2D": "Conv2DOptions",
    "DEPTHWISE_CONV_2D": "DepthwiseConv2DOptions",
    "CONCAT_EMBEDDINGS": "ConcatEmbeddingsOptions",
    "LSH_PROJECTION": "LSHProjectionOptions",
    "AVERAGE_POOL_2D": "Pool2DOptions",
    "MAX_POOL_2D": "Pool2DOptions",
    "L2_POOL_2D": "Pool2DOptions",
    "SVDF": "SVDFOptions",
    "RNN": "RNNOptions",
    "FULLY_CONNECTED": "FullyConnectedOptions",
    "SOFTMAX": "SoftmaxOptions",
    "CONCATENATION": "ConcatenationOptions",
    "ADD": "AddOptions",
    "L2_NORMALIZATION": "L2NormOptions",
    "LOCAL_RESPONSE_NORMALIZATION": "LocalResponseNormalizationOptions",
    "LSTM": "LSTMOptions",
    "RESIZE_BILINEAR": "ResizeBilinearOptions",
    "CALL": "CallOptions",
    "RESHAPE": "ReshapeOptions",
    "SKIP_GRAM": "SkipGramOptions",
    "SPACE_TO_DEPTH": "SpaceToDepthOptions",
    "EMBEDDING_LOOKUP_SPARSE": "EmbeddingLookupSparseOptions",
    "MUL": "MulOptions",
    "GATHER": "GatherOptions",
    "MEAN": "ReducerOptions",
    "SUM": "ReducerOptions",
    "REDUCE_PROD": "ReducerOptions",
    "REDUCE_MAX": "ReducerOptions",
    "REDUCE_MIN": "ReducerOptions",
    "REDUCE_ANY": "ReducerOptions",
    "REDUCE_ALL": "ReducerOptions",
    "SUB": "SubOptions",
    "DIV": "DivOptions",
    "SQUEEZE": "SqueezeOptions",
    "UNIDIRECTIONAL_SEQUENCE_RNN": "SequenceRNNOptions",
    "STRIDED_SLICE": "StridedSliceOptions",
    "SPLIT": "SplitOptions",
    "CAST": "CastOptions",
    "ARG_MAX": "ArgMaxOptions",
    "TRANSPOSE_CONV": "TransposeConvOptions",
    "SPARSE_TO_DENSE": "SparseToDenseOptions",
    "SHAPE": "ShapeOptions",
    "ARG_MIN": "ArgMinOptions",
    "FAKE_QUANT": "FakeQuantOptions",
    "PACK": "PackOptions",
    "ONE_HOT": "OneHotOptions",
    "UNPACK": "UnpackOptions",
    "BIDIRECTIONAL_SEQUENCE_LSTM": "BidirectionalSequenceLSTMOptions",
    "BIDIRECTIONAL_SEQUENCE_RNN": "BidirectionalSequenceRNNOptions",
    "UNIDIRECTIONAL_SEQUENCE_LSTM": "UnidirectionalSequenceLSTMOptions",
    "RESIZE_NEAREST_NEIGHBOR": "ResizeNearestNeighborOptions",
    "LEAKY_RELU": "LeakyReluOptions",
    "MIRROR_PAD": "MirrorPadOptions",
    "SPLIT_V": "SplitVOptions",
    "UNIQUE": "UniqueOptions",
    "REVERSE_SEQUENCE": "ReverseSequenceOptions",
    "IF": "IfOptions",
    "WHILE": "WhileOptions",
    "DEPTH_TO_SPACE": "DepthToSpaceOptions",
    "BATCH_MATMUL": "BatchMatMulOptions",
    "CUMSUM": "CumsumOptions",
    "CALL_ONCE": "CallOnceOptions",
    "CONV_3D": "Conv3DOptions",
    "CONV_3D_TRANSPOSE": "Conv3DOptions",
    "HASHTABLE": "HashtableOptions",
    "VAR_HANDLE": "VarHandleOptions",
    "RANDOM_STANDARD_NORMAL": "RandomOptions",
    "RANDOM_UNIFORM": "RandomOptions",
    "MULTINOMIAL": "RandomOptions",
    "BUCKETIZE": "BucketizeOptions",
    "GELU": "GeluOptions",
}

# Vtable slots of the structural tables the writer and reader both use.
MODEL = dict(version=0, operator_codes=1, subgraphs=2, description=3, buffers=4,
             metadata_buffer=5, metadata=6, signature_defs=7)
OPERATOR_CODE = dict(deprecated_builtin_code=0, custom_code=1, version=2,
                     builtin_code=3)
SUBGRAPH = dict(tensors=0, inputs=1, outputs=2, operators=3, name=4)
BUFFER = dict(data=0, offset=1, size=2)
TENSOR = dict(shape=0, type=1, buffer=2, name=3, quantization=4, is_variable=5,
              sparsity=6, shape_signature=7, has_rank=8, variant_tensors=9)
QUANTIZATION = dict(min=0, max=1, scale=2, zero_point=3, details_type=4,
                    details=5, quantized_dimension=6)
SPARSITY = dict(traversal_order=0, block_map=1, dim_metadata=2)
DIMENSION_METADATA = dict(format=0, dense_size=1, array_segments_type=2,
                          array_segments=3, array_indices_type=4,
                          array_indices=5)
OPERATOR = dict(opcode_index=0, inputs=1, outputs=2, builtin_options_type=3,
                builtin_options=4, custom_options=5, custom_options_format=6,
                mutating_variable_inputs=7, intermediates=8)
SIGNATURE_DEF = dict(inputs=0, outputs=1, signature_key=2, deprecated_tag=3,
                     subgraph_index=4)
TENSOR_MAP = dict(name=0, tensor_index=1)
