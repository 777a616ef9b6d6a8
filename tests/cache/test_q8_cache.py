"""int8 layers' packed panels in the cache file: a cold load packs one blob per conv / depthwise /
FC, a warm load maps them all (no packing), and both are bit-identical to stock."""
import sys

import numpy as np

from flexdelegate import load_flex
from flexdelegate.run import invoke, make_interpreter
sys.path.insert(0, __file__.rsplit("/tests/", 1)[0] + "/tests")
from qopcheck import Q, QModel, random_input  # noqa: E402

S8 = np.int8


def int8_net(seed=0) -> bytes:
    """CONV 3x3 -> DEPTHWISE 3x3 -> RESHAPE -> FC, int8 per-channel."""
    rng = np.random.default_rng(seed)
    m = QModel()
    x = m.input((1, 8, 8, 4), Q(S8, 0.05, -2))
    def w(shape):
        return rng.integers(-127, 128, shape).astype(S8)
    def per_channel(n, axis):
        return Q(S8, tuple(float(v) for v in np.linspace(0.005, 0.02, n)), (0,) * n, axis)
    h1 = m.tensor((1, 8, 8, 16), Q(S8, 0.2, 3))
    m.op("CONV_2D", [x, m.const(w((16, 3, 3, 4)), per_channel(16, 0)), m.const(rng.integers(-500, 500, 16).astype(np.int32), Q(np.int32, 1e-3, 0))],
         [h1], padding="SAME", stride_w=1, stride_h=1, fused_activation_function="RELU6")
    h2 = m.tensor((1, 8, 8, 16), Q(S8, 0.3, -1))
    m.op("DEPTHWISE_CONV_2D", [h1, m.const(w((1, 3, 3, 16)), per_channel(16, 3)), m.const(np.zeros(16, np.int32), Q(np.int32, 1e-3, 0))],
         [h2], padding="SAME", stride_w=1, stride_h=1, depth_multiplier=1)
    flat = m.tensor((1, 1024), Q(S8, 0.3, -1))
    m.op("RESHAPE", [h2, m.const(np.array([1, 1024], np.int32))], [flat], new_shape=[1, 1024])
    y = m.tensor((1, 10), Q(S8, 0.5, 0))
    m.op("FULLY_CONNECTED", [flat, m.const(w((10, 1024)), Q(S8, 0.001, 0)), m.const(np.zeros(10, np.int32), Q(np.int32, 1e-3, 0))], [y])
    return m.build(y)


def test_int8_blobs_are_cached_and_mapped_warm(tmp_path):
    model, path = int8_net(), tmp_path / "q.fxc"
    ref = make_interpreter(model)
    xs = random_input(ref, 0)
    want = invoke(ref, xs)
    for load in ("cold", "warm"):
        d = load_flex(cache_path=str(path))
        it = make_interpreter(model, delegate=d)
        got = invoke(it, xs)
        stats = d.stats()
        assert stats["nodes_delegated"] == stats["nodes_total"] == 4, stats
        assert all(np.array_equal(a, b) for a, b in zip(want, got))
        cache = stats["cache"]
        if load == "cold":
            assert cache["blobs_packed"] == 3 and cache["blobs_mapped"] == 0, cache
        else:
            assert cache["blobs_mapped"] == 3 and cache["blobs_packed"] == 0, cache
        del it, d


def test_different_requantization_is_a_different_blob(tmp_path):
    """Same int8 weights, another output scale: the key covers the multipliers, so nothing stale
    is mapped."""
    path = tmp_path / "q.fxc"
    a = int8_net(0)
    d = load_flex(cache_path=str(path))
    make_interpreter(a, delegate=d)
    b = a.replace(np.float32(0.2).tobytes(), np.float32(0.25).tobytes())  # h1's scale
    assert b != a
    d2 = load_flex(cache_path=str(path))
    ref = make_interpreter(b)
    it = make_interpreter(b, delegate=d2)
    xs = random_input(ref, 1)
    assert all(np.array_equal(x, y) for x, y in zip(invoke(ref, xs), invoke(it, xs)))
    assert d2.stats()["cache"]["blobs_packed"] >= 2  # the conv (its output scale) and the depthwise (input zero point / scale)


def test_a_damaged_int8_blob_is_repacked_and_stored_again(tmp_path, capfd):
    """int8 blobs share the FP32 weights' check (store.c fx_wref_check): a blob failing its
    checksum is packed in memory (bit-exact still), dropped from the file, stored again by the
    next load."""
    from flexdelegate.cache.format import read_cache
    model, path = int8_net(seed=4), tmp_path / "q.fxc"
    ref = make_interpreter(model)
    xs = random_input(ref, 0)
    want = invoke(ref, xs)

    def load():
        d = load_flex(cache_path=str(path))
        got = invoke(make_interpreter(model, delegate=d), xs)
        assert all(np.array_equal(a, b) for a, b in zip(want, got))
        return d.stats()["cache"]

    load()
    e = read_cache(path).entries[0]
    data = bytearray(path.read_bytes())
    data[e.offset + e.size // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    capfd.readouterr()
    load()
    assert "checksum" in capfd.readouterr().err
    assert len(read_cache(path).entries) == 2
    assert load()["blobs_packed"] == 1
    assert load()["blobs_mapped"] == 3
    assert "checksum" not in capfd.readouterr().err
