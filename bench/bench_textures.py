"""How long the texture codecs take on a 1024×1024 texture.

Prints decode times for CMPR, RGBA8 (GX), DXT5 (DDS) and the PS Vita GXT formats UBC1
(swizzled), PVRT4BPP and PVRT2BPP, and the encode times for CMPR and swizzled UBC1, each the
best of a few runs, on random texels (the worst case for block compression).

    .venv/bin/python bench/bench_textures.py
"""

from __future__ import annotations

import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

import addon_package  # noqa: E402
import numpy as np  # noqa: E402

addon_package.load()
from retro_models.formats.textures import dds, gx, gxm, gxt  # noqa: E402

SIZE = 1024
RUNS = 3


def best_ms(action) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times) * 1000


def gxt_texture(base: int, bits: int) -> gxt.GXT:
    """A GXT file holding one swizzled SIZE × SIZE texture of random data."""
    data = np.random.default_rng(0).integers(0, 256, SIZE * SIZE * bits // 8, np.uint8).tobytes()
    header = struct.pack("<4s7I", gxt.MAGIC, gxt.VERSION, 1, 0x40, len(data), 0, 0, 0)
    record = struct.pack(
        "<IIiIIIHHB3s", 0x40, len(data), -1, 0, gxm.SWIZZLED, gxm.make_format(base), SIZE, SIZE, 1, bytes(3)
    )
    return gxt.read(header + record + data)


def main() -> None:
    pixels = np.random.default_rng(0).integers(0, 256, (SIZE, SIZE, 4), np.uint8)
    cmpr, _ = gx.encode(gx.CMPR, pixels)
    rgba8, _ = gx.encode(gx.RGBA8, pixels)
    dxt5 = dds.read(dds.encode(pixels, "DXT5"))
    print(f"{SIZE}×{SIZE} texels, best of {RUNS}:")
    print(f"  decode CMPR   {best_ms(lambda: gx.decode(gx.CMPR, cmpr, SIZE, SIZE)):8.1f} ms")
    print(f"  decode RGBA8  {best_ms(lambda: gx.decode(gx.RGBA8, rgba8, SIZE, SIZE)):8.1f} ms")
    print(f"  decode DXT5   {best_ms(dxt5.decode):8.1f} ms")
    print(f"  encode CMPR   {best_ms(lambda: gx.encode(gx.CMPR, pixels)):8.1f} ms")
    ubc1 = gxt_texture(gxm.UBC1, 4)
    print(f"  decode UBC1 swizzled  {best_ms(lambda: gxt.decode(ubc1, 0)):8.1f} ms")
    for name, base, bits in (("PVRT4BPP", gxm.PVRT4BPP, 4), ("PVRT2BPP", gxm.PVRT2BPP, 2)):
        texture = gxt_texture(base, bits)
        print(f"  decode {name:<14} {best_ms(lambda texture=texture: gxt.decode(texture, 0)):8.1f} ms")
    print(f"  encode UBC1 swizzled  {best_ms(lambda: gxt.encode(ubc1, 0, pixels)):8.1f} ms")


if __name__ == "__main__":
    main()
