"""Direct conv (implicit GEMM) inside the delegate: chosen at load by the measured table where
it wins (reported as "direct f32-igemm-..." in stats()["ops"]), forced everywhere with
FLEXDELEGATE_DIRECT=all, and always equal to stock TFLite, unbudgeted and under a budget."""
import pytest

from budgetcheck import heavy_model
from flexdelegate import _native_testing as testing, load_flex
from flexdelegate.run import invoke, make_interpreter, max_error, random_inputs
from opcheck import check, conv_model

GEMM = testing.chosen("gemm")
# conv/choose.c has measured direct-conv rules for the AVX-512 and AVX2 families only.
MEASURED_DIRECT = {"f32-gemm-8x32-avx512f": "direct f32-igemm-8x32-avx512f",
                   "f32-gemm-6x16-avx2": "direct f32-igemm-6x16-avx2"}


def conv_kernel(stats):
    (op,) = [o for o in stats["ops"] if o["op"] == "CONV_2D"]
    return op["kernel"]


@pytest.mark.parametrize("threads", [1, 2])
def test_table_chooses_direct_for_mid_channel_3x3(threads, monkeypatch):
    monkeypatch.delenv("FLEXDELEGATE_DIRECT", raising=False)
    stats = check(conv_model((1, 15, 13, 64), 70, 3, 3, stride=(2, 2), act="RELU"), num_threads=threads)
    if GEMM in MEASURED_DIRECT:
        assert conv_kernel(stats) == MEASURED_DIRECT[GEMM]
    else:  # no measurements for this ISA: im2col
        assert conv_kernel(stats).startswith("gemm-im2col")


def test_table_leaves_stems_and_1x1_alone(monkeypatch):
    monkeypatch.delenv("FLEXDELEGATE_DIRECT", raising=False)
    stem = conv_kernel(check(conv_model((1, 32, 32, 3), 32, 3, 3, stride=(2, 2))))
    assert "igemm" not in stem and (stem.startswith("gemm-im2col") or "conv-stem" in stem)  # test_stem_conv.py
    assert conv_kernel(check(conv_model((1, 8, 8, 64), 32, 1, 1))).startswith("gemm-direct")  # plain GEMM


@pytest.mark.parametrize("x_shape,cout,kh,kw,opts", [
    ((1, 17, 15, 3), 64, 7, 7, dict(stride=(2, 2))),
    ((2, 9, 8, 5), 33, 3, 3, dict(stride=(2, 1), act="RELU6")),
    ((1, 12, 12, 6), 17, 3, 3, dict(dilation=(2, 2))),
    ((1, 10, 11, 7), 9, 5, 5, dict(padding="VALID")),
    ((1, 1, 1, 4), 40, 3, 3, dict()),
    ((1, 6, 20, 8), 24, 1, 3, dict(act="RELU_N1_TO_1")),
    ((1, 9, 9, 16), 8, 1, 1, dict(stride=(2, 2))),
], ids=str)
@pytest.mark.parametrize("threads", [1, 2])
def test_forced_direct_matches_stock(x_shape, cout, kh, kw, opts, threads, monkeypatch):
    monkeypatch.setenv("FLEXDELEGATE_DIRECT", "all")
    stats = check(conv_model(x_shape, cout, kh, kw, **opts), num_threads=threads)
    assert conv_kernel(stats).startswith("direct f32-igemm-")


def test_forced_off(monkeypatch):
    monkeypatch.setenv("FLEXDELEGATE_DIRECT", "none")
    assert conv_kernel(check(conv_model((1, 15, 13, 64), 70, 3, 3, stride=(2, 2)))).startswith("gemm-im2col")


def test_direct_under_a_budget_gives_the_same_answer(tmp_path, monkeypatch):
    """The budget runtime runs a direct conv's slices through fx_conv_run_part (no scratch)."""
    monkeypatch.setenv("FLEXDELEGATE_DIRECT", "all")
    model = heavy_model()
    ref_it = make_interpreter(model)
    x = random_inputs(ref_it, seed=4)
    ref = invoke(ref_it, x)
    cache = str(tmp_path / "m.fxc")
    for budget in (12.0, 64.0):
        d = load_flex(budget=budget, cache_path=cache)
        it = make_interpreter(model, delegate=d)
        assert max_error(ref, invoke(it, x)) <= 1e-4, budget
        assert any(o["kernel"].startswith("direct") for o in d.stats()["ops"])
