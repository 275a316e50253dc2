"""Readable summaries of TMD, TKL and TML files for the inspection command."""

from __future__ import annotations

from . import tkl, tmd, tml


def detect(data: bytes, name: str) -> bool:
    return data[:4] in (tmd.MAGIC, tkl.MAGIC, tml.MAGIC)


def summarize(data: bytes, name: str) -> str:
    if data[:4] == tmd.MAGIC:
        return _tmd(tmd.read(data, name), name)
    if data[:4] == tkl.MAGIC:
        return _tkl(tkl.read(data, name), name)
    return _tml(tml.read(data, name), name)


def _tmd(model: tmd.TMD, name: str) -> str:
    lines = [
        f"{name}: Toshi model (TMD)",
        f"  keyframe library: {model.tkl_name!r} (field {model.tkl_field.hex()})",
        f"  salt 0x{model.salt:08X}, unknown words 0x{model.unknown[0]:08X} 0x{model.unknown[1]:08X}, "
        f"flags 0x{model.node_flags:04X} 0x{model.animation_flags:04X}",
        f"  nodes: {len(model.nodes)}{' (with aux block)' if model.aux is not None else ''}",
    ]
    for i, (node_name, parent, flags) in enumerate(
        zip(model.node_names(), model.nodes["parent"].tolist(), model.nodes["flags"].tolist(), strict=True)
    ):
        lines.append(
            f"    {i:3d} {node_name:<15} parent {parent:3d}{'  non-deforming' if flags == 1 else ''}"
        )
    lines.append(f"  animations: {len(model.animations)} ({len(model.channels)} distinct channels)")
    for anim in model.animations:
        flags = [model.channels[c].flags for c in anim.channels.tolist()]
        keys = sum(len(model.channels[c].keys) for c in anim.channels.tolist())
        counts = {f: flags.count(f) for f in sorted(set(flags))}
        lines.append(
            f"    {anim.name:<15} {anim.duration:7.3f} s  words {anim.a} {anim.b} {anim.c}  "
            f"{keys} keys  channel flags {counts}"
        )
    lines.append(f"  LODs: {len(model.lods)} (value {model.lod_value.hex()})")
    for li, lod in enumerate(model.lods):
        lines.append(
            f"    LOD {li}: {len(lod.meshes)} meshes, sphere {[round(float(v), 3) for v in lod.sphere]}"
        )
        for mesh in lod.meshes:
            vertices = sum(len(p.vertices) for p in mesh.pieces)
            indices = sum(len(p.strip) for p in mesh.pieces)
            lines.append(
                f"      {mesh.material:<31} {len(mesh.pieces)} pieces, {vertices} vertices, "
                f"{indices} strip indices"
            )
    return "\n".join(lines)


def _tkl(model: tkl.TKL, name: str) -> str:
    return "\n".join(
        [
            f"{name}: Toshi keyframe library (TKL)",
            f"  name: {model.name!r}",
            f"  positions: {len(model.positions)}, rotations: {len(model.rotations)}, scales: {model.scale_count}",
        ]
    )


def _tml(model: tml.TML, name: str) -> str:
    lines = [f"{name}: Toshi material library (TML), type {model.type}", f"  textures: {len(model.textures)}"]
    for t in model.textures:
        lines.append(
            f"    id {t.id:3d} {t.format_name:<10} {t.width}x{t.height}  flags 0x{t.flags:04X}  "
            f"{len(t.data)} bytes"
        )
    lines.append(f"  materials: {len(model.materials)}")
    for material_name, record in zip(model.material_names(), model.materials, strict=True):
        shader = tml.SHADERS.get(record.flags & tml.SHADER_MASK, "unknown shader")
        lines.append(
            f"    {material_name:<31} id {record.id:3d} flags 0x{record.flags & 0xFFFF:04X} ({shader}) "
            f"textures {record.textures}"
        )
    return "\n".join(lines)
