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


def _extra(name):
    """The requirement strings of pyproject.toml's extra `name` (no TOML parser before 3.11)."""
    import re
    text = open(os.path.join(ROOT, "pyproject.toml")).read()
    m = re.search(rf"^{name} = \[(.*?)\]\s*$", text, re.M | re.S)
    assert m, name
    return re.findall(r'"([^"]+)"', m.group(1))


def test_readme_runtime_extra_installs_one_runtime_on_every_accepted_python():
    """The README's commands install `.[runtime]`; it must resolve to exactly one runtime with
    wheels on every Python requires-python accepts (tflite-runtime 2.14: 3.9-3.11 only)."""
    from packaging.requirements import Requirement
    readme = open(os.path.join(ROOT, "README.md")).read()
    commands = readme.split("```sh\n", 1)[1].split("```", 1)[0].strip().splitlines()
    assert len(commands) == 2 and all('[runtime' in c for c in commands)
    reqs = [Requirement(r) for r in _extra("runtime")]
    for minor in range(9, 14):
        env = {"python_version": f"3.{minor}", "python_full_version": f"3.{minor}.0"}
        chosen = {r.name: str(r.specifier) for r in reqs if r.marker is None or r.marker.evaluate(env)}
        runtimes = {"tflite-runtime", "ai-edge-litert"} & set(chosen)
        assert len(runtimes) == 1, (minor, chosen)
        if minor >= 12:
            assert runtimes == {"ai-edge-litert"}
        else:
            assert runtimes == {"tflite-runtime"} and chosen.get("numpy") == "<2"
    assert r'cmd=${cmd//\[runtime/[$extra}' in open(os.path.join(ROOT, ".ci", "run")).read()
