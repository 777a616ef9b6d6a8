"""Installing without a C toolchain says what is missing in one line, not the compiler's own
failure deep in pip's log."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_missing_compiler_is_named(tmp_path):
    env = dict(os.environ, CC=str(tmp_path / "no-such-cc"))
    r = subprocess.run([sys.executable, "setup.py", "build_ext", "--build-temp", str(tmp_path / "t"),
                        "--build-lib", str(tmp_path / "l")], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert "flexdelegate needs a C compiler and Python headers" in last and "no-such-cc" in last
    assert not (tmp_path / "l").exists()  # stopped before building anything
