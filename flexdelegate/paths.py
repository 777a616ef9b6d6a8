"""Where flexdelegate keeps its files by default: a module of its own, importing nothing of
the package, so a load reads it without the memory of the cache tools (a budget counts it)."""
import os


def default_dir() -> str:
    """Where the delegate keeps one cache file per model when no cache_path is given (the same
    rule as native/tflite/partition.c): $XDG_CACHE_HOME/flexdelegate, else ~/.cache/flexdelegate."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "flexdelegate")
