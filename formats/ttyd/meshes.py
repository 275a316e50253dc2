"""Shapes ⇄ meshes: geometry, corner layers and the group that places them.

The polygons are triangle fans (v0, vi, vi+1), flipped to counter-clockwise (the GameCube
treats clockwise as the front). Normals, UVs (V flipped) and vertex colours are CORNER
layers, since the file indexes each attribute separately. Every shape becomes a mesh
rigidly skinned to the bone of the group that draws it, its vertices placed in armature
space.

On export the kept tables take the scene's vertex values while the topology is unchanged
(``update_geometry``); otherwise every geometry table is rebuilt from the meshes, one
3-corner fan per triangle and one subshape per material (``rebuild_geometry``).
"""

from __future__ import annotations

import numpy as np

from ..scene import Layer, Mesh, Scene
from . import model as fmt
from .kept import raw_name, restore
from .materials import ALPHA_DISPLAY, CULL_NONE, new_sampler, shape_modes, slot_to_sampler
from .matrices import apply, inverse, invertible, normalize
from .model import Model, text
from .skeleton import (
    append_group,
    chain,
    drawing_group,
    freed_groups,
    scene_world,
    shape_matrix,
    shown_visibility,
)

INDEX_KEYS = ["position", "normal", "color"] + [f"texcoord.{j}" for j in range(fmt.TEXCOORD_ARRAYS)]


def positions_to_scene(matrix: np.ndarray, positions: np.ndarray) -> np.ndarray:
    return apply(matrix, positions).astype(np.float32)


def normals_to_scene(matrix: np.ndarray, normals: np.ndarray) -> np.ndarray:
    return normalize(np.asarray(normals, np.float64) @ _normal_matrix(matrix).T).astype(np.float32)


def _positions_to_file(unmatrix: np.ndarray):
    return lambda values: apply(unmatrix, values)


def _normals_to_file(matrix: np.ndarray):
    return lambda values: _to_local_normals(values, matrix)


def uvs_to_file(uv: np.ndarray) -> np.ndarray:
    """Blender (U, V) with V up → file (S, T) with T down."""
    uv = np.asarray(uv, np.float64)
    return np.stack([uv[:, 0], 1.0 - uv[:, 1]], axis=1)


def uvs_to_scene(texcoords: np.ndarray) -> np.ndarray:
    """File (S, T) with T down → Blender (U, V) with V up."""
    st = np.asarray(texcoords, np.float64)
    return np.stack([st[:, 0], 1.0 - st[:, 1]], axis=1).astype(np.float32)


def normal_frame(matrix: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """The matrix normals go through: the shape's, or the axis conversion alone when a zero scale
    collapses it (its normals have no direction then: the file's are shown and written back as they are)."""
    return matrix if invertible(matrix) else axis


def _normal_matrix(matrix: np.ndarray) -> np.ndarray:
    """Cofactor matrix (det · inverse transpose, signed): defined even for zero scales."""
    c0, c1, c2 = matrix[:3, 0], matrix[:3, 1], matrix[:3, 2]
    cofactor = np.stack([np.cross(c1, c2), np.cross(c2, c0), np.cross(c0, c1)], axis=1)
    return cofactor * (-1.0 if np.linalg.det(matrix[:3, :3]) < 0 else 1.0)


def shape_geometry(model: Model, s: int) -> dict:
    """Triangles of shape ``s`` and the pool index behind every corner.

    Returns 'triangles' (F, 3) local position indices, counter-clockwise; 'corners' {attribute:
    (3F,) local pool index, -1 where the subshape has no such attribute}; 'subshape' (F,) the
    subshape (0-based within the shape) of each triangle.
    """
    shape = model.shapes[s]
    first = int(shape["subshape_first"])
    pieces = []
    for d in range(int(shape["subshape_count"])):
        subshape = model.subshapes[first + d]
        corners = fmt.subshape_corner_indices(model, shape, subshape)
        start = int(subshape["polygon_first"])
        counts = model.polygons["count"][start : start + int(subshape["polygon_count"])]
        order = fmt.fan_triangles(counts)[:, [0, 2, 1]].reshape(-1)
        pieces.append((d, corners, order))
    keys = sorted({key for _, corners, _ in pieces for key in corners})
    per_corner = {
        key: np.concatenate([c[key][o] if key in c else np.full(len(o), -1, np.int64) for _, c, o in pieces])
        for key in keys
    }
    triangles = per_corner.get("position", np.zeros(0, np.int64)).reshape(-1, 3)
    subshape_of = np.concatenate(
        [np.full(len(o) // 3, d, np.int64) for d, _, o in pieces] + [np.zeros(0, np.int64)]
    )
    return {"triangles": triangles, "corners": per_corner, "subshape": subshape_of}


def scene_mesh(model, s, axis, world, parents, bone_of, material_of, visible) -> Mesh:
    """Shape ``s`` as a mesh in armature space, skinned to the bone of the group that draws it."""
    shape = model.shapes[s]
    g = drawing_group(model, s)
    matrix = shape_matrix(axis, world, g)
    first, count = int(shape["position_first"]), int(shape["position_count"])
    geometry = shape_geometry(model, s)
    corners = geometry["corners"]
    mesh = Mesh(
        name=text(shape["name"]),
        positions=positions_to_scene(matrix, model.positions[first : first + count]),
        triangles=geometry["triangles"].astype(np.int32),
        extras={"shape": s, "group": g, "name": bytes(shape["name"])},
    )
    if "normal" in corners:
        index = corners["normal"]
        pool = model.normals[int(shape["normal_first"]) :][np.maximum(index, 0)]
        normals = normals_to_scene(normal_frame(matrix, axis), pool) * (index >= 0)[:, None]
        mesh.normals = Layer("Normal", normals, "CORNER")
    if "color" in corners:
        index = corners["color"]
        pool = model.colors[int(shape["color_first"]) :][np.maximum(index, 0)]
        mesh.color_layers.append(Layer("Col", (pool / 255.0).astype(np.float32), "CORNER"))
    for j in range(fmt.TEXCOORD_ARRAYS):
        index = corners.get(f"texcoord.{j}")
        if index is None:
            continue
        pool = model.texcoords[int(shape["texcoord_ranges"][j, 0]) :][np.maximum(index, 0)]
        mesh.uv_layers.append(Layer(f"UV{j}", uvs_to_scene(pool) * (index >= 0)[:, None], "CORNER"))
    subshapes = range(int(shape["subshape_first"]), int(shape["subshape_first"] + shape["subshape_count"]))
    mesh.materials = [material_of[d] for d in subshapes]
    mesh.material_indices = geometry["subshape"].astype(np.int32)
    if g >= 0:
        mesh.skeleton = 0
        mesh.skin_joints = np.full((count, 1), bone_of[g], np.int32)
        mesh.skin_weights = np.ones((count, 1), np.float32)
        mesh.hidden = not all(visible[model.groups["visibility"][c]] for c in chain(parents, g))
    return mesh


def _corner_values(mesh: Mesh, layer: Layer | None) -> np.ndarray | None:
    if layer is None:
        return None
    data = np.asarray(layer.data, np.float64)
    return data if layer.domain == "CORNER" else data[np.asarray(mesh.triangles).reshape(-1)]


def _uv_layer(mesh: Mesh, j: int) -> Layer | None:
    named = [layer for layer in mesh.uv_layers if layer.name == f"UV{j}"]
    if named:
        return named[0]
    return (
        mesh.uv_layers[j]
        if j < len(mesh.uv_layers) and not any(layer.name.startswith("UV") for layer in mesh.uv_layers)
        else None
    )


def _to_local_normals(values: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    return normalize(values @ matrix[:3, :3])


def _pool_entries(index: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pool entries the corners use and the scene value of the first corner using each."""
    valid = index >= 0
    entries, at = np.unique(index[valid], return_index=True)
    return entries, np.asarray(values)[valid][at]


def update_geometry(model: Model, scene: Scene, axis: np.ndarray, world: np.ndarray) -> bool:
    """Write the scene's vertex values into the kept tables; False when the topology changed."""
    shapes = [m.extras.get("shape") for m in scene.meshes]
    if len(shapes) != len(model.shapes) or sorted(s for s in shapes if s is not None) != list(
        range(len(shapes))
    ):
        return False
    checked = []
    for mesh, s in zip(scene.meshes, shapes, strict=True):
        geometry = shape_geometry(model, s)
        if not _same_topology(model, scene, mesh, s, geometry):
            return False
        checked.append((mesh, geometry))
    for mesh, geometry in checked:
        _update_shape(model, mesh, geometry, shape_matrix(axis, world, mesh.extras["group"]))
    return True


def _same_topology(model: Model, scene: Scene, mesh: Mesh, s: int, geometry: dict) -> bool:
    """Whether a mesh still has shape ``s``'s vertices, triangles, subshapes and group."""
    shape = model.shapes[s]
    first = int(shape["subshape_first"])
    materials = [scene.materials[m].extras.get("subshape") for m in mesh.materials]
    indices = (
        np.zeros(len(mesh.triangles), np.int64) if mesh.material_indices is None else mesh.material_indices
    )
    return (
        len(mesh.positions) == shape["position_count"]
        and np.array_equal(np.asarray(mesh.triangles), geometry["triangles"])
        and np.array_equal(indices, geometry["subshape"])
        and materials == list(range(first, first + int(shape["subshape_count"])))
        and mesh.extras.get("group") == drawing_group(model, s)
    )


def _update_shape(model: Model, mesh: Mesh, geometry: dict, matrix: np.ndarray) -> None:
    """The mesh's positions, normals, colours, UVs and name into its shape's pool entries."""
    s = mesh.extras["shape"]
    shape = model.shapes[s]
    first, count = int(shape["position_first"]), int(shape["position_count"])
    original = model.positions[first : first + count]
    model.positions[first : first + count] = restore(
        original, positions_to_scene(matrix, original), mesh.positions, _positions_to_file(inverse(matrix))
    )
    corners = geometry["corners"]
    normals = _corner_values(mesh, mesh.normals)
    # Under a collapsed or non-finite matrix Blender cannot hold the normals of the flattened faces: the
    # kept ones stay.
    if normals is not None and "normal" in corners and invertible(matrix):
        entries, values = _pool_entries(corners["normal"], normals)
        at = int(shape["normal_first"]) + entries
        old = model.normals[at]
        model.normals[at] = restore(old, normals_to_scene(matrix, old), values, _normals_to_file(matrix))
    if mesh.color_layers and "color" in corners:
        entries, values = _pool_entries(corners["color"], _corner_values(mesh, mesh.color_layers[0]))
        model.colors[int(shape["color_first"]) + entries] = _colors_to_file(values)
    for j in range(fmt.TEXCOORD_ARRAYS):
        uv = _corner_values(mesh, _uv_layer(mesh, j))
        if uv is None or f"texcoord.{j}" not in corners:
            continue
        entries, values = _pool_entries(corners[f"texcoord.{j}"], uv)
        at = int(shape["texcoord_ranges"][j, 0]) + entries
        old = model.texcoords[at]
        model.texcoords[at] = restore(old, uvs_to_scene(old), values, uvs_to_file)
    model.shapes["name"][s] = raw_name(mesh.name, mesh.extras)


def _colors_to_file(values: np.ndarray) -> np.ndarray:
    return np.round(np.clip(values, 0, 1) * 255).astype(np.uint8)


def _dominant_bone(mesh: Mesh) -> int | None:
    if mesh.skin_joints is None or not len(mesh.skin_joints):
        return None
    joints = np.asarray(mesh.skin_joints)[:, 0].astype(np.int64)
    return int(np.bincount(joints).argmax())


def _unique_rows(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rows, inverse = np.unique(values, axis=0, return_inverse=True)
    return rows, inverse.reshape(-1)


class _Tables:
    """The geometry tables being rebuilt, mesh by mesh."""

    def __init__(self):
        self.pools = {"positions": [], "normals": [], "colors": [], "texcoords": []}
        self.pool_sizes = dict.fromkeys(self.pools, 0)
        self.indices = {key: [] for key in INDEX_KEYS}
        self.index_sizes = dict.fromkeys(self.indices, 0)
        self.polygons, self.subshapes, self.shapes = [], [], []
        self.polygon_count = 0
        self.slot_samplers = {}  # (material, slot) → sampler

    def add_pool(self, pool: str, rows: np.ndarray) -> tuple[int, int]:
        """Append rows to a vertex pool; returns their (first, count)."""
        first = self.pool_sizes[pool]
        self.pools[pool].append(rows)
        self.pool_sizes[pool] += len(rows)
        return first, len(rows)

    def add_polygons(self, subshape: np.void, per_corner: dict, triangles: np.ndarray) -> None:
        """One 3-corner fan per triangle of the subshape, and its corners' index arrays."""
        subshape["polygon_first"], subshape["polygon_count"] = self.polygon_count, len(triangles)
        self.polygons.append(np.stack([np.arange(len(triangles)) * 3, np.full(len(triangles), 3)], axis=1))
        self.polygon_count += len(triangles)
        corners = (triangles[:, None] * 3 + np.arange(3)).reshape(-1)
        for key in INDEX_KEYS:
            if key not in per_corner:
                continue
            if key.startswith("texcoord"):
                subshape["texcoord_bases"][int(key.split(".")[1])] = self.index_sizes[key]
            else:
                subshape[f"{key}_base"] = self.index_sizes[key]
            self.indices[key].append(per_corner[key][corners])
            self.index_sizes[key] += len(corners)

    def store(self, model: Model) -> None:
        """Replace the model's geometry tables with these."""
        model.positions = np.concatenate(self.pools["positions"] + [np.zeros((0, 3), np.float32)])
        model.normals = np.concatenate(self.pools["normals"] + [np.zeros((0, 3), np.float32)])
        model.colors = np.concatenate(self.pools["colors"] + [np.zeros((0, 4), np.uint8)])
        model.texcoords = np.concatenate(self.pools["texcoords"] + [np.zeros((0, 2), np.float32)])
        joined = {
            key: np.concatenate(parts + [np.zeros(0, np.int64)]).astype(np.uint32)
            for key, parts in self.indices.items()
        }
        model.position_indices = joined["position"]
        model.normal_indices = joined["normal"]
        model.color_indices = joined["color"]
        model.texcoord_indices = [joined[f"texcoord.{j}"] for j in range(fmt.TEXCOORD_ARRAYS)]
        model.polygons = np.zeros(self.polygon_count, fmt.POLYGON_DTYPE)
        if self.polygons:
            rows = np.concatenate(self.polygons)
            model.polygons["first"], model.polygons["count"] = rows[:, 0], rows[:, 1]
        model.subshapes = np.array(self.subshapes, fmt.SUBSHAPE_DTYPE)
        model.shapes = np.array(self.shapes, fmt.SHAPE_DTYPE)


def rebuild_geometry(model: Model, scene: Scene, axis: np.ndarray, group_of_bone: np.ndarray) -> dict:
    """Every geometry table afresh from the meshes: one 3-corner fan per triangle, one subshape per material.

    Returns (material, slot) → sampler."""
    old_subshapes, old_shapes = model.subshapes, model.shapes
    tables = _Tables()
    if not len(model.groups) and scene.meshes:
        append_group(model, "root", -1, visibility=shown_visibility(model))
    model.groups["shape"] = -1
    for i, mesh in enumerate(scene.meshes):
        g = _mesh_group(model, mesh, group_of_bone)
        model.groups["shape"][g] = i
        parents = fmt.group_parents(model.groups)
        freed = freed_groups(model, scene.skeletons[0] if scene.skeletons else None, group_of_bone)
        matrix = shape_matrix(axis, scene_world(model, parents, freed), g)
        shape = np.zeros(1, fmt.SHAPE_DTYPE)[0]
        shape["name"] = raw_name(mesh.name, mesh.extras)
        per_corner = _add_vertices(tables, shape, mesh, matrix, normal_frame(matrix, axis))
        materials = mesh.materials or [None]
        shape["subshape_first"], shape["subshape_count"] = len(tables.subshapes), len(materials)
        shape["display_mode"], shape["cull_mode"] = _rebuilt_modes(scene, materials[0], old_shapes)
        _add_subshapes(model, scene, tables, mesh, materials, per_corner, old_subshapes)
        tables.shapes.append(shape)
    tables.store(model)
    return tables.slot_samplers


def _mesh_group(model: Model, mesh: Mesh, group_of_bone: np.ndarray) -> int:
    """The group to draw a mesh: its dominant bone's (the root's without one), or a new group below
    that one when it draws another mesh already."""
    bone = _dominant_bone(mesh)
    g = int(group_of_bone[bone]) if bone is not None and bone < len(group_of_bone) else len(model.groups) - 1
    if model.groups["shape"][g] >= 0:
        g = append_group(model, mesh.name, g, int(model.groups["visibility"][g]))
    return g


def _add_vertices(tables: _Tables, shape: np.void, mesh: Mesh, matrix: np.ndarray, frame: np.ndarray) -> dict:
    """The mesh's vertex values into the pools (each distinct value once); returns the pool index of
    every corner per attribute, in the file's winding. ``frame``: the matrix of its normals."""
    local = apply(inverse(matrix), mesh.positions).astype(np.float32)
    shape["position_first"], shape["position_count"] = tables.add_pool("positions", local)
    triangles = np.asarray(mesh.triangles, np.int64)[:, [0, 2, 1]]  # back to the file's winding
    file_order = (np.arange(len(triangles) * 3).reshape(-1, 3)[:, [0, 2, 1]]).reshape(-1)
    per_corner = {"position": triangles.reshape(-1)}
    normals = _corner_values(mesh, mesh.normals)
    if normals is not None:
        rows, per_corner["normal"] = _unique_rows(
            _to_local_normals(normals[file_order], frame).astype(np.float32)
        )
        shape["normal_first"], shape["normal_count"] = tables.add_pool("normals", rows)
    if mesh.color_layers:
        colors = _colors_to_file(_corner_values(mesh, mesh.color_layers[0]))
        rows, per_corner["color"] = _unique_rows(colors[file_order])
        shape["color_first"], shape["color_count"] = tables.add_pool("colors", rows)
    for j in range(fmt.TEXCOORD_ARRAYS):
        uv = _corner_values(mesh, _uv_layer(mesh, j))
        if uv is None:
            continue
        rows, per_corner[f"texcoord.{j}"] = _unique_rows(uvs_to_file(uv).astype(np.float32)[file_order])
        shape["texcoord_ranges"][j] = tables.add_pool("texcoords", rows)
    return per_corner


def _rebuilt_modes(scene: Scene, material_index: int | None, old_shapes: np.ndarray) -> tuple[int, int]:
    """Display and cull modes of a rebuilt shape from its first material and the shape it came from."""
    material = scene.materials[material_index] if material_index is not None else None
    kept = material.extras.get("shape") if material is not None else None
    if kept is not None and kept < len(old_shapes):
        display, cull = int(old_shapes["display_mode"][kept]), int(old_shapes["cull_mode"][kept])
    else:
        display, cull = ALPHA_DISPLAY["OPAQUE"], CULL_NONE
    return (display, cull) if material is None else shape_modes(material, display, cull)


def _add_subshapes(model, scene, tables, mesh, materials, per_corner, old_subshapes) -> None:
    """One subshape per material of the mesh (the kept record when there is one), samplers for its slots."""
    material_indices = (
        np.zeros(len(mesh.triangles), np.int64)
        if mesh.material_indices is None
        else np.asarray(mesh.material_indices)
    )
    for m, material_index in enumerate(materials):
        material = scene.materials[material_index] if material_index is not None else None
        subshape = np.zeros(1, fmt.SUBSHAPE_DTYPE)[0]
        kept = material.extras.get("subshape") if material is not None else None
        if kept is not None and kept < len(old_subshapes):
            subshape = old_subshapes[kept].copy()
        subshape["samplers"] = -1
        slots = material.textures[:8] if material is not None else []
        subshape["texture_count"] = len(slots)
        for j, slot in enumerate(slots):
            sampler = slot.extras.get("sampler")
            if sampler is not None and sampler < len(model.samplers):
                slot_to_sampler(model, scene, slot, sampler)
            else:
                sampler = new_sampler(model, scene, slot)
            subshape["samplers"][j] = sampler
            tables.slot_samplers[(material_index, j)] = sampler
        tables.add_polygons(subshape, per_corner, np.flatnonzero(material_indices == m))
        tables.subshapes.append(subshape)
