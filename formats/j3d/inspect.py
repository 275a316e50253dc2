"""Readable summaries of J3D files: animations, BMT, and BMD/BDL models (joints, shapes, vertex
and triangle counts, materials, textures with their formats)."""

from __future__ import annotations

import numpy as np

from . import bca, bck, bmt, bpk, brk, btk, btp, bva, cluster, model_geometry
from . import model as model_module
from .container import ANIMATION_MAGIC, MODEL_MAGIC, read_container
from .tex1 import WRAP_MODES

LOOP_MODES = ("once", "once then reset", "loop", "forward then backward once", "ping-pong")
GX_FORMATS = {
    0: "I4",
    1: "I8",
    2: "IA4",
    3: "IA8",
    4: "RGB565",
    5: "RGB5A3",
    6: "RGBA8",
    8: "C4",
    9: "C8",
    10: "C14X2",
    14: "CMPR",
}
ANIMATIONS = {
    b"bck1": bck,
    b"btk1": btk,
    b"brk1": brk,
    b"btp1": btp,
    b"bpk1": bpk,
    b"bca1": bca,
    b"bva1": bva,
    b"bla1": cluster.bla,
    b"blk1": cluster.blk,
}


def detect(data: bytes, name: str) -> bool:
    return data[:4] in (ANIMATION_MAGIC, MODEL_MAGIC)


def detect_model(data: bytes, name: str) -> bool:
    return data[:4] == MODEL_MAGIC and data[4:8] in model_module.KINDS


def _vertex_format(entry) -> str:
    attribute, kind, shift = int(entry["attribute"]), int(entry["type"]), int(entry["shift"])
    name = model_geometry.ATTRIBUTE_NAMES.get(attribute, str(attribute))
    if attribute in (model_geometry.CLR0, model_geometry.CLR1):
        formats = model_geometry.COLOR_FORMATS
        return f"{name} {formats[kind] if kind < len(formats) else kind}"
    types = ("u8", "s8", "u16", "s16", "f32")
    if kind >= 4:
        return f"{name} {types[kind] if kind < len(types) else kind}"
    return f"{name} {types[kind]} shift {shift}"


def _model_lines(data: bytes, name: str) -> list[str]:
    model = model_module.read(data, name)
    graph = model_geometry.read_graph(model, name)
    arrays = model_geometry.arrays(model, name)
    vertices = triangles = packets = 0
    unsupported = []
    for shape in range(len(model.shp1.remap)):
        try:
            geometry = model_geometry.decode_shape(model, shape, name)
        except model_geometry.Unsupported as e:
            unsupported.append(f"  not decoded: {e}")
            continue
        model_geometry.check_indices(geometry, arrays, shape, name, 0)
        vertices += len(geometry.draw)
        triangles += len(geometry.triangles)
        packets += geometry.packets
    rule = model.inf1.scaling_rule
    formats = [_vertex_format(f) for f in model.vtx1.formats[:-1]]
    roots = [model.jnt1.names[i] for i in range(len(graph.parents)) if graph.parents[i] < 0]
    return [
        f"  joints: {len(model.jnt1.remap)} (root {', '.join(roots)}), scaling rule "
        f"{model_module.SCALING_RULES[rule] if rule < 3 else rule}",
        f"  envelopes: {len(model.evp1.counts)}, draw matrices: {len(model.drw1.kinds)}",
        f"  shapes: {len(model.shp1.remap)}, packets: {packets}, vertices sent: {vertices}, triangles: {triangles}",
        f"  vertex arrays: {', '.join(formats)}; positions: {model.inf1.vertex_count}",
        *unsupported,
    ]


def _loop(loop_mode: int, length: int) -> str:
    label = LOOP_MODES[loop_mode] if loop_mode < len(LOOP_MODES) else f"unknown ({loop_mode})"
    return f"  loop: {label}, length {length} frames"


def _track_summary(tracks: np.ndarray) -> str:
    counts = tracks["count"]
    return (
        f"{int((counts >= 2).sum())} keyframed, {int((counts == 1).sum())} constant, "
        f"{int((counts == 0).sum())} default; {int(counts.sum())} keys; "
        f"split tangents on {int(((counts >= 2) & (tracks['mode'] == 1)).sum())}"
    )


def _frames_summary(tracks: np.ndarray) -> str:
    counts = tracks["count"]
    return (
        f"{int((counts >= 2).sum())} animated, {int((counts == 1).sum())} constant, "
        f"{int((counts == 0).sum())} empty; {int(counts.sum())} frames stored"
    )


def _names(label: str, names: list[str], limit: int = 12) -> str:
    shown = ", ".join(names[:limit]) + (f", … ({len(names)} in all)" if len(names) > limit else "")
    return f"  {label}: {shown}"


def summarize(data: bytes, name: str) -> str:
    magic = data[:4]
    if magic == ANIMATION_MAGIC:
        kinds = tuple(ANIMATIONS)
    else:
        kinds = (bmt.KIND, *bmt.MODEL_KINDS)
    container = read_container(data, name, magic, kinds)
    lines = [
        f"{name}: J3D {container.kind.decode()} ({len(data)} bytes), tag {container.framing.tag[:4]!r}",
        "  sections: "
        + ", ".join(f"{s.magic.decode()} @0x{s.offset:X} ({len(s.data)} bytes)" for s in container.sections),
    ]
    if container.framing.trailer:
        lines.append(f"  {len(container.framing.trailer)} bytes after the last section")
    module = ANIMATIONS.get(container.kind)
    if module is bck:
        model = bck.read(data, name)
        lines += [
            _loop(model.loop_mode, model.length),
            f"  joints: {model.joint_count}, rotation unit 2^{model.rotation_frac} × 180/32768°",
            f"  banks: {len(model.scale_bank)} scale, {len(model.rotation_bank)} rotation, "
            f"{len(model.translation_bank)} translation",
            f"  tracks: {_track_summary(model.tracks)}",
        ]
        if model.sounds is not None:
            lines.append(f"  sound effects: {len(model.sounds)}")
    elif module is btk:
        model = btk.read(data, name)
        lines += [
            _loop(model.loop_mode, model.length),
            f"  texture matrices: {model.matrix_count}, rotation unit 2^{model.rotation_frac} × 180/32768°",
            f"  tracks: {_track_summary(model.tracks)}",
            _names(
                "materials",
                [f"{n}[{int(i)}]" for n, i in zip(model.material_names, model.texture_indices, strict=True)],
            ),
        ]
    elif module is brk:
        model = brk.read(data, name)
        lines.append(_loop(model.loop_mode, model.length))
        for label, group in (("register colours", model.register), ("konst colours", model.konst)):
            slots = [
                f"{n}[{int(s)}]" for n, s in zip(group.material_names, group.entries["slot"], strict=True)
            ]
            lines.append(f"  {label}: {len(group)}; tracks: {_track_summary(group.entries['tracks'])}")
            if slots:
                lines.append(_names("  materials", slots))
    elif module is bpk:
        model = bpk.read(data, name)
        lines += [
            _loop(model.loop_mode, model.length),
            f"  material colours: {len(model.tracks)}; tracks: {_track_summary(model.tracks)}",
            _names("materials", model.material_names),
        ]
    elif module is btp:
        model = btp.read(data, name)
        entries = [
            f"{n}[{int(e['slot'])}] {int(e['count'])} frames"
            for n, e in zip(model.material_names, model.entries, strict=True)
        ]
        lines += [_loop(model.loop_mode, model.length), _names("patterns", entries)]
    elif module is bca:
        model = bca.read(data, name)
        lines += [
            _loop(model.loop_mode, model.length),
            f"  joints: {model.joint_count}, a value per frame, rotation unit 180/32768°",
            f"  banks: {len(model.scale_bank)} scale, {len(model.rotation_bank)} rotation, "
            f"{len(model.translation_bank)} translation",
            f"  tracks: {_frames_summary(model.tracks)}",
        ]
    elif module is bva:
        model = bva.read(data, name)
        hidden = [
            f"shape{i}"
            for i, t in enumerate(model.tracks)
            if not model.values[int(t["first"]) : int(t["first"]) + int(t["count"])].all()
        ]
        lines += [
            _loop(model.loop_mode, model.length),
            f"  shapes: {len(model.tracks)}, a visibility per frame; {_frames_summary(model.tracks)}",
            _names("hidden at some frame", hidden),
        ]
    elif module in (cluster.bla, cluster.blk):
        model = module.read(data, name)
        summary = _track_summary(model.tracks) if model.keyed else _frames_summary(model.tracks)
        lines += [
            _loop(model.loop_mode, model.length),
            f"  clusters: {len(model.tracks)} ({'keyed' if model.keyed else 'a weight per frame'}), "
            f"{len(model.weights)} weights; {summary}",
        ]
    elif any(s.magic == b"MAT3" for s in container.sections):
        if container.kind in model_module.KINDS:
            lines += _model_lines(data, name)
        materials = bmt.read(data, name) if container.kind == b"bmt3" else bmt.cut_from_model(data, name)
        lines.append(_names("materials", materials.mat3.names))
        tex1 = materials.tex1
        if tex1 is not None:
            textures = [
                f"{n} {GX_FORMATS.get(int(h['format']), int(h['format']))} {int(h['width'])}×{int(h['height'])} "
                f"{WRAP_MODES[h['wrap_s']] if h['wrap_s'] < 3 else h['wrap_s']}"
                for n, h in zip(tex1.names, tex1.headers, strict=True)
            ]
            lines.append(_names("textures", textures, 16))
    return "\n".join(lines)
