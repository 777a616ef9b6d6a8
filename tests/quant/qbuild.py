"""Single-op quantized .tflite models from flexdelegate's own writer, and a runner on whichever
stock interpreter is installed (tflite-runtime or ai-edge-litert), default delegates off."""
import numpy as np

from flexdelegate.tflite.writer import ModelBuilder

try:
    from tflite_runtime.interpreter import Interpreter, OpResolverType
    RUNTIME = "tflite-runtime"
except ImportError:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    RUNTIME = "ai-edge-litert"


def run_stock(data, x):
    it = Interpreter(model_content=data,
                     experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


def _io(b, x_shape, out_shape, dtype, s_in, z_in, s_out, z_out):
    x = b.input(x_shape, dtype=dtype, scale=[s_in], zero_point=[z_in])
    y = b.tensor(out_shape, dtype=dtype, scale=[s_out], zero_point=[z_out])
    return x, y


def _weights(b, w, s_w, z_w, dim):
    s_w = np.atleast_1d(np.asarray(s_w, np.float32))
    z_w = np.broadcast_to(np.atleast_1d(z_w), s_w.shape)
    return b.const(w, scale=s_w, zero_point=z_w, quantized_dimension=dim), s_w


def _bias(b, bias, s_in, s_w):
    # bias scale = input scale * weight scale (the converter's; uint8 kernels check it)
    s_b = (np.float32(s_in) * s_w).astype(np.float32)
    return b.const(np.asarray(bias, np.int32), scale=s_b, zero_point=np.zeros(s_b.shape, np.int64))


def conv_model(x_shape, w, bias, out_shape, q, stride=(1, 1), dilation=(1, 1), padding="SAME",
               act="NONE"):
    """q: dict s_in z_in s_w z_w s_out z_out; w [cout,kh,kw,cin] int8 (per-channel s_w) or uint8."""
    b = ModelBuilder()
    x, y = _io(b, x_shape, out_shape, w.dtype, q["s_in"], q["z_in"], q["s_out"], q["z_out"])
    wi, s_w = _weights(b, w, q["s_w"], q.get("z_w", 0), 0)
    b.op("CONV_2D", [x, wi, _bias(b, bias, q["s_in"], s_w)], [y], padding=padding,
         stride_h=stride[0], stride_w=stride[1], dilation_h_factor=dilation[0],
         dilation_w_factor=dilation[1], fused_activation_function=act)
    b.output(y)
    return b.build()


def dw_model(x_shape, w, bias, out_shape, q, mult=1, stride=(1, 1), dilation=(1, 1),
             padding="SAME", act="NONE"):
    """w [1,kh,kw,cout]; per-channel scales on dimension 3."""
    b = ModelBuilder()
    x, y = _io(b, x_shape, out_shape, w.dtype, q["s_in"], q["z_in"], q["s_out"], q["z_out"])
    wi, s_w = _weights(b, w, q["s_w"], q.get("z_w", 0), 3)
    b.op("DEPTHWISE_CONV_2D", [x, wi, _bias(b, bias, q["s_in"], s_w)], [y], padding=padding,
         stride_h=stride[0], stride_w=stride[1], dilation_h_factor=dilation[0],
         dilation_w_factor=dilation[1], depth_multiplier=mult, fused_activation_function=act)
    b.output(y)
    return b.build()


def fc_model(x_shape, w, bias, q, act="NONE"):
    """w [n][k]; s_w of length 1 (per tensor) or n (per channel)."""
    b = ModelBuilder()
    out_shape = (int(np.prod(x_shape[:-1])), w.shape[0])
    x, y = _io(b, x_shape, out_shape, w.dtype, q["s_in"], q["z_in"], q["s_out"], q["z_out"])
    wi, s_w = _weights(b, w, q["s_w"], q.get("z_w", 0), 0)
    b.op("FULLY_CONNECTED", [x, wi, _bias(b, bias, q["s_in"], s_w)], [y],
         fused_activation_function=act)
    b.output(y)
    return b.build()
