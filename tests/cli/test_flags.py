"""The command line a TFLite user recognises: --version, help on every option, benchmark_model's
flag spellings, quiet output into a closed pipe, a directory named as the model."""
import argparse
import importlib
import os
import re
import subprocess
import sys

import pytest

import flexdelegate
from flexdelegate.cli import COMMANDS


def run(*args, **kw):
    return subprocess.run([sys.executable, "-m", "flexdelegate", *map(str, args)], capture_output=True, text=True,
                          timeout=300, **kw)


@pytest.mark.parametrize("args", [["--version"], ["demo", "--version"], ["plan", "--version"]])
def test_version(args):
    r = run(*args)
    assert r.returncode == 0 and r.stdout.strip() == f"flexdelegate {flexdelegate.__version__}"


def parsers_of(command):
    """Every argparse parser the command builds (sub-commands included), captured at --help."""
    seen = []
    real = argparse.ArgumentParser.parse_args

    def spy(self, *a, **k):
        seen.append(self)
        return real(self, *a, **k)
    argparse.ArgumentParser.parse_args = spy
    try:
        with pytest.raises(SystemExit):
            importlib.import_module(f"flexdelegate.cli.{command}").main(["--help"])
    finally:
        argparse.ArgumentParser.parse_args = real
    out = []
    while seen:
        p = seen.pop()
        out.append(p)
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                seen.extend(a.choices.values())
    return out


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_option_has_help(command, capsys):
    for p in parsers_of(command):
        for a in p._actions:
            if not isinstance(a, argparse._SubParsersAction):
                assert a.help and not a.help.rstrip().endswith(":"), (p.prog, a.dest)
        assert not (p.description or "x").rstrip().endswith(":"), p.prog


def test_benchmark_model_flags():
    r = run("demo", "--num_threads", 2, "--num_runs", 3, "--warmup_runs", 1)
    assert r.returncode == 0, r.stderr
    assert "2 thread(s)" in r.stdout and "median of 3" in r.stdout
    r = run("demo", "--warmup_runs", -1)
    assert r.returncode == 2 and "--warmup_runs" in r.stderr


@pytest.mark.parametrize("args", [[], ["--help"], ["demo", "--help"], ["cache", "--help"], ["demo", "--num_runs", 1]])
def test_closed_pipe_ends_quietly(args):
    """`flexdelegate ... | head` whose reader has gone: no BrokenPipeError traceback."""
    read, write = os.pipe()
    os.close(read)
    try:
        r = subprocess.run([sys.executable, "-m", "flexdelegate", *map(str, args)], stdout=write,
                           stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write)
    assert r.stderr.replace("INFO: Created TensorFlow Lite XNNPACK delegate for CPU.\n", "") == ""
    assert r.returncode in (0, 1, 2)  # 2: usage without a command; 0: --help (argparse exits first)


@pytest.mark.parametrize("command", ["demo", "bench", "profile", "plan"])
def test_directory_as_model(command, tmp_path):
    r = run(command, tmp_path)
    assert r.returncode == 2 and re.search(r"is a directory", r.stderr) and len(r.stderr.splitlines()) == 1, r.stderr
