"""Several processes sharing one packed-weight cache file: its pages are in memory once.

    python examples/shared_cache.py [MODEL.tflite] [--processes N]

The first load packs the weights and writes the cache file; every later load, in any process,
maps it read-only and computes from it in place. Each worker reports the cache mapping's RSS
(pages it touches) and PSS (its fair share: RSS divided among the processes mapping them),
read from /proc/self/smaps while all of them are alive."""
import argparse
import multiprocessing as mp
import os
import tempfile

import numpy as np


def mapping_kb(path: str) -> tuple[int, int]:
    """(Rss, Pss) in kB of this process's mappings of `path`."""
    rss = pss = 0
    current = None
    with open("/proc/self/smaps") as f:
        for line in f:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5:  # a mapping's header line
                current = fields[5] if len(fields) > 5 else None
            elif current == path and fields[0] in ("Rss:", "Pss:"):
                if fields[0] == "Rss:":
                    rss += int(fields[1])
                else:
                    pss += int(fields[1])
    return rss, pss


def worker(model, cache, barrier, results):
    from flexdelegate import load_flex
    from flexdelegate.runtime import detect
    d = load_flex(cache_path=cache, num_threads=1)
    it = detect().Interpreter(model_path=model, experimental_delegates=[d])
    it.allocate_tensors()
    inp = it.get_input_details()[0]
    it.set_tensor(inp["index"], np.ones(inp["shape"], np.float32))
    it.invoke()
    d.stats()  # waits for a background cache write (a cold load's), so weights come from the file
    it.invoke()  # computes from the mapping: its pages are resident in this process now
    barrier.wait()  # everyone has the file mapped and its pages touched
    results.put((os.getpid(), *mapping_kb(os.path.realpath(cache))))
    barrier.wait()  # stay alive until everyone has read its figures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", nargs="?", help=".tflite model (default: the embedded demo CNN)")
    ap.add_argument("--processes", type=int, default=4)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp()
    model = args.model
    if model is None:
        from flexdelegate.tflite.demo_model import build_demo_model
        model = os.path.join(tmp, "demo.tflite")
        with open(model, "wb") as f:
            f.write(build_demo_model())
    cache = os.path.join(tmp, "shared.fxc")

    ctx = mp.get_context("spawn")
    one, sink = ctx.Barrier(1), ctx.Queue()
    warm = ctx.Process(target=worker, args=(model, cache, one, sink))
    warm.start()  # the cold load: packs and writes the file
    warm.join()
    barrier, results = ctx.Barrier(args.processes), ctx.Queue()
    procs = [ctx.Process(target=worker, args=(model, cache, barrier, results)) for _ in range(args.processes)]
    for p in procs:
        p.start()
    rows = [results.get(timeout=300) for _ in procs]
    for p in procs:
        p.join()
    print(f"cache file {cache}: {os.path.getsize(cache) / 1024:.0f} kB")
    for pid, rss, pss in rows:
        print(f"  process {pid}: cache mapping RSS {rss} kB, PSS {pss} kB")
    total_rss, total_pss = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"  all {len(rows)}: RSS {total_rss} kB, PSS {total_pss} kB (one copy in memory, shared)")


if __name__ == "__main__":
    main()
