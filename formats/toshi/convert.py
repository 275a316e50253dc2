"""TMD + TKL + TML ↔ the neutral ``Scene``.

Import (``to_scene``):
- One skeleton from the nodes: rest = axis @ world bind matrix; bones with node
  flag 1 (nothing skinned to them) get ``deform`` False. Bones point along
  their local X in the file (``BONE_DISPLAY``).
- One mesh per TMD mesh per LOD, in collection "LOD<n>" (LOD 1 and up hidden),
  triangles decoded from the strips, POINT normals, one UV layer "UVMap"
  (V negated), skin joints resolved through the palette of the piece whose
  strip uses the vertex.
- One material per TML material, one image per TML texture (pixels decoded
  when the format is known, the stored data kept in ``source_bytes``).
- Animations at 30 fps: bone channels "location" and "rotation_quaternion"
  (parent-relative, LINEAR) with the values looked up in the TKL; the channel
  flags decide which exist (0 rotation, 1 both, 3 location, 2 none).

Every value the scene has no field for travels in ``extras`` so that
``from_scene(to_scene(files))`` writes the same bytes.

Export (``from_scene``) writes from scratch by the game's rules when the
extras no longer describe the scene: materials sorted by their lower-cased
names, at most 28 bones per piece palette, strips split at 7500 indices, at
most 32767 vertices per mesh, four influences per vertex whose weight bytes
sum to 255. Animation keys go into a keyframe library: ``tkl`` given → its
entries are kept with the same indices and new values are appended (the
other models using the library stay valid); no ``tkl`` → a new library with
only this model's keys, which must get a name of its own before it is put
next to the game's files.

Axis: the converter's default keeps the file's axes (identity), which is what
the bind matrices and vertices of the existing JPOG tooling show upright in a
Z-up view; pass ``axis`` (``scene.axis_matrix(forward, up)``) for another.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .. import fit
from ..errors import ExportError, FormatError
from ..scene import (
    Animation,
    Channel,
    ChannelOrigin,
    Image,
    Material,
    Mesh,
    Scene,
    Skeleton,
    TextureSlot,
    apply_matrix,
    axis_matrix,
    keys_digest,
    matrix_to_quat,
    quat_multiply,
)
from ..scene import Layer as SceneLayer
from ..textures import dds, raster
from . import strips
from . import tkl as tkl_format
from . import tmd as tmd_format
from . import tml as tml_format

FPS = 30.0
AXES = ("Y", "Z")  # the default (forward, up): the file's own, as the JPOG tools keep them
DEFAULT_AXIS = axis_matrix(*AXES)
MAX_PALETTE = 28
MAX_MESH_VERTICES = 32767
MAX_TEXTURES_PER_MATERIAL = 4
UV_LAYER = "UVMap"
# Blender shows bone i with rest @ BONE_DISPLAY: its Y axis along the file bone's X axis.
BONE_DISPLAY = np.array([[0, 1, 0, 0], [0, 0, 1, 0], [1, 0, 0, 0], [0, 0, 0, 1]], dtype=np.float64)
MATRIX_TOLERANCE = 1e-4
KEY_TOLERANCE = 1e-5
TIME_TOLERANCE = 1e-3  # frames
NEW_TEXTURE_HEADER = {"flags": 0, "unknown1": 0, "unknown2": 0, "unknown3": 0xFFFF, "unknown4": 0x43000000}


# -- helpers ------------------------------------------------------------------


def _floats(values) -> list[float]:
    """The values as single floats, given as Python floats (each the double of its single)."""
    return np.asarray(values, dtype=np.float32).ravel().astype(np.float64).tolist()


def _join(dtype: np.dtype, arrays: list[np.ndarray]) -> np.ndarray:
    """Records of ``dtype`` one after another (concatenated as plain items: joining records compares
    their fields once per array)."""
    items = np.dtype((np.void, dtype.itemsize))
    return np.concatenate([a.view(items) for a in arrays] + [np.zeros(0, items)]).view(dtype)


def _axis3(axis) -> np.ndarray:
    return np.asarray(DEFAULT_AXIS if axis is None else axis, dtype=np.float64)[:3, :3]


def _axis_quat(axis3: np.ndarray) -> np.ndarray:
    return matrix_to_quat(axis3)


def _quat_xyzw_to_wxyz(q: np.ndarray) -> np.ndarray:
    return np.asarray(q, dtype=np.float64)[:, [3, 0, 1, 2]]


# -- import -------------------------------------------------------------------


def to_scene(
    model: tmd_format.TMD,
    tkl: tkl_format.TKL | None = None,
    tml: tml_format.TML | None = None,
    axis=None,
    lods: str = "ALL",
    animations: bool = True,
    filename: str = "<model>",
) -> Scene:
    """The scene of a model, its keyframe library and its material library (either may be None)."""
    if lods not in ("ALL", "FIRST"):
        raise ValueError(f"lods must be 'ALL' or 'FIRST', not {lods!r}")
    axis3 = _axis3(axis)
    scene = Scene(name=model.tkl_name)
    scene.extras.update(_header_extras(model))
    scene.skeletons.append(_skeleton(model, axis3))
    material_index = _materials(scene, tml, filename)
    for li, lod in enumerate(model.lods[:1] if lods == "FIRST" else model.lods):
        for mi, mesh in enumerate(lod.meshes):
            scene.meshes.append(_mesh(scene, model, li, mi, mesh, axis3, material_index, filename))
    if animations and model.animations:
        if tkl is None:
            scene.warnings.append("no keyframe library (.tkl): animations have no key values")
        else:
            scene.extras["tkl"] = _tkl_extras(tkl)
        axis_q = _axis_quat(axis3)
        for anim in model.animations:
            scene.animations.append(_animation(scene, model, anim, tkl, axis3, axis_q))
    return scene


def _header_extras(model: tmd_format.TMD) -> dict:
    return {
        "tkl_field": model.tkl_field,
        "salt": int(model.salt),
        "unknown": [int(v) for v in model.unknown],
        "node_flags": model.node_flags,
        "animation_flags": model.animation_flags,
        "reserved": model.reserved,
        "header_padding": model.header_padding,
        "scene_padding": model.scene_padding,
        "lod_value": model.lod_value,
        "lods": [
            {"unknown": lod.unknown, "sphere": lod.sphere.astype("<f4").tobytes()} for lod in model.lods
        ],
        "layout": [f"{kind}:{index}" for kind, index, _ in model.layout],
        "gaps": [gap for _, _, gap in model.layout],
        "trailer": model.trailer,
    }


def _tkl_extras(tkl: tkl_format.TKL) -> dict:
    return {
        "name_field": tkl.name_field,
        "reserved": tkl.reserved,
        "scale_count": tkl.scale_count,
        "scale_size": tkl.scale_size,
        "scales": tkl.scales,
    }


def _skeleton(model: tmd_format.TMD, axis3: np.ndarray) -> Skeleton:
    nodes = model.nodes
    axis = np.eye(4)
    axis[:3, :3] = axis3
    rest = axis @ tmd_format.matrices(nodes["bind"])
    raw = np.asarray(nodes, tmd_format.NODE_DTYPE).tobytes()
    size = tmd_format.NODE_DTYPE.itemsize
    bone_extras = []
    for i in range(len(nodes)):
        extras = {
            "rotation": _floats(nodes["rotation"][i]),
            "translation": _floats(nodes["translation"][i]),
            "bind": _floats(nodes["bind"][i]),
            "inverse_bind": _floats(nodes["inverse_bind"][i]),
            "flags": int(nodes["flags"][i]),
            "name_length": int(nodes["name_length"][i]),
            "name_field": raw[i * size + 145 : i * size + 160],
        }
        if model.aux is not None:
            extras["aux"] = int(model.aux[i])
        bone_extras.append(extras)
    return Skeleton(
        name=model.tkl_name or "skeleton",
        bone_names=model.node_names(),
        parents=nodes["parent"].astype(np.int32),
        rest=rest,
        deform=nodes["flags"] != 1,
        bone_extras=bone_extras,
        extras={"aux": model.aux is not None},
        bone_display=BONE_DISPLAY.copy(),
    )


def _materials(scene: Scene, tml: tml_format.TML | None, filename: str) -> dict[bytes, int]:
    """Materials and images of the library; returns lower-cased name → material index."""
    if tml is None:
        scene.warnings.append("no material library (.tml): materials have no textures")
        return {}
    scene.extras["tml"] = {"type": int(tml.type), "trailer": tml.trailer}
    image_of_id = {}
    for order, texture in enumerate(tml.textures):
        try:
            pixels = texture.decode(filename)
        except FormatError as e:
            pixels = None
            scene.warnings.append(f"texture {texture.id}: {e.problem}")
        image_of_id.setdefault(texture.id, len(scene.images))
        scene.images.append(
            Image(
                name=f"texture_{texture.id}",
                pixels=pixels,
                width=texture.width,
                height=texture.height,
                source_bytes=texture.data,
                source_format=texture.format_name,
                extras={
                    "id": texture.id,
                    "flags": texture.flags,
                    "unknown1": texture.unknown1,
                    "unknown2": texture.unknown2,
                    "format": texture.format,
                    "unknown3": texture.unknown3,
                    "unknown4": texture.unknown4,
                    "order": order,
                },
            )
        )
    index = {}
    for order, (name_field, record) in enumerate(zip(tml.names, tml.materials, strict=True)):
        name = tml_format.decode_name(name_field)
        slots = [
            TextureSlot(image=image_of_id[t], uv_layer=UV_LAYER) for t in record.textures if t in image_of_id
        ]
        missing = [t for t in record.textures if t not in image_of_id]
        if missing:
            scene.warnings.append(
                f"material {name!r} uses texture ids {missing} that the library does not hold"
            )
        index.setdefault(tml_format.sort_key(name), len(scene.materials))
        scene.materials.append(
            Material(
                name=name,
                textures=slots,
                extras={
                    "id": record.id,
                    "flags": record.flags,
                    "order": order,
                    "name_field": name_field,
                    "texture_ids": list(record.textures),
                },
            )
        )
    return index


def _mesh(
    scene: Scene, model, li: int, mi: int, mesh: tmd_format.Mesh, axis3, material_index, filename
) -> Mesh:
    pieces = mesh.pieces
    vertices = _join(tmd_format.VERTEX_DTYPE, [p.vertices for p in pieces])
    count = len(vertices)
    where = f"LOD {li} mesh {mi} ({mesh.material!r})"
    lengths = [len(p.strip) for p in pieces]
    strip = np.concatenate([p.strip for p in pieces]) if pieces else np.zeros(0, np.int32)
    outside = (strip < 0) | (strip >= count)
    if outside.any():
        at = int(np.argmax(outside))
        pi = int(np.searchsorted(np.cumsum(lengths), at, side="right"))
        k = at - sum(lengths[:pi])
        raise FormatError(
            filename,
            pieces[pi].strip_offset(k),
            f"{where} piece {pi}: strip index {k} ({int(strip[at])}) reaches outside the mesh's "
            f"{count} vertices",
        )
    triangles = strips.to_triangles(strip, lengths)
    joints, weights = _skin(model, pieces, vertices, where, filename)

    key = tml_format.sort_key(mesh.material)
    if key not in material_index:
        material_index[key] = len(scene.materials)
        scene.materials.append(Material(name=mesh.material))
        if "tml" in scene.extras:
            scene.warnings.append(f"material {mesh.material!r} is not in the material library")
    uv = vertices["uv"].astype(np.float32) * np.array([1, -1], np.float32)
    return Mesh(
        name=f"{mesh.material}_LOD{li}_{mi}",
        positions=(vertices["position"].astype(np.float64) @ axis3.T).astype(np.float32),
        triangles=triangles.astype(np.int32),
        normals=SceneLayer(
            "normal", (vertices["normal"].astype(np.float64) @ axis3.T).astype(np.float32), "POINT"
        ),
        uv_layers=[SceneLayer(UV_LAYER, uv, "POINT")],
        material_indices=np.zeros(len(triangles), np.int32),
        materials=[material_index[key]],
        skeleton=0,
        skin_joints=joints,
        skin_weights=weights,
        collection=f"LOD{li}",
        hidden=li > 0,
        extras={
            "lod": li,
            "index": mi,
            "material_field": mesh.material_field,
            "total_indices": int(mesh.total_indices),
            "total_vertices": int(mesh.total_vertices),
            "piece_vertex_counts": [len(p.vertices) for p in pieces],
            "piece_index_counts": [len(p.strip) for p in pieces],
            "palette_sizes": [len(p.palette) for p in pieces],
            "palettes": [int(v) for p in pieces for v in p.palette],
            "vertices_required": [int(p.vertices_required) for p in pieces],
            "bbox": [v for p in pieces for v in _floats(p.bbox_centre) + _floats(p.bbox_half_extent)],
            "strips": b"".join(p.strip.astype("<i2").tobytes() for p in pieces),
            "bone_bytes": np.ascontiguousarray(vertices["bones"]).tobytes(),  # packed first: faster
        },
    )


def _skin_owner(pieces: list[tmd_format.Piece], count: int) -> np.ndarray:
    """Per vertex, the piece whose palette its bone bytes index: the first piece whose strip uses it,
    else the piece that stores it."""
    owner = np.repeat(np.arange(len(pieces)), [len(p.vertices) for p in pieces])
    for pi in range(len(pieces) - 1, -1, -1):
        owner[pieces[pi].strip.astype(np.int64)] = pi
    return owner[:count]


def _skin(model, pieces, vertices, where: str, filename: str) -> tuple[np.ndarray, np.ndarray]:
    count = len(vertices)
    if not pieces or not count:
        return np.zeros((count, 4), np.int32), np.zeros((count, 4), np.float32)
    owner = _skin_owner(pieces, count)
    width = max(1, max(len(p.palette) for p in pieces))
    table = np.full((len(pieces), width + 1), -1, np.int64)  # last column: "outside the palette"
    for pi, p in enumerate(pieces):
        table[pi, : len(p.palette)] = p.palette
    slot = np.minimum(vertices["bones"] // 3, min(width, 255 // 3))  # a byte reaches entry 85 at most
    entry = (owner * (width + 1)).astype(np.int32)[:, None] + slot  # in the flattened table
    joints = np.take(table.ravel(), entry)
    used = vertices["weights"] > 0
    bad = used & np.take(((table < 0) | (table >= len(model.nodes))).ravel(), entry)
    if bad.any():
        v = int(np.flatnonzero(bad.any(axis=1))[0])
        stored_in = int(np.searchsorted(np.cumsum([len(p.vertices) for p in pieces]), v, side="right"))
        first = sum(len(p.vertices) for p in pieces[:stored_in])
        bones_at = pieces[stored_in].vertex_offset(v - first) + tmd_format.VERTEX_DTYPE.fields["bones"][1]
        raise FormatError(
            filename,
            bones_at,
            f"{where}: vertex {v} is weighted to a bone outside its piece's palette or the skeleton "
            "(its bone bytes)",
        )
    joints = np.where(used, joints, 0).astype(np.int32)
    return joints, vertices["weights"].astype(np.float32) / 255.0


USES_POSITION = (tmd_format.CHANNEL_TRANSLATION_ROTATION, tmd_format.CHANNEL_TRANSLATION)
USES_ROTATION = (tmd_format.CHANNEL_ROTATION, tmd_format.CHANNEL_TRANSLATION_ROTATION)


def _animation(
    scene: Scene, model: tmd_format.TMD, anim: tmd_format.Animation, tkl, axis3, axis_q
) -> Animation:
    names = model.node_names()
    roots = model.nodes["parent"] < 0
    result = Animation(
        name=anim.name,
        fps=FPS,
        frame_end=float(np.float32(anim.duration)) * FPS,
        loop="_lp" in anim.name.lower(),
        skeleton=0,
    )
    channels = [model.channels[c] for c in anim.channels.tolist()]
    keyed = [c.flags in USES_POSITION or c.flags in USES_ROTATION for c in channels]
    missing = _keys_missing(channels, tkl) if tkl is not None else [False] * len(channels)
    raw_keys, shown = {}, []
    for node, channel in enumerate(channels):
        if tkl is None or not keyed[node] or missing[node]:
            if len(channel.keys) or channel.flags not in (0, 1, 2, 3):
                raw_keys[str(node)] = channel.keys.tobytes()
            continue
        shown.append(node)
    if shown:
        result.channels = _bone_channels(
            [channels[n] for n in shown], [names[n] for n in shown], roots[shown], tkl, axis3, axis_q
        )
    bad_keys = sum(m for m, k in zip(missing, keyed, strict=True) if k)
    if bad_keys:
        scene.warnings.append(
            f"animation {anim.name!r}: {bad_keys} channels use keys missing from the keyframe "
            f"library; they are kept unchanged but not shown"
        )
    result.extras = {
        "name_length": anim.name_length,
        "name_field": anim.name_field,
        "a": int(anim.a),
        "b": int(anim.b),
        "c": int(anim.c),
        "duration": float(np.float32(anim.duration)),
        "channel_ids": anim.channels.tolist(),
        "channel_flags": [c.flags for c in channels],
        "raw_keys": raw_keys,
    }
    return result


def _key_rows(channels: list[tmd_format.Channel]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The keys of all ``channels`` one after another, where each channel's start, and per key whether
    its channel uses positions, rotations."""
    counts = np.array([len(c.keys) for c in channels], np.int64)
    keys = _join(tmd_format.KEY_DTYPE, [c.keys for c in channels])
    starts = np.concatenate([[0], np.cumsum(counts)])
    flags = [c.flags for c in channels]
    positions = np.repeat([f in USES_POSITION for f in flags], counts)
    rotations = np.repeat([f in USES_ROTATION for f in flags], counts)
    return keys, starts, positions, rotations


def _keys_missing(channels: list[tmd_format.Channel], tkl: tkl_format.TKL) -> list[bool]:
    """Per channel, whether a key looks up a value past the end of the keyframe library."""
    keys, starts, positions, rotations = _key_rows(channels)
    bad = (positions & (keys["position"] >= len(tkl.positions))) | (
        rotations & (keys["rotation"] >= len(tkl.rotations))
    )
    seen = np.concatenate([[0], np.cumsum(bad)])  # running count
    return (seen[starts[1:]] > seen[starts[:-1]]).tolist()


def _bone_channels(
    channels: list[tmd_format.Channel], bones: list[str], roots: np.ndarray, tkl, axis3, axis_q
) -> list[Channel]:
    """The location and/or rotation channel each TMD channel keys on its bone, values looked up in the
    library (all channels' in one pass; ``roots``: per channel, whether its bone is a root; ``axis3``
    and ``axis_q``: the axis change as a matrix and as a quaternion).

    The first keeps the file's keys (extras "keys": time, position and rotation index as stored) for a
    lossless export, both the stored keys as their origin."""
    keys, starts, positions, rotations = _key_rows(channels)
    times = keys["time"].astype(np.float64) * FPS
    locations = np.zeros((len(keys), 3))
    locations[positions] = tkl.positions[keys["position"][positions].astype(np.int64)]
    quaternions = np.zeros((len(keys), 4))
    quaternions[rotations] = _quat_xyzw_to_wxyz(tkl.rotations[keys["rotation"][rotations].astype(np.int64)])
    out = []
    for i, channel in enumerate(channels):
        rows = slice(starts[i], starts[i + 1])
        key_times, bone, is_root = times[rows].copy(), bones[i], roots[i]
        stored = channel.keys.tobytes()
        made = []
        if channel.flags in USES_POSITION:
            loc = locations[rows].copy()
            if is_root:
                loc = loc @ axis3.T
            made.append(Channel("bone", bone, "location", key_times, loc, "LINEAR", extras={"keys": stored}))
        if channel.flags in USES_ROTATION:
            q = quaternions[rows].copy()
            if is_root:
                q = quat_multiply(axis_q, q)
            extras = {} if made else {"keys": stored}
            made.append(Channel("bone", bone, "rotation_quaternion", key_times, q, "LINEAR", extras=extras))
        for c in made:  # the keys as stored: unedited, they are written as they are (slerp between)
            c.origin = ChannelOrigin(stored, keys_digest(c))
        out += made
    return out


# -- export -------------------------------------------------------------------


def from_scene(
    scene: Scene,
    *,
    axis=None,
    lods: str = "ALL",
    tkl: tkl_format.TKL | None = None,
    tkl_name: str | None = None,
) -> tuple[tmd_format.TMD, tkl_format.TKL, tml_format.TML]:
    """The model, keyframe library and material library of a scene.

    ``lods``: "ALL" writes every LOD the scene's meshes belong to (mesh extras
    "lod" or a collection "LOD<n>"), "FIRST" only LOD 0. ``tkl``: the library
    to append new key values to (existing indices stay valid); None writes a
    new library holding only this model's keys. ``tkl_name``: the library's
    name (at most 15 bytes; 7 or fewer keep the files readable by older
    tools), by default the appended library's name or the one the scene came with.
    """
    if lods not in ("ALL", "FIRST"):
        raise ValueError(f"lods must be 'ALL' or 'FIRST', not {lods!r}")
    axis3 = _axis3(axis)
    # A TMD mesh has no transform of its own: object transforms are baked into the vertices.
    scene = dataclasses.replace(scene, meshes=[apply_matrix(m) for m in scene.meshes])
    header = scene.extras
    skeleton = scene.skeletons[0] if scene.skeletons else None
    nodes, aux = _nodes(skeleton, axis3)
    library = _Library(tkl, tkl_name, header)
    fitted: list[tuple[int, float]] = []
    animations, channels = _animations_out(scene, skeleton, len(nodes), axis3, library, fitted)
    added = sum(count for count, _ in fitted)
    if added:
        scene.warnings.append(
            f"{added} keys added so that the game plays the curves as Blender does (slerp and linear "
            f"keys only; within {max(error for _, error in fitted):.2g} at every frame and sub-frame)"
        )
    tml = _tml_out(scene)
    lod_list, lod_value = _lods_out(scene, skeleton, len(nodes), axis3, lods)
    layout = []
    if "layout" in header and len(header.get("gaps", ())) == len(header["layout"]):
        for item, gap in zip(header["layout"], header["gaps"], strict=True):
            kind, index = item.split(":")
            layout.append((kind, int(index), gap))
    tkl_field = header.get("tkl_field", b"")
    if tkl_field.split(b"\0", 1)[0].decode("ascii", "replace") != library.name:
        tkl_field = tmd_format.tkl_name_field(library.name)
    model = tmd_format.TMD(
        tkl_field=tkl_field,
        salt=int(header.get("salt", 0)),
        unknown=tuple(int(v) for v in header.get("unknown", (0, 0))),
        nodes=nodes,
        aux=aux,
        animations=animations,
        channels=channels,
        lod_value=header.get("lod_value", lod_value),
        lods=lod_list,
        node_flags=int(header.get("node_flags", 0)),
        animation_flags=int(header.get("animation_flags", 0)),
        reserved=header.get("reserved", bytes(4)),
        header_padding=header.get("header_padding", bytes(16)),
        scene_padding=header.get("scene_padding", bytes(44)),
        layout=layout,
        trailer=header.get("trailer", b""),
    )
    return model, library.model(), tml


def _name_field(name: str, extras: dict, what: str) -> tuple[int, bytes]:
    """(length, 15-byte field) of a node or animation name, the original bytes when the name is unchanged."""
    if "name_field" in extras and "name_length" in extras:
        raw = extras["name_field"]
        if tmd_format.decode_name(int(extras["name_length"]), raw) == name and len(raw) == 15:
            return int(extras["name_length"]), raw
    try:
        return tmd_format.encode_name(name, 15, what)
    except ValueError as e:
        raise ExportError(f"{what} {name!r} is longer than 15 bytes") from e


def _nodes(skeleton: Skeleton | None, axis3: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    if skeleton is None or not len(skeleton):
        nodes = np.zeros(1, tmd_format.NODE_DTYPE)
        nodes["rotation"][0] = (0, 0, 0, 1)
        nodes["bind"][0] = tmd_format.flatten(np.eye(4)[None])[0]
        nodes["inverse_bind"][0] = nodes["bind"][0]
        nodes["name_length"][0], nodes["name"][0] = tmd_format.encode_name("root")
        nodes["parent"][0] = -1
        return nodes, None
    count = len(skeleton)
    extras = skeleton.bone_extras if len(skeleton.bone_extras) == count else [{} for _ in range(count)]
    inverse_axis = np.eye(4)
    inverse_axis[:3, :3] = axis3.T
    bind = inverse_axis @ np.asarray(skeleton.rest, dtype=np.float64)
    parents = np.asarray(skeleton.parents, dtype=np.int64)
    if ((parents < -1) | (parents >= np.arange(count))).any():
        raise ExportError(f"skeleton {skeleton.name!r}: bones must come after their parents")
    computed_flat = tmd_format.flatten(bind)
    inverse_flat = tmd_format.flatten(np.linalg.inv(bind.astype(np.float32).astype(np.float64)))
    local = bind.copy()
    has_parent = parents >= 0
    local[has_parent] = np.linalg.inv(bind[parents[has_parent]]) @ bind[has_parent]
    rotation = matrix_to_quat(local)[:, [1, 2, 3, 0]].astype(np.float32)
    translation = local[:, :3, 3].astype(np.float32)
    deform = np.ones(count, bool) if skeleton.deform is None else np.asarray(skeleton.deform, bool)

    nodes = np.zeros(count, tmd_format.NODE_DTYPE)
    nodes["parent"] = parents
    for i, (name, extra) in enumerate(zip(skeleton.bone_names, extras, strict=True)):
        nodes["name_length"][i], raw = _name_field(name, extra, "bone")
        nodes["name"][i] = raw
        kept = (
            "bind" in extra and np.abs(np.asarray(extra["bind"]) - computed_flat[i]).max() <= MATRIX_TOLERANCE
        )
        if kept:
            nodes["bind"][i] = extra["bind"]
            nodes["inverse_bind"][i] = extra["inverse_bind"]
            nodes["rotation"][i] = extra["rotation"]
            nodes["translation"][i] = extra["translation"]
        else:
            nodes["bind"][i] = computed_flat[i]
            nodes["inverse_bind"][i] = inverse_flat[i]
            nodes["rotation"][i] = rotation[i]
            nodes["translation"][i] = translation[i]
        flags = int(extra.get("flags", 0 if deform[i] else 1))
        nodes["flags"][i] = flags if (flags != 1) == deform[i] else (0 if deform[i] else 1)
    # numpy's fixed-width bytes drop trailing NULs on assignment; the raw fields are restored here.
    raw_nodes = bytearray(nodes.tobytes())
    size = tmd_format.NODE_DTYPE.itemsize
    for i, (name, extra) in enumerate(zip(skeleton.bone_names, extras, strict=True)):
        raw_nodes[i * size + 145 : i * size + 160] = _name_field(name, extra, "bone")[1]
    nodes = np.frombuffer(bytes(raw_nodes), tmd_format.NODE_DTYPE).copy()
    aux = None
    if skeleton.extras.get("aux"):
        aux = np.array([int(e.get("aux", 0)) for e in extras], np.int32)
    return nodes, aux


class _KeyTable:
    """One table of a keyframe library (positions or rotations) being filled.

    The entries it starts with keep their indices; a key reuses an entry with
    the same bits (or its preferred index, the one it had when imported, when
    that entry is within KEY_TOLERANCE), else it is appended once. Entries are
    looked up by their bytes in a sorted index, so a library grows in numpy.
    """

    def __init__(self, initial: np.ndarray, keep_preferred: bool):
        self.initial = np.ascontiguousarray(initial, np.float32)
        self.keep_preferred = keep_preferred
        self.added: list[np.ndarray] = []
        self.count = len(self.initial)
        # The first index of every distinct entry, sorted by the entry's bytes.
        self.sorted_keys, first = np.unique(self._keys(self.initial), return_index=True)
        self.sorted_index = first.astype(np.int64)

    @staticmethod
    def _keys(rows: np.ndarray) -> np.ndarray:
        """Each row's bytes as one comparable value."""
        rows = np.ascontiguousarray(rows, np.float32)
        return rows.view(np.dtype((np.void, rows.itemsize * rows.shape[1]))).ravel()

    def indices(self, values: np.ndarray, preferred) -> np.ndarray:
        values = np.ascontiguousarray(values, np.float32)
        idx = np.full(len(values), -1, np.int64)
        if self.keep_preferred and preferred is not None and len(preferred) == len(values):
            pref = np.asarray(preferred, np.int64)
            valid = (pref >= 0) & (pref < len(self.initial))
            close = np.zeros(len(values), bool)
            close[valid] = np.abs(self.initial[pref[valid]] - values[valid]).max(axis=1) <= KEY_TOLERANCE
            idx[close] = pref[close]
        todo = np.flatnonzero(idx < 0)
        if not len(todo):
            return idx
        keys = self._keys(values[todo])
        at = np.searchsorted(self.sorted_keys, keys)
        hit = at < len(self.sorted_keys)
        hit[hit] = self.sorted_keys[at[hit]] == keys[hit]
        found = np.empty(len(todo), np.int64)
        found[hit] = self.sorted_index[at[hit]]
        if not hit.all():
            new_keys = keys[~hit]
            unique, first, inverse = np.unique(new_keys, return_index=True, return_inverse=True)
            rank = np.empty(len(unique), np.int64)
            rank[np.argsort(first, kind="stable")] = np.arange(len(unique))  # appended as first seen
            new_index = self.count + rank
            found[~hit] = new_index[inverse.ravel()]
            self.added.append(values[todo[~hit]][np.sort(first)])
            self.count += len(unique)
            place = np.searchsorted(self.sorted_keys, unique)
            self.sorted_keys = np.insert(self.sorted_keys, place, unique)
            self.sorted_index = np.insert(self.sorted_index, place, new_index)
        idx[todo] = found
        return idx

    def array(self) -> np.ndarray:
        return np.concatenate([self.initial, *self.added])


class _Library:
    """The keyframe library being written: an existing one to append to, or a new one."""

    def __init__(self, tkl: tkl_format.TKL | None, name: str | None, header: dict):
        self.base = tkl
        if tkl is not None:
            positions = np.asarray(tkl.positions, np.float32).reshape(-1, 3)
            rotations = np.asarray(tkl.rotations, np.float32).reshape(-1, 4)
            default = tkl.name
        else:
            positions = np.zeros((0, 3), np.float32)
            rotations = np.zeros((0, 4), np.float32)
            field = header.get("tkl_field", b"")
            default = field.split(b"\0", 1)[0].decode("ascii", "replace") or "model"
        self.positions = _KeyTable(positions, tkl is not None)
        self.rotations = _KeyTable(rotations, tkl is not None)
        self.name = name or default
        if len(self.name.encode("ascii", "replace")) > 15:
            raise ExportError(f"keyframe library name {self.name!r} is longer than 15 bytes")

    def positions_for(self, values: np.ndarray, preferred) -> np.ndarray:
        return self.positions.indices(values, preferred)

    def rotations_for(self, values: np.ndarray, preferred) -> np.ndarray:
        return self.rotations.indices(values, preferred)

    def model(self) -> tkl_format.TKL:
        positions, rotations = self.positions.array(), self.rotations.array()
        if len(positions) > 0x10000 or len(rotations) > 0x10000:
            raise ExportError(
                f"keyframe library {self.name!r} would hold {len(positions)} positions and "
                f"{len(rotations)} rotations; key indices are 16-bit (at most 65536 each)"
            )
        if self.base is not None:
            b = self.base
            field = b.name_field if b.name == self.name else tkl_format.name_field(self.name)
            return tkl_format.TKL(
                field, positions, rotations, b.scale_count, b.scale_size, b.scales, b.reserved
            )
        return tkl_format.TKL(tkl_format.name_field(self.name), positions, rotations)


def _channel_keys(
    location: Channel | None,
    rotation: Channel | None,
    is_root: bool,
    axis3,
    axis_q,
    library: _Library,
    name: str,
    fitted: list[tuple[int, float]],
    blender: bool,
) -> tmd_format.Channel:
    """One TMD channel from a bone's location and rotation channels (either may be None).

    A channel still as read is written with its keys; any other gets the keys the game needs to
    play it as Blender does (``fit.game_keys``; the keys it added and its largest error go to
    ``fitted``). Keys at the file's key times keep their stored time and, while their values are
    unchanged, their library indices, so only edited keys add library entries."""
    if location is not None and rotation is not None:
        flags = tmd_format.CHANNEL_TRANSLATION_ROTATION
    elif rotation is not None:
        flags = tmd_format.CHANNEL_ROTATION
    else:
        flags = tmd_format.CHANNEL_TRANSLATION
    extras = {}
    for c in (location, rotation):
        if c is not None:
            extras.update(c.extras)
    stored_times, stored_indices = _stored_keys(extras)
    stored_frames = stored_times * FPS
    parts = []
    for channel in (location, rotation):
        if channel is None:
            parts.append(None)
        elif fit.unedited(channel):
            values = np.asarray(channel.values, np.float64).reshape(len(channel.times), -1)
            parts.append((np.asarray(channel.times, np.float64), values))
        else:
            own = np.asarray(channel.times, np.float64)
            optional = own[~_at_stored(own, stored_frames)] if len(stored_frames) else own[:0]
            times, (values,), added, error = fit.game_keys([channel], optional, blender)
            fitted.append((added, error))
            parts.append((times, values))
    times = np.unique(np.concatenate([p[0] for p in parts if p is not None]))
    if len(times) > 0xFFFF:
        raise ExportError(f"animation channel of bone {name!r} has {len(times)} keys (at most 65535)")
    keys = np.zeros(len(times), tmd_format.KEY_DTYPE)
    keys["time"] = times / FPS
    stored = _at_stored(times, stored_frames, nearest=True)
    known = stored >= 0
    keys["time"][known] = stored_times[stored[known]]

    def preferred(index_name: str) -> np.ndarray | None:
        indices = stored_indices.get(index_name)
        if indices is None or len(indices) != len(stored_times):
            return None
        return np.where(known, indices[np.maximum(stored, 0)], -1)

    for index_name in ("position", "rotation"):  # the unused one's stored index is kept too
        kept = preferred(index_name)
        if kept is not None:
            keys[index_name] = np.maximum(kept, 0)
    if location is not None:
        part_times, values = parts[0]
        values = fit.game(part_times, values, False, times)
        if is_root:
            values = values @ axis3
        keys["position"] = library.positions_for(values, preferred("position"))
    if rotation is not None:
        part_times, values = parts[1]
        values = fit.game(part_times, values, True, times)
        if is_root:
            values = quat_multiply(axis_q * np.array([1, -1, -1, -1]), values)
        keys["rotation"] = library.rotations_for(values[:, [1, 2, 3, 0]], preferred("rotation"))
    return tmd_format.Channel(flags, keys)


def _stored_keys(extras: dict) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The file's key times (seconds) and library indices by table ("position", "rotation") a channel's
    extras keep: the key records as stored ("keys"), or the lists of earlier versions ("times",
    "position_indices", "rotation_indices")."""
    stored = extras.get("keys")
    if isinstance(stored, (bytes, bytearray)) and len(stored) % tmd_format.KEY_DTYPE.itemsize == 0:
        keys = np.frombuffer(stored, tmd_format.KEY_DTYPE)
        tables = ("position", "rotation")
        return keys["time"].astype(np.float64), {t: keys[t].astype(np.int64) for t in tables}
    indices = {}
    for table in ("position", "rotation"):
        if f"{table}_indices" in extras:
            indices[table] = np.asarray(extras[f"{table}_indices"], np.int64)
    return np.asarray(extras.get("times", ()), np.float64), indices


def _at_stored(frames: np.ndarray, stored_frames: np.ndarray, nearest: bool = False) -> np.ndarray:
    """Per frame whether it is one of the file's key frames (``nearest``: which one, else -1)."""
    if not len(stored_frames):
        return np.full(len(frames), -1) if nearest else np.zeros(len(frames), bool)
    order = np.argsort(stored_frames, kind="stable")
    at = np.clip(np.searchsorted(stored_frames[order], frames), 1, len(order)) - 1
    best = np.where(
        (at + 1 < len(order))
        & (
            np.abs(stored_frames[order][np.minimum(at + 1, len(order) - 1)] - frames)
            < np.abs(stored_frames[order][at] - frames)
        ),
        at + 1,
        at,
    )
    close = np.abs(stored_frames[order][best] - frames) <= TIME_TOLERANCE
    if not nearest:
        return close
    return np.where(close, order[best], -1)


def _animations_out(
    scene: Scene, skeleton: Skeleton | None, node_count: int, axis3, library: _Library, fitted: list
):
    bone_index = {name: i for i, name in enumerate(skeleton.bone_names)} if skeleton else {}
    roots = np.asarray(skeleton.parents) < 0 if skeleton else np.ones(node_count, bool)
    axis_q = _axis_quat(axis3)
    animations, per_animation = [], []
    for anim in scene.animations:
        extras = anim.extras
        name_length, name_field = _name_field(anim.name, extras, "animation")
        by_bone: dict[int, dict[str, Channel]] = {}
        for channel in anim.channels:
            if (
                channel.target_kind == "bone"
                and channel.target in bone_index
                and channel.index is None
                and channel.path in ("location", "rotation_quaternion", "rotation_euler")
            ):
                by_bone.setdefault(bone_index[channel.target], {})[channel.path] = channel
        stored_flags = extras.get("channel_flags", [])
        raw_keys = extras.get("raw_keys", {})
        channels = []
        for node in range(node_count):
            found = by_bone.get(node, {})
            if found:
                channels.append(
                    _channel_keys(
                        found.get("location"),
                        found.get("rotation_quaternion", found.get("rotation_euler")),
                        bool(roots[node]),
                        axis3,
                        axis_q,
                        library,
                        skeleton.bone_names[node],
                        fitted,
                        bool(extras.get(fit.PLAYED_IN_BLENDER)),
                    )
                )
            else:
                flags = int(stored_flags[node]) if node < len(stored_flags) else tmd_format.CHANNEL_UNUSED
                raw = raw_keys.get(str(node), b"")
                keys = np.frombuffer(raw, tmd_format.KEY_DTYPE).copy()
                channels.append(tmd_format.Channel(flags, keys))
        duration = float(extras["duration"]) if "duration" in extras else None
        if duration is None or abs(duration * FPS - anim.frame_end) > TIME_TOLERANCE:
            end = anim.frame_end or max(
                (float(np.max(c.times)) for c in anim.channels if len(c.times)), default=0.0
            )
            duration = end / FPS
        animations.append(
            tmd_format.Animation(
                name_length,
                name_field,
                int(extras.get("a", 0)),
                int(extras.get("b", 0)),
                int(extras.get("c", node_count)),
                duration,
                np.zeros(node_count, np.int32),
            )
        )
        per_animation.append((channels, extras.get("channel_ids")))
    return animations, _assign_channels(animations, per_animation, node_count)


def _same_channel(a: tmd_format.Channel, b: tmd_format.Channel) -> bool:
    return a.flags == b.flags and a.keys.tobytes() == b.keys.tobytes()


def _assign_channels(animations, per_animation, node_count: int) -> list[tmd_format.Channel]:
    """The model's channel list: the imported sharing and order when it still holds, else one per slot."""
    shared: dict[int, tmd_format.Channel] = {}
    consistent = True
    for channels, ids in per_animation:
        if ids is None or len(ids) != node_count:
            consistent = False
            break
        for channel, cid in zip(channels, ids, strict=True):
            if cid in shared and not _same_channel(shared[cid], channel):
                consistent = False
            shared.setdefault(cid, channel)
    if consistent and sorted(shared) == list(range(len(shared))):
        for anim, (_, ids) in zip(animations, per_animation, strict=True):
            anim.channels = np.asarray(ids, np.int32)
        return [shared[i] for i in range(len(shared))]
    result = []
    for anim, (channels, _) in zip(animations, per_animation, strict=True):
        anim.channels = np.arange(len(result), len(result) + len(channels), dtype=np.int32)
        result.extend(channels)
    return result


# -- meshes out ---------------------------------------------------------------


def _mesh_lod(mesh: Mesh) -> int:
    if "lod" in mesh.extras:
        return int(mesh.extras["lod"])
    if mesh.collection.upper().startswith("LOD") and mesh.collection[3:].isdigit():
        return int(mesh.collection[3:])
    return 0


def _lods_out(
    scene: Scene, skeleton, node_count: int, axis3, lods: str
) -> tuple[list[tmd_format.LOD], bytes]:
    by_lod: dict[int, list[Mesh]] = {}
    for mesh in scene.meshes:
        by_lod.setdefault(_mesh_lod(mesh), []).append(mesh)
    count = 1 if lods == "FIRST" else (max(by_lod) + 1 if by_lod else 1)
    stored = scene.extras.get("lods", [])
    result = []
    radius0 = 0.0
    for li in range(count):
        meshes = sorted(by_lod.get(li, []), key=lambda m: int(m.extras.get("index", 1 << 30)))
        out = [m for mesh in meshes for m in _mesh_out(scene, mesh, node_count, axis3)]
        if li < len(stored):
            unknown = stored[li]["unknown"]
            sphere = np.frombuffer(stored[li]["sphere"], "<f4").copy()
        else:
            unknown, sphere = bytes(4), _sphere(out)
        if li == 0:
            radius0 = float(sphere[3])
        result.append(tmd_format.LOD(unknown, sphere, out))
    return result, np.float32(radius0).tobytes()


def _sphere(meshes: list[tmd_format.Mesh]) -> np.ndarray:
    points = [p.vertices["position"] for m in meshes for p in m.pieces if len(p.vertices)]
    if not points:
        return np.zeros(4, np.float32)
    points = np.concatenate(points).astype(np.float64)
    centre = (points.min(axis=0) + points.max(axis=0)) / 2
    radius = np.linalg.norm(points - centre, axis=1).max()
    return np.array([*centre, radius], np.float32)


def _material_field(scene: Scene, mesh: Mesh, slot: int) -> bytes:
    if not mesh.materials or slot >= len(mesh.materials):
        raise ExportError(f"mesh {mesh.name!r} has no material (every TMD mesh names one)")
    material = scene.materials[mesh.materials[slot]]
    raw = mesh.extras.get("material_field")
    if raw and len(mesh.materials) == 1 and tml_format.decode_name(raw) == material.name and len(raw) == 32:
        return raw
    try:
        return tml_format.name_field(material.name)
    except ValueError as e:
        raise ExportError(f"material name {material.name!r} is longer than 31 bytes") from e


def _per_vertex(layer: SceneLayer | None, triangles: np.ndarray, count: int, width: int) -> np.ndarray | None:
    """A POINT layer, or a CORNER layer whose corners agree per vertex; None otherwise."""
    if layer is None:
        return np.zeros((count, width), np.float32)
    data = np.asarray(layer.data, np.float32).reshape(-1, width)
    if layer.domain == "POINT":
        return data if len(data) == count else None
    corners = triangles.reshape(-1)
    out = np.zeros((count, width), np.float32)
    out[corners[::-1]] = data[::-1]  # the first corner of each vertex wins
    if not np.array_equal(out[corners], data):
        return None
    return out


def _weight_bytes(weights: np.ndarray) -> np.ndarray:
    """(V, 4) weights → bytes summing to 255 per row (rounding error put on the heaviest)."""
    total = weights.sum(axis=1, keepdims=True)
    normalised = np.where(total > 0, weights / np.where(total > 0, total, 1), 0)
    out = np.floor(normalised * 255 + 0.5).astype(np.int64)
    heaviest = np.argmax(normalised, axis=1)
    rows = np.arange(len(out))
    out[rows, heaviest] += np.where(total[:, 0] > 0, 255 - out.sum(axis=1), 0)
    return np.clip(out, 0, 255).astype(np.uint8)


def _skin_out(mesh: Mesh, count: int, node_count: int) -> tuple[np.ndarray, np.ndarray]:
    """(V, 4) node ids and weight bytes: the four heaviest influences, bytes summing to 255."""
    if mesh.skin_joints is None or mesh.skin_weights is None or not count:
        nodes = np.zeros((count, 4), np.int64)
        weights = np.zeros((count, 4), np.uint8)
        weights[:, 0] = 255
        return nodes, weights
    joints = np.asarray(mesh.skin_joints, np.int64).reshape(count, -1)
    weights = np.asarray(mesh.skin_weights, np.float64).reshape(count, -1)
    weights = np.where((joints >= 0) & (joints < node_count), weights, 0)
    if joints.shape[1] < 4:
        pad = 4 - joints.shape[1]
        joints = np.pad(joints, ((0, 0), (0, pad)))
        weights = np.pad(weights, ((0, 0), (0, pad)))
    order = np.argsort(-weights, axis=1, kind="stable")[:, :4]
    joints = np.take_along_axis(joints, order, axis=1)
    weight_bytes = _weight_bytes(np.take_along_axis(weights, order, axis=1))
    unweighted = weight_bytes.sum(axis=1) == 0
    weight_bytes[unweighted, 0] = 255
    joints[unweighted, 0] = 0
    return np.where(weight_bytes > 0, joints, 0), weight_bytes


def _mesh_out(scene: Scene, mesh: Mesh, node_count: int, axis3) -> list[tmd_format.Mesh]:
    kept = _reuse_mesh(scene, mesh, node_count, axis3)
    if kept is not None:
        return [kept]
    return _build_meshes(scene, mesh, node_count, axis3)


def _vertex_array(positions, normals, uvs, axis3) -> np.ndarray:
    out = np.zeros(len(positions), tmd_format.VERTEX_DTYPE)
    out["position"] = np.asarray(positions, np.float64) @ axis3
    out["normal"] = np.asarray(normals, np.float64) @ axis3
    out["uv"] = np.asarray(uvs, np.float32) * np.array([1, -1], np.float32)
    return out


def _stored_order_weights(mesh: Mesh, resolved: np.ndarray) -> np.ndarray | None:
    """Weight bytes in the file's influence order (``resolved``: (V, 4) node of each stored slot).

    The scene may list a vertex's influences in another order (strongest
    first, say); each stored slot takes the weight of its node. None when the
    influences are not those the slots name.
    """
    joints = np.asarray(mesh.skin_joints, np.int64).reshape(len(resolved), -1)
    remaining = np.asarray(mesh.skin_weights, np.float64).reshape(len(resolved), -1).copy()
    out = np.zeros(resolved.shape, np.float64)
    rows = np.arange(len(resolved))
    for k in range(resolved.shape[1]):
        match = (joints == resolved[:, k : k + 1]) & (remaining > 0)
        first = np.argmax(match, axis=1)
        has = match[rows, first]
        out[has, k] = remaining[rows[has], first[has]]
        remaining[rows[has], first[has]] = 0
    if remaining.any():
        return None
    return np.clip(np.rint(out * 255), 0, 255).astype(np.uint8)


def _reuse_mesh(scene: Scene, mesh: Mesh, node_count: int, axis3) -> tmd_format.Mesh | None:
    """The imported piece structure, when the mesh's vertices and triangles are unchanged."""
    ex = mesh.extras
    if "strips" not in ex or len(mesh.materials) != 1:
        return None
    count = len(mesh.positions)
    vertex_counts = [int(v) for v in ex["piece_vertex_counts"]]
    index_counts = [int(v) for v in ex["piece_index_counts"]]
    all_strips = np.frombuffer(ex["strips"], "<i2")
    if sum(vertex_counts) != count or len(all_strips) != sum(index_counts):
        return None
    piece_strips = np.split(all_strips, np.cumsum(index_counts)[:-1]) if index_counts else []
    triangles = strips.to_triangles(all_strips, index_counts)
    if not np.array_equal(triangles, np.asarray(mesh.triangles)):
        return None
    if all_strips.size and (all_strips.min() < 0 or all_strips.max() >= count):
        return None
    normals = _per_vertex(mesh.normals, triangles, count, 3)
    uvs = _per_vertex(mesh.uv_layers[0] if mesh.uv_layers else None, triangles, count, 2)
    if normals is None or uvs is None:
        return None
    vertices = _vertex_array(mesh.positions, normals, uvs, axis3)
    sizes = [int(v) for v in ex["palette_sizes"]]
    palettes = np.split(np.asarray(ex["palettes"], np.int64), np.cumsum(sizes)[:-1]) if sizes else []
    bone_bytes = np.frombuffer(ex["bone_bytes"], np.uint8)
    if len(bone_bytes) != 4 * count or not len(palettes) == len(piece_strips) == len(vertex_counts):
        return None
    bone_bytes = bone_bytes.reshape(count, 4)
    if mesh.skin_weights is None or mesh.skin_joints is None or len(mesh.skin_weights) != count:
        return None
    pieces = [
        tmd_format.Piece(
            0,
            np.zeros(3, np.float32),
            np.zeros(3, np.float32),
            palette.astype(np.uint32),
            np.zeros(n, tmd_format.VERTEX_DTYPE),
            strip.copy(),
        )
        for palette, n, strip in zip(palettes, vertex_counts, piece_strips, strict=True)
    ]
    owner = _skin_owner(pieces, count)
    width = max([len(p) for p in palettes] + [1])
    table = np.full((len(pieces), width + 1), -1, np.int64)
    for pi, palette in enumerate(palettes):
        table[pi, : len(palette)] = palette
    resolved = table[owner[:, None], np.minimum(bone_bytes.astype(np.int64) // 3, width)]
    weight_bytes = _stored_order_weights(mesh, resolved)
    if weight_bytes is None:
        return None
    vertices["weights"] = weight_bytes
    vertices["bones"] = bone_bytes
    starts = np.concatenate([[0], np.cumsum(vertex_counts)])
    bbox = np.asarray(ex["bbox"], np.float32).reshape(-1, 6)
    required = ex["vertices_required"]
    for pi, piece in enumerate(pieces):
        piece.vertices = vertices[starts[pi] : starts[pi + 1]]
        piece.vertices_required = int(required[pi])
        piece.bbox_centre, piece.bbox_half_extent = bbox[pi, :3].copy(), bbox[pi, 3:].copy()
    return tmd_format.Mesh(
        int(ex["total_indices"]),
        int(ex["total_vertices"]),
        _material_field(scene, mesh, 0),
        pieces,
    )


def _vertex_normals(positions: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    p = np.asarray(positions, np.float64)
    face = np.cross(p[triangles[:, 1]] - p[triangles[:, 0]], p[triangles[:, 2]] - p[triangles[:, 0]])
    normals = np.zeros_like(p)
    for k in range(3):
        np.add.at(normals, triangles[:, k], face)
    length = np.linalg.norm(normals, axis=1, keepdims=True)
    return (normals / np.where(length > 0, length, 1)).astype(np.float32)


def _build_meshes(scene: Scene, mesh: Mesh, node_count: int, axis3) -> list[tmd_format.Mesh]:
    """TMD meshes written by the game's rules: one per material, pieces per palette, split strips."""
    triangles = np.asarray(mesh.triangles, np.int64).reshape(-1, 3)
    count = len(mesh.positions)
    positions = np.asarray(mesh.positions, np.float32)
    nodes4, weights4 = _skin_out(mesh, count, node_count)
    normal_layer = mesh.normals or SceneLayer("normal", _vertex_normals(positions, triangles), "POINT")
    uv_layer = mesh.uv_layers[0] if mesh.uv_layers else SceneLayer(UV_LAYER, np.zeros((count, 2), np.float32))
    source = np.arange(count)
    normals = np.asarray(normal_layer.data, np.float32).reshape(-1, 3)
    uvs = np.asarray(uv_layer.data, np.float32).reshape(-1, 2)
    if normal_layer.domain == "CORNER" or uv_layer.domain == "CORNER":
        # Split vertices whose corners differ: one vertex per distinct (vertex, normal, uv).
        corners = triangles.reshape(-1)
        corner_normals = normals if normal_layer.domain == "CORNER" else normals[corners]
        corner_uvs = uvs if uv_layer.domain == "CORNER" else uvs[corners]
        rows = np.column_stack(
            [corners.astype(np.uint32), corner_normals.view(np.uint32), corner_uvs.view(np.uint32)]
        )
        rows = np.ascontiguousarray(rows)
        _, first, inverse = np.unique(
            rows.view(np.dtype((np.void, rows.shape[1] * 4))).ravel(), return_index=True, return_inverse=True
        )
        source = corners[first]
        normals, uvs = corner_normals[first], corner_uvs[first]
        triangles = inverse.reshape(-1, 3)
    vertices = _vertex_array(positions[source], normals, uvs, axis3)
    nodes4, weights4 = nodes4[source], weights4[source]

    material_of = (
        np.zeros(len(triangles), np.int64)
        if mesh.material_indices is None
        else np.asarray(mesh.material_indices, np.int64)
    )
    result = []
    for slot in np.unique(material_of) if len(triangles) else [0]:
        field = _material_field(scene, mesh, int(slot))
        tris = triangles[material_of == slot]
        result.append(_pieces(mesh.name, field, vertices, nodes4, weights4, tris))
    return result


def _palette_groups(tris: np.ndarray, nodes4: np.ndarray, weights4: np.ndarray) -> list[np.ndarray]:
    """Triangle index groups whose vertices use at most MAX_PALETTE nodes each."""
    weighted = np.where(weights4 > 0, nodes4, -1)
    if len(np.unique(weighted[weighted >= 0])) <= MAX_PALETTE:
        return [np.arange(len(tris))]
    corner_nodes = weighted[tris].reshape(len(tris), -1)
    primary = nodes4[tris[:, 0], 0]  # the heaviest influence of the first corner
    order = np.argsort(primary, kind="stable")
    runs = np.split(order, np.flatnonzero(np.diff(primary[order])) + 1)
    groups: list[np.ndarray] = []
    current: list[np.ndarray] = []
    current_nodes: set[int] = set()

    def flush():
        nonlocal current, current_nodes
        if current:
            groups.append(np.concatenate(current))
        current, current_nodes = [], set()

    for run in runs:
        run_nodes = set(np.unique(corner_nodes[run]).tolist()) - {-1}
        if len(current_nodes | run_nodes) <= MAX_PALETTE:
            current.append(run)
            current_nodes |= run_nodes
            continue
        flush()
        if len(run_nodes) <= MAX_PALETTE:
            current, current_nodes = [run], run_nodes
            continue
        for t in run:  # rare: one bone's triangles reach more than 28 bones
            tri_nodes = set(corner_nodes[t].tolist()) - {-1}
            if len(current_nodes | tri_nodes) > MAX_PALETTE:
                flush()
            current.append(np.array([t]))
            current_nodes |= tri_nodes
    flush()
    return groups


def _pieces(name: str, material_field: bytes, vertices, nodes4, weights4, tris) -> tmd_format.Mesh:
    pieces = []
    base = 0
    for group in _palette_groups(tris, nodes4, weights4):
        group_tris = tris[group]
        used, local = np.unique(group_tris, return_inverse=True)
        local = local.reshape(-1, 3)
        weighted = weights4[used] > 0
        palette = np.unique(nodes4[used][weighted])
        lookup = np.zeros(max(int(palette.max()) + 1 if len(palette) else 1, 1), np.int64)
        lookup[palette] = np.arange(len(palette))
        group_vertices = vertices[used].copy()
        group_vertices["weights"] = weights4[used]
        group_vertices["bones"] = np.where(weighted, lookup[nodes4[used]] * 3, 0)
        strip = strips.stripify(local) + base
        if not len(strip):
            continue  # only degenerate triangles
        if base + len(used) > MAX_MESH_VERTICES:
            raise ExportError(
                f"mesh {name!r} needs more than {MAX_MESH_VERTICES} vertices (after splitting it into "
                f"bone palettes); split it into smaller objects"
            )
        for k, part in enumerate(strips.split(strip)):
            stored = group_vertices if k == 0 else group_vertices[:0]
            referenced = vertices["position"][used][part.astype(np.int64) - base]
            low, high = referenced.min(axis=0), referenced.max(axis=0)
            pieces.append(
                tmd_format.Piece(
                    vertices_required=int(part.max()),
                    bbox_centre=((low + high) / 2).astype(np.float32),
                    bbox_half_extent=((high - low) / 2).astype(np.float32),
                    palette=palette.astype(np.uint32),
                    vertices=stored,
                    strip=part.astype(np.int16),
                )
            )
        base += len(used)
    return tmd_format.Mesh(sum(len(p.strip) for p in pieces), base, material_field, pieces)


# -- material library out -----------------------------------------------------


def _source_matches(image: Image, fmt: int) -> bool:
    """Whether the image's stored data still holds its pixels (or nothing else is known)."""
    if image.pixels is None:
        return True
    texture = tml_format.Texture(0, 0, 0, 0, fmt, image.width, image.height, 0, 0, image.source_bytes)
    try:
        return np.array_equal(texture.decode(), np.asarray(image.pixels))
    except FormatError:
        return False


def _texture(image: Image, texture_id: int) -> tml_format.Texture:
    e = image.extras
    fmt = e.get("format")
    header = {k: int(e.get(k, v)) for k, v in NEW_TEXTURE_HEADER.items()}
    if image.source_bytes is not None and fmt is not None and _source_matches(image, int(fmt)):
        return tml_format.Texture(
            texture_id,
            format=int(fmt),
            width=image.width,
            height=image.height,
            data=bytes(image.source_bytes),
            **header,
        )
    if image.pixels is None:
        raise ExportError(f"image {image.name!r} has no pixels to write")
    pixels = raster.as_rgba(image.pixels)
    height, width = pixels.shape[:2]
    if width > 0xFFFF or height > 0xFFFF:
        raise ExportError(f"image {image.name!r} is larger than 65535 pixels")
    fmt = int(fmt) if fmt is not None and int(fmt) in tml_format.FORMAT_NAMES else 0
    if "order" in e:  # a library texture whose stored data no longer holds its pixels: they were edited
        fmt = 0  # RGBA8888 keeps what was painted; the file's format (DXT, 16-bit) would not
    if fmt == tml_format.FORMAT_DDS:
        encoding = image.source_format if image.source_format in ("DXT1", "DXT3", "DXT5") else "DXT5"
        data = dds.encode(pixels, encoding)
    else:
        data = raster.encode(tml_format.FORMAT_NAMES[fmt], pixels)
    return tml_format.Texture(texture_id, format=fmt, width=width, height=height, data=data, **header)


def _renamed(material: Material) -> bool:
    raw = material.extras.get("name_field", b"")
    return tml_format.decode_name(raw) != material.name


def _tml_out(scene: Scene) -> tml_format.TML:
    materials = scene.materials
    keyed = {}
    for material in materials:
        key = tml_format.sort_key(material.name)
        if key in keyed:
            raise ExportError(f"materials {keyed[key]!r} and {material.name!r} differ only in case")
        keyed[key] = material.name
    # Textures: the imported ones in their order, then new ones (ids above, written first: descending ids).
    wanted = sorted(
        {slot.image for m in materials for slot in m.textures}
        | {i for i, img in enumerate(scene.images) if "order" in img.extras}
    )
    existing = sorted(
        (i for i in wanted if "order" in scene.images[i].extras and "id" in scene.images[i].extras),
        key=lambda i: int(scene.images[i].extras["order"]),
    )
    new = [i for i in wanted if i not in set(existing)]
    texture_id = {i: int(scene.images[i].extras["id"]) for i in existing}
    next_id = max(texture_id.values(), default=-1) + 1
    for k, i in enumerate(new):
        texture_id[i] = next_id + k
    textures = [_texture(scene.images[i], texture_id[i]) for i in reversed(new)]
    textures += [_texture(scene.images[i], texture_id[i]) for i in existing]

    orders = [m.extras.get("order") for m in materials]
    keep_order = all(o is not None for o in orders) and sorted(orders) == list(range(len(materials)))
    if keep_order and any(_renamed(m) for m in materials):
        # A rename may break the sort the game's binary search needs: keep the order only if it holds.
        keys = [tml_format.sort_key(m.name) for m in sorted(materials, key=lambda m: int(m.extras["order"]))]
        keep_order = keys == sorted(keys)
    ordered = (
        sorted(materials, key=lambda m: int(m.extras["order"]))
        if keep_order
        else sorted(materials, key=lambda m: tml_format.sort_key(m.name))
    )
    known_ids = set(texture_id.values())
    names, records = [], []
    for position, material in enumerate(ordered):
        e = material.extras
        raw = e.get("name_field", b"")
        if tml_format.decode_name(raw) != material.name or len(raw) != 32:
            try:
                raw = tml_format.name_field(material.name)
            except ValueError as err:
                raise ExportError(f"material name {material.name!r} is longer than 31 bytes") from err
        ids = [texture_id[slot.image] for slot in material.textures]
        stored = [int(t) for t in e.get("texture_ids", [])]
        if stored and [t for t in stored if t in known_ids] == ids:
            ids = stored
        if len(ids) > MAX_TEXTURES_PER_MATERIAL:
            raise ExportError(f"material {material.name!r} has {len(ids)} textures (at most 4)")
        record_id = int(e["id"]) if keep_order and "id" in e else position
        names.append(raw)
        records.append(tml_format.Material(record_id, int(e.get("flags", 0)), ids))
    info = scene.extras.get("tml", {})
    return tml_format.TML(int(info.get("type", 0)), textures, names, records, info.get("trailer", b""))
