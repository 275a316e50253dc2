"""The J3D model writer (``model_write``): shapes re-encoded from mesh arrays, added and removed,
models made from nothing; every result re-imported and checked by the independent structural
checker (``structure.py``)."""

from functools import cache

import j3d_model_fixtures
import numpy as np
import pytest
import structure
import support
from hypothesis import given, settings
from hypothesis import strategies as st
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
    """Every corpus model, the ones inside archives too (named archive/member); a skip without them."""
    if not CORPUS_FILES:
        pytest.skip(f"the real sample models are not available ({support.CORPUS} is absent)")
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
def test_corpus_models_pass_the_structural_checker_and_round_trip(name):
    data = corpus_models()[name]
    assert structure.problems(data) == []
    assert model.write(model.read(data, name)) == data  # archive members too (TEX1 without textures)
    assert model.write(model_write.replace_shapes(model.read(data, name), {})) == data


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
def test_the_stripper_sends_fewer_vertices_than_nintendos_and_under_half_of_triangle_lists():
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
    assert stripped < 0.97 * original  # measured 0.958
    assert stripped < 0.47 * listed  # measured 0.461


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


@pytest.mark.corpus
@pytest.mark.parametrize("name", corpus_names())
def test_new_draw_matrices_renumber_the_other_shapes_slots_and_keep_their_geometry(name):
    m = model.read(corpus_models()[name], name)
    rigid = set(m.drw1.values[m.drw1.kinds == 0].tolist())
    free = [j for j in range(len(m.jnt1.remap)) if j not in rigid]
    if not free or not len(m.evp1.counts):
        pytest.skip("no skinned model with a joint lacking a rigid draw matrix")
    scene = model_convert.to_scene(m)
    data = model_write.shape_data(scene.meshes[0])
    data.joints = np.zeros((len(data.positions), 2), np.int64)
    data.weights = np.zeros((len(data.positions), 2))
    data.joints[:, 0], data.weights[:, 0] = free[0], 1.0  # a new rigid entry before the weighted block
    data.joints[0], data.weights[0] = (free[0], free[-1] if free[-1] != free[0] else 0), (0.25, 0.75)
    out = model.read(rewritten(m, {0: data}))
    assert len(out.drw1.kinds) > len(m.drw1.kinds)
    again = model_convert.to_scene(out)
    for a, b in zip(scene.meshes[1:], again.meshes[1:], strict=True):
        assert_same_mesh(a, b)
    # shape 0: every vertex where it was (within the arrays' fixed point), on its new draw matrices
    got = again.meshes[0]
    distance = np.linalg.norm(
        got.positions[:, None].astype(float) - data.positions[None].astype(float), axis=2
    )
    assert distance.min(axis=1).max() < 0.01 * max(1.0, float(np.abs(data.positions).max()))
    assert len(got.triangles) == len(data.triangles)
    assert set(got.skin_joints[got.skin_weights > 0].tolist()) == set(data.joints[data.weights > 0].tolist())


@pytest.mark.corpus
@pytest.mark.parametrize("name", corpus_names())
def test_every_corpus_vertex_moved_reimports_moved_and_nothing_else_changed(name):
    m = model.read(corpus_models()[name], name)
    scene = model_convert.to_scene(m)
    scale = max(1.0, max(float(np.abs(mesh.positions).max()) for mesh in scene.meshes))
    shift = np.array([0.5, 0.25, -0.125]) * scale / 8
    edited = {}
    for s, mesh in enumerate(scene.meshes):
        edited[s] = model_write.shape_data(mesh)
        edited[s].positions = mesh.positions + shift
    again = model_convert.to_scene(model.read(rewritten(m, edited)))
    for a, b in zip(scene.meshes, again.meshes, strict=True):
        # the vertices may come back in another order (new array entries): compare what is where
        assert a.positions.shape == b.positions.shape and a.triangles.shape == b.triangles.shape
        np.testing.assert_allclose(
            np.sort(a.positions + shift, axis=0), np.sort(b.positions, axis=0), atol=1e-3 * scale
        )
        rows = lambda mesh: np.concatenate([mesh.skin_joints, mesh.skin_weights], axis=1)  # noqa: E731
        np.testing.assert_array_equal(np.unique(rows(a), axis=0), np.unique(rows(b), axis=0))
        for x, y in zip(a.uv_layers + a.color_layers, b.uv_layers + b.color_layers, strict=True):
            np.testing.assert_allclose(np.sort(x.data, axis=0), np.sort(y.data, axis=0), atol=1e-5)


@pytest.mark.corpus
def test_faces_in_any_order_still_share_packets():
    packets = original = 0
    rng = np.random.default_rng(0)
    for name, data in corpus_models().items():
        m = model.read(data, name)
        multi = np.flatnonzero(m.shp1.shapes()["matrix_type"] == 3)
        if not len(multi):
            continue
        meshes = model_convert.to_scene(m).meshes
        edited = {}
        for s in multi.tolist():
            edited[s] = model_write.shape_data(meshes[s])
            order = rng.permutation(len(edited[s].triangles))
            edited[s].triangles = edited[s].triangles[order]
            corners = (order[:, None] * 3 + np.arange(3)).reshape(-1)
            edited[s].uvs = [None if uv is None else uv[corners] for uv in edited[s].uvs]
            edited[s].colors = [None if c is None else c[corners] for c in edited[s].colors]
            if edited[s].normals is not None and len(edited[s].normals) != len(edited[s].positions):
                edited[s].normals = edited[s].normals[corners]
        out = model.read(rewritten(m, edited))
        packets += int(out.shp1.shapes()["packet_count"][multi].sum())
        original += int(m.shp1.shapes()["packet_count"][multi].sum())
    assert original and packets <= 1.3 * original  # measured: 92 for the files' 75 (74 in their own order)


@pytest.mark.corpus
@pytest.mark.parametrize("name", corpus_names())
def test_a_corpus_shape_removed_and_another_added(name):
    m = model.read(corpus_models()[name], name)
    scene = model_convert.to_scene(m)
    count = len(scene.meshes)
    gone = count // 2 if count > 1 else None
    extra = model_write.shape_data(scene.meshes[-1])
    extra.positions = extra.positions + 10.0
    out = model.read(rewritten(m, {}, added=[extra], removed={gone} if gone is not None else set()))
    again = model_convert.to_scene(out).meshes
    kept = [mesh for s, mesh in enumerate(scene.meshes) if s != gone]
    assert len(again) == len(kept) + 1
    for a, b in zip(kept, again, strict=False):
        assert_same_mesh(a, b)
    materials = model_geometry.read_graph(out).shape_materials
    assert materials[-1] == extra.material
    assert len(again[-1].triangles) == len(extra.triangles)
    np.testing.assert_allclose(
        np.sort(again[-1].positions, axis=0),
        np.sort(extra.positions, axis=0),
        atol=0.01 * max(1.0, float(np.abs(extra.positions).max())),
    )


@pytest.mark.corpus
@pytest.mark.parametrize("name", [n for n in corpus_names() if n.endswith(".bdl")])
def test_renamed_materials_keep_mdl3_display_lists_and_rename_its_copy_of_the_names(name):
    data = corpus_models()[name]
    m = model.read(data, name)
    assert model.write(model_write.rename_materials(m, m.mat3.names)) == data
    names = [f"renamed{i}" for i in range(len(m.mat3.names))]
    out = model.read(model.write(model_write.rename_materials(m, names)))
    assert structure.problems(model.write(out)) == []
    assert out.mat3.names == names
    at = int.from_bytes(m.raw(b"MDL3").data[0x20:0x24], "big")
    assert out.raw(b"MDL3").data[:4] == b"MDL3" and out.raw(b"MDL3").data[8:at] == m.raw(b"MDL3").data[8:at]
    assert [x.name for x in model_convert.to_scene(out).materials] == names


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
    nodes = out.inf1.graph.tolist()
    assert (0x11, 0) not in nodes  # material 0 lost its only shape: no material node is left without one
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
        (lambda d: setattr(d, "uvs", [d.uvs[0][:-1]] + [None] * 7), "UV layer 0 has shape"),
        (lambda d: setattr(d, "normals", np.full((5, 3), 1.0)), "normals has shape"),
        (lambda d: d.positions.__setitem__((0, 0), np.nan), "not a number"),
        (lambda d: setattr(d, "weights", d.weights[:, :0]), "weights has shape"),
        (lambda d: setattr(d, "colors", [None] * 3), "colour and 8 UV layers"),
    ],
)
def test_data_the_format_cannot_hold_is_refused_naming_the_shape(edit, message):
    m, scene = generated()
    data = model_write.shape_data(scene.meshes[0])
    data.positions = data.positions.copy()
    edit(data)
    with pytest.raises(ExportError, match=message) as caught:
        model_write.replace_shapes(m, {0: data}, filename="generated.bmd")
    assert "shape0" in str(caught.value)


def test_a_new_bdl_from_scratch_is_refused():
    with pytest.raises(ExportError, match="BMD only"):
        model_write.new_model([model_build.Joint("root", -1)], [], ["m"], kind=b"bdl4")


@pytest.mark.parametrize(
    "joints, message",
    [
        ([], "at least one joint"),
        (
            [model_build.Joint("a", -1), model_build.Joint("b", 2), model_build.Joint("c", 0)],
            "'b' must come after",
        ),
        ([model_build.Joint("a", -1), model_build.Joint("b", -1)], "'b' must come after"),
    ],
)
def test_a_skeleton_the_format_cannot_hold_is_refused_naming_the_joint(joints, message):
    with pytest.raises(ExportError, match=message):
        model_write.new_model(joints, [], ["m"])


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


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    vertices=st.integers(3, 60),
    faces=st.integers(1, 120),
    influences=st.integers(1, 3),
)
def test_random_meshes_on_the_generated_model(seed, vertices, faces, influences):
    """Any mesh (repeated corners, shared and lone vertices, mixed skins) round-trips and is sound."""
    rng = np.random.default_rng(seed)
    m, _ = generated()
    positions = rng.normal(0, 3, (vertices, 3))
    triangles = np.array([rng.choice(vertices, 3, replace=False) for _ in range(faces)])
    joints = np.stack([rng.choice(3, influences, replace=False) for _ in range(vertices)])
    weights = rng.random((vertices, influences)) + 0.05
    weights[rng.random(vertices) < 0.5, 1:] = 0  # about half the vertices rigid
    weights /= weights.sum(axis=1, keepdims=True)
    normals = rng.normal(size=(vertices, 3))
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    uvs = rng.random((3 * faces, 2))
    data = model_write.ShapeData(
        positions, triangles, joints, weights, normals, uvs=[uvs] + [None] * 7, material=1
    )
    out = model.read(rewritten(m, {1: data}))
    got = model_write.shape_data(model_convert.to_scene(out).meshes[1])
    used = np.unique(triangles)
    assert len(got.positions) == len(used)
    assert_same_corners(data, got, atol=1e-3)


def test_a_mesh_with_hundreds_of_draw_matrices_splits_into_packets_that_reuse_slots():
    rng = np.random.default_rng(5)
    joints = [model_build.Joint("root", -1)] + [
        model_build.Joint(f"j{i}", i - 1, (1.0, 0.0, 0.0)) for i in range(1, 12)
    ]
    side = 20
    grid = np.stack(np.meshgrid(np.arange(float(side)), np.arange(float(side))), -1).reshape(-1, 2)
    positions = np.concatenate([grid, np.zeros((len(grid), 1))], axis=1)
    r, c = np.meshgrid(np.arange(side - 1), np.arange(side - 1), indexing="ij")
    a, b, d, e = r * side + c, r * side + c + 1, (r + 1) * side + c, (r + 1) * side + c + 1
    triangles = np.stack([a, b, d, b, e, d], -1).reshape(-1, 3)  # counter-clockwise from +Z
    first = np.clip((grid[:, 0] // 2).astype(int), 0, 10)
    skin_joints = np.stack([first, first + 1], axis=1)
    weights = np.round(rng.random(len(grid)), 1)[:, None] * [1, -1] + [0, 1]
    shape = model_write.ShapeData(
        positions, triangles, skin_joints, weights, np.tile([0, 0, 1.0], (len(grid), 1))
    )
    out = model.read(model.write(model_write.new_model(joints, [shape], ["m"])))
    assert structure.problems(model.write(out)) == []
    groups = out.shp1.groups
    assert len(groups) > 3 and (groups["count"] <= 10).all()
    assert (out.shp1.slots == 0xFFFF).any()  # matrices kept from the packet before
    assert_same_corners(shape, model_write.shape_data(model_convert.to_scene(out).meshes[0]), joints=12)


def test_a_model_with_a_shape_the_reader_leaves_out_can_still_be_edited_elsewhere():
    m, scene = generated()
    at = int(m.shp1.shapes()[0]["descriptor_offset"])
    pairs = np.frombuffer(m.shp1.descriptors, model.DESCRIPTOR_DTYPE).copy()
    pairs["type"][at // 8] = 1  # shape 0 sends its positions directly
    m.shp1.descriptors = pairs.tobytes()
    edited = model_write.shape_data(scene.meshes[1])
    edited.positions = edited.positions + 1
    out = model.read(model.write(model_write.replace_shapes(m, {1: edited})))
    assert shape_bytes(out, 0) == shape_bytes(m, 0)
    assert_same_corners(edited, model_write.shape_data(model_convert.to_scene(out).meshes[0]))
    with pytest.raises(ExportError, match="shape0 sends vertex data"):
        model_write.replace_shapes(m, {0: edited})


def test_joints_from_rest_matrices_give_the_same_rest_matrices_back():
    rng = np.random.default_rng(3)
    joints = [model_build.Joint("root", -1, (1.0, 2.0, 3.0), (100, -2000, 300))]
    for i in range(1, 8):
        rotation = tuple(int(r) for r in rng.integers(-32768, 32767, 3))
        joints.append(
            model_build.Joint(
                f"j{i}", int(rng.integers(0, i)), tuple(rng.normal(0, 5, 3)), rotation, (1.0, 1.0, 1.0)
            )
        )
    joints[3].scale = (-1.0, 1.0, 1.0)  # a mirrored joint
    m = model_build.skeleton(joints, ["m"])
    parents = [j.parent for j in joints]
    world = model_geometry.world_matrices(m, np.array(parents))
    again = model_build.joints_from_rest([j.name for j in joints], parents, world)
    rebuilt = model_geometry.world_matrices(model_build.skeleton(again, ["m"]), np.array(parents))
    np.testing.assert_allclose(rebuilt, world, atol=1e-3)


def test_the_builder_refuses_an_index_beyond_what_a_display_list_holds():
    corners = np.array([(0, 0, 0, 0), (0, 1, 0, 0), (0, 0x10000, 0, 0)])
    shape = model_build.Shape(0, [model_build.Packet([0], corners)])
    flat = np.zeros((3, 3), np.float32)
    with pytest.raises(ValueError, match="16-bit"):
        model_build.build(
            [model_build.Joint("root", -1)],
            flat,
            flat,
            flat[:, :2],
            [],
            [0],
            [shape],
            ["m"],
            [],
            np.eye(4)[None],
        )
