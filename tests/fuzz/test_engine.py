"""The fuzzers' engine process (engine.py) outside any target."""
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

ORPHAN = textwrap.dedent("""
    import os, sys; sys.path.insert(0, {here!r})
    from engine import Engine, _send
    e = Engine()
    assert e.call("ping") == ("ok",)
    _send(e._to_child, ("sleep", 120))  # a long request, then this parent dies without closing
    print(e.proc.pid, flush=True)
    os._exit(0)
""")


def test_an_engine_in_a_long_request_dies_with_its_parent():
    """An engine busy with a request when its parent dies is killed with it, not left running
    (an idle one ends anyway: its pipe reads EOF)."""
    r = subprocess.run([sys.executable, "-c", ORPHAN.format(here=str(HERE))], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    pid = int(r.stdout.split()[0])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        try:
            if Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
                return  # gone, waiting for its reaper
        except FileNotFoundError:
            return  # reaped between the two looks
        time.sleep(0.1)
    os.kill(pid, 9)
    raise AssertionError("the engine outlived its parent by 20 s")
