"""Which 3x3 convolutions run as Winograd (native/wino_choice.c and the `winograd` option)."""
import numpy as np
import pytest

from flexdelegate import load_flex
from flexdelegate.run import make_interpreter
from opcheck import check, rand
from flexdelegate.tflite.writer import ModelBuilder

CH = 128  # F(4,3) weights of a 128x128 3x3 conv are 1.77 MB over the plain ones


def two_convs() -> bytes:
    """x 14x14 -> CONV 3x3 -> RESIZE_NEAREST x2 -> CONV 3x3 on 28x28. Both convs are Winograd
    candidates with equal extra bytes; the second, on the bigger map its tiles cover exactly,
    saves more time per byte."""
    b = ModelBuilder()
    x = b.input((1, 14, 14, CH), name="x")
    h = b.tensor((1, 14, 14, CH))
    b.op("CONV_2D", [x, b.const(rand((CH, 3, 3, CH), 1, 1 / 34)), b.const(rand((CH,), 2))], [h],
         padding="SAME", stride_w=1, stride_h=1, fused_activation_function="RELU")
    u = b.tensor((1, 28, 28, CH))
    b.op("RESIZE_NEAREST_NEIGHBOR", [h, b.const(np.array([28, 28], np.int32))], [u])
    y = b.tensor((1, 28, 28, CH))
    b.op("CONV_2D", [u, b.const(rand((CH, 3, 3, CH), 3, 1 / 34)), b.const(rand((CH,), 4))], [y],
         padding="SAME", stride_w=1, stride_h=1)
    b.output(y)
    return b.build()


def conv_kernels(stats):
    return [op["kernel"].split()[0] for op in stats["ops"] if op["op"] == "CONV_2D"]


def test_auto_spends_its_allowance_where_it_saves_most():
    """Two 1.77 MB candidates, a 2 MiB allowance (the floor: this model's weights are tiny):
    one is taken, and it is the one on the bigger map although it comes second."""
    kernels = conv_kernels(check(two_convs(), flex={"cache_path": ""}))
    assert kernels[1] == "winograd-f4"
    assert not kernels[0].startswith("winograd")


def test_all_takes_every_layer_where_winograd_is_faster():
    kernels = conv_kernels(check(two_convs(), flex={"cache_path": "", "winograd": "all"}))
    assert kernels == ["winograd-f4", "winograd-f4"]


def test_off_packs_no_winograd_weights():
    stats = check(two_convs(), flex={"cache_path": "", "winograd": "off"})
    assert not any(k.startswith("winograd") for k in conv_kernels(stats))
    auto = load_flex(cache_path="")
    make_interpreter(two_convs(), delegate=auto)
    assert stats["cache"]["bytes_packed"] < auto.stats()["cache"]["bytes_packed"]


@pytest.mark.parametrize("value", ["ALL", "yes", "", "1"])
def test_bad_winograd_value_names_the_choices(value):
    with pytest.raises(ValueError, match="winograd.*auto, all or off"):
        load_flex(winograd=value)
