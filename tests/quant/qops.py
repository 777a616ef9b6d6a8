"""Single-op quantized models of the element-wise integer ops (kernels/qs8-ops) from our own
writer, the stock interpreter run on them (all inputs; default delegates off), and which stock
arithmetic to reproduce: STOCK is the installed runtime's (quant_rounding.stock_arithmetic())."""
import numpy as np

from qbuild import Interpreter, OpResolverType

from flexdelegate import _native_testing as testing, _qs8, quant_rounding
from flexdelegate.tflite.writer import ModelBuilder

STOCK = quant_rounding.stock_arithmetic()
INFO = {np.int8: (-128, 127), np.uint8: (0, 255)}


def run_stock_inputs(data, xs, threads=None):
    it = Interpreter(model_content=data, num_threads=threads,
                     experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), xs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


def binary_model(op, a_shape, b_shape, dtype, qa, qb, qo, act="NONE"):
    """op of two inputs into their broadcast shape; act None: an op without options (PRELU)."""
    b = ModelBuilder()
    ta = b.input(a_shape, dtype=dtype, scale=[qa[0]], zero_point=[qa[1]])
    tb = b.input(b_shape, dtype=dtype, scale=[qb[0]], zero_point=[qb[1]])
    out = b.tensor(np.broadcast_shapes(a_shape, b_shape), dtype=dtype, scale=[qo[0]],
                   zero_point=[qo[1]])
    b.op(op, [ta, tb], [out], **({} if act is None else {"fused_activation_function": act}))
    b.output(out)
    return b.build()


def unary_model(op, shape, dtype, qi, qo, out_dtype=None, extra=(), **options):
    """op on one input (extra: further constant inputs' arrays)."""
    b = ModelBuilder()
    x = b.input(shape, dtype=dtype, scale=[qi[0]], zero_point=[qi[1]])
    out_shape = options.pop("out_shape", shape)
    y = b.tensor(out_shape, dtype=out_dtype or dtype, scale=[qo[0]], zero_point=[qo[1]])
    b.op(op, [x, *[b.const(e) for e in extra]], [y], **options)
    b.output(y)
    return b.build()


def rand_q(rng, dtype, scale_lo=1e-3, scale_hi=0.5):
    """A random (scale, zero point): log-uniform float32 scale, zero point anywhere in range."""
    lo, hi = INFO[dtype]
    s = np.float32(np.exp(rng.uniform(np.log(scale_lo), np.log(scale_hi))))
    return float(s), int(rng.integers(lo, hi + 1))


def rand_data(rng, shape, dtype):
    lo, hi = INFO[dtype]
    return rng.integers(lo, hi + 1, size=shape).astype(dtype)


def variants():
    return range(len(testing.variants("qs8-ops")))
