"""Fuzz target: the packed-weight cache file (flexdelegate/cache/FORMAT.md).

Each input is a whole cache file. It must get the same verdict (valid / invalid) from the C
loader (flex_cache_check: what a load would map) and the Python reader (read_cache), which
may only raise CacheError. Valid files, and one in 8 of the others, are then served to a
real load of a small model (in a child process): it must not crash or hang, must answer as
stock TFLite does, and must leave a file both readers accept; a file without our magic is not
ours, and must be left exactly as it was.

Every field but the blob bytes is covered by a checksum the loader checks, so a file whose
header or tables differ from what a writer wrote and still pass is a forgery (the mutator
recomputes the checksums): its index may map a key to another weight's blob, or a model
record may replay one key for two different weights. The checksums are a plain hash, so a
wrong answer from such a file is undetectable by design: counted ("forged-wrong"), not a
finding. A file whose header and tables are a seed's (only blob bytes differ) must always
answer right: a damaged blob is caught by its checksum and repacked.

The mutator keeps inputs near the format: libFuzzer's byte edits or typed field edits, then
most of the time the three table checksums and the header checksum are recomputed so the
edit gets past them to the structural checks.

Model records whose dev and ino are PLACEHOLDER stand for "the model file of this run": the
target fills in its real identity and path (and re-seals the checksums if they held), so a
corpus file exercises the record-replay path (keys replayed without hashing, nothing written)
on any machine."""
from __future__ import annotations

import os
import random
import struct
import tempfile
import time
from pathlib import Path


from flexdelegate._native import cache_check, hash64
from flexdelegate.cache.format import _HEADER, MAGIC, CacheError, read_cache
from flexdelegate.run import max_error

from engine import Engine, EngineDied
from oracle import Finding, coarse, model_for_cache

PLACEHOLDER = 0xF0F0F0F0F0F0F0F0
TOL = 1e-4  # tests/opcheck.py
# Header tuple positions (format._HEADER order).
H_FILE_SIZE, H_INDEX_OFF, H_INDEX_COUNT, H_INDEX_SUM = 3, 4, 5, 6
H_MODELS_OFF, H_MODELS_COUNT, H_MODELS_SUM, H_KEYS_OFF, H_KEYS_COUNT = 7, 8, 9, 13, 14
H_PATHS_OFF, H_PATHS_BYTES, H_SUM = 15, 16, 18
RECORD = 80  # bytes per model record (format.MODEL_SIZE)


class CacheTarget:
    """Holds the work directory, the model file and the engine across executions."""

    def __init__(self, workdir: str | None = None, load_invalid_every: int = 8):
        self._tmp = None if workdir else tempfile.TemporaryDirectory(prefix="fuzz-cache-", dir=_fast_tmp())
        self.dir = Path(workdir or self._tmp.name)
        self.model_path = self.dir / "model.tflite"
        self.model_path.write_bytes(model_for_cache())
        self.path = self.dir / "cache.fxc"
        self.engine = Engine(env={"XDG_CACHE_HOME": str(self.dir / "xdg")})
        self.ref = None
        self.counts = {}
        # Loads are slow: a valid file always gets one, an invalid one every n-th time (the
        # fuzzer's speed) or every time (replaying the corpus, so a crash reproduces).
        self.load_invalid_every, self.invalid_seen = load_invalid_every, 0
        seeds = (Path(__file__).parent / "corpus" / "cache").glob("seed-*")
        self.pristine = {_metadata(localize(f.read_bytes(), self._identity(), self._path())) for f in seeds}

    def close(self):
        self.engine.close()
        if self._tmp is not None:
            self._tmp.cleanup()

    def _identity(self):
        """The model file's (dev, ino, size, mtime_ns, ctime_ns): what the loader records."""
        st = os.stat(self.model_path)
        return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns

    def _path(self) -> bytes:
        """The model file's path as a load records it (/proc/self/maps names no symlinks)."""
        return os.fsencode(os.path.realpath(self.model_path))

    def reference(self):
        if self.ref is None:
            # Identity is recorded only for files over 2 s old (FORMAT.md): age the model once.
            age = time.time() - os.stat(self.model_path).st_ctime
            if age < 2.5:
                time.sleep(2.5 - age)
            out = self.engine.run(str(self.model_path), None)
            assert out[0] == "ok", out
            self.ref = out[1]
        return self.ref

    def _count(self, what: str, *detail):
        self.counts[what] = self.counts.get(what, 0) + 1
        self.signature = "|".join([what, *map(coarse, detail)])

    def check(self, data: bytes) -> str:
        """One execution: the outcome's name, or Finding."""
        data = localize(data, self._identity(), self._path())
        self.path.write_bytes(data)
        c_says = cache_check(str(self.path))
        try:
            read_cache(self.path)
            py_says = None
        except CacheError as e:
            py_says = str(e)
        except Exception as e:  # noqa: BLE001 - any other exception is the finding
            raise Finding(f"read_cache raised {type(e).__name__} (only CacheError is allowed): {e}") from e
        if (c_says is None) != (py_says is None):
            raise Finding(f"the C loader and the Python reader disagree: C {c_says or 'valid'!r}, "
                          f"Python {py_says or 'valid'!r}")
        valid = c_says is None
        why = f"{coarse(c_says)}|{coarse(py_says.partition(': ')[2] if py_says else '', 30)}"
        self.invalid_seen += not valid
        if not valid and self.invalid_seen % self.load_invalid_every:
            self._count("invalid", why)
            return "invalid"
        forged = valid and _metadata(data) not in self.pristine
        ref = self.reference()
        try:
            out = self.engine.run(str(self.model_path), {"cache_path": str(self.path)})
        except EngineDied as e:
            raise Finding(f"a load from this cache file crashed or hung: {e}") from None
        if out[0] != "ok":
            raise Finding(f"a load from this cache file was refused: {out[1]}")
        err = max_error(ref, out[1])
        if err > TOL:
            if forged:
                self._count("forged-wrong", why)
                return "forged-wrong"
            raise Finding(f"a load from this cache file answered wrongly: max_error {err:.3g}; "
                          f"cache stats {out[2]['cache'] if out[2] else None}")
        if not data.startswith(MAGIC):
            # Not ours (no magic): the load must have left it exactly as it was.
            if self.path.read_bytes() != data:
                raise Finding("a load changed a file that is not a flexdelegate cache file")
            self._count("foreign-left-alone")
            return "foreign-left-alone"
        after = cache_check(str(self.path))
        if after is not None:
            raise Finding(f"the file a load left behind is refused by the loader: {after}")
        outcome = "valid" if valid else "invalid-loaded"
        cache = out[2]["cache"] if out[2] else {}
        self._count(outcome, why, ",".join(sorted(k for k, v in cache.items() if isinstance(v, int) and v)))
        return outcome


def _metadata(data: bytes) -> bytes:
    """The header (without its checksum) and everything from the index on: what a writer
    chooses, as opposed to blob bytes."""
    h = _header(data)
    if h is None or h[H_INDEX_OFF] > len(data):
        return bytes(data)
    return bytes(data[:_HEADER.size - 8]) + bytes(data[h[H_INDEX_OFF]:])


def _fast_tmp():
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


# ------------------------------------------------------------------------- file manipulation

def _header(buf) -> list | None:
    return list(_HEADER.unpack_from(buf, 0)) if len(buf) >= _HEADER.size else None


def _put_header(buf: bytearray, h: list) -> None:
    _HEADER.pack_into(buf, 0, *h)


def _sums_hold(buf, h) -> tuple[bool, bool, bool]:
    """Whether the stored index, model-table and header checksums match the bytes now."""
    io, n = h[H_INDEX_OFF], h[H_INDEX_COUNT]
    index_ok = io + 64 * n <= len(buf) and hash64(bytes(buf[io:io + 64 * n])) == h[H_INDEX_SUM]
    mo = h[H_MODELS_OFF]
    models_ok = mo <= len(buf) and hash64(bytes(buf[mo:])) == h[H_MODELS_SUM]
    header_ok = hash64(bytes(buf[:_HEADER.size - 8])) == h[H_SUM]
    return index_ok, models_ok, header_ok


def reseal(buf: bytearray, fix_size: bool = False) -> None:
    """Recomputes the index, model-table and header checksums from the bytes as they are
    (wherever the header's offsets point inside the data)."""
    h = _header(buf)
    if h is None:
        return
    if fix_size:  # the file ends where the header says, its paths too
        h[H_FILE_SIZE] = len(buf)
        if h[H_PATHS_OFF] <= len(buf):
            h[H_PATHS_BYTES] = len(buf) - h[H_PATHS_OFF]
    io, n = h[H_INDEX_OFF], h[H_INDEX_COUNT]
    if io + 64 * n <= len(buf):
        h[H_INDEX_SUM] = hash64(bytes(buf[io:io + 64 * n]))
    if h[H_MODELS_OFF] <= len(buf):
        h[H_MODELS_SUM] = hash64(bytes(buf[h[H_MODELS_OFF]:]))
    _put_header(buf, h)
    struct.pack_into("<Q", buf, _HEADER.size - 8, hash64(bytes(buf[:_HEADER.size - 8])))


def _records(buf, h):
    mo, n = h[H_MODELS_OFF], h[H_MODELS_COUNT]
    if mo + RECORD * min(n, 1 << 16) > len(buf):
        return []
    return [mo + RECORD * i for i in range(min(n, 1 << 16))]


def localize(data: bytes, identity, path: bytes = b"") -> bytes:
    """Records with dev = ino = PLACEHOLDER get this run's model file identity, and its path
    when the paths end the file as the header says (appended there: the seed's own path stays
    behind, unreferenced); checksums that held before still hold after."""
    buf = bytearray(data)
    h = _header(buf)
    if h is None:
        return data
    at = [r for r in _records(buf, h) if struct.unpack_from("<QQ", buf, r + 8) == (PLACEHOLDER, PLACEHOLDER)]
    if not at:
        return data
    index_ok, models_ok, header_ok = _sums_hold(buf, h)
    for r in at:
        struct.pack_into("<QQQqq", buf, r + 8, *identity)
    if path and h[H_PATHS_OFF] + h[H_PATHS_BYTES] == h[H_FILE_SIZE] == len(buf):
        for r in at:
            struct.pack_into("<QI", buf, r + 64, h[H_PATHS_BYTES], len(path))
        buf += path + b"\0"
        h[H_PATHS_BYTES] += len(path) + 1
        h[H_FILE_SIZE] = len(buf)
    if models_ok:
        h[H_MODELS_SUM] = hash64(bytes(buf[h[H_MODELS_OFF]:]))
    _put_header(buf, h)
    if header_ok:
        struct.pack_into("<Q", buf, _HEADER.size - 8, hash64(bytes(buf[:_HEADER.size - 8])))
    return bytes(buf)


def placeholders(data: bytes, identity) -> bytes:
    """The inverse of localize for seed files written by a real load: records carrying this
    model file's identity get PLACEHOLDER, checksums re-sealed."""
    buf = bytearray(data)
    h = _header(buf)
    for r in _records(buf, h):
        if struct.unpack_from("<QQ", buf, r + 8) == tuple(identity[:2]):
            struct.pack_into("<QQ", buf, r + 8, PLACEHOLDER, PLACEHOLDER)
    reseal(buf)
    return bytes(buf)


def _fields(buf, h) -> list[tuple[int, str]]:
    """(offset, struct format) of every integer field worth editing."""
    out = [(off, fmt) for off, fmt in ((16, "<Q"), (24, "<Q"), (32, "<Q"), (48, "<Q"), (56, "<Q"), (72, "<Q"),
                                       (152, "<Q"), (160, "<Q"), (168, "<Q"), (176, "<Q"), (8, "<I"),
                                       (12, "<I"))]
    io, n = h[H_INDEX_OFF], h[H_INDEX_COUNT]
    for i in range(min(n, 4096)):
        e = io + 64 * i
        if e + 64 > len(buf):
            break
        out += [(e, "<Q"), (e + 8, "<Q"), (e + 16, "<I"), (e + 20, "<I"), (e + 24, "<Q"), (e + 32, "<Q"),
                (e + 40, "<Q")]
    for r in _records(buf, h):
        out += [(r, "<Q"), (r + 8, "<Q"), (r + 16, "<Q"), (r + 24, "<Q"), (r + 48, "<Q"), (r + 56, "<I"),
                (r + 60, "<I"), (r + 64, "<Q"), (r + 72, "<I")]  # path_offset, path_len
    ko, kn = h[H_KEYS_OFF], h[H_KEYS_COUNT]
    for i in range(min(kn, 4096)):
        k = ko + 32 * i
        if k + 32 > len(buf):
            break
        out += [(k, "<Q"), (k + 8, "<Q"), (k + 16, "<I"), (k + 20, "<I"), (k + 24, "<Q")]
    return out


def _interesting(rng: random.Random, old: int, bits: int, buf, h) -> int:
    top = (1 << bits) - 1
    near = [0, 1, 63, 64, 65, 4095, 4096, 4097, len(buf), len(buf) - 64, len(buf) + 64, top, top - 63,
            1 << (bits - 1), old + 1, old - 1, old + 64, old - 64, old + 4096, old - 4096, old * 2, old // 2,
            h[H_INDEX_OFF], h[H_MODELS_OFF], h[H_KEYS_OFF], h[H_PATHS_OFF], h[H_PATHS_BYTES], 4095, 4096,
            rng.getrandbits(bits)]
    return rng.choice(near) & top


def field_edit(buf: bytearray, rng: random.Random) -> None:
    h = _header(buf)
    if h is None:
        return
    fields = _fields(buf, h)
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        off, fmt = rng.choice(fields)
        (old,) = struct.unpack_from(fmt, buf, off)
        struct.pack_into(fmt, buf, off, _interesting(rng, old, 8 * struct.calcsize(fmt), buf, h))


def shape_edit(buf: bytearray, rng: random.Random) -> bytearray:
    """Truncate, extend by zeros, or copy one index entry or record over its neighbour."""
    h = _header(buf)
    kind = rng.randrange(4)
    if kind == 0:
        return buf[:rng.randrange(len(buf) + 1)]
    if kind == 1:
        return buf + bytes(rng.choice((1, 64, 4096, 8192)))
    if h is None:
        return buf
    base, count, size = ((h[H_INDEX_OFF], h[H_INDEX_COUNT], 64) if kind == 2 else
                         (h[H_KEYS_OFF], h[H_KEYS_COUNT], 32))
    if count >= 2 and base + size * min(count, 4096) <= len(buf):
        i = rng.randrange(min(count, 4096) - 1)
        a, b = base + size * i, base + size * (i + 1)
        if rng.random() < 0.5:
            buf[b:b + size] = buf[a:a + size]
        else:
            buf[a:a + size], buf[b:b + size] = buf[b:b + size], buf[a:a + size]
    return buf


_SEEDS = []


def mutate(data: bytes, max_size: int, seed: int) -> bytes:
    import atheris
    rng = random.Random(seed)
    if not _SEEDS:
        _SEEDS.extend(f.read_bytes() for f in sorted((Path(__file__).parent / "corpus" / "cache").glob("seed-*")))
    if rng.random() < 0.3:  # back to a file a writer wrote: most edits of a broken one stay broken
        data = rng.choice(_SEEDS)
    roll = rng.random()
    if roll < 0.35:
        buf = bytearray(atheris.Mutate(data, max_size))
    elif roll < 0.85:
        buf = bytearray(data)
        field_edit(buf, rng)
    else:
        buf = shape_edit(bytearray(data), rng)
    if rng.random() < 0.8:
        reseal(buf, fix_size=rng.random() < 0.5)
    return bytes(buf[:max_size])
