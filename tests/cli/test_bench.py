"""`flexdelegate bench MODEL --vs xnnpack`: both engines, alternating, and their ratio."""
import os
import re
import subprocess
import sys

import pytest

from flexdelegate.cli import bench
from flexdelegate.tflite.demo_model import build_demo_model


@pytest.fixture(scope="module")
def demo_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "demo.tflite"
    path.write_bytes(build_demo_model(seed=0))
    return str(path)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "flexdelegate", "bench", *args],
                          capture_output=True, text=True, timeout=120)


def test_prints_both_engines_and_ratio(demo_path):
    proc = _cli(demo_path, "--vs", "xnnpack", "--iterations", "3", "--rounds", "2")
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: line for line in proc.stdout.splitlines() if line.strip()}
    for engine in ("xnnpack", "flexdelegate"):
        assert re.match(rf"{engine}\s+[\d.]+ ms\s+[\d.]+ ms$", rows[engine]), proc.stdout
    ratio = re.search(r"ratio flex/xnnpack \(medians\): ([\d.]+)", proc.stdout)
    assert ratio and float(ratio.group(1)) > 0
    assert "\r" not in proc.stderr  # no progress bar when stderr is not a tty


def test_bench_figures(demo_path):
    stats = bench.bench(demo_path, vs="xnnpack", threads=1, iterations=3, rounds=2)
    for engine in ("xnnpack", "flexdelegate"):
        assert 0 < stats[engine]["min_us"] <= stats[engine]["median_us"]
    assert stats["ratio"] == pytest.approx(
        stats["flexdelegate"]["median_us"] / stats["xnnpack"]["median_us"])


@pytest.mark.parametrize("make_args, word", [
    (lambda p, d: [str(d / "nope.tflite")], "no such file"),
    (lambda p, d: [str(d / "random.tflite")], "not a TFLite model"),
    (lambda p, d: [p, "--threads", "0"], "num_threads"),
    (lambda p, d: [p, "--rounds", "0"], "--rounds"),
])
def test_errors_are_one_line(demo_path, tmp_path, make_args, word):
    (tmp_path / "random.tflite").write_bytes(os.urandom(4096))
    proc = _cli(*make_args(demo_path, tmp_path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("flexdelegate bench: error:") and word in last, proc.stderr
