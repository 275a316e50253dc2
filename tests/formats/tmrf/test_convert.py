"""TMRF ⇄ Scene: values against the hand-built fixture, exact rewrites, fresh exports and options."""

import copy
import json
import math

import numpy as np
import pytest
import tmrf_fixtures as fx
from retro_models.formats import extras
from retro_models.formats.scene import Animation, Channel, Layer, Mesh, Scene, axis_matrix, compose
from retro_models.formats.tmrf import convert, media
from retro_models.formats.tmrf import resources as res


@pytest.fixture(scope="module")
def data() -> bytes:
    return fx.full_file()


@pytest.fixture
def scene(data):
    return convert.to_scene(media.read(data))


def types(model):
    return [model.type_name(r) for r in model.walk()]


def strip_layout(scene):
    scene = copy.deepcopy(scene)
    scene.extras = {}
    for item in scene.skeletons + scene.meshes + scene.animations:
        item.extras = {}
    for skeleton in scene.skeletons:
        skeleton.bone_extras = [{} for _ in skeleton.bone_names]
    return scene


def test_skeleton(scene):
    (skeleton,) = scene.skeletons
    assert skeleton.name == "skel" and skeleton.bone_names == ["root", "arm"]
    assert skeleton.parents.tolist() == [-1, 0]
    np.testing.assert_allclose(skeleton.rest[0], compose(np.array([1, 2, 3.0]), np.array([1, 0, 0, 0.0])))
    angle = 2 * math.atan2(0.6, 0.8)
    rz = [[math.cos(angle), -math.sin(angle), 0], [math.sin(angle), math.cos(angle), 0], [0, 0, 1]]
    np.testing.assert_allclose(skeleton.rest[1][:3, :3], rz, atol=1e-6)
    np.testing.assert_allclose(skeleton.rest[1][:3, 3], [1, 3.5, 3])


def test_mesh(scene):
    (mesh,) = scene.meshes
    assert mesh.name == "mesh"
    assert mesh.positions.tolist() == [[0, 0, 0], [1, 0, 0], [0, 1, 0]]
    assert mesh.triangles.tolist() == [[0, 1, 2]]
    assert mesh.normals.data.tolist() == [[0, 0, 1]] * 3  # Normals win over CompressedNormals
    assert [(layer.name, layer.data.tolist()) for layer in mesh.uv_layers] == [
        ("wood", [[0, 0], [1, 0], [0, 1]])
    ]
    assert mesh.tangents.data.tolist() == [[1, 0, 0, 1]] * 3  # vertical (0, 1, 0) = normal × horizontal
    assert mesh.skeleton == 0
    assert mesh.skin_joints.tolist() == [[0, 0], [0, 1], [0, 1]]
    assert mesh.skin_weights.tolist() == [[1, 0], [0.25, 0.75], [0.25, 0.75]]
    (material,) = scene.materials
    assert mesh.materials == [0] and material.textures[0].uv_layer == "wood"
    assert [(image.name, image.pixels) for image in scene.images] == [("wood", None)]


def test_frame_animation(scene):
    walk = scene.animations[0]
    assert (walk.name, walk.fps, walk.frame_end, walk.skeleton) == ("walk", 24.0, 1, 0)
    channels = {(c.target, c.path): c for c in walk.channels}
    root_location = channels["root", "location"]
    assert root_location.times.tolist() == [0, 1]
    assert root_location.values.tolist() == [[1, 2, 3], [1, 2, 4]]
    np.testing.assert_allclose(
        channels["root", "rotation_quaternion"].values, [[1, 0, 0, 0], [0.8, 0, 0.6, 0]]
    )
    assert channels["arm", "location"].values.tolist() == [[0, 1.5, 0]] * 2
    z = 16384 / 32767
    np.testing.assert_allclose(
        channels["arm", "rotation_quaternion"].values,
        [[math.sqrt(1 - z * z), 0, 0, z], [0, 0, 0, -1]],
        atol=1e-12,
    )


def test_track_animation(scene):
    run = scene.animations[1]
    # 1.5 s long: shown at the walk's 24 fps (the scene's rate) with keys at 0 s and 1.5 s, so it plays
    # at its own speed; its own rate (TRACK_FPS frames a second) is kept for export.
    assert (run.name, run.fps, run.frame_end) == ("run", 24.0, 36)
    assert run.extras[convert.OWN_FPS] == convert.TRACK_FPS
    channels = {(c.target, c.path): c for c in run.channels}
    assert channels["root", "location"].times.tolist() == [0, 36]
    assert channels["root", "location"].values.tolist() == [[0, 0, 0], [1, 0, 0]]
    assert channels["root", "rotation_quaternion"].values.tolist() == [[1, 0, 0, 0], [0, 0, 0, 1]]


def test_warnings_reach_the_scene(scene):
    assert any("Mystery" in w for w in scene.warnings)


def test_extras_pass_the_codec_unchanged(scene):
    """What Blender keeps of the extras (JSON through the codec) gives every value back as it was."""
    items = [scene, *scene.skeletons, *scene.meshes, *scene.animations]
    for value in [item.extras for item in items] + scene.skeletons[0].bone_extras:
        assert extras.decode(json.loads(json.dumps(extras.encode(value)))) == value


def test_unedited_scene_writes_the_original_bytes(scene, data):
    assert media.write(convert.from_scene(scene)) == data


def test_tolerance_perturbed_scene_writes_the_original_bytes(scene, data):
    scene.skeletons[0].rest = scene.skeletons[0].rest + 1e-6
    for mesh in scene.meshes:  # the order of a vertex's influences is not kept by every editor
        mesh.skin_joints = mesh.skin_joints[:, ::-1].copy()
        mesh.skin_weights = mesh.skin_weights[:, ::-1].copy()
    scene.animations.reverse()
    assert media.write(convert.from_scene(scene)) == data


def test_compressed_normal_fixes_survive():
    resources = fx.body()
    mesh = resources[3]
    mesh.children = [fx.Res(fx.ident("CompressedNormals"), b"\x30\x39\x00\x00" + b"\x40\x00\x80\x00" * 2)]
    data = fx.assemble(resources)
    scene = convert.to_scene(media.read(data))
    np.testing.assert_allclose(scene.meshes[0].normals.data[0], [0, 0, 1])
    assert media.write(convert.from_scene(scene)) == data


def test_edits_reach_the_file(scene):
    scene.meshes[0].positions[1] = [7, 8, 9]
    scene.meshes[0].skin_weights[0] = [0.5, 0.5]
    scene.meshes[0].skin_joints[0] = [0, 1]
    scene.skeletons[0].rest[1][:3, 3] += 1
    scene.animations[0].channels[0].values[1] = [4, 5, 6]
    model = convert.from_scene(scene)
    back = media.read(media.write(model))
    assert back.warnings == [w for w in back.warnings if "Mystery" in w]
    points = back.find("pts").content.points
    assert points.tolist() == [[0, 0, 0], [7, 8, 9], [0, 1, 0], [5, 5, 5]]  # the unused point stays
    again = convert.to_scene(back)
    assert again.meshes[0].skin_weights[0].tolist() == [0.5, 0.5]
    np.testing.assert_allclose(again.skeletons[0].rest[1][:3, 3], [2, 4.5, 4], atol=1e-6)
    assert again.animations[0].channels[0].values[1].tolist() == [4, 5, 6]


def test_renamed_objects_are_renamed_in_the_toc(scene):
    scene.meshes[0].name = "body"
    back = media.read(media.write(convert.from_scene(scene)))
    assert back.find("body") is not None and back.find("mesh") is None


def test_fresh_export_reads_back_the_same_values(scene):
    fresh = strip_layout(scene)
    model = convert.from_scene(fresh)
    data = media.write(model)
    back = media.read(data)
    assert back.warnings == []
    assert types(back) == [
        "TableOfContents",
        "Hints",
        "AX3Skeleton",
        "3DPoints",
        "AX3SkeletalDeform",
        "TriangleMesh",
        "CompressedNormals",
        "Texture",
        "TextureCoordinates",
        "TangentVectors",
        "AX3FrameAnimation",
        "AX3FrameAnimation",
    ]
    again = convert.to_scene(back)
    np.testing.assert_allclose(again.skeletons[0].rest, scene.skeletons[0].rest, atol=1e-6)
    mesh, original = again.meshes[0], scene.meshes[0]
    assert mesh.positions.tolist() == original.positions.tolist()
    np.testing.assert_allclose(mesh.normals.data, original.normals.data, atol=1e-4)
    assert mesh.uv_layers[0].data.tolist() == original.uv_layers[0].data.tolist()
    np.testing.assert_allclose(mesh.tangents.data, original.tangents.data, atol=1e-6)
    dense = lambda m: convert._dense_weights(m.skin_joints, m.skin_weights, 2)  # noqa: E731
    np.testing.assert_array_equal(dense(mesh), dense(original))
    for got, want in zip(again.animations, scene.animations, strict=True):
        assert got.name == want.name
        for c in want.channels:
            match = next(g for g in got.channels if (g.target, g.path) == (c.target, c.path))
            frames = np.searchsorted(match.times, c.times * got.fps / want.fps)
            np.testing.assert_allclose(match.values[frames], c.values, atol=1e-4)
    # a second fresh round is stable
    assert media.write(convert.from_scene(strip_layout(again))) == data


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"normals": "none"}, {"Normals"}),
        (
            {"normals": "compressed", "tangents": "compressed"},
            {"CompressedNormals", "CompressedTangentVectors"},
        ),
        ({"tangents": "high"}, {"CompressedNormals", "HighCompressedTangentVectors"}),
        ({"animation": "track"}, {"AX3TrackAnimation"}),
    ],
)
def test_options(scene, options, expected):
    model = convert.from_scene(strip_layout(scene), **options)
    back = media.read(media.write(model))
    assert expected <= set(types(back))
    assert back.warnings == []


def test_high_tangents_decode_close_to_the_scene(scene):
    back = media.read(media.write(convert.from_scene(strip_layout(scene), tangents="high")))
    np.testing.assert_allclose(
        convert.to_scene(back).meshes[0].tangents.data, scene.meshes[0].tangents.data, atol=1e-3
    )


def test_s16_orientations(scene):
    model = convert.from_scene(strip_layout(scene), s16=True)
    bones = [b for r in model.walk() if isinstance(r.content, res.FrameAnimation) for b in r.content.bones]
    assert bones and all(b.flags & res.ORIENTATION_S16 and b.orientations.dtype == np.int16 for b in bones)
    walk = convert.to_scene(media.read(media.write(model))).animations[0]
    np.testing.assert_allclose(walk.channels[1].values, scene.animations[0].channels[1].values, atol=1e-4)


def test_override_of_an_imported_file_changes_only_what_was_asked(scene):
    back = media.read(media.write(convert.from_scene(scene, tangents="high", s16=True)))
    assert types(back).count("HighCompressedTangentVectors") == 3  # each tangent list, re-encoded
    assert "TangentVectors" not in types(back) and "CompressedTangentVectors" not in types(back)
    frame = next(r.content for r in back.walk() if isinstance(r.content, res.FrameAnimation))
    assert all(b.flags & res.ORIENTATION_S16 for b in frame.bones)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("static_mesh", ["3DPoints", "TriangleMesh"]),
        ("skinned_model", ["3DPoints", "AX3SkeletalDeform", "TriangleMesh"]),
        ("skeleton", ["AX3Skeleton"]),
        ("animations", ["AX3FrameAnimation", "AX3TrackAnimation"]),
    ],
)
def test_content_selection(scene, content, expected):
    for source in (scene, strip_layout(scene)):
        back = media.read(media.write(convert.from_scene(source, content=content)))
        kept = [t for t in types(back) if t in res.HINTED_TYPES]
        # a fresh export writes frame animations unless asked otherwise
        assert kept == (expected if source is scene or content != "animations" else ["AX3FrameAnimation"] * 2)
        assert "TMatVariants" not in types(back)


def test_axis_conversion(data):
    axis = axis_matrix("-Z", "Y")
    scene = convert.to_scene(media.read(data), axis)
    assert scene.meshes[0].positions.tolist() == [[0, 0, 0], [1, 0, 0], [0, 0, 1]]  # file Y is up
    assert scene.meshes[0].normals.data.tolist() == [[0, -1, 0]] * 3
    back = media.read(media.write(convert.from_scene(scene, axis=axis)))
    model = media.read(data)
    assert back.find("pts").content.points.tolist() == model.find("pts").content.points.tolist()
    np.testing.assert_allclose(
        back.find("skel").content.bones["orientation"],
        model.find("skel").content.bones["orientation"],
        atol=1e-6,
    )
    walk = lambda m: m.find("walk").content.bones[0].orientations  # noqa: E731
    np.testing.assert_allclose(walk(back), walk(model), atol=1e-6)


def test_bad_options(scene):
    with pytest.raises(ValueError, match="normals must be one of"):
        convert.from_scene(scene, normals="tiny")
    with pytest.raises(ValueError, match="need compressed normals"):
        convert.from_scene(scene, normals="none", tangents="high")


def test_scene_from_another_format():
    """Corner normals and UVs, no materials, no skin: a static mesh with one texture per UV layer."""
    triangles = np.array([[0, 1, 2], [0, 2, 3]], np.int32)
    corner_normals = np.tile(np.array([[0, 0, 1]], np.float32), (6, 1))
    corner_uvs = np.array([[0, 0], [1, 0], [1, 1], [0, 0], [1, 1], [0, 1]], np.float32)
    mesh = Mesh(
        "quad",
        np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32),
        triangles,
        normals=Layer("n", corner_normals, "CORNER"),
        uv_layers=[Layer("uv", corner_uvs, "CORNER")],
    )
    data = media.write(convert.from_scene(Scene(meshes=[mesh]), normals="none"))
    back = media.read(data)
    assert types(back) == [
        "TableOfContents",
        "Hints",
        "3DPoints",
        "TriangleMesh",
        "Normals",
        "Texture",
        "TextureCoordinates",
    ]
    scene = convert.to_scene(back)
    assert scene.images == [] and scene.materials == []  # the Texture names no texture
    assert media.write(convert.from_scene(scene)) == data
    again = scene.meshes[0]
    assert again.uv_layers[0].data.tolist() == [[0, 0], [1, 0], [1, 1], [0, 1]]
    assert again.normals.data.tolist() == [[0, 0, 1]] * 4
    assert again.triangles.tolist() == triangles.tolist()


def test_tangent_multipliers_are_kept(data):
    model = media.read(data)
    mesh = next(r for r in model.walk() if model.type_name(r) == "TriangleMesh")
    texture = next(r for r in mesh.children if model.type_name(r) == "Texture")
    # The compressed tangent list first (the one shown), with multipliers that are not bare signs.
    texture.children.sort(key=lambda r: model.type_name(r) != "CompressedTangentVectors")
    compressed = texture.children[0].content
    compressed.multipliers[:] = (0.875, -0.875, 1.0)
    scene = convert.to_scene(media.read(media.write(model)))
    assert scene.meshes[0].tangents.data[:, 3].tolist() == [0.875, -0.875, 1.0]
    for options in ({}, {"tangents": "compressed"}):  # kept layout, and written again from the scene
        source = strip_layout(scene) if options else scene
        back = media.read(media.write(convert.from_scene(source, **options)))
        written = next(r.content for r in back.walk() if back.type_name(r) == "CompressedTangentVectors")
        assert written.multipliers.tolist() == [0.875, -0.875, 1.0], options


def shared_point_file(data) -> bytes:
    """The fixture with its mesh's last two vertices on one point (the second's)."""
    model = media.read(data)
    mesh = next(r.content for r in model.walk() if model.type_name(r) == "TriangleMesh")
    mesh.vertex_points[2] = mesh.vertex_points[1]
    return media.write(model)


@pytest.mark.parametrize(
    ("moves", "points"),
    [
        ({2: (0.0, 0.5, 0.0)}, 1),  # one of two sharers moves: it gets a point of its own
        ({1: (0.0, 0.5, 0.0), 2: (0.0, 0.5, 0.0)}, 0),  # both move alike: the point moves
    ],
)
def test_a_vertex_moved_off_a_shared_point_is_kept(data, moves, points):
    source = shared_point_file(data)
    scene = convert.to_scene(media.read(source))
    mesh = scene.meshes[0]
    for vertex, offset in moves.items():
        mesh.positions[vertex] += np.array(offset, np.float32)
    back = media.read(media.write(convert.from_scene(scene)))
    again = convert.to_scene(back)
    np.testing.assert_array_equal(again.meshes[0].positions, mesh.positions)
    before = next(r.content for r in media.read(source).walk() if isinstance(r.content, res.PointList))
    after = next(r.content for r in back.walk() if isinstance(r.content, res.PointList))
    assert len(after.points) == len(before.points) + points
    # The skin follows: the new point blends as the one it left.
    np.testing.assert_allclose(again.meshes[0].skin_weights, scene.meshes[0].skin_weights)


def test_new_mesh_splits_vertices_at_uv_and_normal_seams():
    triangles = np.array([[0, 1, 2], [0, 2, 3]], np.int32)
    positions = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32)
    # Per corner: the second triangle has its own UVs at the shared corners and a flat normal of its own.
    uv = np.array([[0, 0], [1, 0], [1, 1], [0.5, 0], [0.5, 1], [0, 1]], np.float32)
    normals = np.array([[0, 0, 1]] * 3 + [[0, 0.6, 0.8]] * 3, np.float32)
    mesh = Mesh(
        "quad", positions, triangles, Layer("normals", normals, "CORNER"), [Layer("UVMap", uv, "CORNER")]
    )
    back = convert.to_scene(
        media.read(media.write(convert.from_scene(Scene("quad", meshes=[mesh]), normals="none")))
    )
    (got,) = back.meshes
    assert len(got.positions) == 6  # vertices 0 and 2 split
    corners = got.triangles.reshape(-1)
    np.testing.assert_array_equal(got.positions[corners], positions[triangles.reshape(-1)])
    np.testing.assert_array_equal(got.uv_layers[0].data[corners], uv)
    np.testing.assert_allclose(got.normals.data[corners], normals, atol=1e-6)


def test_eased_track_gets_the_keys_the_game_needs(scene, data):
    """A Bézier-eased position track: keys added where the game's linear interpolation would leave
    the curve, within 1e-4 at every quarter frame; the report says how many; the rest keep their bytes."""
    from retro_models.formats.curves import sample

    run = scene.animations[1]
    location = next(c for c in run.channels if c.path == "location")
    times, values = location.times, location.values
    third = (times[1] - times[0]) / 3
    flat = np.stack([np.broadcast_to(times[:, None], values.shape), values], -1)
    location.interpolation = "BEZIER"
    location.handles_left = flat - [third, 0]
    location.handles_right = flat + [third, 0]
    model = convert.from_scene(scene)
    track = next(r.content for r in model.walk() if isinstance(r.content, res.TrackAnimation))
    (keys,) = track.tracks
    (report,) = [w for w in scene.warnings if "keys added" in w]
    assert len(keys) == 2 + int(report.split()[0]) > 2
    frames = np.arange(times[0], times[-1] + 0.25, 0.25)
    key_frames = keys["time"].astype(np.float64) * run.fps
    game = np.stack([np.interp(frames, key_frames, keys["position"][:, k]) for k in range(3)], axis=1)
    eased = sample(times, values, "BEZIER", location.handles_left, location.handles_right, frames)
    assert np.abs(game - eased).max() <= 1e-4
    assert np.abs(eased[len(frames) // 4] - (values[0] + (values[1] - values[0]) / 4)).max() > 0.05  # eased
    np.testing.assert_allclose(np.linalg.norm(keys["orientation"], axis=1), 1, atol=1e-6)
    before, after = media.read(data), model
    for kind in (res.Skeleton, res.FrameAnimation, res.TriangleMesh):
        old = next(r for r in before.walk() if isinstance(r.content, kind))
        new = next(r for r in after.walk() if isinstance(r.content, kind))
        assert media.write(media.MediaFile(before.strings, [old])) == media.write(
            media.MediaFile(after.strings, [new])
        )


def test_linear_quaternions_made_in_blender_get_the_keys_the_slerp_needs(scene, data):
    """Blender plays LINEAR quaternion keys component by component: a new animation's track gets the
    keys that bring the game's slerp within 1e-4 of that; a track read from the file (its LINEAR keys
    are the file's slerp) gets none."""
    from retro_models.formats.curves import slerp

    times = np.array([0.0, 10.0])
    quats = np.array([[1.0, 0, 0, 0], [np.cos(1.3), 0, 0, np.sin(1.3)]])  # 149° about Z
    swing = Animation("swing", fps=24.0, frame_end=10.0, skeleton=0)
    swing.channels = [
        Channel("bone", "arm", "location", times, np.zeros((2, 3))),
        Channel("bone", "arm", "rotation_quaternion", times, quats),
    ]
    scene.animations.append(swing)
    model = convert.from_scene(scene, animation="track")
    tracks = {
        model.strings.name(r.content.name) or "": r.content.tracks
        for r in model.walk()
        if isinstance(r.content, res.TrackAnimation)
    }
    (keys,) = tracks["swing"]
    (report,) = [w for w in scene.warnings if "keys added" in w]
    assert len(keys) == 2 + int(report.split()[0]) > 2
    frames = np.arange(0, 10.25, 0.25)
    game = slerp(keys["time"].astype(np.float64) * 24, keys["orientation"][:, [3, 0, 1, 2]], frames)
    blender = quats[0] + (quats[1] - quats[0]) * frames[:, None] / 10
    blender /= np.linalg.norm(blender, axis=1, keepdims=True)
    assert np.minimum(np.abs(game - blender).max(axis=1), np.abs(game + blender).max(axis=1)).max() <= 1e-4
    assert np.abs(slerp(times, quats, [2.5]) - blender[10]).max() > 1e-3  # the slerp alone is off
    (run,) = tracks["run"]
    assert run.tobytes() == next(
        r.content.tracks[0].tobytes()
        for r in media.read(data).walk()
        if isinstance(r.content, res.TrackAnimation)
    )
