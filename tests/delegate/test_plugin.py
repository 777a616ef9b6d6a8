"""The plugin entry points and load_flex: options, errors, the Delegate subclass, stats, logs."""
import os
import subprocess
import sys

import pytest

import flexdelegate
from flexdelegate import _native, load_flex
from flexdelegate.run import invoke, make_interpreter, random_inputs
from flexdelegate.runtime import detect
from models import conv_net


def test_delegate_is_a_runtime_delegate():
    rt = detect()
    d = load_flex()
    assert isinstance(d, rt.Delegate)
    assert type(d).__name__ == "FlexDelegate"
    it = make_interpreter(conv_net(), delegate=d)
    invoke(it, random_inputs(it))
    assert d.stats()["nodes_delegated"] == d.stats()["nodes_total"] == 5


def test_stats_keys_and_types():
    d = load_flex(num_threads=2)
    make_interpreter(conv_net(), delegate=d)
    s = d.stats()
    for key in ("nodes_total", "nodes_delegated", "partitions", "fallback"):
        assert key in s
    assert s["partitions"] == 1 and s["fallback"] == [] and s["threads"] == 2


@pytest.mark.parametrize("bad", [{"bogus": 1}, {"budgets": 5}])
def test_unknown_option_names_option_and_accepted(bad):
    with pytest.raises(ValueError) as e:
        load_flex(**bad)
    msg = str(e.value)
    assert list(bad)[0] in msg and "num_threads" in msg and "cache_path" in msg


@pytest.mark.parametrize("key,value", [("num_threads", 0), ("num_threads", "two"), ("num_threads", 10**6),
                                       ("budget", -1), ("budget", "lots"), ("log", "everything")])
def test_invalid_option_value(key, value):
    with pytest.raises(ValueError) as e:
        load_flex(**{key: value})
    assert key in str(e.value)


def test_native_plugin_rejects_bad_options_itself():
    """Apps that call load_delegate directly on our library get the same checks."""
    rt = detect()
    with pytest.raises(ValueError, match="unknown option"):
        rt.load_delegate(_native.library_path(), {"bogus": "1"})
    with pytest.raises(ValueError, match="num_threads"):
        rt.load_delegate(_native.library_path(), {"num_threads": "x"})
    d = rt.load_delegate(_native.library_path(), {"num_threads": "1", "log": "none"})
    it = make_interpreter(conv_net(), delegate=None)
    assert d is not None and it is not None


def test_unknown_runtime_is_a_clear_error():
    with pytest.raises(ValueError, match="runtime"):
        load_flex(runtime="nope")


def test_flexdelegate_class_export():
    assert issubclass(flexdelegate.FlexDelegate, detect().Delegate)


def _run_with_log(env_value, code):
    env = dict(os.environ, FLEXDELEGATE_LOG=env_value)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_partition_log_lists_partitions_and_fallbacks():
    code = ("from flexdelegate import load_flex\nfrom flexdelegate.run import make_interpreter\n"
            "import sys; sys.path.insert(0, %r)\nfrom models import conv_net\n"
            "make_interpreter(conv_net(size=32, cout=32, middle_op='FLOOR'), delegate=load_flex())\n") % os.path.dirname(os.path.dirname(__file__))
    r = _run_with_log("partition", code)
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stderr.splitlines() if l.startswith("flexdelegate[partition]")]
    assert sum("partition " in l and "nodes" in l for l in lines) == 2
    assert sum("stays with TFLite" in l and "FLOOR" in l for l in lines) == 1
    quiet = _run_with_log("", code)
    assert "flexdelegate[" not in quiet.stderr


def test_exec_log_reports_each_invoke():
    code = ("from flexdelegate import load_flex\nfrom flexdelegate.run import make_interpreter, invoke, random_inputs\n"
            "import sys; sys.path.insert(0, %r)\nfrom models import conv_net\n"
            "it = make_interpreter(conv_net(), delegate=load_flex())\nx = random_inputs(it)\n"
            "invoke(it, x); invoke(it, x)\n") % os.path.dirname(os.path.dirname(__file__))
    r = _run_with_log("exec", code)
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stderr.splitlines() if l.startswith("flexdelegate[exec]")]
    assert len(lines) == 2 and all("5 nodes" in l and " us" in l for l in lines)
    assert "flexdelegate[partition]" not in r.stderr  # only the asked-for category
