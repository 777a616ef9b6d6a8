"""Builds converter-made FP32 .tflite files of Keras applications (seeded random weights), once.

Needs tensorflow-cpu, a bench-only dependency in its own venv:
    python -m venv /tmp/vbench && /tmp/vbench/bin/pip install tensorflow-cpu
    /tmp/vbench/bin/python bench/build_models.py resnet50 mobilenet_v2
Files land in $FLEXDELEGATE_BENCH_MODELS (default ~/.cache/flexdelegate/bench-models)."""
import argparse
import os
import pathlib
import tempfile

APPS = {
    "mobilenet_v2": ("MobileNetV2", 224),
    "resnet50": ("ResNet50", 224),
    "resnet152": ("ResNet152", 224),
    "vgg19": ("VGG19", 224),
    "efficientnet_b0": ("EfficientNetB0", 224),
    "inception_v3": ("InceptionV3", 299),
    "mobilenet_v3_small": ("MobileNetV3Small", 224),
}


def model_dir() -> pathlib.Path:
    default = pathlib.Path.home() / ".cache" / "flexdelegate" / "bench-models"
    return pathlib.Path(os.environ.get("FLEXDELEGATE_BENCH_MODELS", default))


def build(name: str, out: pathlib.Path) -> pathlib.Path:
    path = out / f"{name}.tflite"
    if path.exists():
        return path
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    cls, size = APPS[name]
    model = getattr(keras.applications, cls)(weights=None, input_shape=(size, size, 3))
    with tempfile.TemporaryDirectory() as tmp:
        model.export(tmp)
        data = tf.lite.TFLiteConverter.from_saved_model(tmp).convert()
    out.mkdir(parents=True, exist_ok=True)
    tmp_path = path.with_suffix(".tmp")
    tmp_path.write_bytes(data)
    tmp_path.rename(path)
    return path


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", default=["mobilenet_v2", "resnet50", "vgg19", "efficientnet_b0"],
                    choices=sorted(APPS))
    args = ap.parse_args()
    for name in args.models:
        print(build(name, model_dir()))
