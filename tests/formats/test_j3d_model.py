"""BMD/BDL models: byte-exact round trips, geometry decoding, the Scene they make, bad input."""

import numpy as np
import pytest
import support
from j3d_model_fixtures import generated
from retro_models.formats.errors import FormatError
from retro_models.formats.j3d import inspect, model, model_convert
from retro_models.formats.j3d import model_geometry as geometry

CORPUS_MODELS = support.corpus_files("j3d*/*.bmd") + support.corpus_files("j3d*/*.bdl")


@pytest.mark.corpus
@pytest.mark.parametrize("path", CORPUS_MODELS, ids=lambda p: p.name)
def test_every_corpus_model_round_trips_byte_exact(path):
    data = path.read_bytes()
    assert model.write(model.read(data, path.name)) == data


@pytest.mark.corpus
@pytest.mark.parametrize("path", CORPUS_MODELS, ids=lambda p: p.name)
def test_corpus_geometry_weights_and_bind_pose(path):
    m = model.read(path.read_bytes(), path.name)
    graph = geometry.read_graph(m, path.name)
    world = geometry.world_matrices(m, graph.parents)
    skin = geometry.draw_skin(m, world, path.name)
    assert np.allclose(skin.weights.sum(axis=1), 1, atol=1e-5)
    used = np.unique(m.evp1.joints.astype(int))
    binds = geometry.inverse_binds(m)
    # Envelope vertices are stored in model space: W · invBind ≈ I for every envelope joint.
    assert np.abs(world[used] @ binds[used] - np.eye(4)).max(initial=0) < 0.05
    arrays = geometry.arrays(m, path.name)
    triangles = 0
    for s in range(len(m.shp1.remap)):
        g = geometry.decode_shape(m, s, path.name)
        geometry.check_indices(g, arrays, s, path.name, 0)
        triangles += len(g.triangles)
    # Every corpus display list is strips and fans: n - 2 triangles each.
    lists = m.shp1.lists
    expected = 0
    for s in m.shp1.shapes():
        stride = sum(
            {1: 1, 2: 1, 3: 2}[int(t)]
            for a, t in m.shp1.descriptor_list(int(np.flatnonzero(m.shp1.shapes() == s)[0])).tolist()
            if t
        )
        for p in range(int(s["packet_count"])):
            packet = m.shp1.packets[int(s["first_packet"]) + p]
            pos, end = int(packet["offset"]), int(packet["offset"]) + int(packet["size"])
            while pos < end and lists[pos]:
                n = int.from_bytes(lists[pos + 1 : pos + 3], "big")
                expected += n - 2
                pos += 3 + n * stride
    assert triangles == expected > 0


@pytest.mark.corpus
def test_corpus_model_scene_and_summary():
    path = support.corpus_file("j3d-models/ba.bdl")
    data = path.read_bytes()
    scene = model_convert.to_scene(model.read(data, path.name), "ba", path.name)
    assert len(scene.skeletons[0]) == 19 and len(scene.meshes) == 4
    assert sum(len(m.triangles) for m in scene.meshes) == 785
    # Every TEX1 texture is an image; textures sharing their data share the decoded pixels.
    tex1 = model.read(data, path.name).tex1
    assert sorted(i.extras["tex1_index"] for i in scene.images) == list(range(len(tex1.headers)))
    by_data = {}
    for image in scene.images:
        by_data.setdefault(int(tex1.data_positions()[image.extras["tex1_index"]]), []).append(image.pixels)
    assert any(len(group) > 1 for group in by_data.values())
    assert all(all(p is group[0] for p in group) for group in by_data.values() if len(group) > 2)
    assert scene.extras["vertex_formats"][0][0] == 9
    text = inspect.summarize(data, path.name)
    assert "joints: 19" in text and "triangles: 785" in text and "CMPR" in text


def test_generated_model_round_trips_and_decodes():
    m, world = generated()
    assert model.write(model.read(model.write(m), "x.bmd")) == model.write(m)
    graph = geometry.read_graph(m)
    assert graph.parents.tolist() == [-1, 0, 1]
    assert graph.shape_materials.tolist() == [0, 1]
    assert np.allclose(geometry.world_matrices(m, graph.parents), world, atol=1e-6)
    first = geometry.decode_shape(m, 0)
    assert len(first.triangles) == 6 and set(first.draw.tolist()) == {1}
    second = geometry.decode_shape(m, 1)
    assert len(second.triangles) == 6
    # The second packet's slot 0 is 0xFFFF: it keeps draw matrix 3 from the first packet.
    tail = second.draw[12:]
    positions = second.indices[geometry.POS][12:]
    assert (tail[positions % 2 == 0] == 3).all() and (tail[positions % 2 == 1] == 2).all()


def test_generated_scene_places_rigid_and_weighted_vertices_in_the_bind_pose():
    m, world = generated()
    scene = model_convert.to_scene(m, "gen")
    rigid, mixed = scene.meshes
    grid = np.concatenate(
        [np.stack(np.meshgrid(np.arange(4.0), np.arange(3.0)), -1).reshape(-1, 2), np.zeros((12, 1))], 1
    )
    # Rigid on joint 1: world[1] · p.
    expected = grid @ world[1][:3, :3].T + world[1][:3, 3]
    found = {tuple(np.round(p, 4)) for p in rigid.positions}
    assert found == {tuple(np.round(p, 4)) for p in expected[:8]}
    # Weighted vertices (model space, W·invBind = I) stay where they are.
    weighted = np.flatnonzero(mixed.skin_weights[:, 1] > 0)
    assert len(weighted) and np.allclose(mixed.skin_weights.sum(1), 1)
    assert np.all(np.isin(np.round(mixed.positions[weighted], 4).tolist(), np.round(grid, 4)))
    # Clockwise GX faces toward +Z become counter-clockwise: the normals agree with the winding.
    tri = rigid.positions[rigid.triangles]
    face = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    normal = world[1][:3, :3] @ [0, 0, 1]
    assert (face @ normal > 0).all()
    assert np.allclose(rigid.normals.data, normal / np.linalg.norm(normal), atol=1e-6)
    assert [layer.name for layer in rigid.uv_layers] == ["UVMap"]
    assert scene.materials[1].name == "cloth" and len(scene.images) == 1


@pytest.mark.parametrize(
    ("kind", "raw", "rgba"),
    [
        (0, bytes([0xF8, 0x1F]), (255, 0, 255, 255)),
        (1, bytes([1, 2, 3]), (1, 2, 3, 255)),
        (2, bytes([1, 2, 3, 9]), (1, 2, 3, 255)),
        (3, bytes([0x12, 0x3F]), (0x11, 0x22, 0x33, 0xFF)),
        (4, bytes([0xFC, 0x0F, 0xC0]), (255, 0, 255, 0)),
        (5, bytes([1, 2, 3, 4]), (1, 2, 3, 4)),
    ],
)
def test_every_vertex_colour_format(kind, raw, rgba):
    assert tuple(geometry.decode_colors(raw, kind)[0]) == rgba


def test_truncated_or_corrupt_models_give_one_format_error():
    m, _ = generated()
    data = model.write(m)
    for size in (8, 0x40, len(data) // 3, len(data) // 2, len(data) - 40):
        with pytest.raises(FormatError):
            model_convert.to_scene(model.read(data[:size], "cut.bmd"), "cut", "cut.bmd")
    # A packet naming a matrix slot past DRW1's draw matrices.
    broken = model.read(data, "bad.bmd")
    broken.shp1.slots[0] = 40
    with pytest.raises(FormatError, match="bad.bmd.*draw matrix"):
        model_convert.to_scene(model.read(model.write(broken), "bad.bmd"), "bad", "bad.bmd")
    # An unknown display-list command: the error names its byte.
    parsed = model.read(data, "bad.bmd")
    at = parsed.table_offset(parsed.shp1, "lists") + int(parsed.shp1.packets[0]["offset"])
    corrupt = bytearray(data)
    corrupt[at] = 0x41
    with pytest.raises(FormatError, match="command 0x41") as caught:
        model_convert.to_scene(model.read(bytes(corrupt), "bad.bmd"), "bad", "bad.bmd")
    assert caught.value.offset == at
    # An INF1 offset outside its section.
    corrupt = bytearray(data)
    corrupt[0x20 + 0x14 : 0x20 + 0x18] = (0x7000).to_bytes(4, "big")
    with pytest.raises(FormatError, match="INF1 graph offset"):
        model.read(bytes(corrupt), "bad.bmd")


@pytest.mark.parametrize(
    ("kind", "count", "expected"),
    [
        (geometry.TRIANGLES, 6, [[0, 1, 2], [3, 4, 5]]),
        (geometry.QUADS, 4, [[0, 1, 2], [0, 2, 3]]),
        (geometry.QUADS2, 8, [[0, 1, 2], [0, 2, 3], [4, 5, 6], [4, 6, 7]]),
        (geometry.STRIP, 5, [[0, 1, 2], [1, 3, 2], [2, 3, 4]]),
        (geometry.FAN, 5, [[0, 1, 2], [0, 2, 3], [0, 3, 4]]),
        (geometry.LINES, 4, []),
        (geometry.LINE_STRIP, 4, []),
        (geometry.POINTS, 3, []),
    ],
)
def test_every_primitive_kind_expands_in_gx_order(kind, count, expected):
    assert geometry._pattern(kind, count).tolist() == expected


def test_display_lists_mixing_primitive_kinds_decode_in_order():
    m, _ = generated()
    shape = m.shp1.shapes()[0]
    packet = m.shp1.packets[int(shape["first_packet"])]
    start = int(packet["offset"])
    stride = 6  # POS, NRM, TEX0 as u16 indices
    old = m.shp1.lists[start + 3 : start + 3 + 18 * stride]
    vertices = [old[i * stride : (i + 1) * stride] for i in range(18)]
    lists = bytearray(m.shp1.lists)
    body = bytes([geometry.STRIP]) + (4).to_bytes(2, "big") + b"".join(vertices[:4])
    body += bytes([geometry.FAN]) + (4).to_bytes(2, "big") + b"".join(vertices[4:8])
    body += bytes([geometry.QUADS]) + (4).to_bytes(2, "big") + b"".join(vertices[8:12])
    body += bytes([geometry.POINTS]) + (2).to_bytes(2, "big") + b"".join(vertices[12:14])
    lists[start : start + len(body) + 1] = body + b"\0"
    m.shp1.lists = bytes(lists)
    decoded = geometry.decode_shape(m, 0)
    assert decoded.primitives == {geometry.STRIP: 1, geometry.FAN: 1, geometry.QUADS: 1, geometry.POINTS: 1}
    assert decoded.triangles.tolist() == [[0, 1, 2], [1, 3, 2], [4, 5, 6], [4, 6, 7], [8, 9, 10], [8, 10, 11]]
    assert len(decoded.draw) == 14


@pytest.mark.parametrize(("kind", "dtype"), [(0, "u1"), (1, "i1"), (2, ">u2"), (3, ">i2"), (4, ">f4")])
def test_vertex_arrays_of_every_component_type_and_shift(kind, dtype):
    m, _ = generated()
    shift = 0 if kind == 4 else 3
    values = np.array([[0, 1], [2, 3], [4, 5.5]]) + (1 if kind in (0, 2) else -1)
    row = int(np.flatnonzero(m.vtx1.formats["attribute"] == geometry.TEX[0])[0])
    m.vtx1.formats["type"][row], m.vtx1.formats["shift"][row] = kind, shift
    m.vtx1.arrays[geometry.TEX[0]] = (values * 2**shift).astype(dtype).tobytes()
    assert np.array_equal(geometry.decode_array(m, geometry.TEX[0]), values.astype(np.float32))
    # Normals use the hardware's fixed point whatever the file says.
    row = int(np.flatnonzero(m.vtx1.formats["attribute"] == geometry.NRM)[0])
    m.vtx1.formats["type"][row], m.vtx1.formats["shift"][row] = 3, 15
    m.vtx1.arrays[geometry.NRM] = np.array([[0, 0, 1 << 14]], ">i2").tobytes()
    assert geometry.decode_array(m, geometry.NRM).tolist() == [[0, 0, 1]]


def test_the_three_scaling_rules():
    m, _ = generated()
    m.jnt1.entries["scale"][0] = (1, 2, 1)
    m.jnt1.entries["scale_compensate"][1] = 1
    parents = np.array([-1, 0, 1])
    turn = np.array([[0.0, -1, 0], [1, 0, 0], [0, 0, 1]])  # the arm's 90° about Z
    stretch = np.diag([1.0, 2, 1])
    results = {}
    for rule in (geometry.BASIC, geometry.SOFTIMAGE, geometry.MAYA):
        m.inf1.flags = rule
        results[rule] = geometry.world_matrices(m, parents)
    assert np.allclose(results[geometry.BASIC][1][:3, :3], stretch @ turn)  # sheared by the parent
    assert np.allclose(results[geometry.SOFTIMAGE][1][:3, :3], turn @ stretch)  # scale accumulated last
    assert np.allclose(results[geometry.MAYA][1][:3, :3], turn)  # the parent's scale compensated
    for world in results.values():  # translations go through the parent's scale in every rule
        assert np.allclose(world[1][:3, 3], [1, 4, 0])


def test_a_shape_with_direct_vertex_data_is_left_out_with_a_warning():
    m, _ = generated()
    at = int(m.shp1.shapes()[0]["descriptor_offset"])
    pairs = np.frombuffer(m.shp1.descriptors, model.DESCRIPTOR_DTYPE).copy()
    first = at // 8
    assert pairs["attribute"][first] == geometry.POS
    pairs["type"][first] = 1  # direct: the values sit in the display list
    m.shp1.descriptors = pairs.tobytes()
    scene = model_convert.to_scene(m, "gen")
    assert [mesh.name for mesh in scene.meshes] == ["shape1"]
    assert scene.warnings == [
        "gen: shape 0 sends its POS values in the display list (direct data): not imported"
    ]


def test_the_registry_sends_models_to_the_model_importer(tmp_path):
    from retro_models.formats import registry
    from retro_models.formats.j3d import files

    data = model.write(generated()[0])
    for name in ("model.bmd", "model.bdl", "model.bin"):  # the content decides without the extension
        (tmp_path / name).write_bytes(data)
        family = registry.family_for(str(tmp_path / name))
        assert family.name == "j3d_model" and family.importer.idname == "import_scene.j3d_model"
    scene = files.load_model(str(tmp_path / "model.bdl"), files.ModelImportOptions())
    assert scene.name == "model" and len(scene.meshes) == 2
    assert "shapes: 2" in registry.family_for("model.bdl", data).summarize(data, "model.bdl")
    # An archive reader hands the member's bytes over instead of a path on disk.
    member = files.load_model("archive.arc/model.bmd", files.ModelImportOptions(), read=lambda path: data)
    assert member.name == "model" and len(member.meshes) == 2


@pytest.mark.corpus
@pytest.mark.parametrize("path", CORPUS_MODELS, ids=lambda p: p.name)
def test_corpus_faces_point_the_way_their_normals_do(path):
    """GX's clockwise faces become counter-clockwise: nearly every face agrees with its normals."""
    scene = model_convert.to_scene(model.read(path.read_bytes(), path.name), path.stem, path.name)
    agree = total = 0
    with_normals = [mesh for mesh in scene.meshes if mesh.normals is not None]
    if not with_normals:
        pytest.skip(f"{path.name} has no normals")
    for mesh in with_normals:
        corners = mesh.positions[mesh.triangles]
        face = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
        normals = mesh.normals.data
        per_corner = normals[mesh.triangles] if mesh.normals.domain == "POINT" else normals.reshape(-1, 3, 3)
        agree += int((np.einsum("fi,fi->f", face, per_corner.sum(axis=1)) > 0).sum())
        total += len(face)
    assert agree > 0.95 * total


@pytest.mark.parametrize("one_draw_each", [True, False])
def test_the_distinct_vertex_pairs_are_np_uniques_whether_counted_or_sorted(one_draw_each):
    """A vertex is a distinct (position, draw matrix) pair: counted when each position comes with one
    draw matrix, sorted otherwise; both give ``np.unique``'s pairs, order and inverse."""
    rng = np.random.default_rng(7)
    first = rng.integers(0, 500, 4000)
    second = first % 7 if one_draw_each else rng.integers(0, 7, 4000)
    distinct, inverse = np.unique(first * 7 + second, return_inverse=True)
    got_first, got_second, got_inverse = model_convert._distinct_pairs(first, second, 7)
    assert np.array_equal(got_first, distinct // 7) and np.array_equal(got_second, distinct % 7)
    assert np.array_equal(got_inverse, inverse)


@pytest.mark.parametrize(
    ("counts", "firsts"),
    [
        ([6, 3, 9], [0, 6, 9]),  # whole triangle lists one after another: the range
        ([6, 4, 9], [0, 6, 10]),  # a list with a vertex left over
        ([6, 3], [0, 7]),  # a vertex between two lists
        ([6, 3], [2, 8]),  # lists not from the first vertex
        ([0, 3], [0, 0]),  # an empty list
    ],
)
def test_triangle_lists_expand_as_each_list_alone_would(counts, firsts):
    """``expand`` takes whole consecutive triangle lists as a range of vertices; any other layout the
    general way: both give each list's whole triangles in order from its first vertex."""
    kinds = [geometry.TRIANGLES] * len(counts)
    expected = np.concatenate(
        [np.arange(f, f + n // 3 * 3).reshape(-1, 3) for n, f in zip(counts, firsts, strict=True)]
    )
    got = geometry.expand(kinds, counts, firsts)
    assert got.dtype == np.int64 and got.shape == expected.shape and np.array_equal(got, expected)
