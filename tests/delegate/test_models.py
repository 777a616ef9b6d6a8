"""Real converter-made models end to end."""
import pathlib

import pytest

from flexdelegate import load_flex
from flexdelegate.run import invoke, make_interpreter, max_error, random_inputs

SHARED = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "models"
MOBILENET = SHARED / "mobilenet_v2.tflite"


@pytest.mark.skipif(not MOBILENET.exists(), reason=f"{MOBILENET} not present")
@pytest.mark.parametrize("threads", [1, 2])
def test_mobilenet_v2_whole_graph(threads):
    stock = make_interpreter(MOBILENET)
    d = load_flex(num_threads=threads)
    flex = make_interpreter(MOBILENET, delegate=d)
    s = d.stats()
    assert s["nodes_delegated"] == s["nodes_total"] and s["partitions"] == 1, s["fallback"]
    for seed in range(2):
        inputs = random_inputs(stock, seed=seed)
        assert max_error(invoke(stock, inputs), invoke(flex, inputs)) <= 1e-4


def test_demo_model_whole_graph():
    from flexdelegate.tflite.demo_model import build_demo_model
    model = build_demo_model(seed=0)
    stock = make_interpreter(model)
    d = load_flex()
    flex = make_interpreter(model, delegate=d)
    inputs = random_inputs(stock)
    assert max_error(invoke(stock, inputs), invoke(flex, inputs)) <= 1e-4
    assert d.stats()["nodes_delegated"] == d.stats()["nodes_total"]
