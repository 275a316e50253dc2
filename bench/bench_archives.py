"""How fast Yaz0 decompresses and compresses, how well it compresses, and archive write-back.

For every file of ../shared/corpus (when present): the Yaz0 compression of its content (a
compressed file's decompressed bytes), its size against the content's, against the original
file's for the files that came compressed (Nintendo's encoder), and the speed in MB/s of input;
the decompression speed of the compressed ones; the write-back of SunshineMario.arc unchanged
and with one member replaced. Then a larger generated stream (runs, repeated records, text-like
and random spans). Each speed is given by the wall clock and by the process's CPU time (the same
on an idle machine; on a shared one, the CPU time is what the code costs).

    .venv/bin/python bench/bench_archives.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import addon_package  # noqa: E402
import numpy as np  # noqa: E402

addon_package.load()
from retro_models.formats import archives  # noqa: E402
from retro_models.formats.archives import compression, writeback  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus"
CORPUS_ARCHIVE = CORPUS / "j3d-models" / "SunshineMario.arc"
GENERATED_SIZE = 6 << 20
RUNS = 5


def best_seconds(action, runs: int = RUNS) -> tuple[float, float]:
    """(wall, CPU) seconds of the fastest of ``runs`` runs."""
    times = []
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        action()
        times.append((time.perf_counter() - wall, time.process_time() - cpu))
    return min(times)


def speed(size: int, seconds: tuple[float, float]) -> str:
    wall, cpu = seconds
    return f"{wall * 1000:.0f} ms = {size / wall / 1e6:.1f} MB/s (CPU {cpu * 1000:.0f} ms = {size / cpu / 1e6:.1f} MB/s)"


def generated(size: int) -> bytes:
    """Data shaped like game files: zero runs, repeated records with small changes, noise."""
    rng = np.random.default_rng(1)
    parts = []
    total = 0
    while total < size:
        kind = rng.integers(4)
        if kind == 0:
            part = bytes(int(rng.integers(16, 600)))
        elif kind == 1:
            record = rng.integers(0, 256, int(rng.integers(4, 48)), np.uint8)
            records = np.tile(record, (int(rng.integers(4, 80)), 1))
            records[:, 0] = np.arange(len(records))  # an index that changes per record
            part = records.tobytes()
        elif kind == 2:
            part = bytes(rng.choice(list(b"abcdefgh_./0123"), int(rng.integers(20, 200))).astype(np.uint8))
        else:
            part = rng.integers(0, 256, int(rng.integers(8, 200)), np.uint8).tobytes()
        parts.append(part)
        total += len(part)
    return b"".join(parts)[:size]


def report_decompression(label: str, packed: bytes) -> None:
    size = compression.declared_size(packed)
    seconds = best_seconds(lambda: compression.decompress(packed, label))
    print(
        f"Yaz0 decompress {label}: {size / 1e6:.2f} MB of output from {len(packed) / 1e6:.2f} MB in {speed(size, seconds)}"
    )
    prefix = best_seconds(lambda: compression.decompress(packed, label, limit=4096))
    print(f"  first 4096 bytes only: {prefix[0] * 1000:.2f} ms")


def report_compression(label: str, data: bytes, original: int | None, runs: int = 1) -> bytes:
    packed = b""

    def run():
        nonlocal packed
        packed = compression.compress(data)

    seconds = best_seconds(run, runs)
    assert compression.decompress(packed, label) == data
    line = (
        f"Yaz0 compress {label}: {len(data) / 1e6:.3f} MB → {len(packed) / 1e6:.3f} MB "
        f"({len(packed) / max(len(data), 1):.1%}) in {speed(len(data), seconds)}"
    )
    if original:
        line += f"; the original file: {original / 1e6:.3f} MB (ours is {len(packed) / original:.3f}×)"
    print(line)
    return packed


def report_write_back(path: Path) -> None:
    data = path.read_bytes()
    seconds = best_seconds(lambda: writeback.replace_members(data, path.name, {}))
    print(f"write-back {path.name} unchanged (same bytes): {seconds[0] * 1000:.0f} ms")
    member = next(m for m in archives.read_archive(data, path.name).members() if m.path.endswith(".bck"))
    written = b""

    def replace():
        nonlocal written
        written = writeback.replace_members(data, path.name, {member.path: member.data[::-1]})

    seconds = best_seconds(replace, 1)
    print(
        f"write-back {path.name} with {member.path} replaced: {len(written) / 1e6:.3f} MB "
        f"({len(written) / len(data):.3f}× the original) in {seconds[0] * 1000:.0f} ms (CPU {seconds[1] * 1000:.0f} ms)"
    )


def main() -> None:
    corpus = sorted(p for p in CORPUS.glob("*/*") if p.suffix != ".md") if CORPUS.exists() else []
    if not corpus:
        print(f"({CORPUS} is absent: the real files are skipped)")
    for path in corpus:
        packed = path.read_bytes()
        if compression.is_compressed(packed):
            report_decompression(path.name, packed)
            report_compression(path.name, compression.decompress(packed), len(packed))
        else:
            report_compression(path.name, packed, None, RUNS if len(packed) < 1 << 18 else 1)
    if CORPUS_ARCHIVE.exists():
        report_write_back(CORPUS_ARCHIVE)
    data = generated(GENERATED_SIZE)
    packed = report_compression("generated", data, None)
    report_decompression("generated", packed)


if __name__ == "__main__":
    main()
