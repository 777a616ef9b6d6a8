"""Findings of the graph fuzzer, generalised: for every op the delegate runs, a node with one
input fewer, one more, or an absent (-1) input where stock needs one, is refused by
flexdelegate exactly when the stock interpreter refuses it (the delegate claimed such nodes,
so stock's checks never ran: e.g. RELU6 with 3 inputs, or CONV_2D with a -1 bias, ran).
Stock's verdict is asked at test time, not written down here."""
from pathlib import Path

import pytest

from engine import Engine, EngineDied
from graph_spec import read_spec, write_spec

SEEDS = sorted((Path(__file__).parent / "corpus" / "graph").glob("seed-*.tflite"))
# Models of one op (the nets and the folded ones have several).
ONE_OP = [p for p in SEEDS if len(read_spec(p.read_bytes()).ops) == 1]


@pytest.fixture(scope="module")
def engines():
    with Engine() as stock, Engine() as flex:
        yield stock, flex


def variants(data: bytes):
    """(name, model) with the op's input list edited."""
    spec = read_spec(data)
    op = spec.ops[0]
    out = []
    for name, edit in (("one-fewer", lambda ins: ins[:-1]),
                       ("one-more", lambda ins: ins + [ins[0]]),
                       ("two-more", lambda ins: ins + [ins[0], ins[-1]]),
                       ("last-absent", lambda ins: ins[:-1] + [-1])):
        s = read_spec(data)
        s.ops[0].inputs = edit(list(op.inputs))
        if s.ops[0].inputs and s.ops[0].inputs != op.inputs:
            out.append((name, write_spec(s)))
    return out


@pytest.mark.parametrize("seed", ONE_OP, ids=lambda p: p.stem[5:])
def test_input_count_refused_as_stock_refuses(seed, engines):
    stock, flex = engines
    wrong = []
    for name, model in variants(seed.read_bytes()):
        try:
            s = stock.run(model, None)
        except EngineDied:  # stock crashes on some (DEPTHWISE_CONV_2D without a bias, MAXIMUM with
            continue        # a -1 input): no verdict, and a node left to stock would crash as well
        f = flex.run(model, {"cache_path": ""})  # EngineDied fails the test
        if (s[0] == "ok") != (f[0] == "ok"):
            wrong.append(f"{name}: stock {s[0]} {s[1] if s[0] != 'ok' else ''}, flexdelegate {f[0]} "
                         f"{f[1] if f[0] != 'ok' else ''}")
    assert not wrong, "\n".join(wrong)
