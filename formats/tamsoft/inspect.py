"""Readable summaries of tmd0 models and CAT containers for the inspection command."""

from __future__ import annotations

import numpy as np

from ..errors import FormatError
from ..textures import dds, gxm, gxt
from . import cat, texture_cat, tmd0


def detect(data: bytes, name: str) -> bool:
    return data[:4] in tmd0.MAGICS or (name.lower().endswith(".cat") and cat.detect(data))


def summarize(data: bytes, name: str) -> str:
    if data[:4] in tmd0.MAGICS:
        return _model(tmd0.read(data, name), name)
    container = cat.read(data, name)
    groups = texture_cat.entries(container)
    found = texture_cat.resources(container, name)
    lines = [f"{name}: Tamsoft CAT container, header size 0x{container.header_size:X}"]
    lines.append(
        f"  payloads: {len(container.payloads)}, name list lines: {sum(len(g.names) for g in groups)}"
    )
    for i, payload in enumerate(container.payloads):
        group = groups[i] if i < len(groups) else texture_cat.Entry("", "")
        label = f"{group.type},{group.package}" if group.type or group.package else "(unnamed)"
        resources = [r for r in found if r.payload == i]
        if payload[:4] in tmd0.MAGICS:
            kind = "tmd0 model"
        elif texture_cat.is_bundle(payload):
            kind = f"bundle of {len(resources)}"
        elif resources and resources[0].kind == "gxt":
            kind = f"GXT of {len(resources)}"
        else:
            kind = "file"
        lines.append(
            f"    payload {i}: {kind}, {len(payload)} bytes at 0x{container.payload_offset(i):X} ({label})"
        )
        if payload[:4] in tmd0.MAGICS:
            lines.append(f"      names: {', '.join(group.names)}")
        for resource in resources:
            lines.append(f"      {resource.name}: {_resource(resource)}")
    for i, payload in enumerate(container.payloads):
        if payload[:4] in tmd0.MAGICS:
            lines.append(_model(tmd0.read(payload, f"{name}[{i}]"), f"  entry {i}"))
    return "\n".join(lines)


def _resource(resource: texture_cat.Resource) -> str:
    """Format and size of one texture of a texture CAT."""
    try:
        if resource.format == "DDS":
            texture = dds.read(resource.data, resource.name)
            return (
                f"DDS {texture.width}×{texture.height} {texture.format}, {texture.mip_count} mip level(s), "
                f"{len(resource.data)} bytes"
            )
        if resource.format == "GXT":
            record = gxt.read(resource.data, resource.name).textures[
                resource.slot if resource.kind == "gxt" else 0
            ]
            return (
                f"GXT {record.width}×{record.height} {gxm.format_name(record.format)}, "
                f"{gxm.type_name(record.texture_type)}, {record.level_count} mip level(s), {record.data_size} bytes"
            )
    except FormatError as e:
        return f"unreadable ({e.problem})"
    return f"{len(resource.data)} bytes starting {resource.data[:4]!r}"


def _model(model: tmd0.TMD0, name: str) -> str:
    order = "little" if model.endian == "<" else "big"
    layout = "interleaved" if model.interleaved else "separate streams"
    lines = [
        f"{name}: Tamsoft model (tmd0 0x0100, {order}-endian)",
        f"  vertex flags 0x{model.flags:04X} ({layout}: {', '.join(model.vertices.dtype.names)}), "
        f"unknown 0x{model.unknown:04X}, frames {model.frame_count}",
        f"  bounds {[round(float(v), 3) for v in model.bounds]}",
        f"  vertices {len(model.vertices)}, faces {len(model.faces)}, polygroups {len(model.polygroups)}, "
        f"draw list {len(model.draw_list)}, operations {len(model.operations)}, rigs {len(model.rigs)}, "
        f"unknown table {model.unknown_count} ({len(model.unknown_block)} bytes)",
        f"  bones: {len(model.bones)}",
    ]
    heads = np.asarray(model.hierarchy["position"], np.float64)
    for i, entry in enumerate(model.hierarchy):
        lines.append(
            f"    {i:3d} hash 0x{int(entry['hash']):08X} parent {int(entry['parent']):3d} "
            f"head {[round(float(v), 3) for v in heads[i]]}"
        )
    lines.append(f"  materials: {len(model.materials)}")
    for i, record in enumerate(model.materials):
        used = record["slots"][: int(record["slot_count"])]
        slots = ", ".join(f"type {int(s['type'])} → {int(s['texture'])}" for s in used)
        lines.append(f"    {i:3d} slots [{slots}]")
    lines.append(f"  textures: {len(model.textures)}")
    for t in model.textures:
        lines.append(
            f"    index {int(t['index'])} {int(t['width'])}x{int(t['height'])} flags 0x{int(t['flags']):04X}"
        )
    return "\n".join(lines)
