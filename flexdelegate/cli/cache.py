"""`flexdelegate cache info|verify|prune`: the packed-weight cache files (.fxc) of
flexdelegate/cache, inspected, checked blob by blob, and trimmed."""
from __future__ import annotations

import argparse
import json
import time

from ..cache import CacheError, CacheOpenError, info, prune, verify
from .common import CommandError, run_command, size


def main(argv=None) -> int:
    """`flexdelegate cache info|verify|prune`. Exit 0 ok, 1 damaged file, 2 usage error or a
    path that is not a regular file; errors are one line on stderr, never a traceback."""
    ap = argparse.ArgumentParser(prog="flexdelegate cache", description=main.__doc__)
    sub = ap.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = sub.add_parser("info", help="header figures of a cache file and the models it serves "
                                     "(path as last seen: present, changed or gone)")
    p.add_argument("file", help="a .fxc cache file")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p = sub.add_parser("verify", help="validate a cache file and every blob checksum")
    p.add_argument("file", help="a .fxc cache file")
    p = sub.add_parser("prune", help="remove least recently used .fxc files down to a size, "
                                      "then orphan lock files and stale budget plans")
    p.add_argument("dir", nargs="?", default=None,
                   help="directory of .fxc files (default: $XDG_CACHE_HOME/flexdelegate, else ~/.cache/flexdelegate)")
    p.add_argument("--max-size", type=float, required=True, metavar="MB", help="MiB to keep")
    return run_command("flexdelegate cache", lambda: _run(ap.parse_args(argv)))  # usage errors: exit 2


def _model_line(m: dict) -> str:
    """One record of `cache info`: where the model was, whether it still is, what it holds."""
    if m["path"] is None:
        return f"unknown path: {m['weights']} weights (model {m['fingerprint']})"
    if m["size_bytes"] is None:
        recorded = "size not recorded"
    else:
        seen = time.strftime("%Y-%m-%d %H:%M", time.localtime(m["mtime_ns"] / 1e9))
        recorded = f"{size(m['size_bytes'])}, modified {seen}"
    return f"{m['path']}: {m['status']}, {recorded}, {m['weights']} weights"


def _run(args) -> int:
    try:
        if args.action == "info":
            figures = info(args.file)
            if args.json:
                print(json.dumps(figures, indent=2))
                return 0
            from ..cache.tools import algo_name
            algos = "; ".join(f"{algo_name(a)} x{n}" for a, n in figures["algos"].items()) or "none"
            print(f"file:              {args.file}")
            print(f"format version:    {figures['format_version']}")
            print(f"producer:          {figures['producer']}")
            print(f"file size:         {size(figures['file_size'])}")
            print(f"blobs:             {figures['blob_count']} ({size(figures['blob_bytes'])})")
            print(f"models served:     {figures['models_served']}")
            print(f"dedup saved:       {size(figures['dedup_saved_bytes'])}")
            print(f"packing algos:     {algos}")
            print("models (path as last seen):" if figures["models"] else "models:            none recorded")
            for m in figures["models"]:
                print(f"  {_model_line(m)}")
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
            raise CommandError(f"--max-size must be >= 0, got {args.max_size}")
        from ..cache.tools import default_dir, tidy
        directory = args.dir or default_dir()
        removed = prune(directory, args.max_size)
        for path in removed:
            print(f"removed {path}")
        print(f"{len(removed)} file(s) removed")
        tidied = tidy(directory)
        for path in tidied:
            print(f"removed {path}")
        if tidied:
            print(f"{len(tidied)} orphan lock file(s) and stale plan(s) removed")
        return 0
    except CacheOpenError as e:
        raise CommandError(str(e)) from None
    except CacheError as e:
        raise CommandError(str(e), code=1) from None
    except OSError as e:
        where = f"{e.filename}: " if e.filename is not None else ""
        raise CommandError(f"{where}{e.strerror or e}") from None
