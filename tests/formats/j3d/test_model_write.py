"""The J3D model writer (``model_write``): shapes re-encoded from mesh arrays, added and removed,
models made from nothing; every result re-imported and checked by the independent structural
checker (``structure.py``)."""

from functools import cache

import j3d_model_fixtures
import numpy as np
import pytest
import structure
import support
from retro_models.formats import archives
from retro_models.formats.errors import ExportError
from retro_models.formats.j3d import model, model_build, model_convert, model_geometry, model_write, strips

CORPUS_FILES = (
    support.corpus_files("j3d*/*.bmd")
    + support.corpus_files("j3d*/*.bdl")
    + support.corpus_files("j3d-models/*.arc")
)


@cache
def corpus_models() -> dict[str, bytes]:
    """Every corpus model, the ones inside archives too (named archive/member)."""
    out = {}
    for path in CORPUS_FILES:
        data = path.read_bytes()
        if path.suffix != ".arc":
            out[path.name] = data
            continue
        for member in archives.read_archive(data, path.name).members():
            if member.data[:4] == b"J3D2":
                out[f"{path.name}/{member.path}"] = member.data
    return out


def corpus_names() -> list[str]:
    return sorted(corpus_models()) if CORPUS_FILES else []


def scene_of(data: bytes):
    return model_convert.to_scene(model.read(data))


def rewritten(m: model.Model, *args, **kwargs) -> bytes:
    """replace_shapes, written, with the structural checker's approval."""
    data = model.write(model_write.replace_shapes(m, *args, **kwargs))
    assert structure.problems(data) == []
    return data


def faces(mesh) -> tuple[np.ndarray, np.ndarray]:
    """Triangles each rotated to start at its smallest vertex, sorted; and the corners in that order."""
    t = mesh.triangles.astype(np.int64)
    rotation = (np.argmin(t, axis=1)[:, None] + np.arange(3)) % 3
    rows = np.arange(len(t))[:, None]
    canonical, corners = t[rows, rotation], rows * 3 + rotation
    order = np.lexsort(canonical.T[::-1])
    return canonical[order], corners[order].reshape(-1)


def assert_same_mesh(a, b, tolerance=1e-5):
    """Same vertices in the same order, same faces (any order, any rotation), same corner data."""
    scale = max(1.0, float(np.abs(a.positions).max()))
    np.testing.assert_allclose(a.positions, b.positions, atol=tolerance * scale)
    np.testing.assert_array_equal(a.skin_joints, b.skin_joints)
    np.testing.assert_allclose(a.skin_weights, b.skin_weights, atol=1e-6)
    (fa, ca), (fb, cb) = faces(a), faces(b)
    np.testing.assert_array_equal(fa, fb)
    assert (a.normals is None) == (b.normals is None)
    if a.normals is not None:
        na = a.normals.data if a.normals.domain == "POINT" else a.normals.data[ca]
        nb = b.normals.data if b.normals.domain == "POINT" else b.normals.data[cb]
        if a.normals.domain != b.normals.domain:  # one of them per vertex: compare per corner
            na = a.normals.data[a.triangles.reshape(-1)][ca] if a.normals.domain == "POINT" else na
            nb = b.normals.data[b.triangles.reshape(-1)][cb] if b.normals.domain == "POINT" else nb
        np.testing.assert_allclose(na, nb, atol=tolerance)
    assert [x.name for x in a.uv_layers + a.color_layers] == [x.name for x in b.uv_layers + b.color_layers]
    for x, y in zip(a.uv_layers + a.color_layers, b.uv_layers + b.color_layers, strict=True):
        np.testing.assert_allclose(x.data[ca], y.data[cb], atol=tolerance)


def shape_bytes(m: model.Model, s: int) -> tuple:
    """What a shape sends: its descriptor list, its display lists' bytes, its matrix slots."""
    shp1, entry = m.shp1, m.shp1.shapes()[s]
    first, count = int(entry["first_packet"]), int(entry["packet_count"])
    lists = b"".join(shp1.lists[o : o + n] for n, o in shp1.packets[first : first + count].tolist())
    groups = shp1.groups[int(entry["first_group"]) : int(entry["first_group"]) + count]
    slots = [shp1.slots[g : g + n].tolist() for g, n in zip(groups["first"], groups["count"], strict=True)]
    return shp1.descriptor_list(s).tobytes(), lists, slots, groups["current"].tolist()


# -- the corpus -----------------------------------------------------------------------------------


@pytest.mark.corpus
@pytest.mark.parametrize("name", corpus_names())
def test_corpus_models_pass_the_structural_checker(name):
    assert structure.problems(corpus_models()[name]) == []


@pytest.mark.corpus
@pytest.mark.parametrize("name", corpus_names())
def test_every_corpus_shape_re_encoded_from_its_import_reimports_the_same(name):
    data = corpus_models()[name]
    m = model.read(data, name)
    scene = model_convert.to_scene(m)
    out = rewritten(m, {s: model_write.shape_data(mesh) for s, mesh in enumerate(scene.meshes)})
    again = model_convert.to_scene(model.read(out))
    for a, b in zip(scene.meshes, again.meshes, strict=True):
        assert_same_mesh(a, b)
    assert again.skeletons[0].bone_names == scene.skeletons[0].bone_names
    # nothing new was needed: the draw matrices and envelopes are the file's own
    new = model.read(out)
    for section in ("drw1", "evp1", "jnt1", "mat3", "tex1"):
        assert model.WRITERS[type(getattr(m, section))](getattr(new, section)) == model.WRITERS[
            type(getattr(m, section))
        ](getattr(m, section))
    if m.raw(b"MDL3") is not None:
        assert new.raw(b"MDL3").data == m.raw(b"MDL3").data


@pytest.mark.corpus
@pytest.mark.parametrize("name", corpus_names())
def test_re_encoding_one_shape_keeps_every_other_shape_as_it_was(name):
    m = model.read(corpus_models()[name], name)
    scene = model_convert.to_scene(m)
    edited = len(scene.meshes) // 2
    new = model.read(rewritten(m, {edited: model_write.shape_data(scene.meshes[edited])}))
    for s in range(len(scene.meshes)):
        if s != edited:
            assert shape_bytes(new, s) == shape_bytes(m, s)
    assert_same_mesh(scene.meshes[edited], model_convert.to_scene(new).meshes[edited])


@pytest.mark.corpus
def test_the_stripper_sends_about_as_many_vertices_as_nintendos_and_half_of_triangle_lists():
    original = stripped = listed = 0
    for data in corpus_models().values():
        m = model.read(data)
        for s in range(len(m.shp1.remap)):
            g = model_geometry.decode_shape(m, s)
            columns = np.stack([g.draw] + [g.indices[a] for a in sorted(g.indices)], axis=1)
            _, vertex = np.unique(columns, axis=0, return_inverse=True)
            triangles = vertex.reshape(-1)[g.triangles]
            primitives = strips.strip(triangles)
            assert_draws(primitives, triangles)
            original += len(g.draw)
            stripped += sum(len(v) for _, v in primitives)
            listed += triangles.size
    assert stripped < 1.05 * original
    assert stripped < 0.55 * listed


def assert_draws(primitives, triangles):
    """The primitives expand (GX order) to exactly ``triangles``, each once, same winding."""

    def canonical(t):
        t = np.asarray(t)
        rotation = (np.argmin(t, axis=1)[:, None] + np.arange(3)) % 3
        c = t[np.arange(len(t))[:, None], rotation]
        return c[np.lexsort(c.T[::-1])]

    drawn = np.concatenate([v[model_geometry._pattern(kind, len(v))] for kind, v in primitives])
    np.testing.assert_array_equal(canonical(drawn), canonical(triangles))
    assert all(len(v) <= 0xFFFF for _, v in primitives)


# -- edits on the generated model -------------------------------------------------------------------


def generated():
    m, _ = j3d_model_fixtures.generated()
    return m, model_convert.to_scene(m)


def test_identity_on_the_generated_model_and_the_packets_it_makes():
    m, scene = generated()
    out = model.read(rewritten(m, {s: model_write.shape_data(x) for s, x in enumerate(scene.meshes)}))
    for a, b in zip(scene.meshes, model_convert.to_scene(out).meshes, strict=True):
        assert_same_mesh(a, b)
    shapes = out.shp1.shapes()
    assert shapes["matrix_type"].tolist() == [0, 3]  # shape 1 mixes five draw matrices
    assert out.inf1.packet_count == int(shapes["packet_count"].sum())


def test_moved_added_and_deleted_vertices_and_faces():
    m, scene = generated()
    data = model_write.shape_data(scene.meshes[0])
    data.positions = data.positions.copy()
    data.positions[0] += (0.25, -0.5, 3.0)  # moved
    # a new vertex and a face using it; the last face deleted
    n = len(data.positions)
    data.positions = np.concatenate([data.positions, data.positions[:1] + (0, 1, 0)])
    data.joints = np.concatenate([data.joints, data.joints[:1]])
    data.weights = np.concatenate([data.weights, data.weights[:1]])
    data.triangles = np.concatenate([data.triangles[:-1], [[0, 1, n]]])
    kept = np.concatenate(
        [np.arange(3 * (len(data.triangles) - 1)), np.arange(3)]
    )  # corners of the new face copied
    data.uvs[0] = data.uvs[0][kept]
    data.normals = (
        data.normals if len(data.normals) == n + 1 else np.concatenate([data.normals, data.normals[:1]])
    )
    out = model.read(rewritten(m, {0: data}))
    got = model_write.shape_data(model_convert.to_scene(out).meshes[0])
    assert_same_corners(data, got)
    assert out.inf1.vertex_count == 14  # the moved and the new position appended
    # bounds: joint 1 (shape 0's) grows to hold the moved vertex in its own space; the others are kept
    before, after = m.jnt1.joints(), out.jnt1.joints()
    assert after["radius"][1] != before["radius"][1] and after["bbox_max"][1][0] > 2.9
    assert after[[0, 2]].tobytes() == before[[0, 2]].tobytes()


def corner_table(d: model_write.ShapeData, joints: int) -> np.ndarray:
    """Per triangle, its corners' position, normal, UVs and dense skin weights, rotated to start at the
    lexicographically smallest corner, triangles sorted: compares meshes whatever their vertex order."""
    t = np.asarray(d.triangles)
    corners = t.reshape(-1)
    dense = np.zeros((len(d.positions), joints))
    np.add.at(dense, (np.arange(len(d.positions))[:, None].repeat(d.joints.shape[1], 1), d.joints), d.weights)
    parts = [np.asarray(d.positions)[corners], dense[corners]]
    if d.normals is not None:
        normals = np.asarray(d.normals)
        parts.append(normals[corners] if len(normals) == len(d.positions) else normals)
    parts += [np.asarray(x) for x in d.uvs + d.colors if x is not None]
    rows = np.concatenate(parts, axis=1).reshape(len(t), 3, -1)
    keys = np.round(rows[:, :, :3], 3)
    first = np.array([min(range(3), key=lambda k, r=r: tuple(r[k])) for r in keys])
    rows = rows[np.arange(len(t))[:, None], (first[:, None] + np.arange(3)) % 3].reshape(len(t), -1)
    return rows[np.lexsort(np.round(rows, 3).T[::-1])]


def assert_same_corners(expected: model_write.ShapeData, got: model_write.ShapeData, joints=3, atol=1e-4):
    np.testing.assert_allclose(corner_table(got, joints), corner_table(expected, joints), atol=atol)


def test_a_rigid_vertex_becomes_weighted_and_back():
    m, scene = generated()
    data = model_write.shape_data(scene.meshes[0])
    original = model_write.shape_data(scene.meshes[0])
    data.joints = np.zeros((len(data.positions), 2), np.int64)
    data.weights = np.zeros((len(data.positions), 2))
    data.joints[:, 0], data.weights[:, 0] = 1, 1.0
    data.joints[3], data.weights[3] = (0, 2), (0.3, 0.7)  # a new envelope
    envelopes = len(m.evp1.counts)
    weighted = model.read(rewritten(m, {0: data}))
    assert len(weighted.evp1.counts) == envelopes + 1
    assert model.write(weighted) and list(weighted.drw1.kinds).count(1) == 2 * (envelopes + 1)
    got = model_write.shape_data(model_convert.to_scene(weighted).meshes[0])
    assert_same_corners(data, got)
    # shape 1 keeps its draw matrices through the renumbered DRW1
    assert_same_mesh(scene.meshes[1], model_convert.to_scene(weighted).meshes[1])
    back = model.read(rewritten(weighted, {0: original}))
    assert_same_corners(original, model_write.shape_data(model_convert.to_scene(back).meshes[0]))


def test_changed_normals_uvs_and_colours():
    m, scene = generated()
    data = model_write.shape_data(scene.meshes[1])
    corners = 3 * len(data.triangles)
    tilt = np.array([0.6, 0.0, 0.8])
    data.normals = np.tile(tilt, (corners, 1))  # per corner now
    data.uvs[0] = data.uvs[0] * 2 + 0.125
    data.uvs[1] = data.uvs[0][:, ::-1]  # a second UV layer the model had no array for
    data.colors[0] = np.tile([1.0, 0.5, 0.0, 0.25], (corners, 1))  # colours, new too
    out = model.read(rewritten(m, {1: data}))
    got = model_write.shape_data(model_convert.to_scene(out).meshes[1])
    assert_same_corners(data, got, atol=2e-3)
    assert out.vtx1.format(14) is not None and out.vtx1.format(11) is not None


def test_an_added_and_a_removed_shape():
    m, scene = generated()
    extra = model_write.shape_data(scene.meshes[0])
    extra.positions = extra.positions + (0, 0, 5)
    extra.material = 1
    out = model.read(rewritten(m, {}, added=[extra], removed={0}))
    again = model_convert.to_scene(out)
    assert len(again.meshes) == 2
    assert_same_mesh(scene.meshes[1], again.meshes[0])
    assert_same_corners(extra, model_write.shape_data(again.meshes[1]))
    graph = model_geometry.read_graph(out)
    assert graph.shape_materials.tolist() == [1, 1]
    assert out.inf1.packet_count == int(out.shp1.shapes()["packet_count"].sum())


def test_a_shape_moved_to_another_material():
    m, scene = generated()
    data = model_write.shape_data(scene.meshes[0])
    data.material = 1
    out = model.read(rewritten(m, {0: data}))
    assert model_geometry.read_graph(out).shape_materials.tolist() == [1, 1]


def test_a_value_a_fixed_point_array_cannot_hold_turns_it_into_floats():
    m, scene = generated()
    formats = m.vtx1.formats.copy()
    formats["type"][0], formats["shift"][0] = 3, 8  # positions as s16 / 256: at most 128 units
    raw = (model_geometry.decode_array(m, 9)[: m.inf1.vertex_count] * 256).astype(">i2")
    m.vtx1.formats, m.vtx1.arrays[9] = formats, raw.tobytes()
    data = model_write.shape_data(model_convert.to_scene(m).meshes[0])
    data.positions = data.positions.copy()
    data.positions[0] = (500.0, 0, 0)
    out = model.read(rewritten(m, {0: data}))
    assert out.vtx1.format(9)["type"] == 4
    np.testing.assert_array_equal(
        model_geometry.decode_array(out, 9)[: len(raw)], raw.astype(np.float32) / 256
    )
    assert_same_corners(data, model_write.shape_data(model_convert.to_scene(out).meshes[0]))


def test_a_model_from_scratch():
    joints = [model_build.Joint("root", -1), model_build.Joint("arm", 0, (0.0, 2.0, 0.0))]
    grid = np.stack(np.meshgrid(np.arange(5.0), np.arange(5.0)), -1).reshape(-1, 2)
    positions = np.concatenate([grid, np.zeros((25, 1))], axis=1)
    quads = [(r * 5 + c, r * 5 + c + 1, r * 5 + c + 6, r * 5 + c + 5) for r in range(4) for c in range(4)]
    triangles = np.array([(a, b, c) for a, b, c, d in quads] + [(a, c, d) for a, b, c, d in quads])
    joints_of = np.stack([np.zeros(25, int), np.ones(25, int)], axis=1)
    weights = np.stack([1 - grid[:, 1] / 4, grid[:, 1] / 4], axis=1)  # rigid at the ends, blended between
    uvs = (positions[triangles.reshape(-1), :2] / 4).astype(np.float32)
    shape = model_write.ShapeData(
        positions, triangles, joints_of, weights, np.tile([0, 0, 1.0], (25, 1)), uvs=[uvs] + [None] * 7
    )
    image = ("checker", (np.indices((8, 8)).sum(0) % 2 * 255).astype(np.uint8))
    built = model_write.new_model(joints, [shape], ["cloth"], [image])
    data = model.write(built)
    assert structure.problems(data) == []
    scene = model_convert.to_scene(model.read(data))
    assert scene.skeletons[0].bone_names == ["root", "arm"]
    assert_same_corners(shape, model_write.shape_data(scene.meshes[0]), joints=2)
    assert scene.images[0].pixels is not None
    jnt1 = model.read(data).jnt1.joints()
    assert jnt1["radius"][0] > 0 and (jnt1["bbox_max"][1] >= jnt1["bbox_min"][1]).all()


# -- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: setattr(d, "joints", np.full_like(d.joints, 7)), "joint 7"),
        (lambda d: setattr(d, "triangles", np.zeros((0, 3), int)), "no faces"),
        (lambda d: setattr(d, "material", 9), "material 9"),
        (lambda d: setattr(d, "weights", np.zeros_like(d.weights)), "no joint weight"),
    ],
)
def test_data_the_format_cannot_hold_is_refused_naming_the_shape(edit, message):
    m, scene = generated()
    data = model_write.shape_data(scene.meshes[0])
    edit(data)
    with pytest.raises(ExportError, match=message) as caught:
        model_write.replace_shapes(m, {0: data}, filename="generated.bmd")
    assert "shape0" in str(caught.value)


def test_a_new_bdl_from_scratch_is_refused():
    with pytest.raises(ExportError, match="BMD only"):
        model_write.new_model([model_build.Joint("root", -1)], [], ["m"], kind=b"bdl4")


# -- the structural checker and the stripper on their own ------------------------------------------------


def test_the_structural_checker_catches_broken_files():
    m, _ = generated()
    good = model.write(m)
    assert structure.problems(good) == []
    slots = m.shp1.slots.copy()
    slots[0] = 999
    m.shp1.slots = slots
    assert any("draw matrix 999" in p for p in structure.problems(model.write(m)))
    m, _ = generated()
    groups = m.shp1.groups.copy()
    groups["count"][0] = 11
    m.shp1.groups = groups
    assert any("11 matrix slots" in p for p in structure.problems(model.write(m)))
    m, _ = generated()
    m.inf1.packet_count += 1
    assert any("packet count" in p for p in structure.problems(model.write(m)))
    m, _ = generated()
    lists = bytearray(m.shp1.lists)
    lists[0] = 0x91  # a vertex format other than 0
    m.shp1.lists = bytes(lists)
    assert any("command" in p for p in structure.problems(model.write(m)))


def test_strips_of_a_grid_and_a_ribbon_longer_than_one_primitive():
    side = 30
    r, c = np.meshgrid(np.arange(side - 1), np.arange(side - 1), indexing="ij")
    a, b, d, e = r * side + c, r * side + c + 1, (r + 1) * side + c, (r + 1) * side + c + 1
    grid = np.stack([a, d, b, b, d, e], -1).reshape(-1, 3)
    primitives = strips.strip(grid)
    assert_draws(primitives, grid)
    assert sum(len(v) for _, v in primitives) < 0.45 * grid.size
    n = 70000  # triangles of one ribbon: more vertices than a primitive can hold
    k = np.arange(n)
    ribbon = np.where((k % 2 == 0)[:, None], np.stack([k, k + 1, k + 2], 1), np.stack([k, k + 2, k + 1], 1))
    primitives = strips.strip(ribbon)
    assert_draws(primitives, ribbon)
    assert len(primitives) == 2 and primitives[0][0] == strips.STRIP
