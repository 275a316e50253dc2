"""Readable summaries of TTYD character/object models.

The files have no magic number: a model is recognised by its header, whose
first table (the shapes) always starts right after the 0x1B0-byte header,
and whose other tables and animation area all lie inside the file.
"""

from __future__ import annotations

import struct

import numpy as np

from ..scene import tree_order
from . import model as fmt

DISPLAY_MODES = {0: "alpha-tested", 1: "opaque", 2: "alpha-tested (translucent pass)", 3: "alpha-blended"}
CULL_MODES = {0: "back", 1: "front", 2: "all", 3: "none"}


def detect(data: bytes, name: str) -> bool:
    if len(data) < fmt.HEADER_SIZE:
        return False
    counts = struct.unpack_from(f">{fmt.BLOCK_COUNT}I", data, 0xE8)
    offsets = struct.unpack_from(f">{fmt.BLOCK_COUNT}I", data, 0x14C)
    if offsets[0] != fmt.HEADER_SIZE or struct.unpack_from(">I", data, 0)[0] > len(data):
        return False
    sizes = [dtype.itemsize * components for _, dtype, components in fmt.BLOCKS] + [fmt.ENTRY_DTYPE.itemsize]
    return all(o + c * s <= len(data) for o, c, s in zip(offsets, counts, sizes, strict=True))


def _group_lines(model: fmt.Model) -> list[str]:
    parents = fmt.group_parents(model.groups)
    depth = np.zeros(len(parents), np.int64)
    for g in tree_order(parents):
        depth[g] = depth[parents[g]] + 1 if parents[g] >= 0 else 0
    lines = []
    for g in tree_order(parents):
        group = model.groups[g]
        shape = f", shape {fmt.text(model.shapes['name'][group['shape']])!r}" if group["shape"] >= 0 else ""
        flag = ", scale-compensated" if group["compensate"] else ""
        lines.append(
            f"    {'  ' * depth[g]}{fmt.text(group['name'])} (node {group['node']}, "
            f"visibility {group['visibility']}{shape}{flag})"
        )
    return lines


def summarize(data: bytes, name: str) -> str:
    model = fmt.read(data, name)
    h = model.header
    lines = [
        f"{name}: TTYD model {fmt.text(h.name)!r} ({len(data)} bytes)",
        f"  textures from {fmt.text(h.texture_name)}-, built {fmt.text(h.date)}",
        f"  flags 0x{h.flags:X}, radius {h.radius}, height {h.height}",
        f"  bounding box {np.round(h.bbox_min, 3).tolist()} .. {np.round(h.bbox_max, 3).tolist()}",
        "  tables: "
        + ", ".join(
            f"{table} {len(model.block(table))}" for table, _, _ in fmt.BLOCKS if len(model.block(table))
        )
        + f", animations {len(model.animations)}",
    ]
    lines.append(f"  shapes ({len(model.shapes)}):")
    for shape in model.shapes:
        first, count = int(shape["subshape_first"]), int(shape["subshape_count"])
        subshapes = model.subshapes[first : first + count]
        polygons = [
            model.polygons[int(d["polygon_first"]) : int(d["polygon_first"] + d["polygon_count"])]
            for d in subshapes
        ]
        triangles = sum(int(np.maximum(p["count"].astype(np.int64) - 2, 0).sum()) for p in polygons)
        textures = sorted({int(t) for d in subshapes for t in d["samplers"][: d["texture_count"]]})
        lines.append(
            f"    {fmt.text(shape['name'])}: {shape['position_count']} vertices, {triangles} triangles, "
            f"{count} subshapes, samplers {textures}, {DISPLAY_MODES.get(int(shape['display_mode']), shape['display_mode'])}, "
            f"cull {CULL_MODES.get(int(shape['cull_mode']), shape['cull_mode'])}"
        )
    lines.append(f"  groups ({len(model.groups)}, root last):")
    lines += _group_lines(model)
    lines.append(f"  textures ({len(model.textures)}):")
    lines += [f"    {fmt.text(t['name'])}: TPL image {t['tpl_index']}" for t in model.textures]
    lines.append(f"  animations ({len(model.animations)}):")
    for animation in model.animations:
        anim = animation.data
        if anim is None:
            lines.append(f"    {fmt.text(animation.name)}: no data")
            continue
        deltas = ", ".join(
            f"{len(getattr(anim, table))} {kind}"
            for kind, (table, _) in fmt.DELTA_TABLES.items()
            if len(getattr(anim, table))
        )
        lines.append(
            f"    {fmt.text(animation.name)}: {'loop' if anim.loop else 'once'} {anim.start:g}–{anim.end:g} "
            f"(60 fps), {len(anim.keyframes)} keyframes; deltas: {deltas or 'none'}"
            + (f"; {len(anim.unknown_records)} 8-byte records" if len(anim.unknown_records) else "")
        )
    return "\n".join(lines)
