"""The geometry digest a J3D model import leaves on each mesh (``model_export.GEOMETRY``) is the one the
export computes from the unedited mesh: the import takes it from the mesh as built
(``mesh.extract_built_geometry``, without Blender's triangulation), the export reads everything back
(``extract_mesh``, the skin from the vertex groups). Every corpus model, and generated models covering
what a shape can hold: normals per vertex, per corner or none, colours, several UV sets, triangles
Blender leaves out (all of a shape's: a mesh without faces), triangles of no area, rigid and weighted
skin."""

import bpy
import numpy as np
import pytest
import retro_models
from j3d_model_support import import_model, select
from retro_models.formats.j3d import files, model, model_build, model_export, model_write
from retro_models.operators import j3d_model
from support import corpus_files

MODELS = corpus_files("j3d*/*.bmd") + corpus_files("j3d*/*.bdl") + corpus_files("j3d*/SunshineMario.arc")


def _check_digests(context) -> int:
    """Every imported mesh's recorded digest against the export's reading of it; how many meshes."""
    checked = 0
    for armature in [o for o in bpy.data.objects if o.type == "ARMATURE"]:
        select(armature)
        scene = j3d_model.export_scene(context, "check.bmd", files.ModelExportOptions())
        for mesh in scene.meshes:
            assert mesh.extras[model_export.GEOMETRY] == model_export.mesh_digest(mesh), mesh.name
        checked += len(scene.meshes)
    return checked


@pytest.mark.corpus
@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name)
def test_every_corpus_models_digests_are_those_the_export_reads_back(empty_scene, path):
    # SunshineMario.arc: models with triangles of no area, whose normals Blender does not keep
    retro_models.import_file(bpy.context, str(path), import_animations=False)
    assert _check_digests(bpy.context) > 0


def _grid(columns: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions of a bumpy grid (Y up) and its triangles, counter-clockwise seen from above."""
    x, z = np.meshgrid(np.arange(columns, dtype=float), np.arange(rows, dtype=float))
    positions = np.stack([x, np.sin(x) * np.cos(z) * 0.3, z], -1).reshape(-1, 3)
    quads = [(r * columns + c, r * columns + c + 1, (r + 1) * columns + c + 1, (r + 1) * columns + c)
             for r in range(rows - 1) for c in range(columns - 1)]  # fmt: skip
    triangles = np.array([t for a, b, c, d in quads for t in ((a, d, c), (a, c, b))])
    return positions, triangles


def _shape(normals: str, colors: int, uvs: int, weighted: bool, flawed: bool) -> model_write.ShapeData:
    positions, triangles = _grid(5, 4)
    if flawed:  # a triangle that repeats a vertex (left out) and one of no area (two vertices at one place)
        positions = np.concatenate([positions, positions[[7]]])
        triangles = np.concatenate([triangles, [[0, 0, 1], [7, 20, 8]]])
    count, corners = len(positions), 3 * len(triangles)
    rng = np.random.default_rng(len(positions) + colors + uvs)
    if weighted:
        joints = np.tile([[0, 1]], (count, 1))
        first = np.round(np.linspace(1.0, 0.0, count), 2)
        weights = np.stack([first, 1 - first], 1)
    else:
        joints, weights = (np.arange(count) % 2)[:, None], np.ones((count, 1))
    unit = rng.normal(size=(count if normals == "vertex" else corners, 3))
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    return model_write.ShapeData(
        positions, triangles, joints, weights,
        normals=None if normals == "none" else unit,
        colors=[rng.random((corners, 4)) for _ in range(colors)],
        uvs=[rng.random((corners, 2)) * 2 - 0.5 for _ in range(uvs)],
    )  # fmt: skip


@pytest.mark.parametrize(
    ("normals", "colors", "uvs", "weighted", "flawed"),
    [
        ("vertex", 0, 1, False, False),
        ("corner", 2, 3, True, False),
        ("none", 1, 0, True, False),
        ("vertex", 1, 2, True, True),
        ("corner", 0, 8, False, True),
    ],
)
def test_a_generated_models_digests_are_those_the_export_reads_back(
    empty_scene, tmp_path, normals, colors, uvs, weighted, flawed
):
    joints = [model_build.Joint("root", -1), model_build.Joint("tip", 0, (2.0, 0.0, 0.0))]
    shapes = [
        _shape(normals, colors, uvs, weighted, flawed),
        _shape("vertex", 1, 1, not weighted, False),
    ]
    path = tmp_path / "generated.bmd"
    path.write_bytes(model.write(model_write.new_model(joints, shapes, ["first", "second"])))
    import_model(path)
    assert _check_digests(bpy.context) == 2


def test_a_shape_whose_triangles_all_repeat_a_vertex_imports_as_a_mesh_without_faces(empty_scene, tmp_path):
    """Blender holds none of its triangles: the mesh has no corners at all, and exports unedited as it was."""
    joints = [model_build.Joint("root", -1), model_build.Joint("tip", 0, (2.0, 0.0, 0.0))]
    points = model_write.ShapeData(
        np.eye(3), np.array([[0, 0, 1], [1, 2, 2]]), np.zeros((3, 1), int), np.ones((3, 1)), np.eye(3)
    )
    shapes = [points, _shape("vertex", 1, 1, False, False)]
    path = tmp_path / "points.bmd"
    path.write_bytes(model.write(model_write.new_model(joints, shapes, ["a"])))
    import_model(path)
    assert len(bpy.data.objects["shape0"].data.loops) == 0
    assert _check_digests(bpy.context) == 2
    out = tmp_path / "out.bmd"
    retro_models.export_file(bpy.context, str(out))
    assert out.read_bytes() == path.read_bytes()
