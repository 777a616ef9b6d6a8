"""`flexdelegate demo`: runs a model (default: the embedded demo CNN, built on the fly) on the
stock interpreter and with flexdelegate, and prints agreement, coverage, latency and memory."""
from __future__ import annotations

from .. import load_flex
from ..memstat import rss_bytes
from ..run import invoke, make_interpreter, max_error, random_inputs, time_invokes
from ..tflite.demo_model import build_demo_model
from . import common


def main(argv=None) -> int:
    ap = common.parser("flexdelegate demo", __doc__, model_help=".tflite file (default: embedded demo CNN)",
                       optional_model=True, iterations=20)
    return common.main(ap, _run, argv)


def _run(args) -> int:
    common.check_options(num_threads=args.threads)
    model = args.model or build_demo_model(seed=0)
    name = args.model or "embedded demo CNN (MobileNetV2-style, 64x64x3 -> 10)"

    rss0 = rss_bytes()
    stock = make_interpreter(model, stock="reference", num_threads=args.threads)
    rss_stock = rss_bytes() - rss0
    inputs = random_inputs(stock)
    ref = invoke(stock, inputs)

    rss0 = rss_bytes()
    delegate = load_flex(num_threads=args.threads)
    flex = make_interpreter(model, delegate=delegate, num_threads=args.threads)
    rss_flex = rss_bytes() - rss0
    got = invoke(flex, inputs)
    st = delegate.stats()

    t_stock = time_invokes(stock, inputs, args.iterations)
    t_flex = time_invokes(flex, inputs, args.iterations)
    err = max_error(ref, got)
    print(f"model:        {name}")
    print(f"runtime:      {delegate.runtime.name}, {args.threads} thread(s), kernel {st['gemm_kernel']}")
    print(f"delegated:    {st['nodes_delegated']}/{st['nodes_total']} nodes in {st['partitions']} partition(s)")
    for f in st["fallback"]:
        print(f"  fallback:   node {f['node']} {f['op']}: {f['reason']}")
    print(f"agreement:    max |err| / max(1, |ref|) = {err:.2e} ({'OK' if err <= 1e-4 else 'MISMATCH'})")
    print(f"latency:      stock {t_stock.median:.3f} ms, flexdelegate {t_flex.median:.3f} ms (median of {args.iterations})")
    print(f"memory:       stock +{rss_stock / 2**20:.1f} MB RSS at load, flexdelegate +{rss_flex / 2**20:.1f} MB")
    return 0 if err <= 1e-4 else 1
