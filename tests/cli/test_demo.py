"""`flexdelegate demo`: compared with what apps get (the default interpreter, XNNPack included),
agreement judged against how far XNNPack itself strays from the reference kernels, input checked
before any work."""
import re
import subprocess
import sys

import pytest

from flexdelegate.cli.demo import AGREE_FACTOR, AGREE_FLOOR, agreement_tolerance


def run(*args):
    return subprocess.run([sys.executable, "-m", "flexdelegate", "demo", *map(str, args)], capture_output=True,
                          text=True, timeout=300)


def test_demo_compares_with_the_default_interpreter_and_labels_the_reference():
    r = run("--iterations", "2")
    assert r.returncode == 0, r.stderr
    agree = re.search(r"agreement: .*reference kernels: flexdelegate ([\d.e+-]+), TFLite default \(XNNPack\) "
                      r"([\d.e+-]+) -> OK \(tolerance ([\d.e+-]+)", r.stdout)
    assert agree, r.stdout
    flex_err, xnn_err, tol = map(float, agree.groups())
    assert flex_err <= tol and tol == pytest.approx(agreement_tolerance(xnn_err), rel=0.06)
    assert re.search(r"latency: +TFLite default \(XNNPack\) [\d.]+ ms, flexdelegate [\d.]+ ms", r.stdout)
    assert "stock" not in r.stdout  # every column says what it is


def test_tolerance_follows_xnnpacks_own_error():
    assert agreement_tolerance(0.0) == AGREE_FLOOR
    assert agreement_tolerance(1e-3) == pytest.approx(AGREE_FACTOR * 1e-3)  # a deep model: XNNPack strays too
    assert agreement_tolerance(1e-3) > 1e-3


@pytest.mark.parametrize("args,text", [
    (["/no/such.tflite"], "no such file"),
    (["--threads", "0"], "num_threads"),
    (["--iterations", "0"], "--iterations must be >= 1"),
    (["--num_threads", "0"], "num_threads"),
])
def test_bad_input_is_one_line(args, text):
    r = run(*args)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and text in r.stderr, r.stderr


def test_truncated_model_and_directory(tmp_path):
    from flexdelegate.tflite.demo_model import build_demo_model
    bad = tmp_path / "t.tflite"
    bad.write_bytes(build_demo_model()[:3000])
    for path, text in ((bad, "not a TFLite model"), (tmp_path, "is a directory")):
        r = run(path)
        assert r.returncode == 2 and text in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
