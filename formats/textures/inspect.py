"""Readable summaries of texture files: TPL (GX images), DDS and PS Vita GXT."""

from __future__ import annotations

import struct

from . import dds, gx, gxt, tpl


def detect(data: bytes, name: str) -> bool:
    return data[:4] in (struct.pack(">I", tpl.MAGIC), dds.MAGIC) or gxt.detect(data, name)


def summarize(data: bytes, name: str) -> str:
    if gxt.detect(data, name):
        return gxt.summarize(data, name)
    if data[:4] == dds.MAGIC:
        return _summarize_dds(data, name)
    return _summarize_tpl(data, name)


def _wrap_label(mode: int) -> str:
    return tpl.WRAP_MODES.get(mode, f"unknown ({mode})")


def _summarize_tpl(data: bytes, name: str) -> str:
    model = tpl.read(data, name)
    lines = [f"{name}: TPL ({len(data)} bytes), {len(model.images)} image(s)"]
    for index, image in enumerate(model.images):
        wraps = "/".join(_wrap_label(mode) for mode in (image.wrap_s, image.wrap_t))
        lines.append(
            f"  image {index}: {image.width}×{image.height} {gx.NAMES[image.format]}, "
            f"{image.level_count} mip level(s), wrap {wraps}, filters min {image.min_filter} "
            f"mag {image.mag_filter}, LOD bias {image.lod_bias:g}, data at 0x{image.data_offset:X} "
            f"({len(image.data)} bytes)"
        )
        if image.palette is not None:
            palette = image.palette
            lines.append(
                f"    palette: {palette.entry_count} {gx.TLUT_NAMES[palette.format]} entries "
                f"at 0x{palette.data_offset:X}"
            )
    if model.unused:
        lines.append(f"  {sum(len(b) for _, b in model.unused)} non-zero bytes outside every structure")
    return "\n".join(lines)


def _summarize_dds(data: bytes, name: str) -> str:
    image = dds.read(data, name)
    layout = image.format
    if image.bit_count:
        masks = ", ".join(f"{c} 0x{m:08X}" for c, m in zip("RGBA", image.masks, strict=True) if m)
        layout += f" {image.bit_count}-bit ({masks})"
    top = image.level_size(0) if image.format in dds.BLOCK_BYTES or image.bit_count else 0
    return "\n".join(
        [
            f"{name}: DDS ({len(data)} bytes)",
            f"  {image.width}×{image.height} {layout}, {image.mip_count} mip level(s)",
            f"  header {len(image.header)} bytes, data {len(image.data)} bytes (top level {top})",
        ]
    )
