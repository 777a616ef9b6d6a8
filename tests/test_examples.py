"""Every script in examples/ runs (on the embedded demo model) and shows what it says it does."""
import re
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run(script, *args):
    r = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    return r.stdout


def test_every_example_is_listed_and_tested():
    listed = set(re.findall(r"`(\w+\.py)`", (EXAMPLES / "README.md").read_text()))
    tested = set(re.findall(r'run\("(\w+\.py)"', Path(__file__).read_text()))
    assert listed == tested == {p.name for p in EXAMPLES.glob("*.py")}


def test_classify_gives_stocks_top5():
    out = run("classify.py")
    stock = re.search(r"stock TFLite : (.*)", out).group(1)
    flex = re.search(r"flexdelegate : (.*)", out).group(1)
    assert stock == flex and "delegated 16/16 nodes in 1 partition" in out


def test_budget_replans_and_names_the_minimum():
    out = run("budget.py", "--steps", "6")
    assert re.search(r"refused \(flexdelegate: budget [\d.e-]+ MB is infeasible: the minimum is", out), out
    assert len(re.findall(r"ms", out)) >= 2


def test_shared_cache_pages_are_shared():
    out = run("shared_cache.py", "--processes", "4")
    rss, pss = map(int, re.search(r"all 4: RSS (\d+) kB, PSS (\d+) kB", out).groups())
    assert rss > 0 and pss <= 0.6 * rss, out  # each page counted once across the processes, not 4 times


def test_profile_writes_json_and_reads_it():
    out = run("profile_model.py")
    for stage in ("compile", "first_load", "subsequent_load", "inference"):
        assert re.search(rf"{stage}\s+[\d.]+ ms, peak", out), out
    assert "profile.json" in out and "profile.png" in out


def test_load_delegate_with_string_options():
    out = run("load_delegate.py")
    assert "output:" in out and "refused:" in out and "invalid budget" in out
