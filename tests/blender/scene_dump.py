"""A deterministic text dump of what an import created, for golden-file tests.

In the manner of Blender's own import tests: counts, then per datablock the
values a reviewer wants to see change in a diff (first and last values of
every attribute, vertex groups, material slots, modifiers, bones, image
pixels, actions with their F-curves, first and last keys and value range).
Floats have 3 decimals (−0.000 is written 0.000); everything is sorted by name.

The same import gives the same text on Blender 4.2 and 5.0:
- F-curves are read through ``compat.action_fcurves`` (slotted actions on 4.4+).
- Custom normals come from ``Mesh.corner_normals``, not from storage that
  changed between versions (5.0 keeps them in a ``custom_normal`` attribute).
- Attributes Blender adds for itself are left out: names starting with "."
  (selection, UV pin, edge and corner topology), ``sharp_face``,
  ``sharp_edge`` and ``custom_normal``. UV maps and colour attributes are
  listed once, in their own sections.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re

import bpy
import numpy as np
from retro_models.formats import extras as codec
from retro_models.operators.blender import compat, props
from retro_models.operators.blender.records import read_record

# Attribute names Blender manages itself and that differ between versions.
INTERNAL_ATTRIBUTES = {"position", "sharp_face", "sharp_edge", "custom_normal"}
# Attribute data type → (foreach field, components).
_ATTRIBUTE_FIELDS = {
    "FLOAT": ("value", 1),
    "INT": ("value", 1),
    "INT8": ("value", 1),
    "BOOLEAN": ("value", 1),
    "FLOAT_VECTOR": ("vector", 3),
    "FLOAT2": ("vector", 2),
    "INT32_2D": ("value", 2),
    "INT16_2D": ("value", 2),
    "FLOAT_COLOR": ("color", 4),
    "BYTE_COLOR": ("color", 4),
    "QUATERNION": ("value", 4),
    "FLOAT4X4": ("value", 16),
}


def num(value: float) -> str:
    """3 decimals; float32 noise is rounded away first so that ties (0.4375) print the same everywhere."""
    text = f"{round(float(value), 5):.3f}"
    return "0.000" if text == "-0.000" else text


def vec(values) -> str:
    return "(" + ", ".join(num(v) for v in np.ravel(values)) + ")"


def digest(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()[:12]


# Custom properties shown besides "extras": the import's stable, user-visible ones. The
# builder's own bookkeeping (action records, import groups) is left out: it is not what a
# user sees, and export tests check it.
SHOWN_PROPERTIES = ("scene_name", "joint_order", "alpha_mode", "source_format", "source_bytes", "rest_scale")


_HEX_BYTES = re.compile(r"(?:[0-9a-f]{2})+")
_HEX_NUMBER = re.compile(r"0x[0-9A-Fa-f]+")


def canonical(value, key: str = ""):
    """A custom property value as the format's value, whatever its encoding: bytes (plain, as hex
    text, or base64 ``source_bytes``) become "bytes:<hex>", numbers written as "0x…" text ints."""
    value = codec.decode(props.to_python(value))
    if isinstance(value, (bytes, bytearray)):
        return "bytes:" + bytes(value).hex() if value else ""  # as empty hex text shows
    if isinstance(value, str):
        if key == "source_bytes":
            return "bytes:" + base64.b64decode(value).hex()
        if _HEX_BYTES.fullmatch(value):
            return "bytes:" + value
        if _HEX_NUMBER.fullmatch(value):
            return int(value, 16)
        return value
    if isinstance(value, dict):
        return {k.removesuffix("_hex"): canonical(v, k) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    return value


def value_text(value, key: str = "") -> str:
    """A custom property value for the dump (see ``canonical``): bytes as their length and digest,
    long strings and lists by length and digest, floats with 3 decimals."""
    return _text(canonical(value, key))


def _text(value) -> str:
    if isinstance(value, str) and value.startswith("bytes:"):
        data = bytes.fromhex(value[6:])
        return f"<{len(data)} bytes {digest(data)}>"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        if len(value) > 8:
            text = json.dumps(value, sort_keys=True)
            return f"[{len(value)} items {digest(text.encode())}]"
        return "[" + ", ".join(_text(v) for v in value) + "]"
    if isinstance(value, (bool, int)):
        return str(value)
    if isinstance(value, float):
        return num(value)
    if isinstance(value, str) and os.path.isabs(value):  # a file the import read: its folder varies
        return repr(f".../{os.path.basename(value)}")
    if isinstance(value, str) and len(value) > 60:
        return f"<{len(value)} chars {digest(value.encode())}>"
    return repr(value)


_detail = [True]  # dump(detail=False) leaves out custom properties, node trees and key sums


def _properties(owner, lines: list[str], indent: str = "  ") -> None:
    """The owner's format-only fields (its extras) and the shown custom properties."""
    if not _detail[0]:
        return
    extras = props.get_extras(owner)
    for key in sorted(extras):
        lines.append(f"{indent}extra {key.removesuffix('_hex')} = {value_text(extras[key], key)}")
    for key in SHOWN_PROPERTIES:
        if key in owner:
            lines.append(f"{indent}property {key} = {value_text(owner[key], key)}")


def _first_last(values: np.ndarray) -> str:
    """'first … last' of (N, k) rows; 'empty' when there are none."""
    if not len(values):
        return "empty"
    if np.issubdtype(values.dtype, np.integer) or values.dtype == bool:
        row = lambda r: "(" + ", ".join(str(int(v)) for v in r) + ")"  # noqa: E731
    else:
        row = vec
    return f"{row(values[0])} … {row(values[-1])}"


def _get(collection, field: str, components: int, dtype=np.float32) -> np.ndarray:
    out = np.empty(len(collection) * components, dtype)
    collection.foreach_get(field, out)
    return out.reshape(len(collection), components)


def _attribute_values(attribute) -> np.ndarray:
    field, components = _ATTRIBUTE_FIELDS[attribute.data_type]
    dtype = {"INT": np.int32, "INT8": np.int32, "INT32_2D": np.int32, "INT16_2D": np.int32}.get(
        attribute.data_type, np.float32
    )
    if attribute.data_type == "BOOLEAN":
        dtype = bool
    return _get(attribute.data, field, components, dtype)


# -- gathering ------------------------------------------------------------------


def _objects(source) -> list[bpy.types.Object]:
    if isinstance(source, bpy.types.Collection):
        return list(source.all_objects)
    return list(bpy.data.objects)


def _actions(source, objects) -> list[bpy.types.Action]:
    """The import's actions: for a collection, those assigned to its objects or recorded in its
    import groups; otherwise all of them."""
    if not isinstance(source, bpy.types.Collection):
        return list(bpy.data.actions)
    groups = set()
    info = source.get(props.SCENE)
    if info is not None and "animations" in info:
        groups = {str(g) for g in info["animations"]}
    assigned = {o.animation_data.action.name for o in objects if o.animation_data and o.animation_data.action}
    result = []
    for action in bpy.data.actions:
        record = read_record(action)
        group = record.group if record is not None else None
        if action.name in assigned or group in groups:
            result.append(action)
    return result


def _images_of(materials) -> list[bpy.types.Image]:
    images = {}
    for material in materials:
        if material.node_tree is None:
            continue
        for node in material.node_tree.nodes:
            if node.type == "TEX_IMAGE" and node.image is not None:
                images[node.image.name] = node.image
    return list(images.values())


def _sorted(items):
    return sorted(items, key=lambda i: i.name)


# -- sections -----------------------------------------------------------------


def _armature(obj, lines: list[str]) -> None:
    armature = obj.data
    lines.append(f"armature {armature.name} (object {obj.name}): {len(armature.bones)} bones")
    for bone in _sorted(armature.bones):
        parent = bone.parent.name if bone.parent else "-"
        z_axis = np.array(bone.matrix_local)[:3, 2]
        lines.append(
            f"  bone {bone.name} parent={parent} deform={bone.use_deform} "
            f"head={vec(bone.head_local)} tail={vec(bone.tail_local)} z={vec(z_axis)}"
        )
        _properties(bone, lines, "    ")
    _properties(obj, lines)
    _properties(armature, lines)
    for pose_bone in _sorted(obj.pose.bones) if _detail[0] else ():
        lines.append(f"  pose bone {pose_bone.name} rotation_mode={pose_bone.rotation_mode}")


def _object_header(obj) -> str:
    parent = obj.parent.name if obj.parent else "-"
    return (
        f"object {obj.name} type={obj.type} parent={parent} "
        f"hidden={obj.hide_get()} hide_render={obj.hide_render} "
        f"location={vec(obj.matrix_world.translation)}"
    )


def _mesh(obj, lines: list[str]) -> None:
    mesh = obj.data
    lines.append(
        f"mesh {mesh.name} (object {obj.name}): vertices={len(mesh.vertices)} edges={len(mesh.edges)} "
        f"faces={len(mesh.polygons)} loops={len(mesh.loops)}"
    )
    lines.append(f"  position: {_first_last(_get(mesh.vertices, 'co', 3))}")
    if mesh.has_custom_normals:
        lines.append(f"  custom normals: {_first_last(_get(mesh.corner_normals, 'vector', 3))}")
    lines.append(f"  corner vertices: {_first_last(_get(mesh.loops, 'vertex_index', 1, np.int32))}")
    for uv in _sorted(mesh.uv_layers):
        lines.append(f"  uv {uv.name}: {_first_last(_get(uv.data, 'uv', 2))}")
    colors = {c.name for c in mesh.color_attributes}
    for color in _sorted(mesh.color_attributes):
        lines.append(
            f"  color {color.name} {color.domain} {color.data_type}: "
            f"{_first_last(_get(color.data, 'color', 4))}"
        )
    skipped = INTERNAL_ATTRIBUTES | colors | {uv.name for uv in mesh.uv_layers}
    for attribute in _sorted(mesh.attributes):
        if attribute.name.startswith(".") or attribute.name in skipped:
            continue
        if attribute.data_type not in _ATTRIBUTE_FIELDS:
            lines.append(f"  attribute {attribute.name} {attribute.domain} {attribute.data_type}")
            continue
        lines.append(
            f"  attribute {attribute.name} {attribute.domain} {attribute.data_type}: "
            f"{_first_last(_attribute_values(attribute))}"
        )
    if mesh.shape_keys:
        for block in mesh.shape_keys.key_blocks:
            lines.append(f"  shape key {block.name}: {_first_last(_get(block.data, 'co', 3))}")
    groups = sorted(g.name for g in obj.vertex_groups)
    lines.append(f"  vertex groups ({len(groups)}): {', '.join(groups)}")
    lines.append(
        f"  materials: {', '.join(s.material.name if s.material else '-' for s in obj.material_slots)}"
    )
    for modifier in _sorted(obj.modifiers):
        target = getattr(modifier, "object", None)
        lines.append(f"  modifier {modifier.name} {modifier.type} object={target.name if target else '-'}")
    _properties(obj, lines)
    _properties(mesh, lines)


def _material(material, lines: list[str]) -> None:
    names = []
    if material.node_tree is not None:
        names = sorted(
            n.image.name for n in material.node_tree.nodes if n.type == "TEX_IMAGE" and n.image is not None
        )
    lines.append(f"material {material.name}: images {', '.join(names) or '-'}")
    if _detail[0]:
        lines.append(
            f"  backface_culling={material.use_backface_culling} "
            f"diffuse={vec(material.diffuse_color)} blend={getattr(material, 'surface_render_method', '-')}"
        )
    _properties(material, lines)
    if material.node_tree is not None and _detail[0]:
        _node_tree(material.node_tree, lines)


# Node settings that change what a node does (those a node type has).
_NODE_SETTINGS = (
    "blend_type",
    "operation",
    "data_type",
    "interpolation",
    "extension",
    "projection",
    "vector_type",
    "clamp",
    "use_clamp",
)
_defaults: dict[str, dict[str, str]] = {}


def _input_text(socket) -> str | None:
    value = getattr(socket, "default_value", None)
    if value is None or isinstance(value, str):
        return None
    if hasattr(value, "__len__"):
        return vec(value)
    return num(value)


def _default_inputs(bl_idname: str) -> dict[str, str]:
    """Input values of a new node of this type: only values the import set are shown (Blender
    versions add inputs with their own defaults)."""
    if bl_idname not in _defaults:
        group = bpy.data.node_groups.new("scene_dump defaults", "ShaderNodeTree")
        try:
            node = group.nodes.new(bl_idname)
            _defaults[bl_idname] = {s.identifier: _input_text(s) for s in node.inputs}
        finally:
            bpy.data.node_groups.remove(group)
    return _defaults[bl_idname]


def _node_tree(tree, lines: list[str]) -> None:
    _properties(tree, lines)
    for node in _sorted(tree.nodes):
        settings = [f"{k}={getattr(node, k)}" for k in _NODE_SETTINGS if hasattr(node, k)]
        image = getattr(node, "image", None)
        if image is not None:
            settings.append(f"image={image.name}")
        lines.append(f"  node {node.name} {node.bl_idname} {' '.join(settings)}".rstrip())
        defaults = _default_inputs(node.bl_idname)
        for socket in node.inputs:
            text = _input_text(socket)
            if not socket.is_linked and text is not None and text != defaults.get(socket.identifier):
                lines.append(f"    {socket.identifier} = {text}")
        _properties(node, lines, "    ")
    links = sorted(
        f"{link.from_node.name}.{link.from_socket.identifier} -> {link.to_node.name}.{link.to_socket.identifier}"
        for link in tree.links
    )
    for link in links:
        lines.append(f"  link {link}")
    if tree.animation_data is not None and tree.animation_data.action is not None:
        lines.append(f"  playing {tree.animation_data.action.name}")


def _image(image, lines: list[str]) -> None:
    width, height = image.size
    pixels = np.empty(width * height * image.channels, np.float32)
    image.pixels.foreach_get(pixels)
    pixels = pixels.reshape(-1, image.channels)
    lines.append(f"image {image.name}: {width}x{height} pixels {_first_last(pixels)}")
    if _detail[0]:
        texels = np.round(pixels * 255).astype(np.int16)
        lines.append(
            f"  packed={image.packed_file is not None} alpha={image.alpha_mode} "
            f"colorspace={image.colorspace_settings.name} pixels_digest={digest(texels.tobytes())}"
        )
    _properties(image, lines)


def _action(action, lines: list[str]) -> None:
    start, end = action.frame_range
    header = f"action {action.name}: frames {num(start)}..{num(end)}"
    if _detail[0]:
        header += f" fake_user={action.use_fake_user} cyclic={action.use_cyclic}"
    lines.append(header)
    _properties(action, lines)
    fcurves = sorted(compat.action_fcurves(action), key=lambda f: (f.data_path, f.array_index))
    for fcurve in fcurves:
        points = fcurve.keyframe_points
        co = _get(points, "co", 2)
        modifiers = "".join(f" {m.type}{_cycles_before(m)}" for m in fcurve.modifiers)
        keys = "no keys"
        if len(co):
            keys = f"{vec(co[0])} … {vec(co[-1])} values {num(co[:, 1].min())}..{num(co[:, 1].max())}"
        lines.append(f"  {fcurve.data_path}[{fcurve.array_index}] {len(points)} keys {keys}{modifiers}")
        if len(co) and _detail[0]:
            lines.append(f"    {_keys_checksum(points)}")


def _keys_checksum(points) -> str:
    """Sums over every key and handle and the interpolation codes of an F-curve, so that a change
    to any key shows (sums, not digests: float noise between Blender versions must not)."""
    parts = [
        np.abs(_get(points, name, 2, np.float64)).sum(axis=0)
        for name in ("co", "handle_left", "handle_right")
    ]
    modes = np.bincount(_get(points, "interpolation", 1, np.int32).ravel(), minlength=3)
    sums = " ".join(
        f"{side}=({', '.join(f'{v:.2f}' for v in part)})"
        for side, part in zip(("keys", "left", "right"), parts, strict=True)
    )
    return f"sums {sums} interpolation={modes.tolist()}"


def _parent_name(root, child) -> str:
    for collection in [root, *root.children_recursive]:
        if child.name in collection.children:
            return collection.name
    return "-"


def dump(source=None, *, detail: bool = True) -> str:
    """The dump of a collection (what one import made: its objects with their data, materials,
    images and actions), or of everything in ``bpy.data`` when ``source`` is None or a context.

    ``detail``: with custom properties, node trees and sums of every key (the golden dumps);
    without, what a from-scratch model and its re-import must share."""
    _detail[0] = detail
    try:
        return _dump(source)
    finally:
        _detail[0] = True


def _dump(source) -> str:
    objects = _sorted(_objects(source))
    armatures = [o for o in objects if o.type == "ARMATURE"]
    meshes = [o for o in objects if o.type == "MESH"]
    if isinstance(source, bpy.types.Collection):
        materials = {s.material.name: s.material for o in meshes for s in o.material_slots if s.material}
        materials = _sorted(materials.values())
        images = _sorted(_images_of(materials))
    else:
        materials, images = _sorted(bpy.data.materials), _sorted(bpy.data.images)
    actions = _sorted(_actions(source, objects))
    lines = [
        f"objects={len(objects)} meshes={len({o.data.name for o in meshes})} materials={len(materials)} "
        f"images={len(images)} actions={len(actions)} armatures={len({o.data.name for o in armatures})}"
    ]
    if isinstance(source, bpy.types.Collection):
        lines.append(f"collection {source.name}")
        _properties(source, lines)
        for child in _sorted(source.children_recursive):
            lines.append(f"collection {child.name} in {_parent_name(source, child)}")
    for obj in objects:
        lines.append(_object_header(obj))
    for obj in armatures:
        _armature(obj, lines)
    for obj in meshes:
        _mesh(obj, lines)
    for material in materials:
        _material(material, lines)
    for image in images:
        _image(image, lines)
    for action in actions:
        _action(action, lines)
    return "\n".join(lines) + "\n"


def _cycles_before(modifier) -> str:
    """What a Cycles modifier does before the keys, when it does not repeat there."""
    if modifier.type != "CYCLES" or modifier.mode_before == "REPEAT":
        return ""
    return f"(before {modifier.mode_before})"
