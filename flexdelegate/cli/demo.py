"""`flexdelegate demo`: runs a model (default: the embedded demo CNN, built on the fly) with
flexdelegate and with what apps get without it — the runtime's default interpreter, XNNPack
included — and prints agreement, coverage, latency and memory.

Agreement is measured against TFLite's reference kernels (no delegate at all) for both, and
flexdelegate passes when it strays from them no more than AGREE_FACTOR x as far as XNNPack
itself does on that model (and always within AGREE_FLOOR): float kernels that reorder sums
differ from the reference by an amount that depends on the model, not on a fixed number."""
from __future__ import annotations

from .. import load_flex
from ..memstat import rss_bytes
from ..run import invoke, make_interpreter, max_error, random_inputs, time_invokes
from ..tflite.demo_model import build_demo_model
from . import common

AGREE_FLOOR = 1e-4  # max |err| / max(1, |ref|) always accepted
AGREE_FACTOR = 4.0  # times XNNPack's own error against the reference


def agreement_tolerance(xnnpack_err: float) -> float:
    """The largest error of flexdelegate against the reference kernels that still agrees."""
    return max(AGREE_FLOOR, AGREE_FACTOR * xnnpack_err)


def main(argv=None) -> int:
    ap = common.parser("flexdelegate demo", __doc__, model_help=".tflite file (default: embedded demo CNN)",
                       optional_model=True, iterations=20, warmup=True, raw=True)
    return common.main(ap, _run, argv)


def _loaded(make):
    """(interpreter, RSS it added through load and its first invoke)."""
    rss0 = rss_bytes()
    it, out = make()
    return it, out, rss_bytes() - rss0


def _run(args) -> int:
    common.check_options(num_threads=args.threads)
    model = args.model or build_demo_model(seed=0)
    name = args.model or "embedded demo CNN (MobileNetV2-style, 64x64x3 -> 10)"

    reference = make_interpreter(model, stock="reference", num_threads=args.threads)
    inputs = random_inputs(reference)
    ref = invoke(reference, inputs)

    def default():
        it = make_interpreter(model, stock="xnnpack", num_threads=args.threads)
        return it, invoke(it, inputs)

    def flexed():
        it = make_interpreter(model, delegate=delegate, num_threads=args.threads)
        return it, invoke(it, inputs)

    xnn, xnn_out, rss_xnn = _loaded(default)
    delegate = load_flex(num_threads=args.threads)
    flex, flex_out, rss_flex = _loaded(flexed)
    st = delegate.stats()

    t_xnn = time_invokes(xnn, inputs, args.iterations, warmup=args.warmup_runs)
    t_flex = time_invokes(flex, inputs, args.iterations, warmup=args.warmup_runs)
    err, xnn_err = max_error(ref, flex_out), max_error(ref, xnn_out)
    tol = agreement_tolerance(xnn_err)
    ok = err <= tol
    print(f"model:        {name}")
    print(f"runtime:      {delegate.runtime.name}, {args.threads} thread(s), kernel {st['gemm_kernel']}")
    print(f"delegated:    {st['nodes_delegated']}/{st['nodes_total']} nodes in {st['partitions']} partition(s)")
    for f in st["fallback"]:
        print(f"  fallback:   node {f['node']} {f['op']}: {f['reason']}")
    print(f"agreement:    max |err| / max(1, |ref|) against TFLite's reference kernels: flexdelegate {err:.2e}, "
          f"TFLite default (XNNPack) {xnn_err:.2e} -> {'OK' if ok else 'MISMATCH'} "
          f"(tolerance {tol:.1e} = max({AGREE_FLOOR:g}, {AGREE_FACTOR:g} x XNNPack's))")
    print(f"latency:      TFLite default (XNNPack) {t_xnn.median:.3f} ms, flexdelegate {t_flex.median:.3f} ms "
          f"(flexdelegate {t_xnn.median / t_flex.median:.2f}x as fast; median of {args.iterations})")
    print(f"memory:       TFLite default (XNNPack) +{rss_xnn / 2**20:.1f} MB RSS through load and first invoke, "
          f"flexdelegate +{rss_flex / 2**20:.1f} MB")
    return 0 if ok else 1
