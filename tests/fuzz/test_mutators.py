"""The structured mutators never raise (an exception there ends a fuzz run of hours) and keep
producing inputs their readers understand. libFuzzer's own byte edits are left out: they need
the fuzzer running."""
import json
import random
from pathlib import Path

import cache_target
import graph_target
import plan_target
from graph_spec import read_spec, write_spec

CORPUS = Path(__file__).parent / "corpus"


def seeds(target):
    return [p.read_bytes() for p in sorted((CORPUS / target).glob("seed-*"))]


def test_graph_mutations_write_models_the_reader_reads_back():
    rng = random.Random(0)
    pool, readable = seeds("graph"), 0
    for i in range(1500):
        spec = read_spec(rng.choice(pool))
        graph_target.mutate_spec(spec, rng)
        try:
            out = write_spec(spec)
        except (ValueError, OverflowError, TypeError):
            continue  # mutate() keeps its input then
        readable += read_spec(out) is not None
        if i % 7 == 0:
            pool.append(out)  # mutate mutated models too, as the fuzzer does
    assert readable > 1200


def test_cache_edits_keep_a_share_of_loader_valid_files(tmp_path):
    from flexdelegate._native import cache_check
    rng, valid = random.Random(1), 0
    path = tmp_path / "c.fxc"
    for _ in range(600):
        buf = bytearray(rng.choice(seeds("cache")))
        if rng.random() < 0.7:
            cache_target.field_edit(buf, rng)
        else:
            buf = cache_target.shape_edit(buf, rng)
        cache_target.reseal(buf, fix_size=rng.random() < 0.5)
        path.write_bytes(bytes(buf))
        valid += cache_check(path) is None
    assert 60 < valid < 540  # both sides of the loader's checks are reached


def test_plan_edits_keep_json_and_mostly_the_schema():
    from flexdelegate.planner.result import Plan
    rng, readable = random.Random(2), 0
    for _ in range(600):
        doc = json.loads(rng.choice(seeds("plan")))
        for _ in range(rng.choice((1, 2))):
            doc = plan_target._edit(doc, rng)
        try:
            Plan.from_dict(json.loads(json.dumps(doc))["plan"])
            readable += 1
        except (ValueError, KeyError, TypeError):
            pass
    assert readable > 300
