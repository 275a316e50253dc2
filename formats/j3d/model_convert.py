"""A BMD/BDL model → the neutral Scene: one skeleton, one mesh per shape, materials and images.

- Skeleton: the JNT1 joints with their INF1 parents and names; bones shown along the joints' X
  axis (``BONE_DISPLAY``); rest = the world matrices of the model's scaling rule, in the file's Y-up space (a BCK's joint values are parent-relative in
  that space, so the armature that BCK, BTK, BRK and BTP imports animate is this one); the axis
  conversion (``AXES``) goes onto the armature object (``Scene.extras["object_matrix"]``). Each
  bone's extras keep its JNT1 record (flags, scale compensation, the S/R/T as stored, bounds).
- Meshes: one per shape, named ``shape<index>``, in shape order. A vertex is a (position index,
  draw matrix) pair placed in the bind pose (``model_geometry``); normals (through the inverse
  transpose of the draw matrix, normalised) are per vertex where each vertex has one, else per
  corner; CLR0/CLR1 and every TEXn (V flipped) are per corner. Triangles turn from GX's clockwise to counter-clockwise. Skin: the draw matrix's
  joints and weights (rigid: one joint, weight 1).
- Materials and images: MAT3 and TEX1 through ``material_set`` (the same materials a BMT makes:
  ``materials`` approximates the TEV), each shape with the material INF1 gives it; every TEX1
  texture (what a BTP switches to), textures that share their data decoded once. UV and colour
  layers are named by ``materials.uv_layer_name`` / ``color_layer_name``, as the materials ask.

Mesh extras keep what a writer needs of the shape (matrix type, attribute descriptors, packet
count); scene extras the file's kind, tag, INF1 flags (scaling rule) and vertex formats (component
types and fixed-point shifts). The export keeps the whole file besides (``files.load_model``).
"""

from __future__ import annotations

import numpy as np

from ..errors import FormatError
from ..scene import Layer, Mesh, Scene, Skeleton, axis_matrix
from . import material_set, materials
from . import model_geometry as geometry
from .bmt import BMT
from .model import SCALING_RULES, Model

AXES = ("-Z", "Y")  # the default (forward, up): GameCube models are Y-up and face +Z
# Joints extend along their X axis (a child sits along its parent's X): Blender shows each bone's Y
# along the joint's X (rest @ BONE_DISPLAY), so bones reach their children.
BONE_DISPLAY = np.array(
    [[0.0, 1.0, 0.0, 0.0], [-1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]
)


def _skeleton(
    model: Model, graph: geometry.Graph, world: np.ndarray, name: str, deform: np.ndarray
) -> Skeleton:
    joints = model.jnt1.joints()
    extras = []
    for record in joints:
        extras.append(
            {
                "flags": int(record["flags"]),
                "billboard": int(record["flags"]) >> 4 & 0xF,
                "scale_compensate": int(record["scale_compensate"]),
                "scale": record["scale"].tolist(),
                "rotation": record["rotation"].tolist(),
                "translation": record["translation"].tolist(),
                "radius": float(record["radius"]),
                "bbox": record["bbox_min"].tolist() + record["bbox_max"].tolist(),
            }
        )
    return Skeleton(
        name,
        list(model.jnt1.names),
        graph.parents.astype(np.int32),
        world,
        deform=deform,
        bone_extras=extras,
        bone_display=BONE_DISPLAY.copy(),
        extras={
            "scaling_rule": SCALING_RULES[model.inf1.scaling_rule]
            if model.inf1.scaling_rule < 3
            else "unknown"
        },
    )


def normal_matrices(matrices: np.ndarray) -> np.ndarray:
    """Inverse transposes of the draw matrices' 3×3 (identity where singular): the cofactors over the
    determinant, in plain numpy (LAPACK's batched inverse wakes its threads for a few 3×3s)."""
    rows = np.asarray(matrices, np.float64)[:, :3, :3]
    cofactors = np.stack(
        [
            np.cross(rows[:, 1], rows[:, 2]),
            np.cross(rows[:, 2], rows[:, 0]),
            np.cross(rows[:, 0], rows[:, 1]),
        ],
        axis=1,
    )
    det = np.einsum("ni,ni->n", rows[:, 0], cofactors[:, 0])
    singular = np.abs(det) < 1e-12
    turned = cofactors / np.where(singular, 1.0, det)[:, None, None]
    return np.where(singular[:, None, None], np.eye(3), turned)


def _distinct_pairs(first: np.ndarray, second: np.ndarray, second_count: int):
    """The distinct (first, second) pairs in order of ``first * second_count + second`` and, per
    element, its pair's index: ``np.unique`` of those keys, by a stable sort (timsort follows the runs
    that display lists send in order, several times faster here than ``np.unique``'s quicksort).
    ``first`` are array indices (≥ 0, at most 16 bits in a file)."""
    if len(first):
        # When every first comes with one second (each position of every corpus shape has one draw
        # matrix), the pairs are the distinct firsts: counted in a table instead of sorted.
        partner = np.zeros(int(first.max()) + 1, np.int64)
        partner[first] = second
        if np.array_equal(np.take(partner, first), second):
            used = np.zeros(len(partner), bool)
            used[first] = True
            distinct = np.flatnonzero(used)
            rank = np.cumsum(used)
            rank -= 1
            return distinct, np.take(partner, distinct), np.take(rank, first)
    keys = first * second_count + second
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    new = np.empty(len(keys), bool)
    new[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    distinct = ordered[new]
    inverse = np.empty(len(keys), np.int64)
    inverse[order] = np.cumsum(new) - 1
    return distinct // second_count, distinct % second_count, inverse


def shape_mesh(
    model: Model,
    shape: int,
    arrays: dict[int, np.ndarray],
    skin: geometry.Skin,
    normal_matrices: np.ndarray,
    material: int,
    filename: str = "<bytes>",
) -> Mesh:
    shape_geometry = geometry.decode_shape(model, shape, filename)
    geometry.check_indices(shape_geometry, arrays, shape, filename, model.offsets.get(type(model.shp1), 0))
    if geometry.POS not in shape_geometry.indices:
        raise FormatError(
            filename, model.offsets.get(type(model.shp1), 0), f"SHP1 shape {shape} has no positions"
        )
    draw = shape_geometry.draw
    # A vertex is a distinct (position, draw matrix) pair.
    position_of, draw_of, inverse = _distinct_pairs(
        shape_geometry.indices[geometry.POS], draw, len(skin.matrices)
    )
    # np.take gathers rows several times faster than fancy indexing (x[index]).
    points = np.take(arrays[geometry.POS], position_of, axis=0).astype(np.float64)
    if points.shape[1] == 2:
        points = np.concatenate([points, np.zeros((len(points), 1))], axis=1)
    placed = np.take(skin.matrices[:, :3], draw_of, axis=0)  # the rows that place a point
    positions = np.einsum("nij,nj->ni", placed[:, :, :3], points) + placed[:, :, 3]
    # GX clockwise → counter-clockwise; taken whole rows (a fancy index on the columns leaves the
    # result in column order, which reshape would copy).
    corners = np.take(shape_geometry.triangles, [0, 2, 1], axis=1).reshape(-1)
    corner_vertices = np.take(inverse, corners)
    mesh = Mesh(
        f"shape{shape}",
        positions.astype(np.float32),
        corner_vertices.astype(np.int32).reshape(-1, 3),
        material_indices=np.zeros(len(corners) // 3, np.int32),
        materials=[material],
        skeleton=0,
        skin_joints=np.take(skin.joints, draw_of, axis=0),
        skin_weights=np.take(skin.weights, draw_of, axis=0),
    )
    normal_attribute = geometry.NBT if geometry.NBT in shape_geometry.indices else geometry.NRM
    if normal_attribute in shape_geometry.indices and geometry.NRM in arrays and len(corners):
        index = np.take(shape_geometry.indices[normal_attribute], corners)
        # Per vertex when every corner of each vertex sends the same normal (Blender sets those faster;
        # its draw matrix is the vertex's own): each vertex's from one of its corners, found without
        # sorting. A vertex in no triangle takes the (normal, draw matrix) pair of least index.
        per_vertex_index = np.full(len(positions), -1, np.int64)
        per_vertex_index[corner_vertices] = index
        per_vertex = np.array_equal(np.take(per_vertex_index, corner_vertices), index)
        if per_vertex:
            matrix = draw_of
            lonely = per_vertex_index < 0
            if lonely.any():
                least = np.argmin(index * len(skin.matrices) + draw[corners])
                per_vertex_index[lonely] = index[least]
                matrix = np.where(lonely, draw[corners[least]], draw_of)
            index = per_vertex_index
        else:
            matrix = np.take(draw, corners)
        raw = np.take(arrays[geometry.NRM], index, axis=0)[:, :3].astype(np.float64)
        turned = np.einsum("nij,nj->ni", np.take(normal_matrices, matrix, axis=0), raw)
        length = np.linalg.norm(turned, axis=1, keepdims=True)
        unit = (turned / np.where(length > 0, length, 1)).astype(np.float32)
        mesh.normals = Layer("normal", unit, "POINT" if per_vertex else "CORNER")
    for k, attribute in enumerate((geometry.CLR0, geometry.CLR1)):
        if attribute in shape_geometry.indices:
            colors = np.take(arrays[attribute], shape_geometry.indices[attribute][corners], axis=0)
            colors = colors.astype(np.float32) / 255
            mesh.color_layers.append(Layer(materials.color_layer_name(k), colors, "CORNER"))
    for k, attribute in enumerate(geometry.TEX):
        if attribute in shape_geometry.indices:
            uv = np.take(arrays[attribute], np.take(shape_geometry.indices[attribute], corners), axis=0)
            if uv.shape[1] == 1:  # U alone: V is 0
                uv = np.concatenate([uv, np.zeros_like(uv)], axis=1)
            np.subtract(1, uv[:, 1], out=uv[:, 1])  # a fresh array: V flipped in place
            mesh.uv_layers.append(Layer(materials.uv_layer_name(k), uv, "CORNER"))
    entry = model.shp1.shapes()[shape]
    mesh.extras = {
        "shape": shape,
        "matrix_type": int(entry["matrix_type"]),
        "descriptors": model.shp1.descriptor_list(shape, filename).tolist(),
        "packets": int(entry["packet_count"]),
        "primitives": {f"0x{k:02X}": v for k, v in sorted(shape_geometry.primitives.items())},
    }
    return mesh


def to_scene(
    model: Model, name: str = "", filename: str = "<bytes>", axis: np.ndarray | None = None
) -> Scene:
    """The model as a Scene; ``axis`` (file → Blender, default ``AXES``) goes onto the armature object."""
    axis = axis_matrix(*AXES) if axis is None else np.asarray(axis, np.float64)
    graph = geometry.read_graph(model, filename)
    world = geometry.world_matrices(model, graph.parents)
    skin = geometry.draw_skin(model, world, filename)
    arrays = geometry.arrays(model, filename)
    shading = material_set.bmt_to_scene(BMT([model.mat3, model.tex1]), name, filename)
    turns = normal_matrices(skin.matrices)
    meshes, warnings = [], []
    for s in range(len(model.shp1.remap)):
        try:
            meshes.append(shape_mesh(model, s, arrays, skin, turns, int(graph.shape_materials[s]), filename))
        except geometry.Unsupported as e:
            warnings.append(f"{name}: {e}: not imported")
    deform = np.zeros(len(world), bool)
    for mesh in meshes:
        deform[mesh.skin_joints[mesh.skin_weights > 0]] = True
    scene = Scene(
        name=name,
        skeletons=[_skeleton(model, graph, world, name or "J3D model", deform)],
        meshes=meshes,
        materials=shading.materials,
        images=shading.images,
        warnings=list(shading.warnings) + warnings,
        extras={
            "kind": model.kind.decode(),
            "tag": model.framing.tag,
            "scaling_rule": model.inf1.scaling_rule,
            "inf1_flags": model.inf1.flags,
            "vertex_formats": model.vtx1.formats[["attribute", "count", "type", "shift"]].tolist(),
            "object_matrix": axis.reshape(-1).tolist(),
        },
    )
    skipped = sum(
        v for m in meshes for k, v in m.extras["primitives"].items() if int(k, 16) >= geometry.LINES
    )
    if skipped:
        scene.warnings.append(f"{name}: {skipped} line and point primitives draw no faces and were left out")
    return scene
