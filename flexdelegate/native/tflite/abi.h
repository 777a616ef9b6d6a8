/* tflite/abi.h - flexdelegate's own declarations of the TensorFlow Lite C ABI.
 *
 * Written for this project from the binary layout of TensorFlow Lite v2.14
 * (tensorflow/lite/core/c/common.h, c_api_types.h, builtin_ops.h,
 * builtin_op_data.h). No TFLite header is needed or included. Field names and
 * type names follow TFLite so delegate code reads like TFLite code.
 *
 * Compatibility rule: TFLite only ever APPENDS members to these structs, so a
 * delegate built against the 2.14 layout works on newer runtimes
 * (ai-edge-litert 2.x) as long as it reads only the 2.14 members. Members and
 * enum values that exist only in newer runtimes are marked "post-2.14"; never
 * depend on them when running on tflite-runtime 2.14.
 *
 * Target: LP64 Linux (x86-64, aarch64), gcc/clang. Layout facts are checked
 * with static assertions at the end of this file. See ABI_NOTES.md.
 */
#ifndef FLEX_TFL_ABI_H
#define FLEX_TFL_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Status, element types                                                     */
/* ------------------------------------------------------------------------ */

typedef enum TfLiteStatus {
  kTfLiteOk = 0,
  kTfLiteError = 1,
  kTfLiteDelegateError = 2,
  kTfLiteApplicationError = 3,
  kTfLiteDelegateDataNotFound = 4,
  kTfLiteDelegateDataWriteError = 5,
  kTfLiteDelegateDataReadError = 6,
  kTfLiteUnresolvedOps = 7,
  kTfLiteCancelled = 8,
  /* Runtimes may return values not listed here; treat any non-zero as error. */
} TfLiteStatus;

typedef enum TfLiteType {
  kTfLiteNoType = 0,
  kTfLiteFloat32 = 1,
  kTfLiteInt32 = 2,
  kTfLiteUInt8 = 3,
  kTfLiteInt64 = 4,
  kTfLiteString = 5,
  kTfLiteBool = 6,
  kTfLiteInt16 = 7,
  kTfLiteComplex64 = 8,
  kTfLiteInt8 = 9,
  kTfLiteFloat16 = 10,
  kTfLiteFloat64 = 11,
  kTfLiteComplex128 = 12,
  kTfLiteUInt64 = 13,
  kTfLiteResource = 14,
  kTfLiteVariant = 15,
  kTfLiteUInt32 = 16,
  kTfLiteUInt16 = 17,
  kTfLiteInt4 = 18, /* last value in 2.14 */
  /* post-2.14 (present in ai-edge-litert 2.3): */
  kTfLiteBFloat16 = 19,
  kTfLiteInt2 = 20,
  kTfLiteUInt4 = 21,
  kTfLiteFloat8E4M3FN = 22,
  kTfLiteFloat8E5M2 = 23,
} TfLiteType;

/* Element structs used by TfLitePtrUnion. */
typedef struct TfLiteComplex64 {
  float re, im;
} TfLiteComplex64;

typedef struct TfLiteComplex128 {
  double re, im;
} TfLiteComplex128;

typedef struct TfLiteFloat16 {
  uint16_t data;
} TfLiteFloat16;

/* ------------------------------------------------------------------------ */
/* Arrays, quantization, sparsity                                            */
/* ------------------------------------------------------------------------ */

/* Sentinel tensor index for an omitted optional input. */
#define kTfLiteOptionalTensor (-1)

typedef struct TfLiteIntArray {
  int size;
  int data[];
} TfLiteIntArray;

/* 2.14 AND ai-edge-litert 2.3: {int size; float data[];} (flexible array,
 * allocated as 4 + 4*size bytes; checked in both binaries). Some newer
 * tensorflow master headers use {float* data; int size; bool owning;}
 * instead: do not use those headers' layout. */
typedef struct TfLiteFloatArray {
  int size;
  float data[];
} TfLiteFloatArray;

/* Legacy per-tensor quantization (always filled, also for per-channel). */
typedef struct TfLiteQuantizationParams {
  float scale;
  int32_t zero_point;
} TfLiteQuantizationParams;

typedef enum TfLiteQuantizationType {
  kTfLiteNoQuantization = 0,
  kTfLiteAffineQuantization = 1, /* params -> TfLiteAffineQuantization */
  /* post-2.14: */
  kTfLiteBlockwiseQuantization = 2,
  kTfLiteMultiAxisQuantization = 3,
} TfLiteQuantizationType;

typedef struct TfLiteQuantization {
  TfLiteQuantizationType type;
  void* params;
} TfLiteQuantization;

typedef struct TfLiteAffineQuantization {
  TfLiteFloatArray* scale;
  TfLiteIntArray* zero_point;
  int32_t quantized_dimension;
} TfLiteAffineQuantization;

typedef enum TfLiteDimensionType {
  kTfLiteDimDense = 0,
  kTfLiteDimSparseCSR = 1,
} TfLiteDimensionType;

typedef struct TfLiteDimensionMetadata {
  TfLiteDimensionType format;
  int dense_size;
  TfLiteIntArray* array_segments;
  TfLiteIntArray* array_indices;
} TfLiteDimensionMetadata;

typedef struct TfLiteSparsity {
  TfLiteIntArray* traversal_order;
  TfLiteIntArray* block_map;
  TfLiteDimensionMetadata* dim_metadata;
  int dim_metadata_size;
} TfLiteSparsity;

/* ------------------------------------------------------------------------ */
/* Tensors                                                                   */
/* ------------------------------------------------------------------------ */

/* All members are pointers (8 bytes on LP64). Prefer .data / .raw. */
typedef union TfLitePtrUnion {
  int32_t* i32;
  uint32_t* u32;
  int64_t* i64;
  uint64_t* u64;
  float* f;
  TfLiteFloat16* f16;
  double* f64;
  char* raw;
  const char* raw_const;
  uint8_t* uint8;
  bool* b;
  int16_t* i16;
  uint16_t* ui16;
  TfLiteComplex64* c64;
  TfLiteComplex128* c128;
  int8_t* int8;
  void* data;
} TfLitePtrUnion;

typedef enum TfLiteAllocationType {
  kTfLiteMemNone = 0,
  kTfLiteMmapRo = 1,
  kTfLiteArenaRw = 2,
  kTfLiteArenaRwPersistent = 3,
  kTfLiteDynamic = 4,
  kTfLitePersistentRo = 5,
  kTfLiteCustom = 6,
  kTfLiteVariantObject = 7, /* last value in 2.14 */
  kTfLiteNonCpu = 8,        /* post-2.14 */
} TfLiteAllocationType;

/* Delegate-owned buffer handle; -1 means none. */
typedef int TfLiteBufferHandle;
enum { kTfLiteNullBufferHandle = -1 };

struct TfLiteContext;
struct TfLiteDelegate;
struct TfLiteRegistration;
/* Opaque to us (only pointers to these are stored in ABI structs). */
struct TfLiteOpaqueDelegateBuilder;
struct TfLiteRegistrationExternal; /* renamed TfLiteOperator after 2.14 */
struct TfLiteAsyncKernel;

/* 112 bytes on LP64. */
typedef struct TfLiteTensor {
  TfLiteType type;                    /*   0 */
  TfLitePtrUnion data;                /*   8 */
  TfLiteIntArray* dims;               /*  16 */
  TfLiteQuantizationParams params;    /*  24 */
  TfLiteAllocationType allocation_type; /* 32 */
  size_t bytes;                       /*  40 */
  const void* allocation;             /*  48 */
  const char* name;                   /*  56 */
  struct TfLiteDelegate* delegate;    /*  64 */
  TfLiteBufferHandle buffer_handle;   /*  72 */
  bool data_is_stale;                 /*  76 */
  bool is_variable;                   /*  77 */
  TfLiteQuantization quantization;    /*  80 */
  TfLiteSparsity* sparsity;           /*  96 */
  const TfLiteIntArray* dims_signature; /* 104 */
} TfLiteTensor;

/* Minimal tensor used by TFLite Micro; only reachable through
 * TfLiteContext.GetEvalTensor, which the regular runtime leaves NULL. */
typedef struct TfLiteEvalTensor {
  TfLitePtrUnion data;
  TfLiteIntArray* dims;
  TfLiteType type;
} TfLiteEvalTensor;

/* ------------------------------------------------------------------------ */
/* Nodes, registrations                                                      */
/* ------------------------------------------------------------------------ */

/* 80 bytes on LP64. */
typedef struct TfLiteNode {
  TfLiteIntArray* inputs;             /*  0 */
  TfLiteIntArray* outputs;            /*  8 */
  TfLiteIntArray* intermediates;      /* 16 */
  TfLiteIntArray* temporaries;        /* 24 */
  void* user_data;                    /* 32: what registration.init returned */
  void* builtin_data;                 /* 40: TfLite*Params, or TfLiteDelegateParams for a delegate kernel node */
  const void* custom_initial_data;    /* 48 */
  int custom_initial_data_size;       /* 56 */
  struct TfLiteDelegate* delegate;    /* 64 */
  bool might_have_side_effect;        /* 72 */
} TfLiteNode;

/* Largest 2.14 layout (called TfLiteRegistration; older prefixes are the
 * V1/V2/V3 structs). 88 bytes on LP64. A delegate passes this by value to
 * ReplaceNodeSubsetsWithDelegateKernels: zero-initialise it fully. */
typedef struct TfLiteRegistration {
  void* (*init)(struct TfLiteContext* context, const char* buffer,
                size_t length);                                   /*  0 */
  void (*free)(struct TfLiteContext* context, void* buffer);      /*  8 */
  TfLiteStatus (*prepare)(struct TfLiteContext* context,
                          TfLiteNode* node);                      /* 16 */
  TfLiteStatus (*invoke)(struct TfLiteContext* context,
                         TfLiteNode* node);                       /* 24 */
  const char* (*profiling_string)(const struct TfLiteContext* context,
                                  const TfLiteNode* node);        /* 32 */
  int32_t builtin_code;                                           /* 40 */
  const char* custom_name;                                        /* 48 */
  int version;                                                    /* 56 */
  struct TfLiteRegistrationExternal* registration_external;       /* 64 */
  struct TfLiteAsyncKernel* (*async_kernel)(struct TfLiteContext* context,
                                            TfLiteNode* node);    /* 72 */
  uint64_t inplace_operator; /* 80: bitmask, 0 = no in-place */
} TfLiteRegistration;

/* ------------------------------------------------------------------------ */
/* Delegates                                                                 */
/* ------------------------------------------------------------------------ */

typedef enum TfLiteDelegateFlags {
  kTfLiteDelegateFlagsNone = 0,
  kTfLiteDelegateFlagsAllowDynamicTensors = 1,
  kTfLiteDelegateFlagsRequirePropagatedShapes = 2,
  kTfLiteDelegateFlagsPerOperatorProfiling = 4,
  /* newer headers also define HintFullyDelegatedToSingleDelegate = 8;
   * not relied on here. */
} TfLiteDelegateFlags;

/* 56 bytes on LP64. */
typedef struct TfLiteDelegate {
  void* data_;                                                    /*  0 */
  TfLiteStatus (*Prepare)(struct TfLiteContext* context,
                          struct TfLiteDelegate* delegate);       /*  8 */
  TfLiteStatus (*CopyFromBufferHandle)(struct TfLiteContext* context,
                                       struct TfLiteDelegate* delegate,
                                       TfLiteBufferHandle buffer_handle,
                                       TfLiteTensor* tensor);     /* 16 */
  TfLiteStatus (*CopyToBufferHandle)(struct TfLiteContext* context,
                                     struct TfLiteDelegate* delegate,
                                     TfLiteBufferHandle buffer_handle,
                                     TfLiteTensor* tensor);       /* 24 */
  void (*FreeBufferHandle)(struct TfLiteContext* context,
                           struct TfLiteDelegate* delegate,
                           TfLiteBufferHandle* handle);           /* 32 */
  int64_t flags;                                                  /* 40 */
  /* Must be NULL for a classic delegate: if set, the runtime uses it
   * instead of Prepare & co. */
  struct TfLiteOpaqueDelegateBuilder* opaque_delegate_builder;    /* 48 */
} TfLiteDelegate;

/* builtin_data of a delegate kernel node (and what
 * PreviewDelegatePartitioning returns). 32 bytes on LP64. */
typedef struct TfLiteDelegateParams {
  struct TfLiteDelegate* delegate;
  TfLiteIntArray* nodes_to_replace;
  TfLiteIntArray* input_tensors;
  TfLiteIntArray* output_tensors;
} TfLiteDelegateParams;

/* ------------------------------------------------------------------------ */
/* Context                                                                   */
/* ------------------------------------------------------------------------ */

typedef enum TfLiteExternalContextType {
  kTfLiteEigenContext = 0,
  kTfLiteGemmLowpContext = 1,
  kTfLiteEdgeTpuContext = 2,
  kTfLiteCpuBackendContext = 3,
  kTfLiteMaxExternalContexts = 4, /* 2.14 value; newer runtimes add one more */
} TfLiteExternalContextType;

typedef struct TfLiteExternalContext {
  TfLiteExternalContextType type;
  TfLiteStatus (*Refresh)(struct TfLiteContext* context);
} TfLiteExternalContext;

/* 200 bytes on LP64 Linux (Windows builds append two more pointers). */
typedef struct TfLiteContext {
  size_t tensors_size;                                            /*   0 */
  TfLiteStatus (*GetExecutionPlan)(struct TfLiteContext* context,
                                   TfLiteIntArray** execution_plan); /* 8 */
  TfLiteTensor* tensors;                                          /*  16 */
  void* impl_;                                                    /*  24 */
  /* Takes ownership of new_size. */
  TfLiteStatus (*ResizeTensor)(struct TfLiteContext* context,
                               TfLiteTensor* tensor,
                               TfLiteIntArray* new_size);         /*  32 */
  void (*ReportError)(struct TfLiteContext* context, const char* msg,
                      ...);                                       /*  40 */
  TfLiteStatus (*AddTensors)(struct TfLiteContext* context,
                             int tensors_to_add,
                             int* first_new_tensor_index);        /*  48 */
  TfLiteStatus (*GetNodeAndRegistration)(
      struct TfLiteContext* context, int node_index, TfLiteNode** node,
      struct TfLiteRegistration** registration);                  /*  56 */
  /* Does not take ownership of nodes_to_replace. */
  TfLiteStatus (*ReplaceNodeSubsetsWithDelegateKernels)(
      struct TfLiteContext* context, struct TfLiteRegistration registration,
      const TfLiteIntArray* nodes_to_replace,
      struct TfLiteDelegate* delegate);                           /*  64 */
  int recommended_num_threads;                                    /*  72 */
  TfLiteExternalContext* (*GetExternalContext)(
      struct TfLiteContext* context, TfLiteExternalContextType type); /* 80 */
  void (*SetExternalContext)(struct TfLiteContext* context,
                             TfLiteExternalContextType type,
                             TfLiteExternalContext* external);    /*  88 */
  bool allow_fp32_relax_to_fp16;                                  /*  96 */
  void* profiler;                                                 /* 104 */
  void* (*AllocatePersistentBuffer)(struct TfLiteContext* ctx,
                                    size_t bytes);                /* 112 */
  TfLiteStatus (*AllocateBufferForEval)(struct TfLiteContext* ctx,
                                        size_t bytes, void** ptr); /* 120 */
  TfLiteStatus (*RequestScratchBufferInArena)(struct TfLiteContext* ctx,
                                              size_t bytes,
                                              int* buffer_idx);   /* 128 */
  void* (*GetScratchBuffer)(struct TfLiteContext* ctx,
                            int buffer_idx);                      /* 136 */
  /* Like ResizeTensor but copies the shape (caller keeps ownership). */
  TfLiteStatus (*ResizeTensorExplicit)(struct TfLiteContext* ctx,
                                       TfLiteTensor* tensor, int dims,
                                       const int* shape);         /* 144 */
  TfLiteStatus (*PreviewDelegatePartitioning)(
      struct TfLiteContext* context, const TfLiteIntArray* nodes_to_replace,
      TfLiteDelegateParams** partition_params_array,
      int* num_partitions);                                       /* 152 */
  TfLiteTensor* (*GetTensor)(const struct TfLiteContext* context,
                             int tensor_idx);                     /* 160 */
  TfLiteEvalTensor* (*GetEvalTensor)(const struct TfLiteContext* context,
                                     int tensor_idx);             /* 168 */
  TfLiteStatus (*GetModelMetadata)(const struct TfLiteContext* context,
                                   const char* name, const char** ptr,
                                   size_t* bytes);                /* 176 */
  TfLiteStatus (*AcquireSubgraphContext)(
      struct TfLiteContext* context, int subgraph_index,
      struct TfLiteContext** acquired_context);                   /* 184 */
  TfLiteStatus (*ReleaseSubgraphContext)(struct TfLiteContext* context,
                                         int subgraph_index);     /* 192 */
} TfLiteContext;

/* ------------------------------------------------------------------------ */
/* Builtin operator codes (TfLiteRegistration.builtin_code)                  */
/* ------------------------------------------------------------------------ */

/* Values never change once assigned. 2.14 defines 0..161; later values can
 * only appear on newer runtimes. */
typedef enum TfLiteBuiltinOperator {
  kTfLiteBuiltinAdd = 0,
  kTfLiteBuiltinAveragePool2d = 1,
  kTfLiteBuiltinConcatenation = 2,
  kTfLiteBuiltinConv2d = 3,
  kTfLiteBuiltinDepthwiseConv2d = 4,
  kTfLiteBuiltinDepthToSpace = 5,
  kTfLiteBuiltinDequantize = 6,
  kTfLiteBuiltinEmbeddingLookup = 7,
  kTfLiteBuiltinFloor = 8,
  kTfLiteBuiltinFullyConnected = 9,
  kTfLiteBuiltinHashtableLookup = 10,
  kTfLiteBuiltinL2Normalization = 11,
  kTfLiteBuiltinL2Pool2d = 12,
  kTfLiteBuiltinLocalResponseNormalization = 13,
  kTfLiteBuiltinLogistic = 14,
  kTfLiteBuiltinLshProjection = 15,
  kTfLiteBuiltinLstm = 16,
  kTfLiteBuiltinMaxPool2d = 17,
  kTfLiteBuiltinMul = 18,
  kTfLiteBuiltinRelu = 19,
  kTfLiteBuiltinReluN1To1 = 20,
  kTfLiteBuiltinRelu6 = 21,
  kTfLiteBuiltinReshape = 22,
  kTfLiteBuiltinResizeBilinear = 23,
  kTfLiteBuiltinRnn = 24,
  kTfLiteBuiltinSoftmax = 25,
  kTfLiteBuiltinSpaceToDepth = 26,
  kTfLiteBuiltinSvdf = 27,
  kTfLiteBuiltinTanh = 28,
  kTfLiteBuiltinConcatEmbeddings = 29,
  kTfLiteBuiltinSkipGram = 30,
  kTfLiteBuiltinCall = 31,
  kTfLiteBuiltinCustom = 32,
  kTfLiteBuiltinEmbeddingLookupSparse = 33,
  kTfLiteBuiltinPad = 34,
  kTfLiteBuiltinUnidirectionalSequenceRnn = 35,
  kTfLiteBuiltinGather = 36,
  kTfLiteBuiltinBatchToSpaceNd = 37,
  kTfLiteBuiltinSpaceToBatchNd = 38,
  kTfLiteBuiltinTranspose = 39,
  kTfLiteBuiltinMean = 40,
  kTfLiteBuiltinSub = 41,
  kTfLiteBuiltinDiv = 42,
  kTfLiteBuiltinSqueeze = 43,
  kTfLiteBuiltinUnidirectionalSequenceLstm = 44,
  kTfLiteBuiltinStridedSlice = 45,
  kTfLiteBuiltinBidirectionalSequenceRnn = 46,
  kTfLiteBuiltinExp = 47,
  kTfLiteBuiltinTopkV2 = 48,
  kTfLiteBuiltinSplit = 49,
  kTfLiteBuiltinLogSoftmax = 50,
  kTfLiteBuiltinDelegate = 51,
  kTfLiteBuiltinBidirectionalSequenceLstm = 52,
  kTfLiteBuiltinCast = 53,
  kTfLiteBuiltinPrelu = 54,
  kTfLiteBuiltinMaximum = 55,
  kTfLiteBuiltinArgMax = 56,
  kTfLiteBuiltinMinimum = 57,
  kTfLiteBuiltinLess = 58,
  kTfLiteBuiltinNeg = 59,
  kTfLiteBuiltinPadv2 = 60,
  kTfLiteBuiltinGreater = 61,
  kTfLiteBuiltinGreaterEqual = 62,
  kTfLiteBuiltinLessEqual = 63,
  kTfLiteBuiltinSelect = 64,
  kTfLiteBuiltinSlice = 65,
  kTfLiteBuiltinSin = 66,
  kTfLiteBuiltinTransposeConv = 67,
  kTfLiteBuiltinSparseToDense = 68,
  kTfLiteBuiltinTile = 69,
  kTfLiteBuiltinExpandDims = 70,
  kTfLiteBuiltinEqual = 71,
  kTfLiteBuiltinNotEqual = 72,
  kTfLiteBuiltinLog = 73,
  kTfLiteBuiltinSum = 74,
  kTfLiteBuiltinSqrt = 75,
  kTfLiteBuiltinRsqrt = 76,
  kTfLiteBuiltinShape = 77,
  kTfLiteBuiltinPow = 78,
  kTfLiteBuiltinArgMin = 79,
  kTfLiteBuiltinFakeQuant = 80,
  kTfLiteBuiltinReduceProd = 81,
  kTfLiteBuiltinReduceMax = 82,
  kTfLiteBuiltinPack = 83,
  kTfLiteBuiltinLogicalOr = 84,
  kTfLiteBuiltinOneHot = 85,
  kTfLiteBuiltinLogicalAnd = 86,
  kTfLiteBuiltinLogicalNot = 87,
  kTfLiteBuiltinUnpack = 88,
  kTfLiteBuiltinReduceMin = 89,
  kTfLiteBuiltinFloorDiv = 90,
  kTfLiteBuiltinReduceAny = 91,
  kTfLiteBuiltinSquare = 92,
  kTfLiteBuiltinZerosLike = 93,
  kTfLiteBuiltinFill = 94,
  kTfLiteBuiltinFloorMod = 95,
  kTfLiteBuiltinRange = 96,
  kTfLiteBuiltinResizeNearestNeighbor = 97,
  kTfLiteBuiltinLeakyRelu = 98,
  kTfLiteBuiltinSquaredDifference = 99,
  kTfLiteBuiltinMirrorPad = 100,
  kTfLiteBuiltinAbs = 101,
  kTfLiteBuiltinSplitV = 102,
  kTfLiteBuiltinUnique = 103,
  kTfLiteBuiltinCeil = 104,
  kTfLiteBuiltinReverseV2 = 105,
  kTfLiteBuiltinAddN = 106,
  kTfLiteBuiltinGatherNd = 107,
  kTfLiteBuiltinCos = 108,
  kTfLiteBuiltinWhere = 109,
  kTfLiteBuiltinRank = 110,
  kTfLiteBuiltinElu = 111,
  kTfLiteBuiltinReverseSequence = 112,
  kTfLiteBuiltinMatrixDiag = 113,
  kTfLiteBuiltinQuantize = 114,
  kTfLiteBuiltinMatrixSetDiag = 115,
  kTfLiteBuiltinRound = 116,
  kTfLiteBuiltinHardSwish = 117,
  kTfLiteBuiltinIf = 118,
  kTfLiteBuiltinWhile = 119,
  kTfLiteBuiltinNonMaxSuppressionV4 = 120,
  kTfLiteBuiltinNonMaxSuppressionV5 = 121,
  kTfLiteBuiltinScatterNd = 122,
  kTfLiteBuiltinSelectV2 = 123,
  kTfLiteBuiltinDensify = 124,
  kTfLiteBuiltinSegmentSum = 125,
  kTfLiteBuiltinBatchMatmul = 126,
  kTfLiteBuiltinPlaceholderForGreaterOpCodes = 127,
  kTfLiteBuiltinCumsum = 128,
  kTfLiteBuiltinCallOnce = 129,
  kTfLiteBuiltinBroadcastTo = 130,
  kTfLiteBuiltinRfft2d = 131,
  kTfLiteBuiltinConv3d = 132,
  kTfLiteBuiltinImag = 133,
  kTfLiteBuiltinReal = 134,
  kTfLiteBuiltinComplexAbs = 135,
  kTfLiteBuiltinHashtable = 136,
  kTfLiteBuiltinHashtableFind = 137,
  kTfLiteBuiltinHashtableImport = 138,
  kTfLiteBuiltinHashtableSize = 139,
  kTfLiteBuiltinReduceAll = 140,
  kTfLiteBuiltinConv3dTranspose = 141,
  kTfLiteBuiltinVarHandle = 142,
  kTfLiteBuiltinReadVariable = 143,
  kTfLiteBuiltinAssignVariable = 144,
  kTfLiteBuiltinBroadcastArgs = 145,
  kTfLiteBuiltinRandomStandardNormal = 146,
  kTfLiteBuiltinBucketize = 147,
  kTfLiteBuiltinRandomUniform = 148,
  kTfLiteBuiltinMultinomial = 149,
  kTfLiteBuiltinGelu = 150,
  kTfLiteBuiltinDynamicUpdateSlice = 151,
  kTfLiteBuiltinRelu0To1 = 152,
  kTfLiteBuiltinUnsortedSegmentProd = 153,
  kTfLiteBuiltinUnsortedSegmentMax = 154,
  kTfLiteBuiltinUnsortedSegmentSum = 155,
  kTfLiteBuiltinAtan2 = 156,
  kTfLiteBuiltinUnsortedSegmentMin = 157,
  kTfLiteBuiltinSign = 158,
  kTfLiteBuiltinBitcast = 159,
  kTfLiteBuiltinBitwiseXor = 160,
  kTfLiteBuiltinRightShift = 161,
  /* --- values below were added after TF 2.14 (2.14 ends at 161) --- */
  kTfLiteBuiltinStablehloLogistic = 162,
  kTfLiteBuiltinStablehloAdd = 163,
  kTfLiteBuiltinStablehloDivide = 164,
  kTfLiteBuiltinStablehloMultiply = 165,
  kTfLiteBuiltinStablehloMaximum = 166,
  kTfLiteBuiltinStablehloReshape = 167,
  kTfLiteBuiltinStablehloClamp = 168,
  kTfLiteBuiltinStablehloConcatenate = 169,
  kTfLiteBuiltinStablehloBroadcastInDim = 170,
  kTfLiteBuiltinStablehloConvolution = 171,
  kTfLiteBuiltinStablehloSlice = 172,
  kTfLiteBuiltinStablehloCustomCall = 173,
  kTfLiteBuiltinStablehloReduce = 174,
  kTfLiteBuiltinStablehloAbs = 175,
  kTfLiteBuiltinStablehloAnd = 176,
  kTfLiteBuiltinStablehloCosine = 177,
  kTfLiteBuiltinStablehloExponential = 178,
  kTfLiteBuiltinStablehloFloor = 179,
  kTfLiteBuiltinStablehloLog = 180,
  kTfLiteBuiltinStablehloMinimum = 181,
  kTfLiteBuiltinStablehloNegate = 182,
  kTfLiteBuiltinStablehloOr = 183,
  kTfLiteBuiltinStablehloPower = 184,
  kTfLiteBuiltinStablehloRemainder = 185,
  kTfLiteBuiltinStablehloRsqrt = 186,
  kTfLiteBuiltinStablehloSelect = 187,
  kTfLiteBuiltinStablehloSubtract = 188,
  kTfLiteBuiltinStablehloTanh = 189,
  kTfLiteBuiltinStablehloScatter = 190,
  kTfLiteBuiltinStablehloCompare = 191,
  kTfLiteBuiltinStablehloConvert = 192,
  kTfLiteBuiltinStablehloDynamicSlice = 193,
  kTfLiteBuiltinStablehloDynamicUpdateSlice = 194,
  kTfLiteBuiltinStablehloPad = 195,
  kTfLiteBuiltinStablehloIota = 196,
  kTfLiteBuiltinStablehloDotGeneral = 197,
  kTfLiteBuiltinStablehloReduceWindow = 198,
  kTfLiteBuiltinStablehloSort = 199,
  kTfLiteBuiltinStablehloWhile = 200,
  kTfLiteBuiltinStablehloGather = 201,
  kTfLiteBuiltinStablehloTranspose = 202,
  kTfLiteBuiltinDilate = 203,
  kTfLiteBuiltinStablehloRngBitGenerator = 204,
  kTfLiteBuiltinReduceWindow = 205,
  kTfLiteBuiltinStablehloComposite = 206,
  kTfLiteBuiltinStablehloShiftLeft = 207,
  kTfLiteBuiltinStablehloCbrt = 208,
  kTfLiteBuiltinStablehloCase = 209,
} TfLiteBuiltinOperator;

/* ------------------------------------------------------------------------ */
/* Builtin op parameters (TfLiteNode.builtin_data)                           */
/* ------------------------------------------------------------------------ */
/* Layouts are those of 2.14. Newer runtimes append members at the end
 * (noted per struct); reading only the members below is safe on all of them.
 * Ops without parameters (e.g. DEQUANTIZE, and PAD/TRANSPOSE in practice)
 * may have builtin_data == NULL: never dereference it for those. */

#define TFLITE_RESHAPE_PARAMS_MAX_DIMENSION_COUNT 8
#define TFLITE_SQUEEZE_PARAMS_MAX_DIMENSION_COUNT 8 /* our name; TFLite hardcodes 8 */

/* Stand-in member for parameter structs that carry nothing (1 byte). */
typedef struct TfLiteEmptyStructPlaceholder {
  char dummy;
} TfLiteEmptyStructPlaceholder;

typedef enum TfLitePadding {
  kTfLitePaddingUnknown = 0,
  kTfLitePaddingSame = 1,
  kTfLitePaddingValid = 2,
} TfLitePadding;

typedef enum TfLiteMirrorPaddingMode {
  kTfLiteMirrorPaddingUnknown = 0,
  kTfLiteMirrorPaddingReflect = 1,
  kTfLiteMirrorPaddingSymmetric = 2,
} TfLiteMirrorPaddingMode;

typedef struct TfLitePaddingValues {
  int width;
  int height;
  int width_offset;
  int height_offset;
} TfLitePaddingValues;

typedef enum TfLiteFusedActivation {
  kTfLiteActNone = 0,
  kTfLiteActRelu = 1,
  kTfLiteActReluN1To1 = 2, /* clamp to [-1, 1] */
  kTfLiteActRelu6 = 3,     /* clamp to [0, 6] */
  kTfLiteActTanh = 4,
  kTfLiteActSignBit = 5,
  kTfLiteActSigmoid = 6,
} TfLiteFusedActivation;

/* CONV_2D. 24 bytes in 2.14. post-2.14 appends TfLiteType quantized_bias_type. */
typedef struct TfLiteConvParams {
  TfLitePadding padding;
  int stride_width;
  int stride_height;
  TfLiteFusedActivation activation;
  int dilation_width_factor;
  int dilation_height_factor;
} TfLiteConvParams;

/* DEPTHWISE_CONV_2D. 28 bytes. */
typedef struct TfLiteDepthwiseConvParams {
  TfLitePadding padding;
  int stride_width;
  int stride_height;
  int depth_multiplier; /* redundant; derive from shapes instead */
  TfLiteFusedActivation activation;
  int dilation_width_factor;
  int dilation_height_factor;
} TfLiteDepthwiseConvParams;

/* AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D. 40 bytes. */
typedef struct TfLitePoolParams {
  TfLitePadding padding;
  int stride_width;
  int stride_height;
  int filter_width;
  int filter_height;
  TfLiteFusedActivation activation;
  struct {
    TfLitePaddingValues padding; /* filled by the builtin kernel's prepare */
  } computed;
} TfLitePoolParams;

typedef enum TfLiteFullyConnectedWeightsFormat {
  kTfLiteFullyConnectedWeightsFormatDefault = 0,
  kTfLiteFullyConnectedWeightsFormatShuffled4x16Int8 = 1,
} TfLiteFullyConnectedWeightsFormat;

/* FULLY_CONNECTED. 12 bytes in 2.14. post-2.14 appends quantized_bias_type
 * and more (32 bytes in ai-edge-litert 2.3). */
typedef struct TfLiteFullyConnectedParams {
  TfLiteFusedActivation activation;
  TfLiteFullyConnectedWeightsFormat weights_format;
  bool keep_num_dims;
  bool asymmetric_quantize_inputs;
} TfLiteFullyConnectedParams;

/* SOFTMAX. */
typedef struct TfLiteSoftmaxParams {
  float beta;
} TfLiteSoftmaxParams;

/* CONCATENATION. */
typedef struct TfLiteConcatenationParams {
  int axis;
  TfLiteFusedActivation activation;
} TfLiteConcatenationParams;

/* ADD. */
typedef struct TfLiteAddParams {
  TfLiteFusedActivation activation;
  bool pot_scale_int16;
} TfLiteAddParams;

/* SUB. */
typedef struct TfLiteSubParams {
  TfLiteFusedActivation activation;
  bool pot_scale_int16;
} TfLiteSubParams;

/* MUL. */
typedef struct TfLiteMulParams {
  TfLiteFusedActivation activation;
} TfLiteMulParams;

/* DIV. */
typedef struct TfLiteDivParams {
  TfLiteFusedActivation activation;
} TfLiteDivParams;

/* L2_NORMALIZATION. */
typedef struct TfLiteL2NormParams {
  TfLiteFusedActivation activation;
} TfLiteL2NormParams;

/* BATCH_MATMUL. */
typedef struct TfLiteBatchMatMulParams {
  bool adj_x;
  bool adj_y;
  bool asymmetric_quantize_inputs;
} TfLiteBatchMatMulParams;

/* SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND (no content). */
typedef struct TfLiteSpaceToBatchNDParams {
  TfLiteEmptyStructPlaceholder placeholder;
} TfLiteSpaceToBatchNDParams;

typedef struct TfLiteBatchToSpaceNDParams {
  TfLiteEmptyStructPlaceholder placeholder;
} TfLiteBatchToSpaceNDParams;

/* RESIZE_BILINEAR. */
typedef struct TfLiteResizeBilinearParams {
  bool align_corners;
  bool half_pixel_centers;
} TfLiteResizeBilinearParams;

/* RESIZE_NEAREST_NEIGHBOR. */
typedef struct TfLiteResizeNearestNeighborParams {
  bool align_corners;
  bool half_pixel_centers;
} TfLiteResizeNearestNeighborParams;

/* PAD / PADV2 (no content; the paddings are input 1). */
typedef struct TfLitePadParams {
  TfLiteEmptyStructPlaceholder placeholder;
} TfLitePadParams;

typedef struct TfLitePadV2Params {
  TfLiteEmptyStructPlaceholder placeholder;
} TfLitePadV2Params;

/* MIRROR_PAD. */
typedef struct TfLiteMirrorPaddingParams {
  TfLiteMirrorPaddingMode mode;
} TfLiteMirrorPaddingParams;

/* RESHAPE. 36 bytes. Legacy: the new shape normally comes from input 1;
 * these fields are only filled for old models. */
typedef struct TfLiteReshapeParams {
  int32_t shape[TFLITE_RESHAPE_PARAMS_MAX_DIMENSION_COUNT];
  int num_dimensions;
} TfLiteReshapeParams;

/* SPACE_TO_DEPTH. */
typedef struct TfLiteSpaceToDepthParams {
  int block_size;
} TfLiteSpaceToDepthParams;

/* DEPTH_TO_SPACE. */
typedef struct TfLiteDepthToSpaceParams {
  int block_size;
} TfLiteDepthToSpaceParams;

/* CAST. 8 bytes. */
typedef struct TfLiteCastParams {
  TfLiteType in_data_type;
  TfLiteType out_data_type;
} TfLiteCastParams;

/* GATHER. */
typedef struct TfLiteGatherParams {
  int axis;
  int batch_dims;
} TfLiteGatherParams;

/* TRANSPOSE (no content; the permutation is input 1). */
typedef struct TfLiteTransposeParams {
  TfLiteEmptyStructPlaceholder placeholder;
} TfLiteTransposeParams;

/* MEAN, SUM, REDUCE_PROD/MAX/MIN/ANY/ALL. */
typedef struct TfLiteReducerParams {
  bool keep_dims;
} TfLiteReducerParams;

/* CUMSUM (builtin_options CumsumOptions: exclusive, reverse). */
typedef struct TfLiteCumsumParams {
  bool exclusive;
  bool reverse;
} TfLiteCumsumParams;

/* SPLIT / SPLIT_V. */
typedef struct TfLiteSplitParams {
  int num_splits;
} TfLiteSplitParams;

typedef struct TfLiteSplitVParams {
  int num_splits;
} TfLiteSplitVParams;

/* SQUEEZE. 36 bytes. */
typedef struct TfLiteSqueezeParams {
  int32_t squeeze_dims[TFLITE_SQUEEZE_PARAMS_MAX_DIMENSION_COUNT];
  int num_squeeze_dims;
} TfLiteSqueezeParams;

/* STRIDED_SLICE. 24 bytes. `offset` (op version 8) IS present in 2.14. */
typedef struct TfLiteStridedSliceParams {
  int begin_mask;
  int end_mask;
  int ellipsis_mask;
  int new_axis_mask;
  int shrink_axis_mask;
  bool offset; /* true: the end input is an offset from begin */
} TfLiteStridedSliceParams;

/* ARG_MAX / ARG_MIN. */
typedef struct TfLiteArgMaxParams {
  TfLiteType output_type;
} TfLiteArgMaxParams;

typedef struct TfLiteArgMinParams {
  TfLiteType output_type;
} TfLiteArgMinParams;

/* TRANSPOSE_CONV. 16 bytes in 2.14: `activation` (op version 4) IS present
 * in 2.14 and is filled by its parser. post-2.14 appends TfLiteType
 * quantized_bias_type (20 bytes in ai-edge-litert 2.3). */
typedef struct TfLiteTransposeConvParams {
  TfLitePadding padding;
  int stride_width;
  int stride_height;
  TfLiteFusedActivation activation;
} TfLiteTransposeConvParams;

/* SHAPE. */
typedef struct TfLiteShapeParams {
  TfLiteType out_type;
} TfLiteShapeParams;

/* PACK. */
typedef struct TfLitePackParams {
  int values_count;
  int axis;
} TfLitePackParams;

/* UNPACK. */
typedef struct TfLiteUnpackParams {
  int num;
  int axis;
} TfLiteUnpackParams;

/* LEAKY_RELU. */
typedef struct TfLiteLeakyReluParams {
  float alpha;
} TfLiteLeakyReluParams;

/* GELU. */
typedef struct TfLiteGeluParams {
  bool approximate;
} TfLiteGeluParams;

/* ------------------------------------------------------------------------ */
/* Layout checks                                                             */
/* ------------------------------------------------------------------------ */

#ifdef __cplusplus
#define FLEX_TFL_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define FLEX_TFL_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

#define FLEX_TFL_OFF(T, f, o) \
  FLEX_TFL_STATIC_ASSERT(offsetof(T, f) == (o), #T "." #f " offset")
#define FLEX_TFL_SIZE(T, s) FLEX_TFL_STATIC_ASSERT(sizeof(T) == (s), #T " size")

/* Integer-only structs: same on every target we build for. */
FLEX_TFL_SIZE(TfLiteIntArray, 4);
FLEX_TFL_SIZE(TfLiteFloatArray, 4);
FLEX_TFL_SIZE(TfLiteQuantizationParams, 8);
FLEX_TFL_SIZE(TfLiteConvParams, 24);
FLEX_TFL_SIZE(TfLiteDepthwiseConvParams, 28);
FLEX_TFL_SIZE(TfLitePoolParams, 40);
FLEX_TFL_SIZE(TfLiteFullyConnectedParams, 12);
FLEX_TFL_SIZE(TfLiteReshapeParams, 36);
FLEX_TFL_SIZE(TfLiteSqueezeParams, 36);
FLEX_TFL_SIZE(TfLiteStridedSliceParams, 24);
FLEX_TFL_OFF(TfLiteStridedSliceParams, offset, 20);
FLEX_TFL_SIZE(TfLiteTransposeConvParams, 16);
FLEX_TFL_OFF(TfLiteTransposeConvParams, activation, 12);
FLEX_TFL_SIZE(TfLiteCastParams, 8);
FLEX_TFL_SIZE(TfLiteShapeParams, 4);

#if defined(__LP64__)
FLEX_TFL_SIZE(TfLitePtrUnion, 8);
FLEX_TFL_SIZE(TfLiteQuantization, 16);
FLEX_TFL_SIZE(TfLiteAffineQuantization, 24);

FLEX_TFL_SIZE(TfLiteTensor, 112);
FLEX_TFL_OFF(TfLiteTensor, type, 0);
FLEX_TFL_OFF(TfLiteTensor, data, 8);
FLEX_TFL_OFF(TfLiteTensor, dims, 16);
FLEX_TFL_OFF(TfLiteTensor, params, 24);
FLEX_TFL_OFF(TfLiteTensor, allocation_type, 32);
FLEX_TFL_OFF(TfLiteTensor, bytes, 40);
FLEX_TFL_OFF(TfLiteTensor, allocation, 48);
FLEX_TFL_OFF(TfLiteTensor, name, 56);
FLEX_TFL_OFF(TfLiteTensor, delegate, 64);
FLEX_TFL_OFF(TfLiteTensor, buffer_handle, 72);
FLEX_TFL_OFF(TfLiteTensor, data_is_stale, 76);
FLEX_TFL_OFF(TfLiteTensor, is_variable, 77);
FLEX_TFL_OFF(TfLiteTensor, quantization, 80);
FLEX_TFL_OFF(TfLiteTensor, sparsity, 96);
FLEX_TFL_OFF(TfLiteTensor, dims_signature, 104);

FLEX_TFL_SIZE(TfLiteNode, 80);
FLEX_TFL_OFF(TfLiteNode, user_data, 32);
FLEX_TFL_OFF(TfLiteNode, builtin_data, 40);
FLEX_TFL_OFF(TfLiteNode, custom_initial_data_size, 56);
FLEX_TFL_OFF(TfLiteNode, delegate, 64);
FLEX_TFL_OFF(TfLiteNode, might_have_side_effect, 72);

FLEX_TFL_SIZE(TfLiteRegistration, 88);
FLEX_TFL_OFF(TfLiteRegistration, profiling_string, 32);
FLEX_TFL_OFF(TfLiteRegistration, builtin_code, 40);
FLEX_TFL_OFF(TfLiteRegistration, custom_name, 48);
FLEX_TFL_OFF(TfLiteRegistration, version, 56);
FLEX_TFL_OFF(TfLiteRegistration, registration_external, 64);
FLEX_TFL_OFF(TfLiteRegistration, async_kernel, 72);
FLEX_TFL_OFF(TfLiteRegistration, inplace_operator, 80);

FLEX_TFL_SIZE(TfLiteDelegate, 56);
FLEX_TFL_OFF(TfLiteDelegate, Prepare, 8);
FLEX_TFL_OFF(TfLiteDelegate, FreeBufferHandle, 32);
FLEX_TFL_OFF(TfLiteDelegate, flags, 40);
FLEX_TFL_OFF(TfLiteDelegate, opaque_delegate_builder, 48);
FLEX_TFL_SIZE(TfLiteDelegateParams, 32);

FLEX_TFL_OFF(TfLiteContext, tensors_size, 0);
FLEX_TFL_OFF(TfLiteContext, GetExecutionPlan, 8);
FLEX_TFL_OFF(TfLiteContext, tensors, 16);
FLEX_TFL_OFF(TfLiteContext, impl_, 24);
FLEX_TFL_OFF(TfLiteContext, ResizeTensor, 32);
FLEX_TFL_OFF(TfLiteContext, ReportError, 40);
FLEX_TFL_OFF(TfLiteContext, AddTensors, 48);
FLEX_TFL_OFF(TfLiteContext, GetNodeAndRegistration, 56);
FLEX_TFL_OFF(TfLiteContext, ReplaceNodeSubsetsWithDelegateKernels, 64);
FLEX_TFL_OFF(TfLiteContext, recommended_num_threads, 72);
FLEX_TFL_OFF(TfLiteContext, GetExternalContext, 80);
FLEX_TFL_OFF(TfLiteContext, SetExternalContext, 88);
FLEX_TFL_OFF(TfLiteContext, allow_fp32_relax_to_fp16, 96);
FLEX_TFL_OFF(TfLiteContext, profiler, 104);
FLEX_TFL_OFF(TfLiteContext, AllocatePersistentBuffer, 112);
FLEX_TFL_OFF(TfLiteContext, ResizeTensorExplicit, 144);
FLEX_TFL_OFF(TfLiteContext, PreviewDelegatePartitioning, 152);
FLEX_TFL_OFF(TfLiteContext, GetTensor, 160);
FLEX_TFL_OFF(TfLiteContext, GetEvalTensor, 168);
FLEX_TFL_OFF(TfLiteContext, GetModelMetadata, 176);
FLEX_TFL_OFF(TfLiteContext, AcquireSubgraphContext, 184);
FLEX_TFL_OFF(TfLiteContext, ReleaseSubgraphContext, 192);
FLEX_TFL_SIZE(TfLiteContext, 200);
#endif /* __LP64__ */

#undef FLEX_TFL_OFF
#undef FLEX_TFL_SIZE

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FLEX_TFL_ABI_H */
