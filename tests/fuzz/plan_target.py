"""Fuzz target: the plan file reader (flexdelegate/planner/cache.py: budget plans cached on disk
as JSON, read back and checked by planner/check.py before the runtime executes them).

Each input is the text of a plan file. It is put where a budgeted load of a small model looks
for its plan, then:
  * PlanCache.get must return a Plan or None, never raise; check.verify on what it returns
    must pass or raise PlanInvalid, nothing else;
  * a real budgeted load in a child process must not crash or hang, and must answer as stock
    TFLite does: a plan the checks accept runs correctly, one they refuse is replanned.

Inputs hold "@KEY@" and "@GRAPH_KEY@" where a plan file holds its cache key and graph key
(both depend on this machine's kernels): the target fills in the live ones, so a corpus file
reaches the checks on any machine. The mutator edits one JSON value at a time (numbers to
boundary values, lists shortened, duplicated or swapped, keys dropped), and sometimes bytes."""
from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path

from flexdelegate.planner.cache import PlanCache, plan_key
from flexdelegate.planner.check import PlanInvalid, verify
from flexdelegate.planner.result import Plan
from flexdelegate.run import max_error

from cache_target import _fast_tmp
from engine import Engine, EngineDied
from oracle import Finding, coarse, model_for_budget

TOL = 1e-4


class PlanTarget:
    def __init__(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="fuzz-plan-", dir=_fast_tmp())
        self.dir = Path(self._tmp.name)
        self.model = model_for_budget()
        self.engine = Engine(env={"XDG_CACHE_HOME": str(self.dir / "xdg")})
        self.plans = self.dir / "xdg" / "flexdelegate" / "plans"
        self.flex = None
        self.counts = {}

    def close(self):
        self.engine.close()
        self._tmp.cleanup()

    def setup(self):
        """Stock's answer, the budget (just above the minimum: sliced and streamed), the
        planner's graph and the plan file's path."""
        if self.flex is not None:
            return
        out = self.engine.run(self.model, None)
        assert out[0] == "ok", out
        self.ref = out[1]
        cache = str(self.dir / "weights.fxc")
        low = self.engine.call("min_budget", self.model, {"cache_path": cache})
        assert low[0] == "refused", low
        minimum = low[1]
        self.flex = {"cache_path": cache, "budget": round(minimum + 0.05, 2)}
        _, self.graph, self.budget_bytes, self.isa, self.threads = self.engine.call("plan_info", self.model, self.flex)
        self.key = plan_key(self.graph, self.budget_bytes, self.isa, self.threads)
        self.path = self.plans / f"{self.key}.json"
        assert self.path.exists(), list(self.plans.iterdir())

    def seed_text(self) -> bytes:
        """The plan file the planner wrote, with its keys as placeholders."""
        self.setup()
        self.engine.run(self.model, self.flex)
        doc = json.loads(self.path.read_text())
        doc["key"] = "@KEY@"
        doc["plan"]["graph_key"] = "@GRAPH_KEY@"
        return json.dumps(doc, separators=(",", ":")).encode()

    def _count(self, what, *detail):
        self.counts[what] = self.counts.get(what, 0) + 1
        self.signature = "|".join([what, *map(coarse, detail)])

    def check(self, data: bytes) -> str:
        self.setup()
        data = data.replace(b"@KEY@", self.key.encode()).replace(b"@GRAPH_KEY@", self.graph.key().encode())
        self.plans.mkdir(parents=True, exist_ok=True)
        self.path.write_bytes(data)
        try:
            p = PlanCache(self.plans).get(self.graph, self.budget_bytes, self.isa, self.threads)
        except Exception as e:  # noqa: BLE001 - the contract is: a Plan or None
            raise Finding(f"PlanCache.get raised {type(e).__name__}: {e}") from e
        verdict, why = "unreadable", ""
        if p is not None:
            if not isinstance(p, Plan):
                raise Finding(f"PlanCache.get returned a {type(p).__name__}")
            try:
                verify(p, self.graph)
                verdict = "accepted"
            except PlanInvalid as e:
                verdict, why = "refused", str(e)
            except Exception as e:  # noqa: BLE001
                raise Finding(f"check.verify raised {type(e).__name__} (only PlanInvalid is allowed): {e}") from e
        self.path.write_bytes(data)
        try:
            out = self.engine.run(self.model, self.flex)
        except EngineDied as e:
            raise Finding(f"a budgeted load with this plan file crashed or hung ({verdict} by the checks): {e}") from None
        if out[0] != "ok":
            raise Finding(f"a budgeted load with this plan file ({verdict} by the checks) was refused: {out[1]}")
        err = max_error(self.ref, out[1])
        if err > TOL:
            raise Finding(f"a budgeted load with this plan file ({verdict} by the checks) answered wrongly: "
                          f"max_error {err:.3g}")
        mem = (out[2] or {}).get("partitions_memory") or [{}]
        self._count(verdict, why, str(mem[0].get("steps")))
        return verdict


# ------------------------------------------------------------------------------------ mutator

def _leaves(node, path=()):
    """(path, value) of every value in a JSON tree, containers included."""
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _leaves(v, path + (i,))


def _numbers(rng, old):
    """Mostly another value of the same type (an int stays an int), so that most edited plans
    are still read back and reach the checks; sometimes another type altogether."""
    if type(old) is int and rng.random() < 0.85:
        return rng.choice([0, 1, -1, 2, 63, 64, 65, 4096, old + 1, old - 1, old + 64, old - 64, old * 2, old // 2,
                           -old, (1 << 31) - 1, 1 << 31, 1 << 40, (1 << 63) - 1, -(1 << 63)])
    if type(old) is bool and rng.random() < 0.85:
        return not old
    return rng.choice([0, -1, 1 << 63, 1 << 64, 0.5, 1e300, True, None, "0", [], {}])


def _edit(doc, rng: random.Random):
    leaves = [(p, v) for p, v in _leaves(doc) if p and p[0] == "plan" or p == ("format",)]
    scalars = [(p, v) for p, v in leaves if not isinstance(v, (dict, list))]
    if scalars and rng.random() < 0.8:  # numbers mostly: most edited plans still parse
        leaves = scalars
    if not leaves:
        return doc
    path, value = rng.choice(leaves)
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    key = path[-1]
    roll = rng.random()
    if isinstance(value, list) and value and roll < 0.5:
        i, j = rng.randrange(len(value)), rng.randrange(len(value))
        action = rng.randrange(4)
        if action == 0:
            value.pop(i)
        elif action == 1:
            value.insert(j, json.loads(json.dumps(value[i])))
        elif action == 2:
            value[i], value[j] = value[j], value[i]
        else:
            value.append(json.loads(json.dumps(value[i])))
    elif isinstance(parent, dict) and rng.random() < 0.05:
        del parent[key]
    else:
        parent[key] = _numbers(rng, value)
    return doc


_SEEDS = []


def _seed(rng) -> bytes:
    if not _SEEDS:
        _SEEDS.extend(f.read_bytes() for f in sorted((Path(__file__).parent / "corpus" / "plan").glob("seed-*")))
    return rng.choice(_SEEDS)


def mutate(data: bytes, max_size: int, seed: int) -> bytes:
    import atheris
    rng = random.Random(seed)
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        doc = None
    if rng.random() < 0.1:  # sometimes bytes: the JSON parser and the reader's type checks
        return atheris.Mutate(data, max_size)
    if type(doc) is not dict or type(doc.get("plan")) is not dict:
        doc = json.loads(_seed(rng))
    for _ in range(rng.choice((1, 1, 2, 3))):
        doc = _edit(doc, rng)
    return json.dumps(doc, separators=(",", ":")).encode()[:max_size]
