"""The `flexdelegate` command: demo, cache, profile, bench, plan (one module each; what they
share is common.py)."""
from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "demo": "run a model on stock TFLite and on flexdelegate; print agreement, latency, memory",
    "cache": "inspect, verify or prune packed-weight cache files (.fxc)",
    "profile": "load cost, memory ranges and latency per stage, and the slowest ops",
    "bench": "latency of flexdelegate against stock TFLite with XNNPack, alternating",
    "plan": "how a model runs under a memory budget: kernels, slices, preloads (and a picture)",
}


def main(argv=None) -> int:
    from .common import run_command
    return run_command("flexdelegate", lambda: _dispatch(list(sys.argv[1:] if argv is None else argv)))


def _dispatch(argv: list) -> int:
    if argv[:1] == ["--version"]:
        from .. import __version__
        print(f"flexdelegate {__version__}")
        return 0
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        print("usage: flexdelegate [--version] COMMAND [args]  (COMMAND --help for its options)\n\ncommands:")
        for name, text in COMMANDS.items():
            print(f"  {name:10s} {text}")
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    return importlib.import_module(f".{argv[0]}", __name__).main(argv[1:])
