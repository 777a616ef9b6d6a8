"""Loading flexdelegate the way any TFLite external delegate is loaded: by the path of its
shared library and string options, with the runtime's own `load_delegate`.

    python examples/load_delegate.py [MODEL.tflite]

This is what `tf.lite.experimental.load_delegate`, `tflite_runtime.interpreter.load_delegate`
and `ai_edge_litert.interpreter.load_delegate` take, and what C++ tools take as
`--external_delegate_path` / `--external_delegate_options` (see c/README.md). Options are the
same as load_flex()'s, as strings; load_flex() itself adds stats() and set_budget()."""
import argparse
import os
import tempfile

import numpy as np

import flexdelegate
from flexdelegate.runtime import detect


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", nargs="?", help=".tflite model (default: the embedded demo CNN)")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp()
    model = args.model
    if model is None:
        from flexdelegate.tflite.demo_model import build_demo_model
        model = os.path.join(tmp, "demo.tflite")
        with open(model, "wb") as f:
            f.write(build_demo_model())

    rt = detect()
    library = flexdelegate.library_path()
    print(f"runtime {rt.name}; delegate library {library}")
    options = {"num_threads": "2", "budget": "50", "cache_path": os.path.join(tmp, "model.fxc"), "log": "partition"}
    delegate = rt.load_delegate(library, options)
    it = rt.Interpreter(model_path=model, experimental_delegates=[delegate])
    it.allocate_tensors()
    inp, out = it.get_input_details()[0], it.get_output_details()[0]
    it.set_tensor(inp["index"], np.ones(inp["shape"], np.float32))
    it.invoke()
    print("output:", np.round(it.get_tensor(out["index"]).ravel()[:5], 4))
    try:  # a bad option is refused when the delegate is created, with the reason
        rt.load_delegate(library, {"budget": "lots"})
    except ValueError as e:
        print("refused:", e)


if __name__ == "__main__":
    main()
