"""The one way tests/native compiles C: the library's own flags (compile_args / link_args of
flexdelegate/native/_build.py, so FLEXDELEGATE_SANITIZE reaches these builds too) plus -Werror,
for this machine or cross-compiled for AArch64 (no sanitizers there: cross toolchains carry no
sanitizer runtimes), with native/ and native/include on the include path."""
import os
import platform
import runpy
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "flexdelegate" / "native"
HERE = Path(__file__).resolve().parent
_BUILD = runpy.run_path(str(NATIVE / "_build.py"))
AARCH64_HOST = platform.machine().lower() in ("aarch64", "arm64")
SYSROOT = Path("/usr/aarch64-linux-gnu")  # Debian/Ubuntu cross sysroot, for dynamic binaries


def _which(*names):
    return next((shutil.which(n) for n in names if n and shutil.which(n)), None)


def host_cc():
    """This machine's C compiler ($CC, cc, gcc, clang), or None."""
    return _which(os.environ.get("CC"), "cc", "gcc", "clang")


def aarch64_cc():
    """A compiler for AArch64 ($AARCH64_CC, a cross gcc, or the host's on an AArch64 host)."""
    names = [os.environ.get("AARCH64_CC"), "aarch64-linux-gnu-gcc", "aarch64-linux-gnu-gcc-12",
             "aarch64-linux-gnu-gcc-13"]
    return _which(*(["cc", "gcc", "clang"] if AARCH64_HOST else []), *names)


def aarch64_runner():
    """argv prefix that runs an AArch64 binary here ([] on an AArch64 host), or None."""
    if AARCH64_HOST:
        return []
    qemu = _which("qemu-aarch64", "qemu-aarch64-static")
    return [qemu] if qemu else None


def sources(*patterns):
    """Files under native/ matching the glob patterns, sorted (e.g. "kernels/gemm/f32-gemm-*.c")."""
    return sorted(str(p) for pat in patterns for p in NATIVE.glob(pat))


def build(srcs, out, *, aarch64=False, extra=(), compile_only=False):
    """Compiles srcs into the executable (or, compile_only, the object) `out`; fails the test
    with the command and the compiler's output when that does not work. Returns (out, env): the
    environment the binary runs in (QEMU_LD_PREFIX for a dynamically linked AArch64 binary)."""
    cc = aarch64_cc() if aarch64 else host_cc()
    assert cc, "no C compiler"
    sanitize = not aarch64
    cmd = [cc, *_BUILD["compile_args"](sanitize), "-Werror", *extra, "-I", str(NATIVE), "-I", str(NATIVE / "include"),
           *map(str, srcs), *(["-c"] if compile_only else []), "-o", str(out)]
    link = [] if compile_only else _BUILD["link_args"](sanitize)
    env = {}
    attempts = [cmd[:1] + ["-static"] + cmd[1:] + link, cmd + link] if aarch64 and not compile_only else [cmd + link]
    for argv in attempts:  # AArch64: static first; without a static libc for the target, dynamic
        r = subprocess.run(argv, capture_output=True, text=True)
        if r.returncode == 0:
            if aarch64 and "-static" not in argv and SYSROOT.is_dir():
                env["QEMU_LD_PREFIX"] = str(SYSROOT)
            return Path(out), env
    raise AssertionError("build failed:\n" + " ".join(argv) + "\n" + r.stdout + r.stderr)


def run(exe, *args, aarch64=False, env=None, timeout=600):
    """Runs a built test binary (under qemu for AArch64 on another host) in this environment
    updated by env (a None value removes the variable); the CompletedProcess."""
    prefix = aarch64_runner() if aarch64 else []
    full = dict(os.environ)
    # A sanitizer runtime preloaded for Python is not qemu's, and a sanitized host tester links
    # its own: the tester runs without the preload either way.
    full.pop("LD_PRELOAD", None)
    for key, value in (env or {}).items():
        if value is None:
            full.pop(key, None)
        else:
            full[key] = value
    return subprocess.run([*prefix, str(exe), *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env=full)
