"""Plans cached on disk as JSON, keyed by graph content + budget + isa + threads.

Writes are atomic (temp file in the same directory + rename), so a reader sees a whole plan
or none; unreadable or mismatching entries are treated as missing."""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from .arena import plan as make_plan
from .graph import Graph
from .result import Plan

FORMAT = 1


def default_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "flexdelegate" / "plans"


def plan_key(graph: Graph, budget_bytes: int, isa: str = "", threads: int = 1,
             max_preload: int = 50) -> str:
    text = json.dumps([FORMAT, graph.key(), int(budget_bytes), isa, int(threads),
                       int(max_preload)])
    return hashlib.sha256(text.encode()).hexdigest()[:40]


class PlanCache:
    def __init__(self, directory: str | os.PathLike | None = None):
        self.dir = Path(directory) if directory is not None else default_dir()

    def path(self, key: str) -> Path:
        return self.dir / f"{key}.json"

    def get(self, graph: Graph, budget_bytes: int, isa: str = "", threads: int = 1,
            max_preload: int = 50) -> Plan | None:
        key = plan_key(graph, budget_bytes, isa, threads, max_preload)
        try:
            doc = json.loads(self.path(key).read_text())
            if doc.get("format") != FORMAT or doc.get("key") != key:
                return None
            p = Plan.from_dict(doc["plan"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None  # missing, truncated by a crash elsewhere, or from another version
        return p if p.graph_key == graph.key() else None

    def put(self, graph: Graph, p: Plan) -> Path:
        key = plan_key(graph, p.budget_bytes, p.isa, p.threads, p.max_preload)
        self.dir.mkdir(parents=True, exist_ok=True)
        doc = {"format": FORMAT, "key": key, "plan": p.to_dict()}
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=f".{key}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as f:
                # Streamed, never one string: a budgeted load plans (and saves) under its budget,
                # and json.dumps of a 1000-step plan peaks at ~3 MB of heap (this: ~0.8 MB).
                json.dump(doc, f, separators=(",", ":"))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path(key))
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        return self.path(key)


def cached_plan(graph: Graph, budget_bytes: int, threads: int = 1, isa: str = "",
                max_preload: int = 50, directory: str | os.PathLike | None = None) -> Plan:
    """plan() through the on-disk cache."""
    cache = PlanCache(directory)
    p = cache.get(graph, budget_bytes, isa, threads, max_preload)
    if p is None:
        p = make_plan(graph, budget_bytes, threads, isa, max_preload)
        try:
            cache.put(graph, p)
        except OSError:
            pass  # a read-only or full cache directory must not fail planning
    return p
