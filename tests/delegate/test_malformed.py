"""Malformed models the stock interpreter refuses: with flexdelegate they must be refused
the same way (an exception), never crash; what stock runs, we run. Each runs in a child process, since the failure
being guarded against is a segfault inside the runtime or the delegate."""
import subprocess
import sys
import textwrap

import numpy as np

from flexdelegate.tflite.writer import ModelBuilder

CHILD = """
import sys
from flexdelegate import load_flex
from flexdelegate.run import invoke, make_interpreter, random_inputs
model = open(sys.argv[1], "rb").read()
try:
    it = make_interpreter(model, delegate=load_flex(cache_path="") if sys.argv[2] == "flex" else None)
    invoke(it, random_inputs(it))
except Exception as e:
    print("refused:", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
else:
    print("ran")
"""


def outcome(model: bytes, engine: str, tmp_path) -> str:
    path = tmp_path / f"m-{engine}.tflite"
    path.write_bytes(model)
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(CHILD), str(path), engine], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, f"{engine} crashed (rc {run.returncode}):\n{run.stderr[-2000:]}"
    return run.stdout.strip().splitlines()[-1]


def assert_same_outcome(model: bytes, tmp_path):
    """Refused by both, or run by both (stock runs some of these on uninitialised memory: we
    leave the odd node to it, so the answer is as meaningless, but nothing crashes)."""
    stock, flex = outcome(model, "stock", tmp_path), outcome(model, "flex", tmp_path)
    assert flex.split()[0] == stock.split()[0], (stock, flex)


def test_concatenation_with_an_absent_input(tmp_path):
    """An optional (-1) input where CONCATENATION needs a tensor: shape inference read NULL."""
    b = ModelBuilder()
    x = b.input((1, 4, 4, 3))
    y = b.tensor((1, 4, 4, 6))
    b.op("CONCATENATION", [x, -1], [y], axis=3)
    b.output(y)
    assert_same_outcome(b.build(), tmp_path)


def test_absent_input_where_an_op_needs_one(tmp_path):
    b = ModelBuilder()
    x = b.input((1, 4, 4, 3))
    y = b.tensor((1, 4, 4, 3))
    b.op("ADD", [x, -1], [y])
    b.output(y)
    assert_same_outcome(b.build(), tmp_path)


def test_node_reading_a_later_nodes_output(tmp_path):
    """Node 0 reads what node 1 writes: claiming both made TFLite's partitioner segfault."""
    b = ModelBuilder()
    x = b.input((1, 4, 4, 3))
    t1, t2 = b.tensor((1, 4, 4, 3)), b.tensor((1, 4, 4, 3))
    b.op("RELU", [t1], [t2])
    b.op("RELU6", [x], [t1])
    b.output(t2)
    assert_same_outcome(b.build(), tmp_path)


def test_cycle_between_two_nodes(tmp_path):
    b = ModelBuilder()
    x = b.input((1, 8))
    t1, t2 = b.tensor((1, 8)), b.tensor((1, 8))
    b.op("ADD", [x, t2], [t1])
    b.op("RELU", [t1], [t2])
    b.output(t2)
    assert_same_outcome(b.build(), tmp_path)


def test_later_producer_left_to_stock_keeps_the_rest(tmp_path):
    """Well-formed nodes around the bad one."""
    b = ModelBuilder()
    x = b.input((1, 8))
    w = b.const(np.eye(8, dtype=np.float32))
    h, t1, t2 = b.tensor((1, 8)), b.tensor((1, 8)), b.tensor((1, 8))
    b.op("FULLY_CONNECTED", [x, w, -1], [h])
    b.op("TANH", [t1], [t2])
    b.op("LOGISTIC", [h], [t1])
    b.output(t2)
    assert_same_outcome(b.build(), tmp_path)
