"""An existing app's classifier, sped up with one changed line.

    python examples/classify.py [MODEL.tflite] [--threads N]

Without a model it writes the embedded demo CNN to a temporary file (no download). The app
code below is what a TFLite app already has; the only flexdelegate line is marked."""
import argparse
import os
import tempfile

import numpy as np

from flexdelegate import load_flex
from flexdelegate.runtime import detect  # tflite_runtime or ai_edge_litert, whichever is installed


def top5(interpreter, image):
    inp, out = interpreter.get_input_details()[0], interpreter.get_output_details()[0]
    interpreter.set_tensor(inp["index"], image)
    interpreter.invoke()
    scores = interpreter.get_tensor(out["index"])[0]
    best = np.argsort(scores)[::-1][:5]
    return [(int(i), float(scores[i])) for i in best]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", nargs="?", help=".tflite classifier (default: the embedded demo CNN)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    path = args.model
    if path is None:
        from flexdelegate.tflite.demo_model import build_demo_model
        fd, path = tempfile.mkstemp(suffix=".tflite")
        os.write(fd, build_demo_model())
        os.close(fd)

    Interpreter = detect().Interpreter
    stock = Interpreter(model_path=path, num_threads=args.threads)
    stock.allocate_tensors()
    shape = stock.get_input_details()[0]["shape"]
    image = np.random.default_rng(0).uniform(-1, 1, size=shape).astype(np.float32)  # a stand-in photo

    delegate = load_flex(num_threads=args.threads)  # <- the one line an app adds ...
    fast = Interpreter(model_path=path, num_threads=args.threads,
                       experimental_delegates=[delegate])  # <- ... and passes here
    fast.allocate_tensors()

    a, b = top5(stock, image), top5(fast, image)
    print("stock TFLite :", [f"{i}:{p:.4f}" for i, p in a])
    print("flexdelegate :", [f"{i}:{p:.4f}" for i, p in b])
    st = delegate.stats()
    print(f"delegated {st['nodes_delegated']}/{st['nodes_total']} nodes in {st['partitions']} partition(s);"
          f" weights cached in {st['cache']['path']}")
    assert [i for i, _ in a] == [i for i, _ in b], "top-5 classes differ"


if __name__ == "__main__":
    main()
