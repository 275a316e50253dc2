"""tmd0 models (+ their texture CAT) ↔ the neutral ``Scene``.

Import (``to_scene``):
- One skeleton from the hierarchy: rest = axis @ inverse(inverse bind). Bone
  names come from the names given (matched by hash) or are ``bone_<hash hex>``;
  each bone keeps its hash and the file's values in its extras.
- One mesh for the whole model with one material slot per tmd0 material. The
  faces index one global vertex list and a vertex may be drawn by several
  batches, so one mesh keeps the vertex and face order of the file and writes
  back byte for byte; meshes per batch would split shared vertices. The draw
  list (boxes, operations, polygroups, rigs) travels in the mesh's extras.
- POINT normals (the direction of (byte − 127) / 128; the stored bytes go back
  for every vertex whose normal still points that way), UV layers ``UV0``..``UV2`` (u = raw / 1024, v = −raw / 1024: the
  0–1 square, exactly reversible), a colour layer, skin joints resolved through
  the palette of the first rig that draws each vertex, weights = byte / 255
  (unnormalised, for the same reason).
- One material per tmd0 material; texture slots for used slots with a texture
  (type 0 base colour, 3 normal map, 4 specular/ramp); the 200-byte record is
  kept. One image per texture entry, named by the model's CAT and decoded from
  the texture CAT's resource of that name (DDS or GXT) at its real size; the
  entry's own size is kept for export. Others become empty images with a warning.

Export (``from_scene``) reuses everything the extras describe while the scene
still matches it: the draw list while the material of every face and every
vertex's bones fit it, the stored boxes while the positions are unchanged,
matrices, hierarchy positions and material parameters within tolerance, the
stored bytes of every vertex whose normal points the same way (within the
stored quantisation) and whose weights are the same once normalised, so that
an edit re-encodes only the vertices it changed. Otherwise it rebuilds: faces sorted
by material, batches of at most 32 bones, vertices duplicated where batches
with different palettes share them, at most 65535 faces per polygroup.

Textures (``texture_payloads``) go back into the texture CAT: unchanged payloads
as read, a payload with an edited texture rebuilt (its bundle's offsets and
sizes recomputed) with the texture encoded again in its own layout: a DDS in its
pixel format with its mip levels regenerated, a GXT texture in its format
(PVRTC is refused with an error naming the image). The texture table keeps its
stored sizes.

Axis: the file is Y-up; the default conversion is ``axis_matrix("-Z", "Y")``.
"""

from __future__ import annotations

import numpy as np

from ..errors import ExportError, FormatError
from ..scene import Image, Layer, Material, Mesh, Scene, Skeleton, TextureSlot, axis_matrix
from ..textures import dds, gxm, gxt
from . import cat, texture_cat, tmd0
from . import names as bone_names
from .tmd0 import OP_DRAW, OP_END, OP_MATERIAL, OP_RIG

AXES = ("-Z", "Y")  # the default (forward, up): the file is Y-up with -Z forward, as glTF
DEFAULT_AXIS = axis_matrix(*AXES)
UV_LAYERS = ("UV0", "UV1", "UV2")
UV_FLAGS = (tmd0.UV0, tmd0.UV1, tmd0.UV2)
COLOUR_LAYER = "Colour"
ROLES = {0: "base_color", 3: "normal", 4: "specular"}
SLOT_TYPES = {role: kind for kind, role in ROLES.items()}
MATRIX_TOLERANCE = 1e-4
PARAM_TOLERANCE = 1e-5
MAX_POLYGROUP_FACES = 0xFFFF
MAX_VERTICES = 0x10000
MAX_OPERATION_VALUE = 0xFF
INFLUENCES = 4
NO_BONE = np.iinfo(np.int64).max
WEIGHT_TOLERANCE = 0.5 / 255 + 1e-6  # half a stored weight step (and float32 noise)
# A stored normal's components are in steps of 1/128: its direction is known to about half a step per
# component; an exported normal closer than that to it is the stored normal, not an edit.
NORMAL_TOLERANCE = 3**0.5 * 0.5 / 128
NEW_TEXTURE_FLAGS = 0x00FF
KEY = "tamsoft"
DDS_HEADER = "dds_header"  # image extras: the header of its DDS file, whose layout an edit is written in


# -- draw list ------------------------------------------------------------------


def draw_calls(model: tmd0.TMD0) -> list[tuple[int, int, int, int]]:
    """(draw list entry, material, rig, polygroup) per drawn polygroup, in draw order.

    Each batch starts with material 0 and rig 0 (culling may skip the batches
    before it) and stops at an end operation even when its count runs further.
    """
    types = model.operations["type"].tolist()
    values = model.operations["value"].tolist()
    calls = []
    for index, (first, count) in enumerate(
        zip(model.draw_list["first"].tolist(), model.draw_list["count"].tolist(), strict=True)
    ):
        material = rig = 0
        for i in range(first, min(first + count, len(types))):
            if types[i] == OP_END:
                break
            if types[i] == OP_MATERIAL:
                material = values[i]
            elif types[i] == OP_RIG:
                rig = values[i]
            elif types[i] == OP_DRAW:
                calls.append((index, material, rig, values[i]))
    return calls


def face_materials_and_vertex_rigs(model: tmd0.TMD0) -> tuple[np.ndarray, np.ndarray]:
    """Material per face and rig per vertex from the first call that draws them (0 / −1 when none)."""
    face_material = np.zeros(len(model.faces), np.int32)
    face_drawn = np.zeros(len(model.faces), bool)
    vertex_rig = np.full(len(model.vertices), -1, np.int32)
    faces = np.asarray(model.faces, np.int64)
    for _, material, rig, group in draw_calls(model):
        first = int(model.polygroups["first"][group])
        span = slice(first, first + int(model.polygroups["count"][group]))
        fresh = ~face_drawn[span]
        face_material[span][fresh] = material
        face_drawn[span] = True
        vertices = faces[span].ravel()
        vertex_rig[vertices[vertex_rig[vertices] < 0]] = rig
    return face_material, vertex_rig


def resolve_skin(model: tmd0.TMD0, vertex_rig: np.ndarray, bone_ids: np.ndarray, weight_bytes: np.ndarray):
    """Skeleton joints (V, 4) and weights = byte / 255 (V, 4); unusable influences get weight 0."""
    ids = bone_ids.astype(np.int64)
    if len(model.rigs):
        rig = np.maximum(vertex_rig, 0)
        palettes = model.rigs["bones"].astype(np.int64)
        counts = model.rigs["count"].astype(np.int64)
        usable = (ids < counts[rig][:, None]) & (vertex_rig >= 0)[:, None]
        joints = palettes[rig[:, None], np.minimum(ids, tmd0.MAX_PALETTE - 1)]
    else:  # without rigs the ids index the skeleton
        usable = ids < len(model.bones)
        joints = ids
    weights = np.where(usable, weight_bytes / np.float32(255), 0).astype(np.float32)
    return np.where(usable, joints, 0).astype(np.int32), weights


def same_skin(joints_a, weights_a, joints_b, weights_b) -> np.ndarray:
    """Per vertex: the same bones with the same weights once each side is normalised to sum 1, within
    half a weight step (1/510). The extractor normalises what the file stores unnormalised (a sum of
    253 or 254 of 255), so a vertex that only went through Blender still matches its stored bytes."""
    (keys_a, norm_a), (keys_b, norm_b) = (
        _sorted_influences(joints_a, weights_a),
        _sorted_influences(joints_b, weights_b),
    )
    width = max(keys_a.shape[1], keys_b.shape[1])
    keys_a, keys_b = _pad(keys_a, width, NO_BONE), _pad(keys_b, width, NO_BONE)
    norm_a, norm_b = _pad(norm_a, width), _pad(norm_b, width)
    return np.all(keys_a == keys_b, axis=1) & np.all(np.abs(norm_a - norm_b) <= WEIGHT_TOLERANCE, axis=1)


def _sorted_influences(joints: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per vertex the joints of the non-zero influences in ascending order (NO_BONE after them) and
    their normalised weights, repeated joints merged."""
    weights = np.asarray(weights, np.float64)
    totals = weights.sum(axis=1, keepdims=True)
    weights = np.where(totals > 0, weights / np.where(totals > 0, totals, 1), 0)
    joints, weights = merge_repeated_joints(np.asarray(joints, np.int64), weights)
    keys = np.where(weights > 0, joints, NO_BONE)
    order = np.argsort(keys, axis=1, kind="stable")
    return np.take_along_axis(keys, order, 1), np.take_along_axis(weights, order, 1)


def merge_repeated_joints(joints: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One influence per joint and vertex, the weights of repeats summed (skinning adds them; a
    vertex group holds one weight per bone): a merged influence keeps its first place, the repeats
    get weight 0."""
    joints, weights = np.array(joints), np.array(weights)
    for k in range(1, joints.shape[1]):
        for earlier in range(k):
            repeat = (joints[:, k] == joints[:, earlier]) & (weights[:, k] > 0) & (weights[:, earlier] > 0)
            weights[:, earlier] += np.where(repeat, weights[:, k], 0)
            weights[:, k] = np.where(repeat, 0, weights[:, k])
    return joints, weights


# -- import ---------------------------------------------------------------------


def _apply(axis: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    return (np.asarray(vectors, np.float64) @ axis[:3, :3].T).astype(np.float32)


def to_scene(
    model: tmd0.TMD0,
    textures: list[tuple[str, bytes]] | None = None,
    names: list[str] | None = None,
    axis: np.ndarray | None = None,
    name: str = "tmd0",
    filename: str = "<bytes>",
) -> Scene:
    """The scene of a model; ``textures`` = (name, resource or None) per texture entry (see
    ``texture_cat.model_textures``).

    ``filename``: the file the model was read from, named by errors.
    """
    axis = DEFAULT_AXIS if axis is None else np.asarray(axis, np.float64)
    scene = Scene(name=name)
    scene.extras[KEY] = _header_extras(model)
    if len(model.hierarchy) != len(model.bones):
        raise FormatError(
            filename,
            _place(model, "hierarchy"),
            f"{len(model.hierarchy)} bone hierarchy entries for {len(model.bones)} bone matrices",
        )
    if len(model.bones):
        scene.skeletons.append(_skeleton(model, names or [], axis, name, filename))
    scene.images = _images(model, textures, scene.warnings)
    scene.materials = [_material(model, i) for i in range(len(model.materials))]
    scene.meshes.append(_mesh(model, axis, name, scene.warnings))
    return scene


def _header_extras(model: tmd0.TMD0) -> dict:
    positions = model.vertices["position"]
    extras = {
        "endian": model.endian,
        "magic": model.magic,
        "reserved": model.reserved,
        "flags": model.flags,
        "unknown": model.unknown,
        "frame_count": model.frame_count,
        "terminator": model.terminator,
        "bounds": np.asarray(model.bounds, np.float64).tolist(),
        "unknown_count": model.unknown_count,
        "unknown_block": model.unknown_block,
    }
    if len(positions):
        extras["vertex_bounds"] = _bounds(positions).astype(np.float64).tolist()
    layout = model.layout
    if layout is not None:
        extras["layout"] = {
            "size": layout.size,
            "table_offsets": {key: offset for key, (offset, _) in layout.tables.items()},
            "table_sizes": {key: size for key, (_, size) in layout.tables.items()},
            "pointers": list(layout.pointers),
            "gaps": {str(offset): gap for offset, gap in layout.gaps},
        }
    return extras


def _bounds(positions: np.ndarray) -> np.ndarray:
    positions = np.asarray(positions, np.float32).reshape(-1, 3)
    return np.concatenate([positions.min(axis=0), positions.max(axis=0)]).astype(np.float32)


def _place(model: tmd0.TMD0, table: str, index: int = 0) -> int:
    """File offset of record ``index`` of a table (0 for a model not read from a file)."""
    size = tmd0.TABLES[table].itemsize if tmd0.TABLES[table] is not None else 0
    return model.layout.place(table, index, size) if model.layout is not None else 0


def _bind_matrices(model: tmd0.TMD0, filename: str) -> np.ndarray:
    """The bones' bind matrices: the inverses of their inverse bind matrices."""
    try:
        return np.linalg.inv(model.inverse_binds)
    except np.linalg.LinAlgError as e:
        i = next(i for i, matrix in enumerate(model.inverse_binds) if not _invertible(matrix))
        raise FormatError(
            filename, _place(model, "bones", i), f"bone {i}: its inverse bind matrix is singular"
        ) from e


def _invertible(matrix: np.ndarray) -> bool:
    try:
        np.linalg.inv(matrix)
    except np.linalg.LinAlgError:
        return False
    return True


def _skeleton(model: tmd0.TMD0, names: list[str], axis: np.ndarray, name: str, filename: str) -> Skeleton:
    known = bone_names.lookup(names)
    hashes = model.hierarchy["hash"].tolist()
    bone_list, seen = [], set()
    for value in hashes:
        bone = known.get(value, bone_names.fallback_name(value))
        while bone in seen:  # two bones with one hash: keep the names distinct
            bone += "_"
        seen.add(bone)
        bone_list.append(bone)
    bind = _bind_matrices(model, filename)
    deform = np.zeros(len(hashes), bool)
    used = np.arange(tmd0.MAX_PALETTE) < model.rigs["count"][:, None]
    deform[model.rigs["bones"][used]] = True
    extras = [
        {
            "hash": value,
            "name": bone,
            "position": entry["position"].astype(np.float64).tolist(),
            "unknown": int(entry["unknown"]),
            "name_offset": int(entry["name_offset"]),
            "inverse_bind": matrix.astype(np.float64).ravel().tolist(),
        }
        for value, bone, entry, matrix in zip(hashes, bone_list, model.hierarchy, model.bones, strict=True)
    ]
    return Skeleton(
        name=name,
        bone_names=bone_list,
        parents=model.hierarchy["parent"].astype(np.int32),
        rest=axis @ bind,
        deform=deform if len(model.rigs) else None,
        bone_extras=extras,
    )


def _images(model: tmd0.TMD0, textures, warnings: list[str]) -> list[Image]:
    """One image per texture entry, decoded from its resource (DDS or GXT) at the resource's real size;
    the entry's own width and height stay in the extras for export."""
    images = []
    undecoded = []
    for i, entry in enumerate(model.textures):
        image_name, resource = (
            textures[i] if textures is not None and i < len(textures) else (f"texture_{i}", None)
        )
        width, height = int(entry["width"]), int(entry["height"])
        extras = {
            "index": int(entry["index"]),
            "unknown": int(entry["unknown"]),
            "one": int(entry["one"]),
            "width": width,
            "height": height,
            "flags": int(entry["flags"]),
        }
        image = Image(image_name, None, width, height, extras=extras)
        if resource is None:
            undecoded.append(f"{image_name} (no data)")
        else:
            try:
                _decode(resource, image)
            except FormatError as e:
                undecoded.append(f"{image_name} ({e.problem})")
        images.append(image)
    if undecoded:
        warnings.append(f"textures left as empty images: {', '.join(undecoded)}")
    return images


def _decode(resource: texture_cat.Resource, image: Image) -> None:
    """Fill ``image`` from a DDS or GXT resource: pixels, format, the stored bytes, what export needs.
    The bytes are kept before decoding, so that a texture that does not decode is written back."""
    data = resource.data
    if data[:4] == dds.MAGIC:
        image.source_format, image.source_bytes = "DDS", data
        texture = dds.read(data, resource.name)
        image.source_format = texture.format
        image.extras[DDS_HEADER] = texture.header  # an edit is encoded again in this layout
        image.pixels = texture.decode()
    elif data[:4] == gxt.MAGIC:
        # The GXT file stays in the texture container; the image keeps its texel data.
        image.source_format, image.source_bytes = "GXT", b""
        container = gxt.read(data, resource.name)
        slot = resource.slot if resource.kind == "gxt" else 0
        image.source_format = f"GXT {gxm.format_name(container.textures[slot].format)}"
        image.source_bytes = container.texture_data(slot)
        image.pixels = gxt.decode(container, slot)
    else:
        raise FormatError(resource.name, 0, f"neither a DDS nor a GXT file (starts {data[:4]!r})")
    image.height, image.width = image.pixels.shape[:2]


def texture_payloads(images: list[Image], stored: list[dict]) -> list[bytes]:
    """The payloads of a texture CAT from its stored parts (see ``files``) and the scene's images (in
    the model's texture order). Unchanged files keep their bytes and an unchanged payload
    is written as it was; an edited image is encoded in its file's own layout (DDS: format, flags and
    mip count kept; GXT: format and layout kept) and its bundle rebuilt. What cannot be encoded raises.
    """
    shown = {part["image"] for payload in stored for part in payload["parts"] if "image" in part}
    shown |= {
        i for payload in stored for part in payload["parts"] for i in part.get("gxt_images", {}).values()
    }
    if shown and max(shown) >= len(images):
        raise ExportError(
            f"the texture CAT shows {max(shown) + 1} textures but the model has {len(images)} images: "
            "an imported texture is missing (deleted?); export as .tmd"
        )
    for i, image in enumerate(images):
        if i not in shown and image.pixels is not None and image.source_bytes is None:
            raise ExportError(
                f"image {image.name!r} has no place in the texture CAT: replace the pixels of an imported "
                "texture instead, or export as .tmd"
            )
    payloads = []
    for payload in stored:
        files, changed = [], {}
        for k, part in enumerate(payload["parts"]):
            data = _part_bytes(part, images)
            if data is not None:
                changed[k] = data
            files.append(data if data is not None else _stored_bytes(part, images))
        if "bundle" in payload:
            layout = payload["bundle"]
            bundle = texture_cat.Bundle(
                layout["header_size"], files, bytes(layout["padding"]), bytes(layout["tail"])
            )
            payloads.append(texture_cat.write_bundle(texture_cat.rebuild(bundle, changed)))
        else:
            payloads.append(files[0] + bytes(-len(files[0]) % cat.ALIGN) if changed else files[0])
    return payloads


def _stored_bytes(part: dict, images: list[Image]) -> bytes:
    return bytes(images[part["image"]].source_bytes) if "image" in part else bytes(part["bytes"])


def _part_bytes(part: dict, images: list[Image]) -> bytes | None:
    """A stored file with the edits of the images that show it; None when none of them changed."""
    if "image" in part:
        image = images[part["image"]]
        if image.source_bytes is not None:
            return None
        if image.pixels is None or DDS_HEADER not in image.extras:
            raise ExportError(
                f"image {image.name!r} was edited but its texture ({image.source_format or 'no data'}) "
                "could not be read, so it cannot be written again: undo the edit, or export as .tmd"
            )
        try:
            return dds.reencode(bytes(image.extras[DDS_HEADER]), image.pixels, image.name)
        except (ValueError, FormatError) as e:
            raise ExportError(f"image {image.name!r} cannot be written as its DDS: {e}") from e
    container = None
    for slot, i in sorted(part.get("gxt_images", {}).items(), key=lambda item: int(item[0])):
        image = images[i]
        if image.source_bytes is not None or image.pixels is None:
            continue
        try:
            container = gxt.encode(
                container or gxt.read(bytes(part["bytes"]), image.name), int(slot), image.pixels
            )
        except (ExportError, FormatError) as e:
            raise ExportError(f"image {image.name!r} cannot be written as its GXT texture: {e}") from e
    return None if container is None else gxt.write(container)


def _material(model: tmd0.TMD0, index: int) -> Material:
    record = model.materials[index]
    slots = []
    for k in range(int(record["slot_count"])):
        slot = record["slots"][k]
        texture = int(slot["texture"])
        if texture < 0:
            continue
        kind, params = int(slot["type"]), slot["params"].astype(np.float64)
        slots.append(
            TextureSlot(
                texture,
                role=ROLES.get(kind, f"type_{kind}"),
                uv_layer=UV_LAYERS[0],
                scale=(float(params[0]), float(params[1])),
                translate=(float(params[2]), float(params[3])),
                extras={"slot": k, "type": kind},
            )
        )
    raw = np.ascontiguousarray(record, dtype=tmd0.with_endian(tmd0.MATERIAL_DTYPE, model.endian)).tobytes()
    return Material(f"material_{index}", textures=slots, extras={"record": raw})


def _mesh(model: tmd0.TMD0, axis: np.ndarray, name: str, warnings: list[str]) -> Mesh:
    vertices = model.vertices
    face_material, vertex_rig = face_materials_and_vertex_rigs(model)
    mesh = Mesh(
        name,
        _apply(axis, vertices["position"]),
        np.asarray(model.faces, np.int32).reshape(-1, 3),
        material_indices=face_material if len(model.materials) else None,
        materials=list(range(len(model.materials))),
        skeleton=0 if len(model.bones) else None,
    )
    fields = vertices.dtype.names
    extras = {
        "face_count": len(model.faces),
        "draw_list_bounds": model.draw_list["bounds"].astype(np.float64).ravel().tolist(),
        "draw_list_first": model.draw_list["first"].astype(np.int64).tolist(),
        "draw_list_count": model.draw_list["count"].astype(np.int64).tolist(),
        "draw_list_type": model.draw_list["type"].astype(np.int64).tolist(),
        "operations": model.operations.tobytes(),
        "polygroup_count": model.polygroups["count"].astype(np.int64).tolist(),
        "polygroup_unknown": model.polygroups["unknown"].astype(np.int64).tolist(),
        "polygroup_first": model.polygroups["first"].astype(np.int64).tolist(),
        "rig_counts": model.rigs["count"].astype(np.int64).tolist(),
        "rig_bones": model.rigs["bones"].astype(np.int64).ravel().tolist(),
    }
    if "normal" in fields:
        raw = vertices["normal"]
        # Unit length: Blender (4.2) bends custom normals that are not. The stored bytes of each vertex
        # go back while its normal still points the same way (``same_normals``).
        stored = (raw[:, :3].astype(np.float64) - 127) / 128
        length = np.linalg.norm(stored, axis=1, keepdims=True)
        mesh.normals = Layer("normal", _apply(axis, stored / np.where(length > 0, length, 1)))
        extras["normals"] = raw.tobytes()
    for layer, key in zip(UV_LAYERS, ("uv0", "uv1", "uv2"), strict=True):
        if key in fields:
            raw = vertices[key].astype(np.float32) / 1024
            mesh.uv_layers.append(Layer(layer, np.stack([raw[:, 0], -raw[:, 1]], axis=1)))
    if "colour" in fields:
        mesh.color_layers.append(Layer(COLOUR_LAYER, vertices["colour"].astype(np.float32) / 255))
    if "weights" in fields:
        joints, weights = resolve_skin(model, vertex_rig, vertices["bone_ids"], vertices["weights"])
        lost = int(np.count_nonzero((weights == 0) & (vertices["weights"] > 0)))
        if lost:
            warnings.append(f"{lost} skin influences name no bone of their rig and were left out")
        mesh.skin_joints, mesh.skin_weights = merge_repeated_joints(joints, weights)
        extras["skin"] = np.concatenate([vertices["bone_ids"], vertices["weights"]], axis=1).tobytes()
    mesh.extras[KEY] = extras
    return mesh


# -- export ---------------------------------------------------------------------


def _per_vertex(layer: Layer | None, triangles: np.ndarray, count: int) -> np.ndarray | None:
    if layer is None:
        return None
    data = np.asarray(layer.data)
    if layer.domain == "POINT":
        return data
    out = np.zeros((count, data.shape[1]), data.dtype)
    out[triangles.ravel()] = data
    return out


def _merged_mesh(scene: Scene) -> tuple[Mesh, dict]:
    """The one mesh to write (several meshes are joined) and the extras that describe it."""
    if not scene.meshes:
        raise ExportError("the scene has no mesh to write")
    if len(scene.meshes) == 1:
        mesh = scene.meshes[0]
        return mesh, mesh.extras.get(KEY, {})
    offsets = np.cumsum([0] + [len(m.positions) for m in scene.meshes])
    parts = []
    for mesh, offset in zip(scene.meshes, offsets.tolist(), strict=False):
        count = len(mesh.positions)
        triangles = np.asarray(mesh.triangles, np.int64)
        material = np.zeros(len(triangles), np.int64)
        if mesh.material_indices is not None and mesh.materials:
            material = np.asarray(mesh.materials)[mesh.material_indices]
        normals = _per_vertex(mesh.normals, triangles, count)
        parts.append((mesh, triangles + offset, material, normals))
    joined = Mesh(
        "joined",
        np.concatenate([m.positions for m, *_ in parts]),
        np.concatenate([t for _, t, *_ in parts]),
        material_indices=np.concatenate([mat for _, _, mat, _ in parts]).astype(np.int32),
        materials=list(range(len(scene.materials))),
        skeleton=next((m.skeleton for m in scene.meshes if m.skeleton is not None), None),
    )
    if all(n is not None for *_, n in parts):
        joined.normals = Layer("normal", np.concatenate([n for *_, n in parts]))
    for k in range(min(len(m.uv_layers) for m in scene.meshes)):
        layers = [_per_vertex(m.uv_layers[k], t, len(m.positions)) for m, t, *_ in parts]
        joined.uv_layers.append(Layer(UV_LAYERS[k], np.concatenate(layers)))
    if all(m.color_layers for m in scene.meshes):
        layers = [_per_vertex(m.color_layers[0], t, len(m.positions)) for m, t, *_ in parts]
        joined.color_layers.append(Layer(COLOUR_LAYER, np.concatenate(layers)))
    if all(m.skin_joints is not None for m in scene.meshes):
        width = max(m.skin_joints.shape[1] for m in scene.meshes)
        joined.skin_joints = np.concatenate([_pad(m.skin_joints, width) for m in scene.meshes])
        joined.skin_weights = np.concatenate([_pad(m.skin_weights, width) for m in scene.meshes])
    return joined, {}


def _pad(values: np.ndarray, width: int, fill=0) -> np.ndarray:
    return np.pad(np.asarray(values), ((0, 0), (0, width - values.shape[1])), constant_values=fill)


def from_scene(scene: Scene, axis: np.ndarray | None = None, endian: str | None = None) -> tmd0.TMD0:
    axis = DEFAULT_AXIS if axis is None else np.asarray(axis, np.float64)
    header = scene.extras.get(KEY, {})
    mesh, extras = _merged_mesh(scene)
    model = _header_fields(header, endian)

    skeleton = None
    if mesh.skeleton is not None:
        skeleton = scene.skeletons[mesh.skeleton]
    elif scene.skeletons:
        skeleton = scene.skeletons[0]
    if skeleton is not None:
        model.bones, model.hierarchy = _bones(skeleton, axis)

    triangles = np.asarray(mesh.triangles, np.int64).reshape(-1, 3)
    count = len(mesh.positions)
    positions = _apply(axis.T, mesh.positions)
    face_material = np.zeros(len(triangles), np.int64)
    if mesh.material_indices is not None and mesh.materials:
        face_material = np.asarray(mesh.materials, np.int64)[np.asarray(mesh.material_indices)]
    model.materials = np.array(
        [_material_record(m, model.endian) for m in scene.materials], tmd0.MATERIAL_DTYPE
    )
    model.textures = np.array(
        [_texture_entry(img, i) for i, img in enumerate(scene.images)], tmd0.TEXTURE_DTYPE
    )

    skinned = skeleton is not None and mesh.skin_joints is not None
    joints = weight_bytes = weights = None
    if skinned:
        joints, weight_bytes, weights = _encode_weights(mesh.skin_joints, mesh.skin_weights)
        if len(joints) and joints.max() >= len(skeleton):
            raise ExportError(f"mesh {mesh.name!r} is skinned to a bone outside its skeleton")

    model.flags = _vertex_flags(header.get("flags", tmd0.POSITION | tmd0.INTERLEAVED), mesh, skinned)
    kept = _kept_draw_list(model, extras, triangles, face_material, count, joints, weight_bytes, weights)
    if kept is not None:
        source, bone_ids = np.arange(count), kept
        model.faces = triangles.astype(np.uint16)
    else:
        source, bone_ids = _build_draw_list(model, triangles, face_material, positions, joints, weight_bytes)
    if len(source) > MAX_VERTICES:
        raise ExportError(f"{len(source)} vertices: a tmd0 model holds at most {MAX_VERTICES}")

    normals = _per_vertex(mesh.normals, triangles, count)
    normals = None if normals is None else _apply(axis.T, np.asarray(normals)[:, :3])
    model.vertices = _vertices(
        model, mesh, extras, triangles, positions, normals, source, bone_ids, weight_bytes
    )
    unchanged = (
        len(positions) and header.get("vertex_bounds") == _bounds(positions).astype(np.float64).tolist()
    )
    if unchanged and "bounds" in header:
        model.bounds = np.array(header["bounds"], np.float32)
    elif len(positions):
        model.bounds = _bounds(positions)
    if kept is not None and not unchanged:
        model.draw_list["bounds"] = _entry_bounds(model)
    model.layout = _layout(header.get("layout"))
    return model


def _header_fields(header: dict, endian: str | None) -> tmd0.TMD0:
    """A model holding the stored header fields (a new model's defaults when there are none)."""
    model = tmd0.TMD0(endian or header.get("endian", "<"))
    model.magic = header.get("magic", model.magic)
    model.reserved = header.get("reserved", 0)
    model.unknown = header.get("unknown", model.unknown)
    model.frame_count = header.get("frame_count", 0)
    model.terminator = header.get("terminator", 0)
    model.unknown_count = header.get("unknown_count", 0)
    model.unknown_block = header.get("unknown_block", b"")
    return model


def _vertex_flags(stored: int, mesh: Mesh, skinned: bool) -> int:
    """The stored flags with the attribute bits of what the mesh has."""
    flags = stored & ~tmd0.ATTRIBUTE_FLAGS
    flags |= tmd0.NORMAL if mesh.normals is not None else 0
    for k in range(min(len(mesh.uv_layers), len(UV_FLAGS))):
        flags |= UV_FLAGS[k]
    flags |= tmd0.COLOUR if mesh.color_layers else 0
    flags |= tmd0.SKIN if skinned else 0
    return flags


def _bones(skeleton: Skeleton, axis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    count = len(skeleton)
    parents = np.asarray(skeleton.parents, np.int64)
    if np.any(parents >= np.arange(count)) or np.any(parents < -1):
        raise ExportError(f"skeleton {skeleton.name!r}: every bone's parent must precede it")
    rest = axis.T @ np.asarray(skeleton.rest, np.float64)
    inverse = np.linalg.inv(rest).transpose(0, 2, 1).astype(np.float32)  # row-vector layout
    heads = rest[:, :3, 3]
    local = heads - np.where(parents[:, None] >= 0, heads[np.maximum(parents, 0)], 0)
    hierarchy = np.zeros(count, tmd0.HIERARCHY_DTYPE)
    hierarchy["parent"] = parents
    hierarchy["position"] = local
    extras = skeleton.bone_extras if len(skeleton.bone_extras) == count else [{}] * count
    for i, (bone, extra) in enumerate(zip(skeleton.bone_names, extras, strict=True)):
        stored = extra.get("hash")
        hierarchy["hash"][i] = (
            stored if stored is not None and extra.get("name") == bone else bone_names.hash_for(bone)
        )
        hierarchy["unknown"][i] = extra.get("unknown", 0)
        hierarchy["name_offset"][i] = extra.get("name_offset", 0)
        if "inverse_bind" in extra:
            original = np.array(extra["inverse_bind"], np.float32).reshape(4, 4)
            if np.allclose(original, inverse[i], atol=MATRIX_TOLERANCE):
                inverse[i] = original
        if "position" in extra and np.allclose(extra["position"], local[i], atol=MATRIX_TOLERANCE):
            hierarchy["position"][i] = extra["position"]
    return inverse, hierarchy


def _material_record(material: Material, endian: str) -> np.ndarray:
    raw = material.extras.get("record")
    if raw:
        record = np.frombuffer(raw, tmd0.with_endian(tmd0.MATERIAL_DTYPE, endian))[0]
        record = record.astype(tmd0.MATERIAL_DTYPE)
    else:
        record = np.zeros((), tmd0.MATERIAL_DTYPE)
        record["slot_count"] = tmd0.MATERIAL_SLOTS
        record["slots"]["texture"] = -1
        record["slots"]["params"] = (1, 1, 0, 0)
    slots = record["slots"]
    free = [k for k in range(tmd0.MATERIAL_SLOTS) if slots["texture"][k] < 0]
    placed = set()
    for slot in material.textures:
        k = slot.extras.get("slot")
        if not isinstance(k, int) or not 0 <= k < tmd0.MATERIAL_SLOTS or k in placed:
            if not free:
                raise ExportError(f"material {material.name!r} has more than {tmd0.MATERIAL_SLOTS} textures")
            k = free.pop(0)
        placed.add(k)
        slots["type"][k] = slot.extras.get("type", SLOT_TYPES.get(slot.role, 0))
        slots["texture"][k] = slot.image
        params = np.array([*slot.scale, *slot.translate], np.float32)
        if not np.allclose(slots["params"][k], params, atol=PARAM_TOLERANCE):
            slots["params"][k] = params
    for k in set(range(tmd0.MATERIAL_SLOTS)) - placed:
        slots["texture"][k] = -1
    if placed and max(placed) >= record["slot_count"]:
        record["slot_count"] = max(placed) + 1
    return record


def _texture_entry(image: Image, index: int) -> tuple:
    """The texture table entry: as stored for an imported texture (its table may give another size than
    the texture's real one), else the image's size."""
    extras = image.extras
    width, height = image.width, image.height
    if image.pixels is not None and not (width and height):
        height, width = image.pixels.shape[:2]
    width, height = extras.get("width", width), extras.get("height", height)
    return (
        extras.get("index", index),
        extras.get("unknown", 0),
        extras.get("one", 1),
        width,
        height,
        extras.get("flags", NEW_TEXTURE_FLAGS),
    )


def _encode_weights(joints: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The four strongest influences per vertex as (joints, weight bytes = round(w × 255), weights)."""
    joints = np.asarray(joints, np.int64)
    weights = np.asarray(weights, np.float64)
    if joints.shape[1] < INFLUENCES:
        joints, weights = _pad(joints, INFLUENCES), _pad(weights, INFLUENCES)
    order = np.argsort(-weights, axis=1, kind="stable")[:, :INFLUENCES]
    joints = np.take_along_axis(joints, order, 1)
    weights = np.take_along_axis(weights, order, 1)
    return joints, np.clip(np.rint(weights * 255), 0, 255).astype(np.uint8), weights


def _kept_draw_list(model, extras, triangles, face_material, count, joints, weight_bytes, weights):
    """Bone id bytes (V, 4) when the stored draw list still fits the scene (filled into ``model``), else None."""
    if not extras or extras.get("face_count") != len(triangles) or count > MAX_VERTICES:
        return None
    draw_list = np.zeros(len(extras["draw_list_first"]), tmd0.BVH_DTYPE)
    draw_list["bounds"] = np.array(extras["draw_list_bounds"], np.float32).reshape(-1, 6)
    draw_list["first"], draw_list["count"] = extras["draw_list_first"], extras["draw_list_count"]
    draw_list["type"] = extras["draw_list_type"]
    operations = np.frombuffer(extras["operations"], tmd0.OPERATION_DTYPE).copy()
    polygroups = np.zeros(len(extras["polygroup_first"]), tmd0.POLYGROUP_DTYPE)
    polygroups["count"], polygroups["first"] = extras["polygroup_count"], extras["polygroup_first"]
    polygroups["unknown"] = extras["polygroup_unknown"]
    rigs = np.zeros(len(extras["rig_counts"]), tmd0.RIG_DTYPE)
    rigs["count"] = extras["rig_counts"]
    rigs["bones"] = np.array(extras["rig_bones"], np.int64).reshape(-1, tmd0.MAX_PALETTE)
    trial = tmd0.TMD0(
        model.endian, draw_list=draw_list, operations=operations, polygroups=polygroups, rigs=rigs
    )
    trial.faces, trial.bones = triangles, model.bones
    trial.vertices = np.zeros(count, [("position", "<f4", (3,))])
    if np.any(operations["value"][operations["type"] == OP_MATERIAL] >= len(model.materials)):
        return None
    if np.any(operations["value"][operations["type"] == OP_RIG] >= max(len(rigs), 1)):
        return None
    face_rule, vertex_rig = face_materials_and_vertex_rigs(trial)
    if len(model.materials) and not np.array_equal(face_rule, face_material):
        return None
    bone_ids = np.zeros((count, INFLUENCES), np.uint8)
    if joints is not None:
        stored = extras.get("skin", b"")
        if len(stored) == count * 2 * INFLUENCES:
            raw = np.frombuffer(stored, np.uint8).reshape(count, 2 * INFLUENCES)
            original_joints, original = resolve_skin(
                trial, vertex_rig, raw[:, :INFLUENCES], raw[:, INFLUENCES:]
            )
            same = same_skin(original_joints, original, joints, weights)
        else:
            raw, same = np.zeros((count, 2 * INFLUENCES), np.uint8), np.zeros(count, bool)
        ids = _palette_ids(trial, vertex_rig, joints, weight_bytes, ~same)
        if ids is None:
            return None
        bone_ids = np.where(same[:, None], raw[:, :INFLUENCES], ids)
        weight_bytes[same] = raw[same, INFLUENCES:]
    model.draw_list, model.operations, model.polygroups, model.rigs = draw_list, operations, polygroups, rigs
    return bone_ids


def _palette_ids(trial, vertex_rig, joints, weight_bytes, rows) -> np.ndarray | None:
    """Palette indices of ``joints`` for the ``rows`` under each vertex's rig; None when one is missing."""
    ids = np.zeros(joints.shape, np.uint8)
    if not rows.any():
        return ids
    if not len(trial.rigs):
        return joints.astype(np.uint8) if joints.max(initial=0) < 256 else None
    slot_of = np.full((len(trial.rigs), max(len(trial.bones), 1)), -1, np.int64)
    for r, (n, palette) in enumerate(zip(trial.rigs["count"].tolist(), trial.rigs["bones"], strict=True)):
        slot_of[r, palette[:n]] = np.arange(n)
    rig = np.maximum(vertex_rig, 0)
    slots = slot_of[rig[:, None], joints]
    needed = rows[:, None] & (weight_bytes > 0)
    if np.any(needed & ((slots < 0) | (vertex_rig < 0)[:, None])):
        return None
    return np.where(needed, slots, 0).astype(np.uint8)


def _build_draw_list(model, triangles, face_material, positions, joints, weight_bytes):
    """Rebuild batches, rigs, polygroups and boxes; returns (source vertex per vertex, bone ids)."""
    order = np.argsort(face_material, kind="stable")
    faces, materials = triangles[order], face_material[order]
    count = len(positions)
    skinned = joints is not None
    assigned = np.full((count, INFLUENCES), -1, np.int64)  # bone ids given to each source vertex
    sources, ids_out = [np.arange(count)], [np.zeros((count, INFLUENCES), np.int64)]
    remap_faces, bvh, operations, polygroups, rigs = [], [], [], [], []
    next_vertex, face_base = count, 0
    starts = np.flatnonzero(np.diff(materials, prepend=-1)) if len(materials) else np.zeros(0, np.int64)
    for run_start, run_end in zip(starts.tolist(), np.append(starts[1:], len(faces)).tolist(), strict=True):
        start = run_start
        while start < run_end:
            end, palette = run_end, np.zeros(0, np.int64)
            if skinned:
                end, palette = _batch(faces, start, run_end, joints, weight_bytes)
            batch = faces[start:end]
            if skinned:
                vertices = np.unique(batch)
                local = np.searchsorted(palette, joints[vertices])
                local = np.where(weight_bytes[vertices] > 0, local, 0)
                fresh = assigned[vertices, 0] < 0
                assigned[vertices[fresh]] = local[fresh]
                clash = ~fresh & np.any(assigned[vertices] != local, axis=1)
                if clash.any():  # shared with a batch whose palette numbers the bones differently
                    copies = next_vertex + np.arange(int(clash.sum()))
                    remap = np.arange(next_vertex + len(copies))
                    remap[vertices[clash]] = copies
                    batch = remap[batch]
                    sources.append(vertices[clash])
                    ids_out.append(local[clash])
                    next_vertex += len(copies)
                rigs.append((len(palette), np.pad(palette, (0, tmd0.MAX_PALETTE - len(palette)))))
            first_op = len(operations)
            material = int(materials[start])
            if skinned:
                operations.append((len(rigs) - 1, OP_RIG))
            if len(model.materials):
                operations.append((material, OP_MATERIAL))
            for offset in range(0, len(batch), MAX_POLYGROUP_FACES):
                chunk = min(MAX_POLYGROUP_FACES, len(batch) - offset)
                operations.append((len(polygroups), OP_DRAW))
                polygroups.append((chunk, 0, face_base + offset))
            operations.append((0, OP_END))
            remap_faces.append(batch)
            face_base += len(batch)
            bvh.append((first_op, len(operations) - first_op, faces[start:end]))
            start = end
    source = np.concatenate(sources)
    bone_ids = np.concatenate(ids_out)
    bone_ids[:count][assigned[:, 0] >= 0] = assigned[assigned[:, 0] >= 0]
    ops = np.array(operations, tmd0.OPERATION_DTYPE) if operations else np.zeros(0, tmd0.OPERATION_DTYPE)
    if len(ops) and (max(len(polygroups), len(rigs), len(model.materials)) > MAX_OPERATION_VALUE + 1):
        raise ExportError("more than 256 polygroups, rigs or materials: operations hold one byte")
    model.operations = ops
    model.polygroups = np.array(polygroups, tmd0.POLYGROUP_DTYPE)
    model.rigs = np.array(rigs, tmd0.RIG_DTYPE)
    model.faces = (np.concatenate(remap_faces) if remap_faces else np.zeros((0, 3), np.int64)).astype(
        np.uint16
    )
    model.draw_list = np.zeros(len(bvh), tmd0.BVH_DTYPE)
    for i, (first, n, batch_faces) in enumerate(bvh):
        model.draw_list[i] = (_bounds(positions[batch_faces]), first, n, 1)
    return source, bone_ids.astype(np.uint8)


def _entry_bounds(model: tmd0.TMD0) -> np.ndarray:
    """A box per draw list entry around the faces it draws: its stored box while that still holds them
    (or when it draws none), so that an edit changes only the boxes it must."""
    boxes = model.draw_list["bounds"].copy()
    drawn: dict[int, list[np.ndarray]] = {}
    for entry, _, _, group in draw_calls(model):
        first, n = int(model.polygroups["first"][group]), int(model.polygroups["count"][group])
        drawn.setdefault(entry, []).append(model.faces[first : first + n].ravel())
    positions = model.vertices["position"]
    for entry, parts in drawn.items():
        vertices = np.concatenate(parts)
        if len(vertices):
            tight = _bounds(positions[vertices])
            inside = np.all(tight[:3] >= boxes[entry][:3]) and np.all(tight[3:] <= boxes[entry][3:])
            if not inside:
                boxes[entry] = tight
    return boxes


def _batch(faces, start, end, joints, weight_bytes) -> tuple[int, np.ndarray]:
    """The end of the batch starting at ``start`` (at most 32 bones) and its sorted palette."""
    face_bones = np.where(weight_bytes[faces[start:end]] > 0, joints[faces[start:end]], -1).reshape(
        end - start, -1
    )
    flat = face_bones.ravel()
    valid = np.flatnonzero(flat >= 0)
    bones, first = np.unique(flat[valid], return_index=True)
    if len(bones) > tmd0.MAX_PALETTE:
        first_face = np.sort(valid[first] // face_bones.shape[1])
        end = start + int(first_face[tmd0.MAX_PALETTE])
        bones = np.unique(face_bones[: end - start][face_bones[: end - start] >= 0])
    return end, bones


def _vertices(
    model, mesh, extras, triangles, positions, normals, source, bone_ids, weight_bytes
) -> np.ndarray:
    """The vertex records; ``positions`` and ``normals`` are in file axes already."""
    count = len(positions)
    out = np.zeros(len(source), tmd0.vertex_dtype(model.flags))
    out["position"] = positions[source]
    fields = out.dtype.names
    if "normal" in fields:
        out["normal"][:, :3] = np.clip(np.rint(normals[source] * 128 + 127), 0, 255)
        stored = extras.get("normals", b"")
        if len(stored) == 4 * count:
            raw = np.frombuffer(stored, np.uint8).reshape(count, 4)[source]
            same = same_normals(normals[source], raw)
            out["normal"][same, :3] = raw[same, :3]
            out["normal"][:, 3] = raw[:, 3]
    for k, key in enumerate(("uv0", "uv1", "uv2")):
        if key in fields:
            uv = np.asarray(_per_vertex(mesh.uv_layers[k], triangles, count), np.float64)[source]
            raw = np.stack([uv[:, 0], -uv[:, 1]], axis=1) * 1024
            out[key] = np.clip(np.rint(raw), -0x8000, 0x7FFF)
    if "colour" in fields:
        colour = np.asarray(_per_vertex(mesh.color_layers[0], triangles, count), np.float64)[source]
        out["colour"] = np.clip(np.rint(colour * 255), 0, 255)
    if "weights" in fields:
        out["weights"] = weight_bytes[source]
        out["bone_ids"] = bone_ids
    return out


def same_normals(normals: np.ndarray, raw: np.ndarray) -> np.ndarray:
    """Per vertex: does ``normals`` (file axes) point where the stored bytes ``raw`` do? Compared as
    directions within the stored quantisation, so Blender's unit normals match the file's slightly
    unnormalised ones; a stored zero vector matches only the same bytes."""
    stored = (raw[:, :3].astype(np.float64) - 127) / 128
    length = np.linalg.norm(stored, axis=1)
    current = np.asarray(normals, np.float64)
    current_length = np.linalg.norm(current, axis=1)
    usable = (length > 0) & (current_length > 0)
    safe = np.where(usable, 1, 0)[:, None]
    unit_stored = stored / np.where(usable, length, 1)[:, None] * safe
    unit_current = current / np.where(usable, current_length, 1)[:, None] * safe
    close = np.linalg.norm(unit_stored - unit_current, axis=1) <= NORMAL_TOLERANCE / np.maximum(length, 1e-9)
    exact = np.all(np.clip(np.rint(current * 128 + 127), 0, 255) == raw[:, :3], axis=1)
    return exact | (usable & close)


def _layout(stored: dict | None) -> tmd0.Layout | None:
    if not stored:
        return None
    offsets, sizes = stored["table_offsets"], stored["table_sizes"]
    return tmd0.Layout(
        stored["size"],
        {key: (offsets[key], sizes[key]) for key in offsets},
        tuple(stored["pointers"]),
        [(int(offset), gap) for offset, gap in stored["gaps"].items()],
    )
