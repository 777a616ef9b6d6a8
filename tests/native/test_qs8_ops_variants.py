"""Every SIMD variant of the element-wise integer microkernels (kernels/qs8-ops) equals the
scalar reference bit for bit, in both stock arithmetics and any output split, over parameters far
wider than the stock comparisons reach: scales from 2^-24 to 2^4 apart (left and right shifts at
their limits, exact ties), zero points at both ends, every fused activation, lengths around the
8-lane steps and the NEON blocks, every broadcast class."""
import itertools

import numpy as np
import pytest

from flexdelegate import _native_testing as testing, _qs8

VARIANTS = range(1, len(testing.variants("qs8-ops")))
SHAPES = [((61,), (61,)), ((3, 17), (1, 17)), ((1, 17), (3, 17)), ((4, 1), (4, 23)),
          ((2, 1, 3, 9), (2, 5, 3, 9)), ((1,), (2, 3, 40)), ((3, 1, 7), (1, 4, 1)),
          ((1, 1, 1, 96), (1, 5, 5, 96))]


def rand_params(rng, dtype, op):
    lo, hi = (0, 255) if dtype == np.uint8 else (-128, 127)
    zs = [int(rng.choice([lo, hi, rng.integers(lo, hi + 1)])) for _ in range(3)]
    s1 = float(np.float32(2.0 ** rng.uniform(-12, 0)))
    s2 = float(np.float32(s1 * 2.0 ** rng.choice([0, -20, rng.uniform(-24, 4)])))
    if op != "MUL":
        so = float(np.float32(2 * max(s1, s2) * 2.0 ** -rng.uniform(-6, 19.9)))
    else:
        so = float(np.float32(s1 * s2 * 2.0 ** rng.uniform(-29, 16)))
    return (s1, zs[0]), (s2, zs[1]), (so, zs[2])


def binary_variants_agree(op, a, b, qa, qb, qo, chunk=0, **kw):
    """Asserts every SIMD variant's op equals the scalar one's (variant v runs its output in
    pieces of `chunk`); False where stock refuses the parameters (nothing to compare)."""
    try:
        want = _qs8.binary(0, op, a, b, qa, qb, qo, **kw)
    except ValueError:
        return False
    for v in VARIANTS:
        got = _qs8.binary(v, op, a, b, qa, qb, qo, chunk=chunk, **kw)
        assert np.array_equal(got, want), (v, op, a.shape, b.shape, qa, qb, qo, kw, chunk,
                                           np.flatnonzero(got != want)[:5])
    return True


@pytest.mark.skipif(not VARIANTS, reason="only the scalar variant runs on this CPU")
@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
def test_binary_variants_equal_scalar(op, dtype):
    rng = np.random.default_rng(7 + (op == "MUL") + 2 * (dtype == np.uint8))
    info = np.iinfo(dtype)
    ran = 0
    for i in range(300):
        a_shape, b_shape = SHAPES[i % len(SHAPES)]
        a = rng.integers(info.min, info.max + 1, a_shape).astype(dtype)
        b = rng.integers(info.min, info.max + 1, b_shape).astype(dtype)
        qa, qb, qo = rand_params(rng, dtype, op)
        act = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"][i % 4]
        for stock in (_qs8.STOCK_PORTABLE, _qs8.STOCK_NEON):
            ran += binary_variants_agree(op, a, b, qa, qb, qo, chunk=i % 13, act=act, stock=stock)
    assert ran > 300


@pytest.mark.parametrize("op", ["ADD", "MUL"])
@pytest.mark.parametrize("c", [1, 8, 16, 32, 40, 48, 600, 1100])
def test_a_vector_broadcast_over_rows_equals_it_expanded(op, c):
    """(1, H, W, C) against (1, 1, 1, C), squeeze-and-excite's gate: the driver runs many rows
    per kernel call against the vector tiled (where every element of a row takes the same
    arithmetic); each element equals the same op on the vector expanded to the full shape, in
    the portable arithmetic always, and in the NEON one where C is a whole number of its blocks
    (a row's block split then falls at row ends either way). Output splits start mid-row."""
    rng = np.random.default_rng(c)
    x = rng.integers(-128, 128, (1, 7, 9, c)).astype(np.int8)
    g = rng.integers(-128, 128, (1, 1, 1, c)).astype(np.int8)
    for v in range(len(testing.variants("qs8-ops"))):
        for stock in (_qs8.STOCK_PORTABLE, _qs8.STOCK_NEON):
            if stock == _qs8.STOCK_NEON and c % 16:
                continue
            qa, qb, qo = rand_params(rng, np.int8, op)
            want = _qs8.binary(v, op, x, np.broadcast_to(g, x.shape).copy(), qa, qb, qo, stock=stock)
            for chunk in (0, 5, 37):
                for a, b, qa_, qb_ in ((x, g, qa, qb), (g, x, qb, qa)):
                    if a is g and op != "MUL":  # ADD is symmetric only up to its input order
                        continue
                    got = _qs8.binary(v, op, a, b, qa_, qb_, qo, stock=stock, chunk=chunk)
                    assert np.array_equal(got, want), (v, stock, chunk, a.shape)


@pytest.mark.skipif(not VARIANTS, reason="only the scalar variant runs on this CPU")
@pytest.mark.parametrize("op", ["ADD", "SUB"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
def test_add_variants_equal_scalar_on_every_input_pair(op, dtype):
    """All 256 x 256 input pairs: the SIMD input rescale splits the multiplier to stay in 32
    bits, exact only while |input - zero point| < 2^9: every difference is reached here."""
    rng = np.random.default_rng(11 + (op == "SUB") + 2 * (dtype == np.uint8))
    vals = np.arange(np.iinfo(dtype).min, np.iinfo(dtype).max + 1).astype(dtype)
    a, b = np.repeat(vals, 256).reshape(256, 256), np.tile(vals, 256).reshape(256, 256)
    ran = 0
    for _ in range(12):
        qa, qb, qo = rand_params(rng, dtype, op)
        for stock in (_qs8.STOCK_PORTABLE, _qs8.STOCK_NEON):
            ran += binary_variants_agree(op, a, b, qa, qb, qo, stock=stock)
    assert ran >= 12


@pytest.mark.skipif(not VARIANTS, reason="only the scalar variant runs on this CPU")
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
def test_float_form_equals_scalar(dtype):
    """The AVX-512 ADD and MUL compute long runs in float and take the exact definition for the
    lanes their error bound cannot decide (near a half) or, when too many are, for the rest of
    the call: converter-like scales (results seldom near a half) over runs long enough to hold
    several undecided lanes, and scales in simple ratios (ADD: equal inputs, output 2x or 1x;
    MUL: output scale the inputs' product times a power of two: results on halves everywhere),
    element-wise and against a scalar, ADD, both SUBs and MUL, both stocks, run lengths and
    output splits around the 64-element step."""
    rng = np.random.default_rng(21 + (dtype == np.uint8))
    info = np.iinfo(dtype)
    ran = 0
    for i in range(120):
        n = int(rng.choice([64, 127, 128, 1000, 4096 + 17, 30000]))
        a = rng.integers(info.min, info.max + 1, n).astype(dtype)
        b = rng.integers(info.min, info.max + 1, n).astype(dtype)
        if i % 4 == 3:  # a scalar a (the five-fold walk's broadcast class)
            a = a[:1]
        zs = [int(rng.integers(info.min, info.max + 1)) for _ in range(3)]
        op = ["ADD", "SUB", "MUL"][i % 3]
        s = float(np.float32(rng.uniform(0.01, 0.1)))
        s2 = float(np.float32(s * rng.uniform(0.25, 4)))
        simple = i % 5 == 4
        if op == "MUL":
            so = s * s2 * (2.0 ** int(rng.integers(3, 9)) if simple else rng.uniform(16, 512))
        elif simple:
            s2, so = s, s * (1 + i % 2)
        else:
            so = max(s, s2) * rng.uniform(0.5, 2)
        qa, qb, qo = (s, zs[0]), (s2, zs[1]), (float(np.float32(so)), zs[2])
        act = ["NONE", "RELU"][(i // 3) % 2]
        for x, y, qx, qy in ((a, b, qa, qb), (b, a, qb, qa)):
            for stock in (_qs8.STOCK_PORTABLE, _qs8.STOCK_NEON):
                ran += binary_variants_agree(op, x, y, qx, qy, qo, chunk=i % 3 * 37, act=act, stock=stock)
    assert ran >= 400


@pytest.mark.skipif(not VARIANTS, reason="only the scalar variant runs on this CPU")
@pytest.mark.parametrize("shift", range(0, 25))
def test_add_input_rescale_at_every_shift(shift):
    """The SIMD portable ADD rescales an input in one rounding while its shift is <= 20 (past
    that its int32 terms would overflow, and it takes the two roundings): input scale ratios
    of 2^-shift (times 1, 1.37 and 1.99) reach every shift, both sides of 20, over all 256 x
    256 input pairs, under both stock arithmetics. The second output scale is 1.5 units of the
    summed int32: there a unit of the small input's rescale changes outputs (at the larger
    one's zero point), so a rounding one off at large shifts shows."""
    vals = np.arange(-128, 128).astype(np.int8)
    a, b = np.repeat(vals, 256).reshape(256, 256), np.tile(vals, 256).reshape(256, 256)
    ran = 0
    for f, qo in itertools.product((1.0, 1.37, 1.99), ((0.07, -2), (0.15 * 2.0 ** -20, 0))):
        qa, qb = (0.05, 3), (0.05 * f * 2.0 ** -shift, -7)
        for op in ("ADD", "SUB"):
            for stock in (_qs8.STOCK_PORTABLE, _qs8.STOCK_NEON):
                ran += binary_variants_agree(op, a, b, qa, qb, qo, stock=stock)
    assert ran >= 12


@pytest.mark.skipif(not VARIANTS, reason="only the scalar variant runs on this CPU")
def test_mul_at_every_shift():
    """MUL's requantization, which the AVX-512 kernel does as one rounding of the 64-bit product,
    at every shift of its multiplier from 2^-31 to 2^29 (mantissas 1, 1.37, 1.99): all 256 x 256
    int8 pairs and uint8 against a broadcast row, under both stock arithmetics."""
    vals = np.arange(-128, 128).astype(np.int8)
    a, b = np.repeat(vals, 256).reshape(256, 256), np.tile(vals, 256).reshape(256, 256)
    ran = 0
    for shift in range(-31, 30):
        for f in (1.0, 1.37, 1.99):
            qa, qb, qo = (0.05, 3), (0.02, 7), (float(np.float32(0.05 * 0.02 / (f * 2.0 ** shift))), 1)
            for stock in (_qs8.STOCK_PORTABLE, _qs8.STOCK_NEON):
                for x, y in ((a, b), (a.astype(np.uint8), vals[None, :].astype(np.uint8))):
                    ran += binary_variants_agree("MUL", x, y, qa, qb, qo, stock=stock)
    assert ran >= 480


@pytest.mark.skipif(not VARIANTS, reason="only the scalar variant runs on this CPU")
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
def test_pool_and_mean_variants_equal_scalar(dtype):
    """AVERAGE_POOL_2D, both MEAN paths and SUM (the sum_rows microkernel; the general reduction
    walks it over strided rows: axes not adjacent, a reduced last dimension) on every variant,
    channel counts around the 8- and 32-lane steps and the 256-channel tranches."""
    rng = np.random.default_rng(3 + (dtype == np.uint8))
    info = np.iinfo(dtype)
    for i, c in enumerate([1, 7, 8, 31, 32, 33, 96, 257, 520]):
        x = rng.integers(info.min, info.max + 1, (2, 9, 8, c)).astype(dtype)
        k, s, p = [(3, 2, 1), (2, 2, 0), (5, 1, 2)][i % 3]
        oh, ow = (9 + 2 * p - k) // s + 1, (8 + 2 * p - k) // s + 1
        lo, hi = (int(info.min) + i, int(info.max) - i)
        want = _qs8.avgpool(0, x, (k, k), (s, s), (p, p), (oh, ow), lo, hi)
        qi, qo = (0.02, int(x.flat[0])), (0.03 * (i + 1) / 4, int(x.flat[1]))
        mean_want = _qs8.mean(0, x, [1, 2], qi, qo)
        for v in VARIANTS:
            assert np.array_equal(_qs8.avgpool(v, x, (k, k), (s, s), (p, p), (oh, ow), lo, hi, chunk=i % 3), want)
            assert np.array_equal(_qs8.mean(v, x, [1, 2], qi, qo, chunk=i % 5), mean_want)
            for axes in ([0, 2], [3, 1], [-1]):
                assert np.array_equal(_qs8.mean(v, x, axes, qi, qo, chunk=i % 4), _qs8.mean(0, x, axes, qi, qo))
                assert np.array_equal(_qs8.reduce_sum(v, x, axes, qi, qo, chunk=i % 6),
                                      _qs8.reduce_sum(0, x, axes, qi, qo))
            if dtype == np.int8:
                assert np.array_equal(_qs8.mean_hw(v, x, qi, qo, stock=_qs8.STOCK_NEON, stock_threads=2),
                                      _qs8.mean_hw(0, x, qi, qo, stock=_qs8.STOCK_NEON, stock_threads=2))


@pytest.mark.skipif(not VARIANTS, reason="only the scalar variant runs on this CPU")
def test_table_variants_equal_scalar():
    """The byte-table lookup (AVX2 rebuilds the table as XOR-telescoped rows; AVX-512 VBMI
    looks up 128-entry halves and picks by bit 7): every input byte, lengths around the 32- and
    64-byte steps and masked tails alone, tables from several ops, both stocks."""
    rng = np.random.default_rng(9)
    for i in range(60):
        n = int(rng.choice([1, 63, 64, 65, 128, 129, 160, 255, 256, 1000, 4099]))
        x = rng.integers(-128, 128, n).astype(np.int8)
        x[:256 if n >= 256 else n] = np.arange(-128, 128, dtype=np.int8)[:min(n, 256)]
        kind = ["REQUANTIZE", "TANH", "HARD_SWISH", "LEAKY_RELU", "RELU6"][i % 5]
        qi = (float(np.float32(2.0 ** rng.uniform(-8, -1))), int(rng.integers(-128, 128)))
        qo = (float(np.float32(qi[0] * 2.0 ** rng.uniform(-3, 3))), int(rng.integers(-128, 128)))
        stock = (_qs8.STOCK_PORTABLE, _qs8.STOCK_NEON)[i % 2]
        try:
            want = _qs8.lut_op(0, kind, x, qi, qo, alpha=0.3, stock=stock)
        except ValueError:
            continue
        for v in VARIANTS:
            got = _qs8.lut_op(v, kind, x, qi, qo, alpha=0.3, stock=stock, chunk=[0, 200, 33][i % 3])
            assert np.array_equal(got, want), (v, kind, n, qi, qo)


def quantize_reference(x, scale, zp, form, lo, hi):
    """ref.h's fxq_quantize_one in NumPy: the division in double rounded half away from zero
    (DIVIDE) or the float product rounded half to even (MUL_RNE); NaN and values past int32
    convert to INT32_MIN (x86); the zero point added wrapping; clamped."""
    with np.errstate(invalid="ignore", over="ignore"):
        if form == "DIVIDE":
            q = x.astype(np.float64) / np.float64(np.float32(scale))
            r = np.trunc(q) + np.where(np.abs(q - np.trunc(q)) >= 0.5, np.sign(q), 0)
        else:
            inv = np.float32(1.0 / np.float64(np.float32(scale)))
            r = np.rint(x * inv).astype(np.float64)
        ok = (r >= -2.0**31) & (r < 2.0**31)
    v = np.where(ok, np.nan_to_num(r), -2.0**31).astype(np.int64)
    v = (v + zp + 2**31) % 2**32 - 2**31
    return np.clip(v, lo, hi)


@pytest.mark.parametrize("form", ["DIVIDE", "MUL_RNE"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
def test_quantize_variants_equal_scalar_and_reference(form, dtype):
    """Float -> int QUANTIZE: the scalar kernel against a NumPy transcription of ref.h, and every
    variant against the scalar one: exact ties (k + 1/2 steps, both signs), the neighbours of
    ties, NaN, infinities, values past int32, zero points at the ends, narrowed clamps,
    lengths around the 8-lane step and chunked runs."""
    rng = np.random.default_rng(21)
    info = np.iinfo(dtype)
    for i in range(24):
        n = int(rng.choice([1, 7, 8, 9, 63, 200, 1001]))
        scale = float(np.float32(2.0 ** rng.uniform(-12, 4)))
        zp = int(rng.choice([info.min, info.max, rng.integers(info.min, info.max + 1)]))
        steps = rng.integers(-300, 300, n) + rng.choice([0.5, 0.0, 0.25, -0.5], n)
        x = (steps * scale).astype(np.float32)
        near = rng.random(n) < 0.3
        x[near] = np.nextafter(x[near], np.float32(rng.choice([-np.inf, np.inf])))
        specials = np.array([np.nan, np.inf, -np.inf, 3e38, -3e38, 2.0**31 * scale, -2.0**31 * scale,
                             0.5 * scale, -0.5 * scale, -0.0], np.float32)
        x[:min(n, specials.size)] = specials[:min(n, specials.size)]
        lo, hi = (int(info.min), int(info.max)) if i % 3 else (int(info.min) + 5, int(info.max) - 9)
        want = _qs8.quantize(0, x, scale, zp, form=form, out_dtype=dtype, lo=lo, hi=hi)
        assert np.array_equal(want.astype(np.int64), quantize_reference(x, scale, zp, form, lo, hi)), (i, n)
        for v in VARIANTS:
            got = _qs8.quantize(v, x, scale, zp, form=form, out_dtype=dtype, lo=lo, hi=hi,
                                chunk=[0, 9, 64][i % 3])
            assert np.array_equal(got, want), (v, i, n, scale, zp)


def test_quantize_ties_at_many_scales():
    """The SIMD DIVIDE form rounds the product x * (1/s) and corrects it by the exact sign of
    (n +- 1/2) * s - x: at 400 scales (any mantissa, 2^-40 .. 2^40 and near the float limits)
    inputs on, beside and between the exact ties x = (k + 1/2) * s, and quotients up to and past
    2^21 (where the product form hands over to the division), agree with the scalar one."""
    rng = np.random.default_rng(5)
    scales = np.concatenate([np.float32(2.0 ** rng.uniform(-40, 40, 396)),
                             np.float32([3.0e38, 1.0e-38, 1.2e-38, 7.0e-3])])
    for i, scale in enumerate(scales):
        scale = float(scale)
        k = np.concatenate([rng.integers(-400, 400, 160), rng.integers(-2**22, 2**22, 40)]) + 0.5
        with np.errstate(over="ignore", under="ignore"):
            x = np.float32(k * scale)
            x = np.concatenate([x, np.nextafter(x, np.float32(np.inf)), np.nextafter(x, np.float32(-np.inf)),
                                np.float32(rng.uniform(-300, 300, 64) * scale)])
        x = x[np.isfinite(x)]
        zp = int(rng.integers(-128, 128))
        want = _qs8.quantize(0, x, scale, zp, form="DIVIDE", out_dtype=np.int8, lo=-128, hi=127)
        for v in VARIANTS:
            got = _qs8.quantize(v, x, scale, zp, form="DIVIDE", out_dtype=np.int8, lo=-128, hi=127)
            assert np.array_equal(got, want), (v, i, scale, x[got != want][:4])


def test_the_testers_refuse_op_codes_past_their_enums():
    """flex_testing.h's FLEX_BINARY_* / FLEX_LUT_* are the only codes the testers take; the
    Python names come from them, and a code past either enum is refused, not indexed."""
    assert set(_qs8.BINARY_OPS) == {"ADD", "SUB", "MUL", "PRELU"}
    assert {"REQUANTIZE", "RELU6", "GELU_APPROX", "CONCAT_REQUANT"} <= set(_qs8.LUT_KINDS)
    lib, ffi = testing.lib, testing.ffi
    x = np.zeros(8, np.int8)
    y = np.empty_like(x)
    d = ffi.new("int[]", [8])
    px, py = ffi.from_buffer("int8_t[]", x), ffi.from_buffer("int8_t[]", y)
    for op in (-1, max(_qs8.BINARY_OPS.values()) + 1):
        assert lib.flex_qs8_binary_run(0, op, 0, 0.1, 0, 0.1, 0, 0.1, 0, 0, 1, d, 1, d, px, px, py,
                                       _qs8.STOCK_PORTABLE, 0, 1, ffi.NULL) == -1
    for kind in (-1, max(_qs8.LUT_KINDS.values()) + 1):
        assert lib.flex_qs8_lut_op_run(0, kind, 0, 0, 0.1, 0, 0.1, 0, 0.0, 8, px, py,
                                       _qs8.STOCK_PORTABLE, 0, 1, ffi.NULL) == -1
    assert lib.flex_qs8_binary_run(0, _qs8.BINARY_OPS["ADD"], 0, 0.1, 0, 0.1, 0, 0.1, 0, 0, 1, d, 1, d, px, px,
                                   py, _qs8.STOCK_PORTABLE, 0, 1, ffi.NULL) == 0
