"""Extract a neutral ``Scene`` from Blender data: the one extractor every exporter uses.

The inverse of ``build.build_scene``: what the builder kept aside (source
normals, layer domains, extras, image source bytes, channel order) comes
back unchanged when the user did not edit it, and Blender's current data is
used where they did. Meshes come back as triangles (``loop_triangles``) with
their vertex order; skin influences per vertex are the strongest bones
(as many as the mesh had when imported, else all), ordered by weight.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from contextlib import contextmanager

import bpy
import numpy as np

from ...formats.curves import euler_to_matrix, map_keys, matrix_to_euler, sample, unloop_rows, unslerp_keys
from ...formats.scene import (
    Animation,
    Channel,
    Image,
    Layer,
    Material,
    Mesh,
    Scene,
    ShapeKey,
    Skeleton,
    TextureSlot,
    quat_to_matrix,
)
from . import compat, props
from .build import INTERPOLATION_CODES, bake_frames, bone_maps, keys_hash, pixels_hash
from .objects import deformed_by

_EXTENSION_TO_WRAP = {"REPEAT": "REPEAT", "EXTEND": "CLAMP", "CLIP": "CLAMP", "MIRROR": "MIRROR"}
_WRAP_TO_EXTENSION = {"REPEAT": "REPEAT", "CLAMP": "EXTEND", "MIRROR": "MIRROR"}
_INTERPOLATION_NAMES = {code: name for name, code in INTERPOLATION_CODES.items()}
_POSE_PATH = re.compile(r'^pose\.bones\["((?:[^"\\]|\\.)*)"\]\.(\w+)$')
_NORMAL_TOLERANCE = 1e-3


def extract_scene(context, armature_obj, mesh_objs, *, actions=None) -> Scene:
    """A Scene of the armature (or None), the mesh objects and the animations.

    ``actions`` are the bone actions to export (each brings the material,
    shape-key and visibility actions imported with it); None means every
    imported action animating this armature's bones, plus the armature's
    active action.
    """
    scene = Scene()
    record = props.import_record([o for o in [armature_obj, *mesh_objs] if o is not None])
    if record is not None:
        info = props.to_python(record[props.SCENE])
        scene.name = info["name"]
        scene.extras = props.get_extras(record)
    images = _Registry(record, "images")
    materials = _Registry(record, "materials")
    skeleton = None
    if armature_obj is not None:
        skeleton = _skeleton(armature_obj)
        scene.skeletons.append(skeleton)
    with _rest_position(context, armature_obj):  # object matrices as at rest (bone parents)
        for obj in mesh_objs:
            scene.meshes.append(_mesh(context, obj, armature_obj, skeleton, materials, scene.warnings))
    scene.materials = [_material(m, images) for m in materials.items]
    scene.images = [_image(i) for i in images.items]
    # Channel targets are the names things had on import; follow the user's renames.
    owners = [o for o in [armature_obj, *mesh_objs] if o is not None]
    renamed = {
        (kind, owner.get(props.SCENE_NAME, owner.name)): props.scene_name(owner)
        for kinds, group in ((("object", "shape_key"), owners), (("material",), materials.items))
        for owner in group
        for kind in kinds
    }
    recorded = props.to_python(record[props.SCENE]).get("animations", []) if record is not None else []
    scene.animations = _animations(
        context, armature_obj, skeleton, mesh_objs, materials.items, actions, renamed, recorded
    )
    return scene


class _Registry:
    """Datablocks in scene order: those the import recorded first (when they still exist), then new ones."""

    def __init__(self, record, kind: str):
        self.items: list = []
        self.index: dict[int, int] = {}
        if record is not None:
            source = getattr(bpy.data, kind)
            for name in props.to_python(record[props.SCENE])[kind]:
                if name in source:
                    self.add(source[name])

    def add(self, item) -> int:
        key = item.as_pointer()
        if key not in self.index:
            self.index[key] = len(self.items)
            self.items.append(item)
        return self.index[key]


# -- skeleton -----------------------------------------------------------------


def _display(armature) -> np.ndarray | None:
    if props.BONE_DISPLAY not in armature:
        return None
    return np.array(props.to_python(armature[props.BONE_DISPLAY]), dtype=np.float64).reshape(4, 4)


def _skeleton(armature_obj) -> Skeleton:
    armature = armature_obj.data
    bones = armature.bones
    recorded = props.to_python(armature[props.JOINT_ORDER]) if props.JOINT_ORDER in armature else []
    names = [n for n in recorded if n in bones]
    names += [b.name for b in bones if b.name not in set(names)]
    names = _parents_first(names, bones)
    index = {n: i for i, n in enumerate(names)}
    parents = np.array([index[bones[n].parent.name] if bones[n].parent else -1 for n in names], np.int32)
    rest = np.array([np.array(bones[n].matrix_local, dtype=np.float64) for n in names]).reshape(-1, 4, 4)
    display = _display(armature)
    if display is not None:
        rest = rest @ display.T
    scales = np.array(props.to_python(armature.get(props.REST_SCALE, [])), np.float64).reshape(-1, 3, 3)
    if len(scales) == len(recorded) and set(names) == set(recorded):  # the rest scale the bones cannot hold
        order = [recorded.index(n) for n in names]
        rest[:, :3, :3] = rest[:, :3, :3] @ scales[order]
    return Skeleton(
        props.scene_name(armature_obj),
        names,
        parents,
        rest,
        deform=np.array([bones[n].use_deform for n in names], bool),
        bone_extras=[props.get_extras(bones[n]) for n in names],
        extras=props.get_extras(armature),
        bone_display=display,
    )


@contextmanager
def _rest_position(context, armature_obj) -> Iterator[None]:
    """The armature shown in its rest position for the duration (a no-op without one)."""
    if armature_obj is None or armature_obj.data.pose_position == "REST":
        yield
        return
    armature_obj.data.pose_position = "REST"
    context.view_layer.update()
    try:
        yield
    finally:
        armature_obj.data.pose_position = "POSE"
        context.view_layer.update()


def _parents_first(names: list[str], bones) -> list[str]:
    """``names`` reordered as little as needed so that every parent precedes its children."""
    placed: set[str] = set()
    ordered: list[str] = []

    def place(name: str) -> None:
        if name in placed:
            return
        parent = bones[name].parent
        if parent is not None:
            place(parent.name)
        placed.add(name)
        ordered.append(name)

    for name in names:
        place(name)
    return ordered


# -- meshes -------------------------------------------------------------------


def _get(collection, field: str, count: int, width: int, dtype=np.float32) -> np.ndarray:
    out = np.empty(count * width, dtype)
    collection.foreach_get(field, out)
    return out.reshape(count, width) if width > 1 else out


def _per_point(values: np.ndarray, corner_vertices: np.ndarray, vertex_count: int, tolerance: float = 0.0):
    """Per-vertex values when every corner of each vertex agrees (within ``tolerance``), else None."""
    point = np.zeros((vertex_count, values.shape[1]), values.dtype)
    point[corner_vertices] = values
    if np.abs(point[corner_vertices] - values).max(initial=0.0) > tolerance:
        return None
    return point


def _mesh(context, obj, armature_obj, skeleton, materials: _Registry, warnings: list[str]) -> Mesh:
    data = obj.data
    info = props.to_python(data[props.MESH_INFO]) if props.MESH_INFO in data else {}
    data.calc_loop_triangles()
    vertex_count, loop_count, tri_count = len(data.vertices), len(data.loops), len(data.loop_triangles)
    positions = _get(data.attributes["position"].data, "vector", vertex_count, 3)
    tri_loops = _get(data.loop_triangles, "loops", tri_count, 3, np.int32).ravel()
    triangles = _get(data.loop_triangles, "vertices", tri_count, 3, np.int32)
    corner_vertices = triangles.ravel()
    loop_vertices = _get(data.attributes[".corner_vert"].data, "value", loop_count, 1, np.int32)
    mesh = Mesh(props.scene_name(obj), positions, triangles, extras=props.get_extras(data))
    mesh.normals = _normals(data, tri_loops, corner_vertices, loop_vertices, vertex_count, loop_count)

    uv_domains = info.get("uv_domains", {})
    for uv in data.uv_layers:
        values = _get(uv.data, "uv", loop_count, 2)[tri_loops]
        point = (
            _per_point(values, corner_vertices, vertex_count)
            if uv_domains.get(uv.name, "POINT") == "POINT"
            else None
        )
        mesh.uv_layers.append(
            Layer(uv.name, values if point is None else point, "CORNER" if point is None else "POINT")
        )
    for attribute in data.color_attributes:
        field = "color" if attribute.data_type == "FLOAT_COLOR" else "color_srgb"
        count = vertex_count if attribute.domain == "POINT" else loop_count
        values = _get(attribute.data, field, count, 4)
        mesh.color_layers.append(
            Layer(
                attribute.name, values if attribute.domain == "POINT" else values[tri_loops], attribute.domain
            )
        )
    if props.TANGENT in data.attributes and props.TANGENT_SIGN in data.attributes:
        tangent, sign = data.attributes[props.TANGENT], data.attributes[props.TANGENT_SIGN]
        count = vertex_count if tangent.domain == "POINT" else loop_count
        values = np.concatenate(
            [_get(tangent.data, "vector", count, 3), _get(sign.data, "value", count, 1)[:, None]], 1
        )
        mesh.tangents = Layer(
            "tangent", values if tangent.domain == "POINT" else values[tri_loops], tangent.domain
        )

    if data.materials:
        slots = [materials.add(m) if m is not None else -1 for m in data.materials]
        used = _get(data.loop_triangles, "material_index", tri_count, 1, np.int32)
        used = np.clip(used, 0, len(slots) - 1)
        present = [i for i, s in enumerate(slots) if s >= 0]
        remap = np.full(len(slots), 0, np.int32)
        remap[present] = np.arange(len(present), dtype=np.int32)
        mesh.materials = [slots[i] for i in present]
        mesh.material_indices = remap[used]

    if skeleton is not None and armature_obj is not None and deformed_by(obj, armature_obj):
        mesh.skeleton = 0
        joints, weights, unweighted = _skin(context, obj, skeleton, info.get("skin_influences"))
        if joints is not None:
            mesh.skin_joints, mesh.skin_weights = joints, weights
            if unweighted:
                warnings.append(f"{obj.name}: {unweighted} vertices have no bone weights")
    if data.shape_keys is not None:
        key_extras = info.get("shape_key_extras", {})
        reference = data.shape_keys.reference_key
        for block in data.shape_keys.key_blocks:
            if block != reference:
                mesh.shape_keys.append(
                    ShapeKey(
                        block.name, _get(block.data, "co", vertex_count, 3), key_extras.get(block.name, {})
                    )
                )
    mesh.collection = _collection_name(context, obj)
    mesh.hidden = obj.hide_render
    if "hide_render" in _animated_paths(obj) and props.HIDDEN in obj:
        mesh.hidden = bool(obj[props.HIDDEN])
    matrix = np.array(obj.matrix_world, dtype=np.float64)
    if armature_obj is not None:  # in armature space, as the scene has it
        matrix = np.linalg.inv(np.array(armature_obj.matrix_world, dtype=np.float64)) @ matrix
    mesh.matrix = None if np.allclose(matrix, np.eye(4), atol=1e-7) else matrix
    return mesh


def _normals(data, tri_loops, corner_vertices, loop_vertices, vertex_count, loop_count) -> Layer:
    """The imported normals while Blender's still agree with them, else Blender's corner normals."""
    current = _get(data.corner_normals, "vector", loop_count, 3)
    if props.SOURCE_NORMAL in data.attributes:
        source = data.attributes[props.SOURCE_NORMAL]
        if source.domain == "POINT" and source.data_type == "FLOAT_VECTOR":
            point = _get(source.data, "vector", vertex_count, 3)
            if np.abs(point[loop_vertices] - current).max(initial=0.0) <= _NORMAL_TOLERANCE:
                return Layer("normal", point, "POINT")
        elif source.domain == "CORNER" and source.data_type == "FLOAT_VECTOR":
            corner = _get(source.data, "vector", loop_count, 3)
            if np.abs(corner - current).max(initial=0.0) <= _NORMAL_TOLERANCE:
                return Layer("normal", corner[tri_loops], "CORNER")
    corner = current[tri_loops]
    point = _per_point(corner, corner_vertices, vertex_count, 1e-6)
    return Layer("normal", corner, "CORNER") if point is None else Layer("normal", point, "POINT")


def _collection_name(context, obj) -> str:
    collection = obj.users_collection[0] if obj.users_collection else None
    if collection is None or props.SCENE in collection or collection == context.scene.collection:
        return ""
    return props.scene_name(collection)


def vertex_group_weights(context, obj, names: list[str]) -> np.ndarray:
    """(V, len(names)) weights of the vertex groups named ``names`` (0 where absent).

    Read in bulk through a temporary geometry-nodes object that copies each
    group into a float attribute; the mesh itself is not changed.
    """
    vertex_count = len(obj.data.vertices)
    weights = np.zeros((vertex_count, len(names)), np.float32)
    present = [i for i, n in enumerate(names) if n in obj.vertex_groups]
    if not present:
        return weights
    tree = bpy.data.node_groups.new("vertex group reader", "GeometryNodeTree")
    reader = bpy.data.objects.new("vertex group reader", obj.data)
    try:
        tree.interface.new_socket(name="Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
        tree.interface.new_socket(name="Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
        geometry = tree.nodes.new("NodeGroupInput").outputs[0]
        for i in present:
            group = tree.nodes.new("GeometryNodeInputNamedAttribute")
            group.data_type = "FLOAT"
            group.inputs["Name"].default_value = names[i]
            store = tree.nodes.new("GeometryNodeStoreNamedAttribute")
            store.data_type = "FLOAT"
            store.domain = "POINT"
            store.inputs["Name"].default_value = f"weight {i}"
            tree.links.new(geometry, store.inputs["Geometry"])
            tree.links.new(group.outputs["Attribute"], store.inputs["Value"])
            geometry = store.outputs["Geometry"]
        tree.links.new(geometry, tree.nodes.new("NodeGroupOutput").inputs[0])
        reader.modifiers.new("weights", "NODES").node_group = tree
        context.scene.collection.objects.link(reader)
        evaluated = reader.evaluated_get(context.evaluated_depsgraph_get()).data
        column = np.empty(vertex_count, np.float32)
        for i in present:
            evaluated.attributes[f"weight {i}"].data.foreach_get("value", column)
            weights[:, i] = column
    finally:
        bpy.data.objects.remove(reader)
        bpy.data.node_groups.remove(tree)
    return weights


def _skin(context, obj, skeleton: Skeleton, influences: int | None):
    """Strongest bones per vertex, normalised; and how many vertices have no weight at all."""
    dense = vertex_group_weights(context, obj, skeleton.bone_names)
    if not dense.any():
        return None, None, 0
    count = influences or int((dense > 0).sum(axis=1).max())
    # Strongest first; equal weights by bone index (stable sort of the negated weights).
    order = np.argsort(-dense, axis=1, kind="stable")[:, :count]
    weights = np.take_along_axis(dense, order, axis=1)
    totals = weights.sum(axis=1, keepdims=True)
    weights = np.where(totals > 0, weights / np.where(totals > 0, totals, 1), 0).astype(np.float32)
    joints = np.where(weights > 0, order, 0).astype(np.int32)
    return joints, weights, int((totals[:, 0] <= 0).sum())


# -- materials and images -------------------------------------------------------


def _material(material, images: _Registry) -> Material:
    tree = material.node_tree
    bsdf = next((n for n in tree.nodes if n.type == "BSDF_PRINCIPLED"), None) if tree else None
    base_color = tuple(material.diffuse_color)
    if bsdf is not None:
        base_color = tuple(float(c) for c in bsdf.inputs["Base Color"].default_value)
    stored_mode = material.get(props.ALPHA_MODE, "OPAQUE")
    if material.surface_render_method == "BLENDED":
        alpha_mode = "BLEND"
    else:
        alpha_mode = stored_mode if stored_mode in ("OPAQUE", "CLIP") else "OPAQUE"
    result = Material(
        props.scene_name(material),
        base_color=base_color,
        alpha_mode=alpha_mode,
        backface_culling=material.use_backface_culling,
        extras=props.get_extras(material),
    )
    if tree is None:
        return result
    nodes = [
        n
        for n in tree.nodes
        if n.type == "TEX_IMAGE" and n.image is not None and props.SWITCHED_IMAGE not in n
    ]
    nodes.sort(key=lambda n: props.to_python(n[props.SLOT])["index"] if props.SLOT in n else len(nodes))
    result.textures = [_texture_slot(node, images, tree) for node in nodes]
    return result


def _texture_slot(node, images: _Registry, tree) -> TextureSlot:
    stored = props.to_python(node[props.SLOT]) if props.SLOT in node else {}
    slot = TextureSlot(
        images.add(node.image), role=stored.get("role") or _role(node), extras=props.get_extras(node)
    )
    if _WRAP_TO_EXTENSION.get(stored.get("wrap_s")) == node.extension:
        slot.wrap_s, slot.wrap_t = stored["wrap_s"], stored.get("wrap_t", stored["wrap_s"])
    else:
        slot.wrap_s = slot.wrap_t = _EXTENSION_TO_WRAP[node.extension]
    source = node.inputs["Vector"].links[0].from_node if node.inputs["Vector"].links else None
    if source is not None and source.type == "MAPPING":
        animated = _animated_paths(tree)

        def rest_value(socket_name: str, key: str, components: list[int]) -> list[float]:
            """The socket's value, or the stored rest value while an animation drives the socket."""
            socket = source.inputs[socket_name]
            if f"{socket.path_from_id()}.default_value" in animated and key in stored:
                return stored[key] if isinstance(stored[key], list) else [stored[key]]
            return [float(socket.default_value[i]) for i in components]

        slot.translate = tuple(rest_value("Location", "translate", [0, 1]))
        (slot.rotate,) = rest_value("Rotation", "rotate", [2])
        slot.scale = tuple(rest_value("Scale", "scale", [0, 1]))
        source = source.inputs["Vector"].links[0].from_node if source.inputs["Vector"].links else None
    if source is not None and source.type == "UVMAP":
        slot.uv_layer = source.uv_map
    return slot


def _animated_paths(id_data) -> set[str]:
    action = id_data.animation_data.action if id_data.animation_data else None
    return {fc.data_path for fc in compat.action_fcurves(action)} if action is not None else set()


def _role(node) -> str:
    """The role of a texture the user added, from what its colour feeds."""
    for link in node.outputs["Color"].links:
        target = link.to_node
        if target.type == "NORMAL_MAP":
            return "normal"
        if target.type == "BSDF_PRINCIPLED" and link.to_socket.name.startswith("Emission"):
            return "emission"
    return "base_color"


def _image(image) -> Image:
    width, height = image.size
    flat = np.empty(width * height * 4, np.float32)
    image.pixels.foreach_get(flat)
    pixels = np.round(np.clip(flat, 0, 1) * 255).astype(np.uint8).reshape(height, width, 4)[::-1].copy()
    unchanged = image.get(props.PIXELS_HASH) == pixels_hash(pixels)
    result = Image(
        props.scene_name(image),
        pixels,
        width,
        height,
        source_format=image.get(props.SOURCE_FORMAT, ""),
        extras=props.get_extras(image),
    )
    if unchanged and props.SOURCE_BYTES in image:
        result.source_bytes = base64.b64decode(image[props.SOURCE_BYTES])
    if unchanged and props.UNDECODED in image:
        result.pixels = None
        result.width, result.height = props.to_python(image[props.UNDECODED])
    return result


# -- animations -----------------------------------------------------------------


def _animations(context, armature_obj, skeleton, mesh_objs, materials, actions, renamed, recorded):
    """The animations of the given actions, or of those imported with these objects and those assigned to them."""
    tagged = [a for a in bpy.data.actions if props.ANIMATION in a]
    if actions is None:
        owners = [
            armature_obj,
            *mesh_objs,
            *(o.data.shape_keys for o in mesh_objs),
            *(m.node_tree for m in materials),
        ]
        assigned = [o.animation_data.action for o in owners if o is not None and o.animation_data]
        assigned = [a for a in assigned if a is not None]
        if armature_obj is not None and props.ANIMATIONS in armature_obj.data:
            recorded = props.to_python(armature_obj.data[props.ANIMATIONS])
        groups = set(recorded) | {a[props.ANIMATION]["group"] for a in assigned if props.ANIMATION in a}
        actions = [
            a for a in tagged if a[props.ANIMATION]["primary"] and a[props.ANIMATION]["group"] in groups
        ]
        actions.sort(key=lambda a: a[props.ANIMATION]["index"])
        if armature_obj is not None:
            actions += [a for a in assigned[:1] if props.ANIMATION not in a]
    maps = bone_maps(skeleton) if skeleton is not None else {}
    animations = []
    for action in actions:
        if props.ANIMATION not in action:
            animations.append(_untagged_animation(context, action, maps))
            continue
        group = action[props.ANIMATION]["group"]
        members = [a for a in tagged if a[props.ANIMATION]["group"] == group]
        animations.append(_tagged_animation(action, members, maps, renamed))
    return animations


def _unescape(name: str) -> str:
    return re.sub(r"\\(.)", r"\1", name)


def _curves_by_path(action) -> dict[str, list]:
    by_path: dict[str, list] = {}
    for fcurve in compat.action_fcurves(action):
        by_path.setdefault(fcurve.data_path, []).append(fcurve)
    for curves in by_path.values():
        curves.sort(key=lambda fc: fc.array_index)
    return by_path


def _fcurve_rows(fcurve, loop: dict | None) -> np.ndarray:
    """(K, 7) keys of an F-curve: frame, value, left handle, right handle, interpolation code; without
    the keys the builder added for a looping animation (``loop``: the channel record's)."""
    points = fcurve.keyframe_points
    count = len(points)
    rows = np.empty((count, 7))
    for column, field in ((0, "co"), (2, "handle_left"), (4, "handle_right")):
        rows[:, column : column + 2] = _get(points, field, count, 2)
    rows[:, 6] = _get(points, "interpolation", count, 1, np.int32)
    return rows if loop is None else unloop_rows(rows, loop, str(fcurve.array_index))


def _read_keys(fcurves, loop: dict | None = None):
    """(times, values (K, C), interpolation, handles_left, handles_right) of one channel's F-curves.

    None when no F-curve has keys.
    """
    keys = []
    for fcurve in fcurves:
        rows = _fcurve_rows(fcurve, loop)
        if len(rows) == 0:
            continue
        interpolation = _INTERPOLATION_NAMES.get(int(rows[0, 6]), "")
        keys.append((rows[:, :2], rows[:, 2:4], rows[:, 4:6], interpolation))
    if not keys:
        return None
    interpolation = keys[0][3] if keys[0][3] in ("CONSTANT", "LINEAR", "BEZIER") else "LINEAR"
    times = keys[0][0][:, 0]
    if all(len(k[0]) == len(times) and np.array_equal(k[0][:, 0], times) for k in keys):
        values = np.stack([k[0][:, 1] for k in keys], axis=1)
        if interpolation != "BEZIER":
            return times, values, interpolation, None, None
        return (
            times,
            values,
            interpolation,
            np.stack([k[1] for k in keys], 1),
            np.stack([k[2] for k in keys], 1),
        )
    # Components keyed at different frames: resample all at the union of their key frames.
    times = np.unique(np.concatenate([k[0][:, 0] for k in keys]))
    columns = [sample(k[0][:, 0], k[0][:, 1:], k[3], k[1][:, None], k[2][:, None], times)[:, 0] for k in keys]
    return times, np.stack(columns, axis=1), "LINEAR", None, None


def _animation_of(action, info: dict) -> Animation:
    frame_start, frame_end = info["frame_start"], info["frame_end"]
    if action.use_frame_range:
        frame_start, frame_end = float(action.frame_start), float(action.frame_end)
    # The imported name while Blender's differs only by a ".001" suffix; the user's rename otherwise.
    name = (
        info["name"] if re.fullmatch(re.escape(info["name"]) + r"(\.\d{3,})?", action.name) else action.name
    )
    return Animation(
        name,
        fps=info["fps"],
        frame_start=frame_start,
        frame_end=frame_end,
        loop=info["loop"],
        skeleton=None if info["skeleton"] < 0 else info["skeleton"],
        extras=props.get_extras(action),
    )


def _tagged_animation(primary, members, maps, renamed) -> Animation:
    animation = _animation_of(primary, props.to_python(primary[props.ANIMATION]))
    entries = []
    for action in members:
        curves = _curves_by_path(action)
        for meta in props.to_python(action[props.ANIMATION]).get("channels", []):
            if meta["data_path"] in curves:
                entries.append((meta["order"], meta, curves[meta["data_path"]]))
    for _order, meta, fcurves in sorted(entries, key=lambda e: e[0]):
        if "array_index" in meta:  # one component of a vector whose other components are other channels
            fcurves = [fc for fc in fcurves if fc.array_index == meta["array_index"]]
        keys = _read_keys(fcurves, meta.get("loop"))
        if keys is None:
            continue
        times, values, interpolation, left, right = keys
        target = renamed.get((meta["kind"], meta["target"]), meta["target"])
        pose = _POSE_PATH.match(meta["data_path"]) if meta["kind"] == "bone" else None
        if pose is not None:  # the bone's name in Blender, which the skeleton uses
            target = _unescape(pose.group(1))
        if (
            "parts" in meta and _keys_hash(fcurves, meta.get("loop")) == meta["written"]
        ):  # unedited: the channels as imported
            animation.channels += [_part_channel(part, meta, target) for part in meta["parts"]]
            continue
        channel = Channel(
            meta["kind"],
            target,
            meta["path"],
            times,
            values,
            interpolation,
            left,
            right,
            extras=meta.get("extras", {}),
        )
        if meta["kind"] == "bone":
            pose_path = fcurves[0].data_path.rsplit(".", 1)[1]
            if "index" in meta:
                channel = _component_channel(channel, pose_path, fcurves[0].array_index, maps, meta["index"])
            else:
                channel = _relative_channel(channel, pose_path, maps, meta)
            if channel is None:
                continue
            if "parts" in meta:  # merged per-component channels, edited: split them again
                animation.channels += _split(channel, meta["parts"])
                continue
            if (
                "source" in meta and _keys_hash(fcurves, meta.get("loop")) == meta["written"]
            ):  # unedited: the exact values
                channel.values = np.array(meta["source"], np.float64).reshape(channel.values.shape)
            if (
                "slerp" in meta
                and channel.path == "rotation_quaternion"
                and channel.interpolation == "LINEAR"
            ):
                channel.times, channel.values = unslerp_keys(channel.times, channel.values, meta["slerp"])
        else:  # one component, or keys offset by a texture transform's centre (build._build_material_channel)
            channel.index = meta.get("index")
            offset = np.asarray(meta.get("offset", 0.0), np.float64)
            channel.values = channel.values - offset
            for side in ("handles_left", "handles_right"):
                handles = getattr(channel, side)
                if handles is not None:
                    handles = handles.copy()
                    handles[..., 1] -= offset
                    setattr(channel, side, handles)
        if "unspread" in meta:
            _unspread(channel, meta["unspread"])
        animation.channels.append(channel)
    return animation


def _unspread(channel: Channel, keys: dict) -> None:
    """The file's keys back in place of those the builder spread apart, while they are unedited."""
    spread_values = np.array(keys["spread_values"], np.float64)
    if len(channel.times) != len(keys["spread_times"]) or channel.values.shape != spread_values.shape:
        return
    if not (
        np.allclose(channel.times, keys["spread_times"], rtol=0, atol=1e-3)
        and np.allclose(channel.values, spread_values, rtol=1e-5, atol=1e-6)
    ):
        return
    channel.times = np.array(keys["times"], np.float64)
    channel.values = np.array(keys["values"], np.float64)
    if "handles_left" in keys and channel.handles_left is not None:
        channel.handles_left = np.array(keys["handles_left"], np.float64)
        channel.handles_right = np.array(keys["handles_right"], np.float64)


def _keys_hash(fcurves, loop: dict | None) -> str:
    rows = [_fcurve_rows(fc, loop) for fc in fcurves]
    co = [r[:, :2].astype(np.float32) for r in rows]
    interpolation = _INTERPOLATION_NAMES.get(int(rows[0][0, 6]), "") if co and len(co[0]) else ""
    return keys_hash(
        np.stack(co) if co and all(len(c) == len(co[0]) for c in co) else np.zeros(0), interpolation
    )


def _part_channel(part: dict, meta: dict, target: str) -> Channel:
    count = len(part["times"])
    channel = Channel(
        "bone",
        target,
        meta["path"],
        np.array(part["times"], np.float64),
        np.array(part["values"], np.float64).reshape(count, 1),
        part["interpolation"],
        extras=part["extras"],
        index=part["index"],
    )
    if "handles_left" in part:
        channel.handles_left = np.array(part["handles_left"], np.float64).reshape(count, 1, 2)
        channel.handles_right = np.array(part["handles_right"], np.float64).reshape(count, 1, 2)
    return channel


def _split(channel: Channel, parts: list[dict]) -> list[Channel]:
    """A whole-vector channel as the per-component channels it was merged from."""
    out = []
    for part in parts:
        i = part["index"]
        out.append(
            Channel(
                channel.target_kind,
                channel.target,
                channel.path,
                channel.times,
                channel.values[:, i : i + 1],
                channel.interpolation,
                None if channel.handles_left is None else channel.handles_left[:, i : i + 1],
                None if channel.handles_right is None else channel.handles_right[:, i : i + 1],
                extras=part["extras"],
                index=i,
            )
        )
    return out


def _component_channel(channel: Channel, pose_path: str, component: int, maps, index: int) -> Channel | None:
    """One pose component's F-curve turned back into component ``index`` of the parent-relative channel."""
    bone = maps.get(channel.target)
    if bone is None or pose_path not in bone.maps:
        return None
    a, b = bone.inverses[pose_path]
    scale, offset = a[index, component], b[index]
    channel.values = channel.values * scale + offset
    for side in ("handles_left", "handles_right"):
        handles = getattr(channel, side)
        if handles is not None:
            handles = handles.copy()
            handles[..., 1] = handles[..., 1] * scale + offset
            setattr(channel, side, handles)
    channel.path, channel.index = pose_path, index
    return channel


def _untagged_animation(context, action, maps) -> Animation:
    render = context.scene.render
    start, end = action.frame_range
    animation = Animation(
        action.name,
        fps=render.fps / render.fps_base,
        frame_start=float(start),
        frame_end=float(end),
        skeleton=0,
    )
    for data_path, fcurves in _curves_by_path(action).items():
        match = _POSE_PATH.match(data_path)
        if not match:
            continue
        keys = _read_keys(fcurves)
        if keys is None:
            continue
        times, values, interpolation, left, right = keys
        channel = Channel(
            "bone", _unescape(match.group(1)), match.group(2), times, values, interpolation, left, right
        )
        channel = _relative_channel(channel, match.group(2), maps, {})
        if channel is not None:
            animation.channels.append(channel)
    return animation


def _relative_channel(channel: Channel, pose_path: str, maps, meta: dict) -> Channel | None:
    """A pose-space channel turned back into the parent-relative one of the scene (inverse of the build)."""
    bone = maps.get(channel.target)
    if bone is None or pose_path not in ("location", "rotation_quaternion", "rotation_euler", "scale"):
        return None
    values, left, right = channel.values, channel.handles_left, channel.handles_right
    if pose_path == "rotation_quaternion" and meta.get("flipped") and max(meta["flipped"]) < len(values):
        signs = np.ones(len(values))
        signs[meta["flipped"]] = -1
        values = values * signs[:, None]
        if left is not None:
            left, right = left.copy(), right.copy()
            left[..., 1] *= signs[:, None]
            right[..., 1] *= signs[:, None]
    if meta.get("baked") == "rotation_euler" or (
        pose_path == "rotation_euler" and pose_path not in bone.maps
    ):
        if meta.get("baked") != "rotation_euler":  # Euler keys of a rotated rest: convert every frame
            frames = bake_frames(channel.times)
            values = sample(channel.times, values, channel.interpolation, left, right, frames)
            channel.times = frames
        basis = quat_to_matrix(values) if pose_path == "rotation_quaternion" else euler_to_matrix(values)
        channel.path = "rotation_euler"
        channel.values = matrix_to_euler(bone.relative_rotation(basis))
        channel.interpolation, channel.handles_left, channel.handles_right = "LINEAR", None, None
        return channel
    a, b = bone.inverses[pose_path]
    mapped = map_keys(values, left, right, channel.interpolation, a, b)
    if mapped is None:  # Bézier handles the map cannot carry: sample every frame
        frames = bake_frames(channel.times)
        values = sample(channel.times, values, channel.interpolation, left, right, frames)
        channel.times, channel.interpolation = frames, "LINEAR"
        mapped = (values @ a.T + b, None, None)
    channel.path = pose_path
    channel.values, channel.handles_left, channel.handles_right = mapped
    return channel
