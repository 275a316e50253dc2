"""Scene meshes ⇄ Blender mesh objects, and the channels keyed on them (visibility, shape keys).

Built in bulk from numpy: positions, corners and faces with ``foreach_set``, UV maps through
their generic attributes, colours as FLOAT_COLOR attributes, tangents and the exact source
normals as attributes beside Blender's custom normals (``props.SOURCE_NORMAL``, ``props.TANGENT``),
one vertex group per bone with weights, shape keys at weight 0. Triangles that repeat a vertex
are left out (Blender cannot hold them) with a warning. A skinned mesh is parented to its armature
and gets an Armature modifier.

Extraction gives triangles (``loop_triangles``) with the vertex order kept; the source normals
while Blender's still agree with them; UV layers in the domain they came in; per vertex the
strongest bones (as many as the mesh had when imported, else all), ordered by weight.
"""

from __future__ import annotations

from contextlib import contextmanager

import bpy
import numpy as np
from mathutils import Matrix

from ...formats.scene import Layer, Mesh, ShapeKey
from . import compat, props
from .records import ChannelRecord

# How far Blender's corner normals may drift from the source normals that are still exported: its
# custom-normal encoding moves some by up to 4e-3 (the J3D corpus), and by a different amount in 4.2.
_NORMAL_TOLERANCE = 1e-2


# -- build --------------------------------------------------------------------


def _attribute(mesh, name: str, kind: str, domain: str, data: np.ndarray, field_name: str) -> None:
    dtype = np.int32 if kind == "INT" else np.float32
    mesh.attributes.new(name, kind, domain).data.foreach_set(
        field_name, np.ascontiguousarray(data, dtype).ravel()
    )


def _corner_data(
    layer_data: np.ndarray, domain: str, corner_vertices: np.ndarray, keep: np.ndarray
) -> np.ndarray:
    """A layer's values per built corner (POINT layers expanded through the corner vertices)."""
    width = layer_data.shape[-1]
    if domain == "POINT":
        return np.take(layer_data, corner_vertices, axis=0)  # rows several times faster than x[index]
    if keep.all():
        return layer_data.reshape(-1, width)
    return layer_data.reshape(-1, 3, width)[keep].reshape(-1, width)


def set_normals(blender_mesh, normals: Layer, corners: np.ndarray, keep: np.ndarray) -> None:
    """Blender's custom normals, and the exact source normals beside them for the extractor."""
    data = np.asarray(normals.data, np.float32)
    if normals.domain == "POINT":
        blender_mesh.normals_split_custom_set_from_vertices(data)
    else:
        data = _corner_data(data, "CORNER", corners, keep)
        blender_mesh.normals_split_custom_set(data)
    _attribute(blender_mesh, props.SOURCE_NORMAL, "FLOAT_VECTOR", normals.domain, data, "vector")


def build_mesh(context, mesh: Mesh, collection, materials, armature, result) -> bpy.types.Object:
    """The mesh object of a Scene mesh in ``collection``, skinned to ``armature`` (or None)."""
    blender_mesh = _mesh_data(mesh, materials, result)
    obj = bpy.data.objects.new(mesh.name, blender_mesh)
    obj[props.SCENE_NAME] = mesh.name
    collection.objects.link(obj)
    if mesh.matrix is not None:
        obj.matrix_basis = Matrix(np.asarray(mesh.matrix, dtype=np.float64).tolist())
    if armature is not None:
        obj.parent = armature
        modifier = obj.modifiers.new("Armature", "ARMATURE")
        modifier.object = armature
        if mesh.skin_joints is not None and mesh.skin_weights is not None:
            add_vertex_groups(
                obj, list(armature.data[props.JOINT_ORDER]), mesh.skin_joints, mesh.skin_weights
            )
    if mesh.shape_keys:
        obj.shape_key_add(name="Basis", from_mix=False)
        for key in mesh.shape_keys:
            block = obj.shape_key_add(name=key.name, from_mix=False)
            block.value = 0.0  # Blender adds keys at full weight; the scene's mesh is the rest
            block.data.foreach_set("co", np.ascontiguousarray(key.positions, np.float32).ravel())
    obj.hide_render = mesh.hidden
    obj[props.HIDDEN] = mesh.hidden
    return obj


def _mesh_data(mesh: Mesh, materials, result) -> bpy.types.Mesh:
    """The mesh datablock: geometry, normals, layers, material slots and what the extractor needs."""
    triangles = np.asarray(mesh.triangles, np.int32).reshape(-1, 3)
    # Blender cannot hold triangles that repeat a vertex (or name a missing one).
    keep = (
        (triangles[:, 0] != triangles[:, 1])
        & (triangles[:, 1] != triangles[:, 2])
        & (triangles[:, 0] != triangles[:, 2])
    )
    if len(triangles) and not (0 <= triangles.min() and triangles.max() < len(mesh.positions)):
        keep &= ((triangles >= 0) & (triangles < len(mesh.positions))).all(axis=1)
    if not keep.all():
        result.warnings.append(f"{mesh.name}: {int((~keep).sum())} degenerate triangles left out")
        triangles = triangles[keep]
    corners = triangles.ravel()
    blender_mesh = bpy.data.meshes.new(mesh.name)
    blender_mesh.vertices.add(len(mesh.positions))
    blender_mesh.loops.add(len(corners))
    blender_mesh.polygons.add(len(triangles))
    blender_mesh.attributes["position"].data.foreach_set(
        "vector", np.ascontiguousarray(mesh.positions, np.float32).ravel()
    )
    if len(corners):  # a mesh without faces has no corner attribute at all
        blender_mesh.attributes[".corner_vert"].data.foreach_set("value", corners)
        blender_mesh.polygons.foreach_set("loop_start", np.arange(0, len(corners), 3, dtype=np.int32))
    blender_mesh.update(calc_edges=True)

    if mesh.normals is not None:
        set_normals(blender_mesh, mesh.normals, corners, keep)
    info = {"uv_domains": _layers(blender_mesh, mesh, corners, keep)}
    for index in mesh.materials:
        blender_mesh.materials.append(materials[index])
    indices = None if mesh.material_indices is None else np.asarray(mesh.material_indices, np.int32)[keep]
    if indices is not None and mesh.materials and indices.any():  # all zero is Blender's default
        _attribute(blender_mesh, "material_index", "INT", "FACE", indices, "value")
    if mesh.skin_weights is not None:
        info["skin_influences"] = int(np.asarray(mesh.skin_weights).shape[1])
    if mesh.shape_keys:
        info["shape_key_extras"] = {k.name: k.extras for k in mesh.shape_keys if k.extras}
    props.set_extras(blender_mesh, mesh.extras)
    blender_mesh[props.MESH_INFO] = info
    return blender_mesh


def _layers(blender_mesh, mesh: Mesh, corners, keep) -> dict[str, str]:
    """UV maps, colour attributes and tangents; returns the domain each UV map came in."""
    uv_domains = {}
    for layer in mesh.uv_layers:
        uv = blender_mesh.uv_layers.new(name=layer.name)
        uv_domains[uv.name] = layer.domain
        # The layer's generic attribute takes the values several times faster than ``uv.data``.
        blender_mesh.attributes[uv.name].data.foreach_set(
            "vector",
            np.ascontiguousarray(
                _corner_data(np.asarray(layer.data, np.float32), layer.domain, corners, keep)
            ).ravel(),
        )
    for layer in mesh.color_layers:
        data = np.asarray(layer.data)
        if layer.domain == "CORNER":
            data = _corner_data(data, "CORNER", corners, keep)
        attribute = blender_mesh.color_attributes.new(layer.name, "FLOAT_COLOR", layer.domain)
        attribute.data.foreach_set("color", np.ascontiguousarray(data, np.float32).ravel())
    if mesh.tangents is not None:
        data = np.asarray(mesh.tangents.data)
        if mesh.tangents.domain == "CORNER":
            data = _corner_data(data, "CORNER", corners, keep)
        _attribute(blender_mesh, props.TANGENT, "FLOAT_VECTOR", mesh.tangents.domain, data[:, :3], "vector")
        _attribute(blender_mesh, props.TANGENT_SIGN, "FLOAT", mesh.tangents.domain, data[:, 3], "value")
    return uv_domains


def add_vertex_groups(obj, bone_names: list[str], joints: np.ndarray, weights: np.ndarray) -> None:
    """One vertex group per bone that has weights; one call per distinct (bone, weight) pair.

    Blender has no bulk setter for vertex weights; grouping equal weights keeps the
    calls few for the 8- and 16-bit weights files store.
    """
    joints = np.asarray(joints, np.int64)
    weights = np.asarray(weights, np.float32)
    vertex = np.repeat(np.arange(joints.shape[0]), joints.shape[1])
    joints, weights = joints.ravel(), weights.ravel()
    used = (weights > 0) & (joints >= 0) & (joints < len(bone_names))
    vertex, joints, weights = vertex[used], joints[used], weights[used]
    if not len(vertex):  # nothing weighted: no group to make
        return
    # One sort on (bone, weight bits): positive float32 bits sort like the floats; vertices stay in order.
    key = (joints << 32) | weights.view(np.uint32).astype(np.int64)
    order = np.argsort(key, kind="stable")
    key, vertex = key[order], vertex[order].tolist()
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    ends = np.r_[starts[1:], len(key)].tolist()
    joints = (key[starts] >> 32).tolist()
    # Every group made before any weight goes in: Blender adds weights faster then.
    groups = {joint: obj.vertex_groups.new(name=bone_names[joint]) for joint in sorted(set(joints))}
    for start, end, joint, weight in zip(
        starts.tolist(), ends, joints, weights[order][starts].tolist(), strict=True
    ):
        groups[joint].add(vertex[start:end], weight, "REPLACE")


def show_animated_visibility(context, objects, meshes: list[Mesh], animated: set[str]) -> None:
    """Hide the hidden meshes: with ``hide_viewport`` when an animation keys their visibility (``animated``:
    their names), else with the eye (one click shows them), which would override ``hide_viewport``."""
    hidden = [o for o, m in zip(objects, meshes, strict=True) if m.hidden and m.name not in animated]
    for obj, mesh in zip(objects, meshes, strict=True):
        obj.hide_viewport = mesh.hidden and mesh.name in animated
    if hidden:
        context.view_layer.update()  # the view layer knows new objects only once synced
        for obj in hidden:
            obj.hide_set(True, view_layer=context.view_layer)


# -- channels -----------------------------------------------------------------


def key_visibility(actions, obj, times, values, record: ChannelRecord):
    """An object ``hide`` channel: the same CONSTANT keys on ``hide_viewport`` (recorded) and ``hide_render``;
    returns the recorded keys as written."""
    fcurves = actions.fcurves(obj, "OBJECT", "hide_viewport", 1, "", record)
    written = actions.write(fcurves, record, times, values[:, :1], "CONSTANT")
    actions.write(
        actions.fcurves(obj, "OBJECT", "hide_render", 1, "", None), None, times, values[:, :1], "CONSTANT"
    )
    return written


def key_shape(actions, key, channel, times, values, record: ChannelRecord):
    """A shape key channel (``Channel.path``: the key block's name) on the mesh's shape keys; returns the
    keys as written, None when the mesh has no such key block."""
    if channel.path not in key.key_blocks:
        return None
    data_path = f'key_blocks["{bpy.utils.escape_identifier(channel.path)}"].value'
    fcurves = actions.fcurves(key, "KEY", data_path, 1, "", record)
    return actions.write(
        fcurves, record, times, values, channel.interpolation, channel.handles_left, channel.handles_right
    )


# -- extract --------------------------------------------------------------------


def _per_point(values: np.ndarray, corner_vertices: np.ndarray, vertex_count: int, tolerance: float = 0.0):
    """Per-vertex values when every corner of each vertex agrees (within ``tolerance``), else None."""
    point = np.zeros((vertex_count, values.shape[1]), values.dtype)
    point[corner_vertices] = values
    if np.abs(point[corner_vertices] - values).max(initial=0.0) > tolerance:
        return None
    return point


@contextmanager
def modifiers_applied(context, objs, warnings: list[str]):
    """While exporting, each of ``objs`` holds the mesh its modifiers make (Apply Modifiers), Armature
    modifiers left out since the skin carries the pose; its own mesh is back afterwards. All are
    evaluated before any mesh is swapped, in one evaluation. Shape keys do not survive modifiers:
    said in ``warnings``."""
    applied = {}  # object -> its first modifier applied
    for obj in objs:
        modifier = next((m for m in obj.modifiers if m.show_viewport and m.type != "ARMATURE"), None)
        if modifier is not None:
            applied[obj] = modifier
    if not applied:
        yield
        return
    armatures = [m for obj in applied for m in obj.modifiers if m.show_viewport and m.type == "ARMATURE"]
    for modifier in armatures:
        modifier.show_viewport = False
    meshes = {}
    try:
        depsgraph = context.evaluated_depsgraph_get()
        for obj in applied:
            meshes[obj] = bpy.data.meshes.new_from_object(
                obj.evaluated_get(depsgraph), preserve_all_data_layers=True, depsgraph=depsgraph
            )
    except BaseException:
        bpy.data.batch_remove(meshes.values())
        raise
    finally:
        for modifier in armatures:
            modifier.show_viewport = True
    originals = {}
    for obj, mesh in meshes.items():
        original = originals[obj] = obj.data
        for key in original.keys():  # what the import kept on the mesh (extras, layer domains)
            mesh[key] = original[key]
        if original.shape_keys is not None:
            warnings.append(
                f"{obj.name}: shape keys left out: its modifiers ({applied[obj].name}…) were applied"
            )
        obj.data = mesh
    try:
        yield
    finally:
        for obj, original in originals.items():
            obj.data = original
        bpy.data.batch_remove(meshes.values())


def extract_mesh(context, obj, armature_obj, skeleton, materials, warnings: list[str], weights=None) -> Mesh:
    """The Scene mesh of a mesh object; ``materials`` registers the materials it uses (``.add``).
    ``weights``: when ``skeleton`` deforms it, its vertex groups' weights (``vertex_group_weights``,
    which reads every mesh of an export at once)."""
    data = obj.data
    info = props.to_python(data[props.MESH_INFO]) if props.MESH_INFO in data else {}
    data.calc_loop_triangles()
    vertex_count, loop_count, tri_count = len(data.vertices), len(data.loops), len(data.loop_triangles)
    positions = compat.read_array(data.attributes["position"].data, "vector", vertex_count, 3)
    tri_loops = compat.read_array(data.loop_triangles, "loops", tri_count, 3, np.int32).ravel()
    loop_vertices = _corner_vertices(data, loop_count)
    corner_vertices = loop_vertices[tri_loops]  # a triangle's vertices are its corners' vertices
    triangles = corner_vertices.reshape(-1, 3)
    mesh = Mesh(props.scene_name(obj), positions, triangles, extras=props.get_extras(data))
    mesh.normals = _normals(data, tri_loops, corner_vertices, loop_vertices, vertex_count, loop_count)
    _read_layers(mesh, data, info, tri_loops, corner_vertices)

    if data.materials:
        slots = [materials.add(m) if m is not None else -1 for m in data.materials]
        used = np.zeros(tri_count, np.int32)  # no attribute: every face uses the first slot
        if "material_index" in data.attributes:  # per face, read generically (faster than per triangle)
            faces = compat.read_array(data.loop_triangle_polygons, "value", tri_count, 1, np.int32)
            per_face = data.attributes["material_index"].data
            used = compat.read_array(per_face, "value", len(per_face), 1, np.int32)[faces]
        used = np.clip(used, 0, len(slots) - 1)
        present = [i for i, s in enumerate(slots) if s >= 0]
        remap = np.full(len(slots), 0, np.int32)
        remap[present] = np.arange(len(present), dtype=np.int32)
        mesh.materials = [slots[i] for i in present]
        mesh.material_indices = remap[used]

    if weights is not None:
        mesh.skeleton = 0
        joints, strongest, unweighted = _strongest(
            *weights, vertex_count, len(skeleton.bone_names), info.get("skin_influences")
        )
        if joints is not None:
            mesh.skin_joints, mesh.skin_weights = joints, strongest
            if unweighted:
                warnings.append(f"{obj.name}: {unweighted} vertices have no bone weights")
    if data.shape_keys is not None:
        key_extras = info.get("shape_key_extras", {})
        reference = data.shape_keys.reference_key
        for block in data.shape_keys.key_blocks:
            if block != reference:
                positions = compat.read_array(block.data, "co", vertex_count, 3)
                mesh.shape_keys.append(ShapeKey(block.name, positions, key_extras.get(block.name, {})))
    mesh.collection = _collection_name(context, obj)
    mesh.hidden = obj.hide_render
    if "hide_render" in compat.animated_paths(obj) and props.HIDDEN in obj:
        mesh.hidden = bool(obj[props.HIDDEN])
    matrix = np.array(obj.matrix_world, dtype=np.float64)
    if armature_obj is not None:  # in armature space, as the scene has it
        matrix = np.linalg.inv(np.array(armature_obj.matrix_world, dtype=np.float64)) @ matrix
    mesh.matrix = None if np.allclose(matrix, np.eye(4), atol=1e-7) else matrix
    return mesh


def extract_built_geometry(obj) -> Mesh:
    """What ``extract_mesh`` reads of a mesh ``build_mesh`` made (positions, triangles, normals, layers,
    extras: no skin, materials or shape keys), without Blender's triangulation: the builder's faces are
    the triangles in corner order."""
    data = obj.data
    vertex_count, loop_count = len(data.vertices), len(data.loops)
    info = props.to_python(data[props.MESH_INFO]) if props.MESH_INFO in data else {}
    positions = compat.read_array(data.attributes["position"].data, "vector", vertex_count, 3)
    corner_vertices = _corner_vertices(data, loop_count)
    mesh = Mesh(
        props.scene_name(obj), positions, corner_vertices.reshape(-1, 3), extras=props.get_extras(data)
    )
    every_corner = slice(None)  # the triangles' corners (``tri_loops``): all of them, in order
    mesh.normals = _normals(data, every_corner, corner_vertices, corner_vertices, vertex_count, loop_count)
    _read_layers(mesh, data, info, every_corner, corner_vertices)
    return mesh


def _corner_vertices(data, loop_count: int) -> np.ndarray:
    """Each corner's vertex (a mesh without faces has no corner attribute at all)."""
    if not loop_count:
        return np.zeros(0, np.int32)
    return compat.read_array(data.attributes[".corner_vert"].data, "value", loop_count, 1, np.int32)


def _read_layers(mesh: Mesh, data, info: dict, tri_loops, corner_vertices) -> None:
    """UV maps (in the domain they came in), colour attributes and tangents."""
    vertex_count, loop_count = len(data.vertices), len(data.loops)
    uv_domains = info.get("uv_domains", {})
    for uv in data.uv_layers:
        # The map's generic attribute gives the values several times faster than ``uv.data``.
        values = compat.read_array(data.attributes[uv.name].data, "vector", loop_count, 2)[tri_loops]
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
        values = compat.read_array(attribute.data, field, count, 4)
        mesh.color_layers.append(
            Layer(
                attribute.name, values if attribute.domain == "POINT" else values[tri_loops], attribute.domain
            )
        )
    if props.TANGENT in data.attributes and props.TANGENT_SIGN in data.attributes:
        tangent, sign = data.attributes[props.TANGENT], data.attributes[props.TANGENT_SIGN]
        count = vertex_count if tangent.domain == "POINT" else loop_count
        values = np.concatenate(
            [
                compat.read_array(tangent.data, "vector", count, 3),
                compat.read_array(sign.data, "value", count, 1)[:, None],
            ],
            1,
        )
        mesh.tangents = Layer(
            "tangent", values if tangent.domain == "POINT" else values[tri_loops], tangent.domain
        )


def _normals(data, tri_loops, corner_vertices, loop_vertices, vertex_count, loop_count) -> Layer:
    """The imported normals while Blender's still agree with them, else Blender's corner normals."""
    current = compat.read_array(data.corner_normals, "vector", loop_count, 3)
    if props.SOURCE_NORMAL in data.attributes:
        source = data.attributes[props.SOURCE_NORMAL]
        if source.domain == "POINT" and source.data_type == "FLOAT_VECTOR":
            point = compat.read_array(source.data, "vector", vertex_count, 3)
            drift = np.take(point, loop_vertices, axis=0)  # take: rows several times faster than point[...]
            np.abs(np.subtract(drift, current, out=drift), out=drift)
            if drift.max(initial=0.0) <= _NORMAL_TOLERANCE:
                return Layer("normal", point, "POINT")
        elif source.domain == "CORNER" and source.data_type == "FLOAT_VECTOR":
            corner = compat.read_array(source.data, "vector", loop_count, 3)
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


# Vertex groups read per Geometry Nodes modifier (each passes this many groups through).
_GROUPS_PER_READER = 8


def vertex_group_weights(context, objs, names: list[str]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per object of ``objs``, (vertices, bones, weights): every weight above 0 of its vertex groups
    named ``names`` (a bone is an index into ``names``), by bone, then by vertex.

    Blender (4.2 to 5.0) has no bulk getter for vertex weights (only ``VertexGroup.weight(vertex)``),
    so a temporary object per mesh (objects may share one) evaluates Geometry Nodes modifiers that
    turn each group into a float attribute, read with ``foreach_get``; the meshes themselves are not
    changed. One evaluation reads every mesh (as many as ``_READ_BUDGET`` lets Blender hold at once):
    its cost is mostly Blender's, one pass over the mesh's weights per group. Each modifier names its
    groups in its own settings (an input read from an attribute, an output written to one), so one
    small pass-through tree serves them all: a tree's cost grows with the square of its sockets.
    """
    nothing = np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
    present = {}  # per mesh (objects may share one): the bones that have a group
    for obj in objs:
        if obj.data not in present:
            groups = set(obj.vertex_groups.keys())
            present[obj.data] = [i for i, n in enumerate(names) if n in groups]
    present = {data: bones for data, bones in present.items() if bones}
    if not present:
        return [nothing for _ in objs]
    width = min(_GROUPS_PER_READER, max(len(bones) for bones in present.values()))
    tree = bpy.data.node_groups.new("vertex group reader", "GeometryNodeTree")
    # In a scene of its own, the depsgraph evaluates the readers alone.
    scene = bpy.data.scenes.new("vertex group reader")
    readers = []
    try:
        interface = tree.interface
        interface.new_socket(name="Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
        interface.new_socket(name="Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
        sockets = [
            tuple(
                interface.new_socket(name=f"group {k}", in_out=side, socket_type="NodeSocketFloat").identifier
                for side in ("INPUT", "OUTPUT")
            )
            for k in range(width)
        ]
        group_input, group_output = tree.nodes.new("NodeGroupInput"), tree.nodes.new("NodeGroupOutput")
        for k in range(width + 1):  # the geometry, then each group
            tree.links.new(group_input.outputs[k], group_output.inputs[k])
        # A row per group, in one buffer for all meshes (fresh memory costs a page fault per 4 KB).
        buffer = np.empty(max(len(bones) * len(data.vertices) for data, bones in present.items()), np.float32)
        read = {}
        for batch in _reader_batches(present):
            readers = []
            for data in batch:
                reader = bpy.data.objects.new("vertex group reader", data)
                readers.append(reader)
                for start in range(0, len(present[data]), width):
                    modifier = reader.modifiers.new("weights", "NODES")
                    modifier.node_group = tree
                    for (source, target), i in zip(
                        sockets, present[data][start : start + width], strict=False
                    ):
                        modifier[f"{source}_use_attribute"] = True
                        modifier[f"{source}_attribute_name"] = names[i]
                        modifier[f"{target}_attribute_name"] = f"vertex group reader {i}"
                scene.collection.objects.link(reader)
            with context.temp_override(scene=scene, view_layer=scene.view_layers[0]):
                depsgraph = bpy.context.evaluated_depsgraph_get()
            for data, reader in zip(batch, readers, strict=True):
                bones = present[data]
                evaluated = reader.evaluated_get(depsgraph).data
                vertex_count = len(data.vertices)
                columns = buffer[: len(bones) * vertex_count].reshape(len(bones), vertex_count)
                for row, i in zip(columns, bones, strict=True):
                    evaluated.attributes[f"vertex group reader {i}"].data.foreach_get("value", row)
                weighted = np.flatnonzero(columns > 0)  # by row (bone), then vertex
                rows, vertices = np.divmod(weighted, vertex_count)
                read[data] = vertices, np.asarray(bones, np.int64)[rows], columns.ravel()[weighted]
            bpy.data.batch_remove(readers)  # their evaluated groups go with them
            readers = []
    finally:
        bpy.data.batch_remove([*readers, scene, tree])  # one pass over the file's users
    return [read.get(obj.data, nothing) for obj in objs]


# Groups × vertices one evaluation turns into attributes at most (4 bytes each, held by Blender at once);
# a larger mesh is read alone.
_READ_BUDGET = 1 << 25


def _reader_batches(present: dict) -> list[list]:
    """The meshes of ``present`` (mesh → bones with a group) in batches of at most ``_READ_BUDGET``
    groups × vertices, one evaluation each."""
    batches, size = [[]], 0
    for data, bones in present.items():
        cost = len(bones) * len(data.vertices)
        if batches[-1] and size + cost > _READ_BUDGET:
            batches.append([])
            size = 0
        batches[-1].append(data)
        size += cost
    return batches


def strongest_bones(dense: np.ndarray, influences: int | None):
    """(joints, weights, unweighted vertex count) of (V, bones) weights: per vertex the ``influences``
    strongest bones (all it has when None), normalised; (None, None, 0) when nothing is weighted."""
    vertices, bones = np.nonzero(dense > 0)
    return _strongest(vertices, bones, dense[vertices, bones], *dense.shape, influences)


def _strongest(vertices, bones, weights, vertex_count: int, bone_count: int, influences: int | None):
    """``strongest_bones`` of the weights above 0 given as (vertex, bone, weight) entries."""
    if not len(vertices):
        return None, None, 0
    weights = np.asarray(weights, np.float32)
    per_vertex = np.bincount(vertices, minlength=vertex_count)
    count = min(influences or int(per_vertex.max()), bone_count)
    # Strongest first, equal weights in the order given (by bone): one stable sort on (vertex,
    # inverted weight bits), which order positive float32 like the weights.
    key = vertices.astype(np.int64) << 32 | (~weights.view(np.uint32)).astype(np.int64)
    order = np.argsort(key, kind="stable")
    rank = np.arange(len(order)) - np.repeat(np.cumsum(per_vertex) - per_vertex, per_vertex)
    kept, slot = order[rank < count], rank[rank < count]
    strongest = np.zeros((vertex_count, count), np.float32)
    joints = np.zeros((vertex_count, count), np.int32)
    strongest[vertices[kept], slot] = weights[kept]
    joints[vertices[kept], slot] = bones[kept]
    return _normalised(joints, strongest)


def _normalised(joints: np.ndarray, weights: np.ndarray):
    """(joints, weights, unweighted vertex count) with each vertex's weights summing to 1 (a bone left
    without weight: joint 0)."""
    totals = weights.sum(axis=1, keepdims=True)
    weights = np.where(totals > 0, weights / np.where(totals > 0, totals, 1), 0).astype(np.float32)
    return np.where(weights > 0, joints, 0), weights, int((totals[:, 0] <= 0).sum())


def grouped_skin(joints: np.ndarray, weights: np.ndarray, bone_count: int, influences: int | None):
    """``strongest_bones`` of the weights ``add_vertex_groups`` gives the vertex groups (of a bone
    named twice for a vertex, the larger weight): what the export reads back, without the groups.
    Row by row (a vertex names a few bones): two sorts along the rows, none over every weight."""
    joints = np.asarray(joints, np.int64)
    weights = np.asarray(weights, np.float32)
    used = (weights > 0) & (joints >= 0) & (joints < bone_count)
    if not used.any():
        return None, None, 0
    # Positive float32 bits order like the weights (at most 0x7F800000, infinity); flipped, the larger
    # weight sorts first.
    flipped = 0x7FFFFFFF - weights.view(np.uint32).astype(np.int64)
    unused = np.iinfo(np.int64).max  # sorts last
    # By bone, the larger weight first: of a bone named twice, the first entry stays.
    by_bone = _sorted_rows(np.where(used, joints << 32 | flipped, unused))
    used = by_bone != unused
    used[:, 1:] &= (by_bone[:, 1:] >> 32) != (by_bone[:, :-1] >> 32)
    # Then by weight, strongest first, equal weights by bone.
    ranked = _sorted_rows(np.where(used, (by_bone & 0xFFFFFFFF) << 32 | by_bone >> 32, unused))
    count = min(influences or int(used.sum(axis=1).max()), bone_count)
    kept = ranked[:, :count]
    present = kept != unused
    strongest = np.zeros((len(joints), count), np.float32)
    chosen = np.zeros((len(joints), count), np.int32)
    strongest[:, : kept.shape[1]] = (
        np.where(present, 0x7FFFFFFF - (kept >> 32), 0).astype(np.uint32).view(np.float32)
    )
    chosen[:, : kept.shape[1]] = np.where(present, kept & 0xFFFFFFFF, 0)
    return _normalised(chosen, strongest)


def _sorted_rows(keys: np.ndarray) -> np.ndarray:
    """Each row of ``keys`` in ascending order: as many passes as columns, each exchanging neighbouring
    columns out of order (odd-even transposition), column by column; for the few columns of a skin,
    several times faster than ``np.sort`` along the rows (a call per row)."""
    columns = list(np.ascontiguousarray(keys.T))
    width = len(columns)
    for p in range(width):
        for i in range(p % 2, width - 1, 2):
            low = np.minimum(columns[i], columns[i + 1])
            np.maximum(columns[i], columns[i + 1], out=columns[i + 1])
            columns[i] = low
    return np.stack(columns, axis=1) if columns else keys


def group_weights(joints: np.ndarray, weights: np.ndarray, bone_count: int) -> np.ndarray:
    """(V, bone_count) float32: the weights ``add_vertex_groups`` gives each vertex group, those
    ``vertex_group_weights`` reads back (of a bone named twice for a vertex, the larger weight)."""
    joints = np.asarray(joints, np.int64)
    weights = np.asarray(weights, np.float32)
    dense = np.zeros((joints.shape[0], bone_count), np.float32)
    vertex = np.repeat(np.arange(joints.shape[0]), joints.shape[1])
    joints, weights = joints.ravel(), weights.ravel()
    used = (weights > 0) & (joints >= 0) & (joints < bone_count)
    np.maximum.at(dense, (vertex[used], joints[used]), weights[used])
    return dense
