"""The `flexdelegate` command: demo, cache, profile, bench, plan."""
from __future__ import annotations

import sys

COMMANDS = {
    "demo": "run a model on stock TFLite and on flexdelegate; print agreement, latency, memory",
    "cache": "inspect, verify or prune packed-weight cache files (.fxc)",
    "profile": "load cost, memory ranges and latency per stage, and the slowest ops",
    "bench": "latency of flexdelegate against stock TFLite with XNNPack, alternating",
    "plan": "how a model runs under a memory budget: kernels, slices, preloads (and a picture)",
}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        print("usage: flexdelegate COMMAND [args]\n\ncommands:")
        for name, text in COMMANDS.items():
            print(f"  {name:10s} {text}")
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    if argv[0] == "demo":
        from .demo import main as demo
        return demo(argv[1:])
    if argv[0] == "cache":
        return cache_main(argv[1:])
    if argv[0] == "profile":
        from .profile import main as profile
        return profile(argv[1:])
    if argv[0] == "bench":
        from .bench_cmd import main as bench
        return bench(argv[1:])
    if argv[0] == "plan":
        from .plan_cmd import main as plan
        return plan(argv[1:])
    return 2


def _size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} bytes" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024


def cache_main(argv) -> int:
    """`flexdelegate cache info|verify|prune`. Exit 0 ok, 1 damaged file, 2 usage error or a
    path that is not a regular file; errors are one line on stderr, never a traceback."""
    import argparse
    import json

    from .cache import CacheError, CacheOpenError, info, prune, verify

    ap = argparse.ArgumentParser(prog="flexdelegate cache", description=cache_main.__doc__)
    sub = ap.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = sub.add_parser("info", help="header figures of a cache file")
    p.add_argument("file")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p = sub.add_parser("verify", help="validate a cache file and every blob checksum")
    p.add_argument("file")
    p = sub.add_parser("prune", help="remove least recently used .fxc files down to a size")
    p.add_argument("dir")
    p.add_argument("--max-size", type=float, required=True, metavar="MB", help="MiB to keep")
    args = ap.parse_args(argv)  # usage errors exit 2 with a usage line

    def fail(message: str, code: int) -> int:
        print(f"flexdelegate cache {args.action}: error: {message}", file=sys.stderr)
        return code

    try:
        if args.action == "info":
            figures = info(args.file)
            if args.json:
                print(json.dumps(figures, indent=2))
                return 0
            algos = ", ".join(f"{a:#x} x{n}" for a, n in figures["algos"].items()) or "none"
            print(f"file:              {args.file}")
            print(f"format version:    {figures['format_version']}")
            print(f"producer:          {figures['producer']}")
            print(f"file size:         {_size(figures['file_size'])}")
            print(f"blobs:             {figures['blob_count']} ({_size(figures['blob_bytes'])})")
            print(f"models served:     {figures['models_served']}")
            print(f"dedup saved:       {_size(figures['dedup_saved_bytes'])}")
            print(f"packing algos:     {algos}")
            return 0
        if args.action == "verify":
            ok, problems = verify(args.file)
            if ok:
                print(f"{args.file}: OK")
                return 0
            for problem in problems:
                print(problem)  # each starts with the path
            return 1
        if not args.max_size >= 0:  # also NaN
            return fail(f"--max-size must be >= 0, got {args.max_size}", 2)
        removed = prune(args.dir, args.max_size)
        for path in removed:
            print(f"removed {path}")
        print(f"{len(removed)} file(s) removed")
        return 0
    except CacheOpenError as e:
        return fail(str(e), 2)
    except CacheError as e:
        return fail(str(e), 1)
    except OSError as e:
        where = f"{e.filename}: " if e.filename is not None else ""
        return fail(f"{where}{e.strerror or e}", 2)
