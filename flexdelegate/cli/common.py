"""What the commands share: their parser with the common arguments (model, --threads,
--iterations, --runtime) and the way they run (the checks made before any work: a readable
TFLite file, options load_flex accepts; one-line errors with their exit codes), progress on a
terminal and the figures' formatting."""
from __future__ import annotations

import argparse
import os
import sys
import time

from ..runtime import RUNTIMES


class CommandError(Exception):
    """A one-line problem a command reports without a traceback (exit `code`, 2 by default)."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


def parser(prog: str, description: str, *, model_help: str = ".tflite file", optional_model: bool = False,
           threads_help: str = "worker threads", iterations: int | None = None,
           iterations_help: str = "timed invokes", warmup: bool = False, raw: bool = False) -> argparse.ArgumentParser:
    """A command's parser with what every command takes: the model, --threads, --runtime,
    --version, and --iterations (default `iterations`) when it times invokes, --warmup_runs when
    it warms up. TFLite's benchmark_model spellings are accepted too (--num_threads, --num_runs)."""
    from .. import __version__
    ap = argparse.ArgumentParser(prog=prog, description=description,
                                 formatter_class=argparse.RawDescriptionHelpFormatter if raw else argparse.HelpFormatter)
    ap.add_argument("model", nargs="?" if optional_model else None, help=model_help)
    ap.add_argument("--threads", "--num_threads", dest="threads", type=int, default=1, metavar="N",
                    help=f"{threads_help} (default 1)")
    if iterations is not None:
        ap.add_argument("--iterations", "--num_runs", dest="iterations", type=int, default=iterations, metavar="K",
                        help=f"{iterations_help} (default {iterations})")
    if warmup:
        ap.add_argument("--warmup_runs", type=int, default=2, metavar="W",
                        help="untimed invokes before timing, per engine (default 2)")
    ap.add_argument("--version", action="version", version=f"flexdelegate {__version__}")
    ap.add_argument("--runtime", choices=tuple(RUNTIMES), default=None,
                    help="the TFLite Python runtime (default: $FLEXDELEGATE_RUNTIME, else the first installed)")
    return ap


def main(ap: argparse.ArgumentParser, body, argv) -> int:
    """Parses argv (usage errors exit 2) and runs body(args) the commands' one way: the runtime
    chosen, --iterations at least 1 and the model checked before any work, failures as one line
    (run_command)."""
    def checked() -> int:
        args = ap.parse_args(argv)  # inside: --help into a closed pipe ends quietly too
        use_runtime(args.runtime)
        if getattr(args, "iterations", None) is not None:
            positive("--iterations", args.iterations)
        if getattr(args, "warmup_runs", 0) < 0:
            raise CommandError(f"--warmup_runs must be >= 0, got {args.warmup_runs}")
        if args.model:
            check_model(args.model)
        return body(args)
    return run_command(ap.prog, checked)


def use_runtime(name: str | None) -> None:
    """Makes runtime `name` (if given) the one this process and its workers load."""
    if name:
        os.environ["FLEXDELEGATE_RUNTIME"] = name


def positive(flag: str, value: int) -> None:
    if value < 1:
        raise CommandError(f"{flag} must be >= 1, got {value}")


def check_model(path: str) -> None:
    """CommandError unless `path` is a readable TFLite file (checked before any worker or
    interpreter, so a wrong path costs one clear line, not a runtime error from deep inside)."""
    from ..tflite.reader import read_model
    if not os.path.exists(path):
        raise CommandError(f"{path}: no such file")
    if not os.path.isfile(path):
        raise CommandError(f"{path}: {'is a directory, not a .tflite file' if os.path.isdir(path) else 'not a regular file'}")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise CommandError(f"{path}: {e.strerror or e}") from None
    try:
        read_model(data)
    except ValueError as e:
        raise CommandError(f"{path}: {e}") from None


def check_options(**options) -> None:
    """CommandError for option values load_flex rejects (e.g. --threads 0, --budget -5)."""
    from .. import load_flex
    try:
        load_flex(**{k: v for k, v in options.items() if v is not None})
    except (ValueError, RuntimeError, ImportError) as e:
        raise CommandError(str(e)) from None


def stdout_closed() -> int:
    """For `... | head`: the reader left; silence the interpreter's final flush, exit 1."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 1


def run_command(prog: str, body) -> int:
    """body()'s exit status, with the commands' one way of failing: CommandError as one line
    (its code), Ctrl-C as 130, a closed stdout as 1."""
    try:
        return body()
    except CommandError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return e.code
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return stdout_closed()


class Bar:
    """Progress on stderr, for humans only: draws nothing unless enabled (stderr a tty).
    With a total it is a bar (done/total); without, an elapsed-time ticker shown after 1 s."""

    def __init__(self, label: str, total: int | None = None, enabled: bool = False):
        self.label, self.total, self.enabled = label, total, enabled
        self.start = time.monotonic()
        self.drawn, self.next = False, 0.0

    def update(self, done: int = 0) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if (now < self.next and done != self.total) or (self.total is None and now - self.start < 1):
            return
        self.next = now + 0.2  # redraw sparingly: the loop being reported on matters more
        if self.total is None:
            text = f"{self.label} ... {now - self.start:.1f} s"
        else:
            filled = 30 * done // max(1, self.total)
            text = f"{self.label} [{'#' * filled}{'.' * (30 - filled)}] {done}/{self.total}"
        sys.stderr.write("\r" + text)
        sys.stderr.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def mib(n) -> str:
    return f"{n / 2**20:.1f}"


def duration(us: float) -> str:
    return f"{us / 1e6:.2f} s" if us >= 1e6 else f"{us / 1e3:.2f} ms" if us >= 1e3 else f"{us:.0f} us"


def size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} bytes" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
