"""Compiler flags for the standalone C testers, so the sanitizer stage builds them like the
extension: FLEXDELEGATE_SANITIZE=address,undefined (as read by flexdelegate/native/_build.py)
adds -fsanitize=<list> -fno-omit-frame-pointer -g. The testers are programs of their own, so
they link the sanitizer runtime themselves (no preload needed)."""
import os


def sanitize_flags() -> list[str]:
    spec = os.environ.get("FLEXDELEGATE_SANITIZE") or ("address,undefined" if os.environ.get("FLEXDELEGATE_DEBUG") else "")
    return [f"-fsanitize={spec}", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g"] if spec else []


def child_env() -> dict:
    """The environment to run a tester in: without the LD_PRELOAD the Python side may carry
    (the tester links its own sanitizer runtime, which must be the only one)."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return env
