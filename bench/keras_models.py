"""Keras 3 definitions of the benchmark architectures beyond keras.applications. Plain
functional models with a fixed batch of 1 (and fixed sequence lengths), so the converter emits
static shapes; random weights (build_models.py seeds Keras before calling these). Imported only
by build_models.py, under the TensorFlow venv."""
import keras
from keras import layers


def application(cls, size, renorm=False):
    """A keras.applications model, as build_models.py has always made them (batch None, which the
    converter turns into batch 1 with shape_signature -1), so the quantized variants keep the
    graph of the FP32 files already in use."""
    model = getattr(keras.applications, cls)(weights=None, input_shape=(size, size, 3))
    return renormalize(model) if renorm else model


def renormalize(model, seed=0, batch=4):
    """Sets every BatchNormalization's moving mean and variance to the statistics of its input
    on random standard-normal images, in graph order. With random (Glorot) weights and the
    default statistics (0, 1), MobileNetV2-like nets shrink the signal ~8x per block: outputs
    of ~1e-9, softmax outputs all 1/1000, so INT8 calibration and error columns mean nothing.
    Afterwards each BN output has unit scale, as in a trained net."""
    shape = [batch if d is None or i == 0 else d for i, d in enumerate(model.inputs[0].shape)]
    x = keras.random.normal(shape, seed=seed)
    for bn in [lay for lay in model.layers if isinstance(lay, layers.BatchNormalization)]:
        probe = keras.Model(model.inputs, bn.input)
        h = keras.ops.convert_to_numpy(probe(x))
        axes = tuple(range(h.ndim - 1))
        bn.moving_mean.assign(h.mean(axis=axes))
        bn.moving_variance.assign(h.var(axis=axes))
    return model


# ------------------------------------------------------------------------------ transformers

class Positions(layers.Layer):
    """Adds a learned position embedding to a (1, n, width) sequence, after prepending a learned
    class token if asked (ViT). A layer of its own because functional Keras has no free weights."""

    def __init__(self, class_token=False, **kw):
        super().__init__(**kw)
        self.class_token = class_token

    def build(self, shape):
        init = keras.initializers.RandomNormal(stddev=0.02)
        n, width = shape[1] + int(self.class_token), shape[2]
        self.pos = self.add_weight(shape=(1, n, width), initializer=init, name="pos")
        if self.class_token:
            self.cls = self.add_weight(shape=(1, 1, width), initializer=init, name="cls")

    def call(self, x):
        if self.class_token:
            x = keras.ops.concatenate([keras.ops.tile(self.cls, (keras.ops.shape(x)[0], 1, 1)), x], axis=1)
        return x + self.pos


class TiedLogits(layers.Layer):
    """GPT-2's output projection: logits = x @ E^T with E the token embedding (no second copy of
    the 50257 x 768 table)."""

    def __init__(self, embedding, **kw):
        super().__init__(**kw)
        self.embedding = embedding

    def call(self, x):
        return keras.ops.matmul(x, keras.ops.transpose(self.embedding.embeddings))


def gelu_tanh(x):
    return keras.activations.gelu(x, approximate=True)


def _block(x, width, heads, mlp, pre_norm, eps, causal=False, act="gelu"):
    """One encoder/decoder block: MultiHeadAttention and a 2-layer MLP, each with a residual;
    pre-norm (ViT, GPT-2) or post-norm (BERT)."""
    def attend(h):
        return layers.MultiHeadAttention(heads, width // heads)(h, h, use_causal_mask=causal)

    def mlp_(h):
        return layers.Dense(width)(layers.Dense(mlp, activation=act)(h))

    norm = lambda h: layers.LayerNormalization(epsilon=eps)(h)  # noqa: E731
    if pre_norm:
        x = layers.Add()([x, attend(norm(x))])
        return layers.Add()([x, mlp_(norm(x))])
    x = norm(layers.Add()([x, attend(x)]))
    return norm(layers.Add()([x, mlp_(x)]))


def vit(depth, width, heads, mlp, size=224, patch=16, classes=1000):
    """ViT: 16x16 patches by a strided conv, class token + position embedding, pre-norm blocks,
    classifier on the class token."""
    inp = keras.Input(batch_shape=(1, size, size, 3), name="image")
    x = layers.Conv2D(width, patch, strides=patch)(inp)
    x = Positions(class_token=True)(layers.Reshape(((size // patch) ** 2, width))(x))
    for _ in range(depth):
        x = _block(x, width, heads, mlp, pre_norm=True, eps=1e-6)
    x = layers.LayerNormalization(epsilon=1e-6)(x)
    return keras.Model(inp, layers.Dense(classes)(x[:, 0]))


def bert(depth, width, heads, mlp, seq=128, vocab=30522):
    """BERT encoder: int32 token ids -> token + position embedding, LayerNorm, post-norm blocks
    (erf GELU); outputs the last hidden states (1, seq, width)."""
    ids = keras.Input(batch_shape=(1, seq), dtype="int32", name="input_ids")
    x = layers.LayerNormalization(epsilon=1e-12)(Positions()(layers.Embedding(vocab, width)(ids)))
    for _ in range(depth):
        x = _block(x, width, heads, mlp, pre_norm=False, eps=1e-12)
    return keras.Model(ids, x)


def gpt2(depth, width, heads, seq=128, vocab=50257):
    """GPT-2: token + position embedding, pre-norm causal blocks (tanh GELU, MLP 4x width),
    final LayerNorm, logits over the vocabulary by the tied embedding: (1, seq, vocab)."""
    ids = keras.Input(batch_shape=(1, seq), dtype="int32", name="input_ids")
    emb = layers.Embedding(vocab, width)
    x = Positions()(emb(ids))
    for _ in range(depth):
        x = _block(x, width, heads, 4 * width, pre_norm=True, eps=1e-5, causal=True, act=gelu_tanh)
    return keras.Model(ids, TiedLogits(emb)(layers.LayerNormalization(epsilon=1e-5)(x)))


# ------------------------------------------------------------------------------ other CNNs

def _conv_bn(x, filters, kernel=3, strides=1, dilation=1, act="relu"):
    x = layers.Conv2D(filters, kernel, strides=strides, dilation_rate=dilation, padding="same",
                      use_bias=False)(x)
    x = layers.BatchNormalization()(x)
    return layers.Activation(act)(x) if act else x


def unet(size=256, base=32, depth=4, classes=2):
    """U-Net: `depth` blocks of two 3x3 convs + max pool (base, 2*base, ... filters), a
    bottleneck, and a decoder of 2x2 stride-2 transposed convs, skip concatenations and two 3x3
    convs each; per-pixel class scores. base 32: 7.8M params."""
    inp = keras.Input(batch_shape=(1, size, size, 3), name="image")

    def convs(x, f):
        for _ in range(2):
            x = layers.Conv2D(f, 3, padding="same", activation="relu")(x)
        return x

    x, skips = inp, []
    for i in range(depth):
        skips.append(convs(x, base << i))
        x = layers.MaxPooling2D()(skips[-1])
    x = convs(x, base << depth)
    for i in reversed(range(depth)):
        x = layers.Conv2DTranspose(base << i, 2, strides=2)(x)
        x = convs(layers.Concatenate()([x, skips[i]]), base << i)
    return keras.Model(inp, layers.Conv2D(classes, 1)(x))


def deeplab(size=256, classes=21):
    """DeepLabv3+-style: a ResNet-18-like backbone whose last stage is atrous (dilation 2
    instead of stride 2: output stride 16), ASPP (1x1, 3x3 at dilations 6/12/18, image pooling),
    a decoder joining the stride-4 features, and bilinear upsampling (RESIZE_BILINEAR) to the
    input size."""
    inp = keras.Input(batch_shape=(1, size, size, 3), name="image")

    def basic(x, f, strides=1, dilation=1):
        short = x
        if strides != 1 or x.shape[-1] != f:
            short = _conv_bn(x, f, 1, strides, act=None)
        y = _conv_bn(x, f, 3, strides, dilation)
        y = _conv_bn(y, f, 3, 1, dilation, act=None)
        return layers.ReLU()(layers.Add()([y, short]))

    x = layers.MaxPooling2D(3, 2, padding="same")(_conv_bn(inp, 64, 7, 2))
    low = x = basic(basic(x, 64), 64)                      # stride 4
    x = basic(basic(x, 128, 2), 128)                       # stride 8
    x = basic(basic(x, 256, 2), 256)                       # stride 16
    x = basic(basic(x, 512, 1, 2), 512, 1, 2)              # atrous: still stride 16
    pool = _conv_bn(layers.GlobalAveragePooling2D(keepdims=True)(x), 256, 1)
    pool = layers.UpSampling2D(size // 16, interpolation="bilinear")(pool)
    aspp = [_conv_bn(x, 256, 1)] + [_conv_bn(x, 256, 3, dilation=r) for r in (6, 12, 18)]
    x = _conv_bn(layers.Concatenate()(aspp + [pool]), 256, 1)
    x = layers.UpSampling2D(4, interpolation="bilinear")(x)
    x = layers.Concatenate()([x, _conv_bn(low, 48, 1)])
    x = layers.Conv2D(classes, 1)(_conv_bn(_conv_bn(x, 256), 256))
    return keras.Model(inp, layers.UpSampling2D(4, interpolation="bilinear")(x))


def audio1d(samples=16000, classes=35):
    """1-D conv keyword classifier on a raw 1 s, 16 kHz waveform (M5-like, two convs per stage):
    a stride-4 80-tap conv, then 3-tap conv stages with 4x max pooling, global average pooling
    and a classifier. Conv1D reaches TFLite as EXPAND_DIMS + CONV_2D + RESHAPE."""
    inp = keras.Input(batch_shape=(1, samples, 1), name="waveform")
    x = layers.Conv1D(64, 80, strides=4, padding="same", activation="relu")(inp)
    x = layers.MaxPooling1D(4)(x)
    for f in (64, 128, 256, 512):
        for _ in range(2):
            x = layers.Conv1D(f, 3, padding="same", use_bias=False)(x)
            x = layers.ReLU()(layers.BatchNormalization()(x))
        x = layers.MaxPooling1D(4 if x.shape[1] >= 16 else 2)(x)
    return keras.Model(inp, layers.Dense(classes)(layers.GlobalAveragePooling1D()(x)))


def ssd_backbone(size=320, classes=91, anchors=6):
    """SSDLite-style detector without post-processing: MobileNetV2 features at stride 16
    (block_13_expand_relu) and 32, four extra stride-2 feature layers (1x1 then 3x3), and per
    scale a depthwise 3x3 + 1x1 class head and box head; outputs (1, N, classes) scores and
    (1, N, 4) box offsets."""
    inp = keras.Input(batch_shape=(1, size, size, 3), name="image")
    base = keras.applications.MobileNetV2(input_tensor=inp, weights=None, include_top=False)
    feats = [base.get_layer("block_13_expand_relu").output, base.output]
    x = base.output
    for f in (512, 256, 256, 128):
        x = layers.Conv2D(f // 2, 1, activation="relu6")(x)
        feats.append(layers.Conv2D(f, 3, strides=2, padding="same", activation="relu6")(x))
        x = feats[-1]

    def head(f, per_anchor):
        h = layers.ReLU(6.0)(layers.BatchNormalization()(layers.DepthwiseConv2D(3, padding="same")(f)))
        return layers.Reshape((-1, per_anchor))(layers.Conv2D(anchors * per_anchor, 1)(h))

    scores = layers.Concatenate(axis=1)([head(f, classes) for f in feats])
    boxes = layers.Concatenate(axis=1)([head(f, 4) for f in feats])
    return renormalize(keras.Model(inp, [scores, boxes]))
