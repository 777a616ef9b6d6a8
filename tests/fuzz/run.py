"""Runs one fuzz target under atheris (libFuzzer for Python).

    python tests/fuzz/run.py cache --seconds 90 --corpus /tmp/fz/cache        # CI: bounded
    python tests/fuzz/run.py graph --seconds 36000 --corpus ~/fuzz/graph      # by hand, for hours

Targets: cache (cache file loader, C and Python), plan (plan file reader), graph (the
delegate's graph translation). The committed seeds and regressions in tests/fuzz/corpus/<target>
are copied into the --corpus directory first, which keeps what the run adds (new coverage).
A finding stops the run with exit status 1 and leaves the input as crash-<sha1> in
--artifacts (default: the current directory): copy it into tests/fuzz/corpus/<target>/ so
that tests/fuzz/test_corpus.py replays it from then on. Under a sanitizer build, run it with
the sanitizer runtime preloaded (tests/sanitize/README.md)."""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1])]

MAX_LEN = {"cache": 1 << 18, "plan": 1 << 16, "graph": 1 << 17}


def make_target(name: str):
    if name == "cache":
        import cache_target as m
        return m.CacheTarget(), m.mutate
    if name == "plan":
        import plan_target as m
        return m.PlanTarget(), m.mutate
    import graph_target as m
    return m.GraphTarget(), m.mutate


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("target", choices=sorted(MAX_LEN))
    ap.add_argument("--seconds", type=int, default=60, help="stop after this long (default 60)")
    ap.add_argument("--corpus", required=True, help="working corpus directory (created; the seeds are copied in)")
    ap.add_argument("--artifacts", default=".", help="where crash files go (default: .)")
    ap.add_argument("--keep-going", action="store_true",
                    help="record each finding as finding-<sha1> (+ .txt) in --artifacts and go on")
    ap.add_argument("libfuzzer", nargs="*", help="extra libFuzzer flags, after --")
    args = ap.parse_args(argv)

    import atheris

    seeds = HERE / "corpus" / args.target
    corpus = Path(args.corpus)
    corpus.mkdir(parents=True, exist_ok=True)
    for f in seeds.iterdir():
        if f.is_file() and not (corpus / f.name).exists():
            shutil.copy(f, corpus / f.name)

    target, mutate = make_target(args.target)
    started, state = time.monotonic(), {"n": 0, "last": time.monotonic()}

    from oracle import Finding, feedback

    def one_input(data: bytes):
        try:
            target.check(data)
        except Finding as e:
            if not args.keep_going:
                raise
            name = Path(args.artifacts) / f"finding-{hashlib.sha1(data).hexdigest()}"
            name.write_bytes(data)
            name.with_suffix(".txt").write_text(str(e) + "\n")
            print(f"[{args.target}] finding kept as {name}: {str(e).splitlines()[0][:200]}", flush=True)
            target.signature = f"finding|{e}"[:200]
        feedback(target.signature)
        state["n"] += 1
        now = time.monotonic()
        if now - state["last"] > 30:
            state["last"] = now
            print(f"[{args.target}] {state['n']} executions in {now - started:.0f} s: {target.counts}", flush=True)

    flags = [f"-max_total_time={args.seconds}", "-timeout=900", "-rss_limit_mb=4096", f"-max_len={MAX_LEN[args.target]}",
             f"-artifact_prefix={os.path.join(args.artifacts, '')}", "-print_final_stats=1", *args.libfuzzer]
    def crossover(data1: bytes, data2: bytes, max_size: int, seed: int) -> bytes:
        # libFuzzer's own crossover splices bytes (a broken model or plan, mostly): mutate one
        # parent the structured way instead.
        return mutate(data2 if seed & 1 else data1, max_size, seed >> 1)

    atheris.Setup([sys.argv[0], *flags, str(corpus)], one_input, custom_mutator=mutate, custom_crossover=crossover)
    atheris.Fuzz()  # exits the process itself: libFuzzer prints "Done N runs in S second(s)"
    return 0


if __name__ == "__main__":
    sys.exit(main())
