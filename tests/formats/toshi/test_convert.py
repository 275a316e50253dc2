"""TMD/TKL/TML ↔ Scene: import values, byte-exact re-export, writing from scratch, export rules."""

import copy
import json
import struct

import demo_creature
import numpy as np
import pytest
from retro_models.formats import extras
from retro_models.formats.errors import ExportError, FormatError
from retro_models.formats.scene import Channel, Layer, Mesh, Scene, Skeleton, axis_matrix
from retro_models.formats.toshi import convert, strips, tkl, tmd, tml
from toshi_fixtures import POSITIONS, ROTATIONS, tkl_bytes, tmd_bytes, tml_bytes


def _fixture_scene(**options):
    return convert.to_scene(tmd.read(tmd_bytes()), tkl.read(tkl_bytes()), tml.read(tml_bytes()), **options)


def test_to_scene_skeleton_mesh_material():
    scene = _fixture_scene()
    assert scene.warnings == ["texture 0: texture 0 has format 9, which cannot be decoded"]
    (skeleton,) = scene.skeletons
    assert skeleton.bone_names == ["pelvis", "tail"]
    assert skeleton.parents.tolist() == [-1, 0]
    assert skeleton.deform.tolist() == [True, False]
    np.testing.assert_array_equal(skeleton.rest[1, :3, 3], [0, -1, 1])
    (mesh,) = scene.meshes
    assert mesh.collection == "LOD0" and not mesh.hidden
    assert mesh.triangles.tolist() == [[0, 1, 2]]
    np.testing.assert_array_equal(mesh.uv_layers[0].data, [[0, -0.25], [1, -0.5], [0, -1]])
    assert mesh.skin_joints.tolist() == [[0, 0, 0, 0], [0, 1, 0, 0], [1, 0, 0, 0]]
    np.testing.assert_allclose(mesh.skin_weights[1], [128 / 255, 127 / 255, 0, 0])
    material = scene.materials[mesh.materials[0]]
    assert material.name == "skin_Mat"
    assert [scene.images[s.image].extras["id"] for s in material.textures] == [1]
    assert scene.images[0].pixels.tolist() == [[[255, 0, 0, 255], [0, 0, 255, 128]]]
    assert scene.images[1].pixels is None and scene.images[1].source_bytes == b"\x12\x34\x56\x78"


def test_to_scene_animations_resolve_tkl_keys():
    walk, idle = _fixture_scene().animations
    assert (walk.name, walk.fps, walk.frame_end, walk.loop) == ("walk_lp", 30.0, 45.0, True)
    location, rotation, tail_rotation = walk.channels
    assert (location.target, location.path) == ("pelvis", "location")
    np.testing.assert_array_equal(location.times, [0, 15])
    np.testing.assert_array_equal(location.values, POSITIONS)
    np.testing.assert_array_equal(rotation.times, location.times)  # LINEAR quaternions: a slerp (Channel)
    np.testing.assert_allclose(rotation.values, np.array(ROTATIONS, np.float32)[:, [3, 0, 1, 2]])
    assert (tail_rotation.target, tail_rotation.path) == (
        "tail",
        "rotation_quaternion",
    )  # flags 0: rotation only
    np.testing.assert_array_equal(tail_rotation.times, [7.5])
    assert not idle.loop and len(idle.channels) == 2


def test_missing_libraries_are_warnings():
    scene = convert.to_scene(tmd.read(tmd_bytes()))
    assert any("keyframe library" in w for w in scene.warnings)
    assert any("material library" in w for w in scene.warnings)
    assert all(not a.channels for a in scene.animations)
    model, _, _ = convert.from_scene(scene)
    assert tmd.write(model) == tmd_bytes()  # the keys are kept raw


def test_keys_missing_from_the_library_are_reported():
    library = tkl.read(tkl_bytes())
    library.positions = library.positions[:1]
    scene = convert.to_scene(tmd.read(tmd_bytes()), library, None)
    assert any("missing from the keyframe library" in w for w in scene.warnings)


def _perturb(scene: Scene, eps=1e-6) -> Scene:
    """What a trip through Blender may do to the floats it does not store exactly (animation
    channels come back bit for bit while unedited: changed keys are an edit, see test_edit)."""
    scene = copy.deepcopy(scene)
    for skeleton in scene.skeletons:
        skeleton.rest = skeleton.rest + eps
    for mesh in scene.meshes:
        if mesh.skin_weights is not None:
            mesh.skin_weights = mesh.skin_weights + np.float32(eps)
    return scene


@pytest.mark.parametrize("axis", [None, axis_matrix("Z", "X")])
@pytest.mark.parametrize("perturb", [False, True])
def test_fixture_re_exports_byte_for_byte(axis, perturb):
    library = tkl.read(tkl_bytes())
    scene = _fixture_scene(axis=axis)
    if perturb:
        scene = _perturb(scene)
    model, new_library, materials = convert.from_scene(scene, axis=axis, tkl=library)
    assert tmd.write(model) == tmd_bytes()
    assert tkl.write(new_library) == tkl_bytes()
    assert tml.write(materials) == tml_bytes()


@pytest.mark.parametrize("perturb", [False, True])
def test_demo_creature_round_trip(perturb):
    files = demo_creature.demo_files()
    library = tkl.read(files["demo.tkl"])
    scene = convert.to_scene(tmd.read(files["demo.tmd"]), library, tml.read(files["demo.tml"]))
    assert scene.warnings == []
    if perturb:
        scene = _perturb(scene)
    model, new_library, materials = convert.from_scene(scene, tkl=library)
    assert tmd.write(model) == files["demo.tmd"]
    assert tkl.write(new_library) == files["demo.tkl"]
    assert tml.write(materials) == files["demo.tml"]


def _through_blender(scene: Scene) -> Scene:
    """The scene with every extras dict as Blender gives it back (JSON through the extras codec)."""

    def trip(value):
        return extras.decode(json.loads(json.dumps(extras.encode(value))))

    scene = copy.deepcopy(scene)
    for item in [scene, *scene.skeletons, *scene.meshes, *scene.materials, *scene.images, *scene.animations]:
        item.extras = trip(item.extras)
    for skeleton in scene.skeletons:
        skeleton.bone_extras = [trip(e) for e in skeleton.bone_extras]
    for animation in scene.animations:
        for channel in animation.channels:
            channel.extras = trip(channel.extras)
    return scene


def test_extras_hold_plain_values_that_survive_blender():
    files = demo_creature.demo_files()
    library = tkl.read(files["demo.tkl"])
    scene = convert.to_scene(tmd.read(files["demo.tmd"]), library, tml.read(files["demo.tml"]))
    assert scene.extras["tkl_field"] == tmd.read(files["demo.tmd"]).tkl_field
    assert isinstance(scene.extras["salt"], int) and isinstance(scene.extras["lods"][0]["sphere"], bytes)
    assert isinstance(scene.meshes[0].extras["strips"], bytes)
    assert isinstance(scene.materials[0].extras["name_field"], bytes)
    model, new_library, materials = convert.from_scene(_through_blender(scene), tkl=library)
    assert tmd.write(model) == files["demo.tmd"]
    assert tkl.write(new_library) == files["demo.tkl"]
    assert tml.write(materials) == files["demo.tml"]


def _corner_rows(mesh: Mesh, skeleton: Skeleton):
    """Per triangle: its corners' positions and uvs, then their bone weights; rows sorted (order-free)."""
    dense = np.zeros((len(mesh.positions), len(skeleton)))
    rows = np.repeat(np.arange(len(mesh.positions)), mesh.skin_joints.shape[1])
    np.add.at(dense, (rows, mesh.skin_joints.ravel()), mesh.skin_weights.ravel())
    corners = mesh.triangles.reshape(-1)
    geometry = np.round(np.column_stack([mesh.positions[corners], mesh.uv_layers[0].data[corners]]), 5)
    # Strips may start a triangle at another corner: rotate each to start at its smallest corner (winding kept).
    rank = np.empty(len(geometry), np.int64)
    rank[np.lexsort(geometry.T[::-1])] = np.arange(len(geometry))
    start = np.argmin(rank.reshape(-1, 3), axis=1)
    order = ((np.arange(3)[None, :] + start[:, None]) % 3 + 3 * np.arange(len(start))[:, None]).ravel()
    geometry = geometry[order].reshape(len(mesh.triangles), -1)
    weights = dense[corners][order].reshape(len(mesh.triangles), -1)
    sort = np.lexsort(geometry.T[::-1])
    return geometry[sort], weights[sort]


def _assert_same_surface(mesh: Mesh, source: Mesh, skeleton: Skeleton):
    geometry, weights = _corner_rows(mesh, skeleton)
    source_geometry, source_weights = _corner_rows(source, skeleton)
    np.testing.assert_array_equal(geometry, source_geometry)
    np.testing.assert_allclose(weights, source_weights, atol=1 / 255)


def test_demo_creature_from_scratch_reads_back_equal():
    original = demo_creature.demo_scene()
    files = demo_creature.demo_files()
    model = tmd.read(files["demo.tmd"])
    assert len(model.nodes) >= 12 and len(model.lods) == 2 and len(model.animations) == 2
    library = tkl.read(files["demo.tkl"])
    materials = tml.read(files["demo.tml"])
    assert sorted(t.format for t in materials.textures) == [0, 6]
    assert materials.material_names() == sorted(materials.material_names(), key=tml.sort_key)
    scene = convert.to_scene(model, library, materials)
    skeleton = scene.skeletons[0]
    assert skeleton.bone_names == original.skeletons[0].bone_names
    np.testing.assert_allclose(skeleton.rest, original.skeletons[0].rest, atol=1e-6)
    assert [m.collection for m in scene.meshes] == ["LOD0", "LOD0", "LOD1", "LOD1"]
    by_name = {m.name: m for m in original.meshes}
    for mesh, source in zip(scene.meshes, ("body", "head", "body_low", "head_low"), strict=True):
        _assert_same_surface(mesh, by_name[source], skeleton)
        assert (
            scene.materials[mesh.materials[0]].name == original.materials[by_name[source].materials[0]].name
        )
        np.testing.assert_allclose(mesh.skin_weights.sum(axis=1), 1.0, atol=1e-6)
    for anim, source in zip(scene.animations, original.animations, strict=True):
        assert anim.name == source.name and anim.frame_end == source.frame_end
        wanted = {(c.target, c.path): c for c in source.channels}
        assert {(c.target, c.path) for c in anim.channels} == set(wanted)
        for c in anim.channels:
            np.testing.assert_allclose(c.times, wanted[c.target, c.path].times, atol=1e-4)
            values = np.asarray(wanted[c.target, c.path].values)
            if c.path == "rotation_quaternion":
                values = values * np.sign((values * c.values).sum(axis=1, keepdims=True))
            np.testing.assert_allclose(c.values, values, atol=1e-6)
    # The two animations share the tail keys in the library.
    assert len(library.rotations) < sum(len(c.times) for a in original.animations for c in a.channels)
    assert scene.images[0].pixels is not None and scene.images[1].pixels is not None


def _skinned_strip_scene(bones: int, quads: int) -> Scene:
    """A long ribbon skinned along a chain of ``bones`` bones."""
    rest = np.tile(np.eye(4), (bones, 1, 1))
    rest[:, 0, 3] = np.arange(bones)
    skeleton = Skeleton(
        "chain", [f"b{i}" for i in range(bones)], np.arange(-1, bones - 1, dtype=np.int32), rest
    )
    x = np.repeat(np.linspace(0, bones - 1, quads + 1), 2)
    positions = np.column_stack([x, np.tile([0.0, 1.0], quads + 1), np.zeros_like(x)]).astype(np.float32)
    a = np.arange(quads) * 2
    tris = np.concatenate([np.stack([a, a + 2, a + 1], 1), np.stack([a + 1, a + 2, a + 3], 1)]).astype(
        np.int32
    )
    bone = np.minimum(np.floor(x).astype(int), bones - 1)
    joints = np.stack([bone, np.minimum(bone + 1, bones - 1), bone, bone], 1).astype(np.int32)
    weights = np.stack([1 - (x - bone), x - bone, 0 * x, 0 * x], 1).astype(np.float32)
    mesh = Mesh(
        "ribbon",
        positions,
        tris,
        uv_layers=[Layer("UVMap", positions[:, :2] / 100)],
        materials=[0],
        skeleton=0,
        skin_joints=joints,
        skin_weights=weights,
    )
    from retro_models.formats.scene import Material

    return Scene("chain", [skeleton], [mesh], [Material("m")])


def test_palettes_split_and_strips_split():
    scene = _skinned_strip_scene(bones=70, quads=6000)
    model, _, _ = convert.from_scene(scene)
    (mesh,) = model.lods[0].meshes
    assert len(mesh.pieces) > 3
    assert all(len(p.palette) <= 28 and len(p.strip) <= 7500 for p in mesh.pieces)
    assert all(p.vertices_required == p.strip.max() for p in mesh.pieces)
    vertices = np.concatenate([p.vertices for p in mesh.pieces])
    assert (vertices["weights"].astype(int).sum(axis=1) == 255).all()
    assert (vertices["bones"] % 3 == 0).all()
    back = convert.to_scene(tmd.read(tmd.write(model)))
    _assert_same_surface(back.meshes[0], scene.meshes[0], scene.skeletons[0])
    for piece in mesh.pieces:
        used = vertices["position"][piece.strip.astype(int)]
        low, high = used.min(axis=0), used.max(axis=0)
        np.testing.assert_allclose(piece.bbox_centre, (low + high) / 2)
        np.testing.assert_allclose(piece.bbox_half_extent, (high - low) / 2)


def test_weight_bytes_sum_to_255():
    weights = np.array([[1 / 3, 1 / 3, 1 / 3, 0], [0.5, 0.5, 0, 0], [0.2, 0.2, 0.2, 0.2], [0.9, 0, 0, 0]])
    out = convert._weight_bytes(weights)
    assert out.astype(int).sum(axis=1).tolist() == [255] * 4
    assert out[3].tolist() == [255, 0, 0, 0]


def test_export_errors_name_the_object():
    scene = demo_creature.demo_scene()
    bad = copy.deepcopy(scene)
    bad.skeletons[0].bone_names[3] = "a_very_long_bone_name"
    with pytest.raises(ExportError, match="a_very_long_bone_name"):
        convert.from_scene(bad)
    bad = copy.deepcopy(scene)
    bad.animations[0].name = "walk_cycle_number_one"
    with pytest.raises(ExportError, match="walk_cycle_number_one"):
        convert.from_scene(bad)
    bad = copy.deepcopy(scene)
    bad.materials[0].name = "m" * 32
    with pytest.raises(ExportError, match="m" * 32):
        convert.from_scene(bad)
    big = _skinned_strip_scene(bones=2, quads=17000)
    with pytest.raises(ExportError, match="ribbon"):
        convert.from_scene(big)


def _demo_with(edit) -> tuple[bytes, tmd.TMD]:
    """The demo creature's TMD after ``edit(model)``, written and read back (offsets of the new file)."""
    model = tmd.read(demo_creature.demo_files()["demo.tmd"])
    edit(model)
    data = tmd.write(model)
    return data, tmd.read(data, "demo.tmd")


def test_a_strip_index_outside_the_mesh_names_the_file_and_its_place():
    def edit(model):
        model.lods[0].meshes[1].pieces[0].strip[5] = 999

    data, model = _demo_with(edit)
    with pytest.raises(FormatError, match=r"LOD 0 mesh 1 .* strip index 5 \(999\)") as caught:
        convert.to_scene(model, filename="demo.tmd")
    assert caught.value.filename == "demo.tmd"
    assert struct.unpack_from("<h", data, caught.value.offset) == (999,)


def test_a_vertex_weighted_outside_its_palette_names_the_file_and_its_place():
    def edit(model):
        vertices = model.lods[0].meshes[0].pieces[0].vertices
        vertices["bones"][7] = (3 * 27, 0, 0, 0)  # palette slot 27 of a shorter palette

    data, model = _demo_with(edit)
    with pytest.raises(FormatError, match="vertex 7 is weighted") as caught:
        convert.to_scene(model, filename="demo.tmd")
    assert caught.value.filename == "demo.tmd"
    assert data[caught.value.offset : caught.value.offset + 4] == bytes([81, 0, 0, 0])


def test_appending_keeps_library_indices():
    files = demo_creature.demo_files()
    library = tkl.read(files["demo.tkl"])
    scene = convert.to_scene(tmd.read(files["demo.tmd"]), library, tml.read(files["demo.tml"]))
    scene.animations[0].channels[0].values = scene.animations[0].channels[0].values + 0.5
    _, appended, _ = convert.from_scene(scene, tkl=library)
    n = len(library.rotations)
    np.testing.assert_array_equal(appended.rotations[:n], library.rotations)
    np.testing.assert_array_equal(appended.positions[: len(library.positions)], library.positions)
    assert len(appended.rotations) + len(appended.positions) > n + len(library.positions)
    _, fresh, _ = convert.from_scene(scene, tkl_name="newlib")
    assert fresh.name == "newlib"
    model, _, _ = convert.from_scene(scene, tkl_name="newlib")
    assert model.tkl_name == "newlib"


def test_channel_extras_of_earlier_versions_export_the_same():
    """Earlier versions kept a channel's stored keys as lists (times, position and rotation indices),
    and records saved then still hold them: an edited channel exports the same from either."""
    files = demo_creature.demo_files()
    library = tkl.read(files["demo.tkl"])
    scene = convert.to_scene(tmd.read(files["demo.tmd"]), library, tml.read(files["demo.tml"]))
    for channel in scene.animations[0].channels:
        channel.origin = None  # edited: written from the keys, at the stored times and indices
    earlier = copy.deepcopy(scene)
    for channel in earlier.animations[0].channels:
        if "keys" in channel.extras:
            keys = np.frombuffer(channel.extras.pop("keys"), tmd.KEY_DTYPE)
            channel.extras["times"] = keys["time"].astype(np.float64).tolist()
            channel.extras["position_indices"] = keys["position"].tolist()
            channel.extras["rotation_indices"] = keys["rotation"].tolist()
    assert any("times" in c.extras for c in earlier.animations[0].channels)
    model, appended, _ = convert.from_scene(scene, tkl=library)
    assert tmd.write(model) == files["demo.tmd"] and tkl.write(appended) == files["demo.tkl"]
    model, appended, _ = convert.from_scene(earlier, tkl=library)
    assert tmd.write(model) == files["demo.tmd"] and tkl.write(appended) == files["demo.tkl"]


def test_first_lod_only():
    scene = _fixture_scene(lods="FIRST")
    assert len(scene.meshes) == 1
    files = demo_creature.demo_files()
    scene = convert.to_scene(tmd.read(files["demo.tmd"]), lods="FIRST")
    assert {m.collection for m in scene.meshes} == {"LOD0"}
    model, _, _ = convert.from_scene(scene, lods="FIRST")
    assert len(model.lods) == 1


def test_corner_normals_and_uvs_split_vertices():
    scene = _skinned_strip_scene(bones=3, quads=4)
    mesh = scene.meshes[0]
    corners = mesh.triangles.reshape(-1)
    mesh.uv_layers = [Layer("UVMap", np.arange(len(corners) * 2, dtype=np.float32).reshape(-1, 2), "CORNER")]
    model, _, _ = convert.from_scene(scene)
    back = convert.to_scene(model).meshes[0]
    assert len(back.positions) == len(corners)  # every corner has its own UV
    uv = back.uv_layers[0].data[back.triangles.reshape(-1)]
    assert sorted(map(tuple, uv.tolist())) == sorted(map(tuple, mesh.uv_layers[0].data.tolist()))
    assert strips.MAX_PIECE_INDICES == 7500


def test_root_channels_follow_the_axis():
    axis = axis_matrix("Z", "X")
    scene = _fixture_scene(axis=axis)
    location = scene.animations[0].channels[0]
    np.testing.assert_allclose(location.values, np.asarray(POSITIONS) @ axis[:3, :3].T)
    np.testing.assert_allclose(
        scene.skeletons[0].rest[0], axis @ tmd.matrices(tmd.read(tmd_bytes()).nodes["bind"])[0]
    )
    assert isinstance(scene.animations[0].channels[0], Channel)
