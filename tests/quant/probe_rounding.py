"""Which requantization rounding does the installed stock interpreter use, per op?

    python tests/quant/probe_rounding.py [cases]

Runs random single-op models (cases.py) on the stock interpreter and counts, for each NumPy
rounding model (qmodel.ROUNDINGS), the cases whose every output matches bit for bit."""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cases import make_case, multipliers  # noqa: E402
from qbuild import RUNTIME, run_stock  # noqa: E402
from qmodel import ROUNDINGS, finish  # noqa: E402

KINDS = [("conv", np.int8, None), ("dw", np.int8, None), ("fc", np.int8, False), ("fc", np.int8, True),
         ("conv", np.uint8, None), ("dw", np.uint8, None), ("fc", np.uint8, None)]


def probe(n_cases, seed=0):
    rng = np.random.default_rng(seed)
    table = {}
    for op, dtype, pc in KINDS:
        key = f"{op} {np.dtype(dtype).name}" + ("" if pc is None else (" per-channel" if pc else " per-tensor"))
        counts = {r: 0 for r in ROUNDINGS}
        ties = 0
        for i in range(n_cases):
            c = make_case(rng, op, dtype, dyadic=i % 2 == 0, per_channel=pc)
            got = run_stock(c["model"], c["x"])
            outs = {}
            for r in ROUNDINGS:
                m, s = multipliers(c, r == "single")
                outs[r] = finish(c["acc"], m, s, c["z_out"], c["lo"], c["hi"], r, c["dtype"])
                counts[r] += bool(np.array_equal(got.reshape(outs[r].shape), outs[r]))
            ties += not all(np.array_equal(outs["double"], o) for o in outs.values())
        table[key] = (counts, ties)
        print(f"{RUNTIME:15s} {key:24s} cases {n_cases}, rules disagree in {ties}: "
              + ", ".join(f"{r} {v}/{n_cases}" for r, v in counts.items()), flush=True)
    return table


if __name__ == "__main__":
    probe(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
