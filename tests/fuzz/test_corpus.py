"""Replays every file of the fuzz corpora (tests/fuzz/corpus/<target>/: the seeds and every
crash a fuzzer found, kept as crash-* files) through its target's checks: a finding fails
the test, so a fixed bug stays fixed. Runs in the normal suite; the fuzzers themselves run
in CI's sanitizer stage (tests/fuzz/run.py)."""
import json
from pathlib import Path

import pytest

from oracle import Finding

CORPUS = Path(__file__).parent / "corpus"


def files(target: str) -> list[Path]:
    found = sorted(p for p in (CORPUS / target).iterdir() if p.is_file())
    assert found, f"no corpus for {target}"
    return found


@pytest.fixture(scope="module")
def cache_target():
    from cache_target import CacheTarget
    t = CacheTarget(load_invalid_every=1)  # every file is loaded: a crash reproduces
    yield t
    t.close()


@pytest.fixture(scope="module")
def plan_target():
    from plan_target import PlanTarget
    t = PlanTarget()
    yield t
    t.close()


@pytest.fixture(scope="module")
def graph_target():
    from graph_target import GraphTarget
    t = GraphTarget()
    yield t
    t.close()


def replay(target, path: Path) -> str:
    try:
        return target.check(path.read_bytes())
    except Finding as e:
        pytest.fail(f"{path.name}: {e}")


@pytest.mark.parametrize("path", files("cache"), ids=lambda p: p.name)
def test_cache_corpus(cache_target, path):
    outcome = replay(cache_target, path)
    if path.name.startswith("seed-"):  # written by real loads: valid and served as written
        assert outcome == "valid"
    if path.name.startswith(("crash-old-version-", "crash-path-")):  # ours, refused by both readers,
        assert outcome == "invalid-loaded"  # then rebuilt by the load (the target checks the new file)


@pytest.mark.parametrize("path", files("plan"), ids=lambda p: p.name)
def test_plan_corpus(plan_target, path):
    outcome = replay(plan_target, path)
    if path.name.startswith("seed-"):  # the planner's own file: accepted where it was planned;
        plan_target.setup()            # panels and slices follow the kernels, so elsewhere refused
        planned_here = json.loads(path.read_bytes())["plan"]["isa"] == plan_target.isa
        assert outcome == ("accepted" if planned_here else "refused")
    else:  # each crash was a plan the checks must refuse (a run under ASan/UBSan found it harmful)
        assert outcome in ("unreadable", "refused")


def test_the_plan_planned_on_this_machine_is_accepted(plan_target):
    """The stored seed was planned on one ISA; the plan file written here is accepted here."""
    assert plan_target.check(plan_target.seed_text()) == "accepted"


@pytest.mark.parametrize("path", files("graph"), ids=lambda p: p.name)
def test_graph_corpus(graph_target, path):
    outcome = replay(graph_target, path)
    if path.name.startswith("seed-"):  # the op-test models: run by both, the same numbers
        assert outcome == "ran-same"
