"""Builds converter-made .tflite files for the benchmarks (seeded random weights), once.

Needs tensorflow-cpu, a bench-only dependency in its own venv:
    python -m venv /tmp/vbench && /tmp/vbench/bin/pip install tensorflow-cpu
    /tmp/vbench/bin/python bench/build_models.py resnet50 transformers ...
Files land in $FLEXDELEGATE_BENCH_MODELS (default ~/.cache/flexdelegate/bench-models).
Arguments are model names or group names (GROUPS); --list prints them.

Models (architectures in keras_models.py):
  FP32 keras.applications: mobilenet_v2 resnet50 resnet152 vgg19 efficientnet_b0 inception_v3
      mobilenet_v3_small.
  <app>_int8: full-integer INT8 (float32 I/O: QUANTIZE in, DEQUANTIZE out) of mobilenet_v2,
      resnet50, efficientnet_b0, calibrated on CALIBRATION seeded standard-normal inputs (the
      distribution compare.py feeds); mobilenet_v2_uint8: the same with uint8 I/O.
  <app>_dynamic: dynamic-range quantization (INT8 weights, FP32 activations).
  Transformers, FP32: vit_tiny (depth 12, width 192, heads 3), vit_tiny4 (depth 4), vit_b16
      (12 x 768, 12 heads, MLP 3072), bert_tiny (2 x 128, 2 heads), bert_base (12 x 768),
      gpt2_tiny (2 x 128), gpt2_small (12 x 768, vocab 50257, 124M): batch 1, sequence 128,
      int32 token ids for BERT and GPT-2.
  Other CNNs, FP32: unet, deeplab, audio1d, ssd_backbone.

Every model goes through model.export() (a SavedModel) and TFLiteConverter.from_saved_model:
one path for all (from_keras_model gave the same 97 ops and bytes for bert_tiny in a spot
check, so the cleaner graph argument does not apply). Batch and sequence length are fixed at 1 and 128 in the Keras inputs, so the new
models have static shapes; the keras.applications ones keep batch None as before (the
converter writes shape [1, ...] with shape_signature [-1, ...]).

What the converter emits (TF 2.21):
  Transformers: LayerNormalization as MEAN, SQUARED_DIFFERENCE, RSQRT, MUL, NEG, ADD;
      MultiHeadAttention as FULLY_CONNECTED (EinsumDense), RESHAPE, TRANSPOSE, BATCH_MATMUL,
      SOFTMAX; GELU as the GELU builtin; Embedding as GATHER behind LESS + ADD + SELECT (Keras
      wraps negative ids); the causal mask as one SELECT_V2 per layer on a constant mask; ViT's
      patches as CONV_2D + RESHAPE, its class token as CONCATENATION, its head input as
      STRIDED_SLICE. GPT-2's tied head is one FULLY_CONNECTED on the GATHER's own table (one
      copy: 495 MB for 124M params). Without the export's input_signature Keras makes the batch
      None and the converter adds SHAPE / REDUCE_PROD / PACK chains and run-time RESHAPEs
      (bert_tiny: 137 ops instead of 97).
  audio1d: Conv1D and MaxPooling1D as CONV_2D and MAX_POOL_2D on (1, 1, T, C), one RESHAPE
      into that form and one out of it.
  deeplab: atrous convs as CONV_2D with dilation factors 2/6/12/18 (no SPACE_TO_BATCH_ND);
      3 RESIZE_BILINEAR. unet: 4 TRANSPOSE_CONV. ssd_backbone: RESHAPE per head, 2 CONCATENATION.
  *_int8 / _uint8: QUANTIZE in, DEQUANTIZE out (uint8: QUANTIZE both ways), INT8 kernels in
      between; EfficientNet's SE reshapes stay SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE.
  *_dynamic: CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED with INT8 weights on FP32
      activations (hybrid kernels); weights under 1024 elements stay FP32.

Loading: every model loads and runs on ai-edge-litert 2.3 (Interpreter and CompiledModel).
tflite-runtime 2.14 cannot load the *_dynamic models: "Didn't find op for builtin opcode
'FULLY_CONNECTED' version '12'" (the converter's hybrid FULLY_CONNECTED is newer than 2.14);
compare.py runs them on ai-edge-litert. Its XNNPack takes no INT8 node (no DELEGATE node in
the *_int8 models: they run on the stock kernels)."""
import argparse
import os
import pathlib
import sys
import time

CALIBRATION = 32  # representative inputs per INT8 model

# name -> (builder in keras_models, its keyword arguments, quantization: None | int8 | uint8 | dynamic)
APPS = {
    "mobilenet_v2": ("MobileNetV2", 224),
    "resnet50": ("ResNet50", 224),
    "resnet152": ("ResNet152", 224),
    "vgg19": ("VGG19", 224),
    "efficientnet_b0": ("EfficientNetB0", 224),
    "inception_v3": ("InceptionV3", 299),
    "mobilenet_v3_small": ("MobileNetV3Small", 224),
}
MODELS = {name: ("application", {"cls": c, "size": s}, None) for name, (c, s) in APPS.items()}
# Quantized variants get BatchNorm statistics that keep activations at unit scale
# (keras_models.renormalize): calibrating on the vanishing signal of the plain random nets
# would make their INT8 outputs constant, and every error column zero.
for _app, _q in [(a, q) for a in ("mobilenet_v2", "resnet50", "efficientnet_b0") for q in ("int8", "dynamic")]:
    MODELS[f"{_app}_{_q}"] = ("application", {**MODELS[_app][1], "renorm": True}, _q)
MODELS["mobilenet_v2_uint8"] = ("application", {**MODELS["mobilenet_v2"][1], "renorm": True}, "uint8")
MODELS.update({
    "vit_tiny": ("vit", {"depth": 12, "width": 192, "heads": 3, "mlp": 768}, None),
    "vit_tiny4": ("vit", {"depth": 4, "width": 192, "heads": 3, "mlp": 768}, None),
    "vit_b16": ("vit", {"depth": 12, "width": 768, "heads": 12, "mlp": 3072}, None),
    "bert_tiny": ("bert", {"depth": 2, "width": 128, "heads": 2, "mlp": 512}, None),
    "bert_base": ("bert", {"depth": 12, "width": 768, "heads": 12, "mlp": 3072}, None),
    "gpt2_tiny": ("gpt2", {"depth": 2, "width": 128, "heads": 2}, None),
    "gpt2_small": ("gpt2", {"depth": 12, "width": 768, "heads": 12}, None),
    "unet": ("unet", {}, None),
    "deeplab": ("deeplab", {}, None),
    "audio1d": ("audio1d", {}, None),
    "ssd_backbone": ("ssd_backbone", {}, None),
})

GROUPS = {
    "base": ["mobilenet_v2", "resnet50", "vgg19", "efficientnet_b0"],
    "int8": ["mobilenet_v2_int8", "resnet50_int8", "efficientnet_b0_int8", "mobilenet_v2_uint8"],
    "dynamic": ["mobilenet_v2_dynamic", "resnet50_dynamic", "efficientnet_b0_dynamic"],
    "transformers": ["vit_tiny4", "vit_tiny", "vit_b16", "bert_tiny", "bert_base", "gpt2_tiny",
                     "gpt2_small"],
    "cnn": ["unet", "deeplab", "audio1d", "ssd_backbone"],
}
GROUPS["new"] = GROUPS["int8"] + GROUPS["dynamic"] + GROUPS["transformers"] + GROUPS["cnn"]


def model_dir() -> pathlib.Path:
    default = pathlib.Path.home() / ".cache" / "flexdelegate" / "bench-models"
    return pathlib.Path(os.environ.get("FLEXDELEGATE_BENCH_MODELS", default))


def expand(names) -> list:
    """Model names with group names replaced by their members, in order, without repeats."""
    out = []
    for n in names:
        for m in GROUPS.get(n, [n]):
            if m not in MODELS:
                raise SystemExit(f"unknown model or group {m!r}; known: {', '.join([*GROUPS, *MODELS])}")
            if m not in out:
                out.append(m)
    return out


def convert(model, quant):
    import numpy as np
    import tempfile
    import tensorflow as tf

    with tempfile.TemporaryDirectory() as tmp:
        # The Keras inputs' own shapes: model.export() alone would make every batch dim None.
        sig = [tf.TensorSpec(x.shape, x.dtype, x.name) for x in model.inputs]
        model.export(tmp, verbose=False, input_signature=sig)
        conv = tf.lite.TFLiteConverter.from_saved_model(tmp)
        if quant:
            conv.optimizations = [tf.lite.Optimize.DEFAULT]
        if quant in ("int8", "uint8"):
            rng = np.random.default_rng(0)
            shapes = [[1 if d is None else d for d in x.shape] for x in model.inputs]
            calib = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(CALIBRATION)]
            conv.representative_dataset = lambda: iter(calib)
            conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
            io = tf.uint8 if quant == "uint8" else tf.float32
            conv.inference_input_type = conv.inference_output_type = io
        return conv.convert()


def build(name: str, out: pathlib.Path) -> pathlib.Path:
    path = out / f"{name}.tflite"
    if path.exists():
        return path
    t0 = time.time()
    import keras

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    import keras_models

    keras.utils.set_random_seed(0)
    builder, kwargs, quant = MODELS[name]
    data = convert(getattr(keras_models, builder)(**kwargs), quant)
    out.mkdir(parents=True, exist_ok=True)
    tmp_path = path.with_suffix(f".tmp{os.getpid()}")
    tmp_path.write_bytes(data)
    tmp_path.rename(path)  # atomic: a reader never sees half a file
    print(f"built {name} in {time.time() - t0:.0f} s: {len(data) / 1e6:.1f} MB", file=sys.stderr)
    return path


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", help="model or group names (default: the base group)")
    ap.add_argument("--list", action="store_true", help="print groups and models, then exit")
    args = ap.parse_args()
    if args.list:
        for g, members in GROUPS.items():
            print(f"{g}: {' '.join(members)}")
        print(f"all: {' '.join(MODELS)}")
        raise SystemExit
    for name in expand(args.models or ["base"]):
        print(build(name, model_dir()), flush=True)
