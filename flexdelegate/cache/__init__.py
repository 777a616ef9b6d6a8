"""The packed-weight cache file (format: FORMAT.md in this directory): a validating reader,
the Python reference writer, and the tools behind `flexdelegate cache` (info, verify, prune)."""
from .format import (CacheError, CacheFile, CacheOpenError, Entry, build_cache, read_cache,
                     verify_blobs, write_cache)
from .tools import info, prune, verify

__all__ = ["CacheError", "CacheOpenError", "CacheFile", "Entry", "read_cache", "verify_blobs",
           "write_cache", "build_cache", "info", "verify", "prune"]
