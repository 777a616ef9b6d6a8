"""`flexdelegate plan`: the per-layer report, the picture, and clear failures."""
import subprocess
import sys

import pytest

from budgetcheck import heavy_model


def run(*args):
    return subprocess.run([sys.executable, "-m", "flexdelegate", "plan", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("plan") / "heavy.tflite"
    path.write_bytes(heavy_model())
    return path


def test_reports_each_layer_and_streams_sliced_fc(model, tmp_path):
    r = run(model, "--budget", 4, "--cache", tmp_path / "m.fxc")
    assert r.returncode == 0, r.stderr
    rows = [l.split() for l in r.stdout.splitlines()[2:]]
    assert [row[1] for row in rows] == ["CONV_2D", "CONV_2D", "RESHAPE", "FULLY_CONNECTED",
                                         "FULLY_CONNECTED", "FULLY_CONNECTED"]
    fc = rows[3]
    assert int(fc[3]) > 1 and fc[-1] == "streamed"  # 9 MB of weights through a 4 MB budget
    assert "arena" in r.stdout.splitlines()[0]


def test_draws_the_plan(model, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "plan.png"
    r = run(model, "--budget", 4, "--cache", tmp_path / "m.fxc", "--out", out)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("args,message", [(("--budget", "0.01"), "infeasible"),
                                          (("--budget", "0"), "must be > 0")])
def test_clear_errors(model, tmp_path, args, message):
    r = run(model, *args, "--cache", tmp_path / "m.fxc")
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr


def test_missing_model(tmp_path):
    r = run(tmp_path / "nope.tflite", "--budget", 5)
    assert r.returncode == 2 and "no such file" in r.stderr


def test_plan_without_budget_prints_the_minimum_and_a_latency_table(tmp_path):
    """The minimum equals the one an infeasible budget reports; latency never rises with budget."""
    import re
    import subprocess
    import sys

    from budgetcheck import heavy_model, min_budget
    model = tmp_path / "h.tflite"
    model.write_bytes(heavy_model(fc=256))
    out_png = tmp_path / "curve.png"
    r = subprocess.run([sys.executable, "-m", "flexdelegate", "plan", str(model), "--out", str(out_png)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    minimum = float(re.search(r"minimum feasible budget: ([\d.]+) MB \(bottleneck: node \d+, \w+\)", r.stdout).group(1))
    assert minimum == pytest.approx(min_budget(model.read_bytes(), tmp_path / "m.fxc"), abs=0.011)
    rows = [tuple(map(float, line.split())) for line in r.stdout.splitlines() if re.fullmatch(r"[\d.\s]+", line)]
    assert len(rows) >= 3 and rows[0][0] >= minimum
    budgets, ms = [row[0] for row in rows], [row[1] for row in rows]
    assert budgets == sorted(budgets) and all(a >= b - 1e-9 for a, b in zip(ms, ms[1:])) and ms[0] > ms[-1]
    assert out_png.read_bytes()[:4] == b"\x89PNG"


def test_out_without_matplotlib_fails_before_planning(tmp_path):
    import subprocess
    import sys

    from budgetcheck import heavy_model
    hide = tmp_path / "hide"
    (hide / "matplotlib").mkdir(parents=True)
    (hide / "matplotlib" / "__init__.py").write_text("raise ImportError('No module named matplotlib')\n")
    model = tmp_path / "h.tflite"
    model.write_bytes(heavy_model(fc=256))
    import os
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(hide), os.environ.get("PYTHONPATH", "")]),
               FLEXDELEGATE_LOG="plan")
    for args in (["--budget", "3"], []):
        r = subprocess.run([sys.executable, "-m", "flexdelegate", "plan", str(model), *args, "--out",
                            str(tmp_path / "p.png")], capture_output=True, text=True, timeout=300, env=env)
        assert r.returncode == 2 and r.stdout == "" and "needs matplotlib" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr  # no plan was logged: nothing ran


def test_reports_band_chains_as_one_layer(tmp_path):
    """A layer chain a budget plan runs band by band is one row, kernel "band", its weights
    whole; its member nodes have no rows of their own. (The 1x1 convs after it hold 4 MB of
    weights: a 6 MB budget needs a budget plan.)"""
    import os

    import numpy as np

    from flexdelegate.tflite.writer import ModelBuilder
    rng = np.random.default_rng(0)
    b = ModelBuilder()

    def conv(x, cin, cout, size):
        y = b.tensor((1, size, size, cout))
        b.op("CONV_2D", [x, b.const((rng.standard_normal((cout, 1, 1, cin)) / np.sqrt(cin)).astype(np.float32)),
                         b.const(np.zeros(cout, np.float32))], [y], padding="SAME", stride_w=1, stride_h=1,
             fused_activation_function="RELU")
        return y
    y = conv(conv(b.input((1, 64, 64, 16), name="x"), 16, 96, 64), 96, 16, 64)  # the chain: nodes 0, 1
    pooled = b.tensor((1, 8, 8, 16))
    b.op("AVERAGE_POOL_2D", [y], [pooled], padding="VALID", stride_w=8, stride_h=8, filter_width=8, filter_height=8)
    b.output(conv(conv(pooled, 16, 1024, 8), 1024, 1024, 8))
    model = tmp_path / "chain.tflite"
    model.write_bytes(b.build())
    r = subprocess.run([sys.executable, "-m", "flexdelegate", "plan", str(model), "--budget", "6", "--cache",
                        str(tmp_path / "m.fxc")], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, FLEXDELEGATE_BAND="all"))
    assert r.returncode == 0, r.stderr
    rows = [line.split() for line in r.stdout.splitlines()[2:]]
    assert [row[0] for row in rows] == ["1", "2", "3", "4"], r.stdout
    assert (rows[0][2], rows[0][3]) == ("band", "1"), r.stdout
    assert float(rows[0][5]) == pytest.approx((96 * 16 * 2 + 96 + 16) * 4 / 2**20, abs=0.02)
