"""The `flexdelegate` command: demo (and later profile, plan, cache, bench)."""
from __future__ import annotations

import sys

COMMANDS = {
    "demo": "run a model on stock TFLite and on flexdelegate; print agreement, latency, memory",
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
    return 2
