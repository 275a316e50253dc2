"""TTYD model ⇄ Scene: what the scene shows, exact re-export, edits, scenes built without extras."""

import copy

import numpy as np
import pytest
import ttyd_fixtures as F
from hypothesis import given, settings
from hypothesis import strategies as st
from retro_models.formats import extras as extras_codec
from retro_models.formats.errors import ExportError, FormatError
from retro_models.formats.scene import axis_matrix, compose
from retro_models.formats.textures import gx
from retro_models.formats.textures import tpl as tpl_format
from retro_models.formats.ttyd import channels as channels_module
from retro_models.formats.ttyd import convert, evaluate
from retro_models.formats.ttyd import model as fmt
from retro_models.formats.ttyd.evaluate import Evaluator, local_matrices, world_matrices


@pytest.fixture(scope="module")
def data() -> bytes:
    return F.build()


@pytest.fixture
def model(data) -> fmt.Model:
    return fmt.read(data, "c_test")


@pytest.fixture
def scene(model):
    return convert.to_scene(model)


def channels(scene, animation="walk"):
    anim = next(a for a in scene.animations if a.name == animation)
    return {(c.target_kind, c.target, c.path, c.index): c for c in anim.channels}


def make_tpl() -> tuple[bytes, tpl_format.TPL]:
    rng = np.random.default_rng(1)
    images = [
        tpl_format.image_from_pixels(rng.integers(0, 256, (4, 4, 4), np.uint8), gx.RGBA8, wrap_s=1, wrap_t=2),
        tpl_format.image_from_pixels(rng.integers(0, 256, (8, 4, 4), np.uint8), gx.RGB5A3),
    ]
    raw = tpl_format.write(tpl_format.TPL(images))
    return raw, tpl_format.read(raw)


# -- model → scene ------------------------------------------------------------------


def test_skeleton_from_groups(scene):
    (skeleton,) = scene.skeletons
    assert skeleton.bone_names == ["root", "body"]  # parents first; the file keeps the root last
    assert skeleton.parents.tolist() == [-1, 0]
    axis = axis_matrix("-Z", "Y")
    np.testing.assert_allclose(skeleton.rest[0], axis)
    np.testing.assert_allclose(skeleton.rest[1][:3, 3], [0, 0, 1])  # file y 1 → Blender z 1
    assert skeleton.bone_extras[1]["group"] == 0 and skeleton.bone_extras[1]["node"] == 24
    assert skeleton.bone_extras[1]["node_floats"] == F.BODY_NODE


def test_mesh_from_shape(scene):
    (mesh,) = scene.meshes
    assert mesh.name == "body" and mesh.skeleton == 0
    # file (x, y, z) → Blender (x, −z, y), plus the body's translation y 1
    np.testing.assert_allclose(mesh.positions, [[0, 0, 1], [1, 0, 1], [1, 0, 3], [0, 0, 3]])
    assert mesh.triangles.tolist() == [[0, 2, 1], [0, 3, 2]]  # fan (0,1,2),(0,2,3), counter-clockwise
    assert mesh.skin_joints.ravel().tolist() == [1] * 4 and mesh.skin_weights.ravel().tolist() == [1.0] * 4
    uv = mesh.uv_layers[0]
    assert (uv.name, uv.domain) == ("UV0", "CORNER")
    np.testing.assert_allclose(uv.data, [[0, 1], [1, 0], [1, 1], [0, 1], [0, 0], [1, 0]])  # V flipped
    assert mesh.normals.domain == "CORNER"
    np.testing.assert_allclose(mesh.normals.data, np.tile([0, -1, 0], (6, 1)), atol=1e-7)
    np.testing.assert_allclose(mesh.color_layers[0].data[0], np.array(F.COLORS[0]) / 255)
    assert mesh.material_indices.tolist() == [0, 0] and mesh.materials == [0]
    assert not mesh.hidden


def test_material_from_subshape(scene):
    (material,) = scene.materials
    assert material.name == "body" and material.alpha_mode == "OPAQUE" and not material.backface_culling
    (slot,) = material.textures
    assert (slot.image, slot.uv_layer, slot.wrap_s, slot.wrap_t) == (0, "UV0", "REPEAT", "REPEAT")
    assert slot.translate == (0.25, -0.0) and slot.scale == (1.0, 1.0) and slot.rotate == 0.0
    assert [image.name for image in scene.images] == ["tex_a", "tex_b"]
    assert all(image.pixels is None for image in scene.images)


@pytest.mark.parametrize(("display", "alpha"), [(0, "CLIP"), (1, "OPAQUE"), (2, "CLIP"), (3, "BLEND")])
def test_display_modes(model, display, alpha):
    model.shapes["display_mode"] = display
    model.shapes["cull_mode"] = 0
    (material,) = convert.to_scene(model).materials
    assert material.alpha_mode == alpha and material.backface_culling


@pytest.mark.parametrize(
    ("flags", "wraps"),
    [
        (0x0, ("CLAMP", "CLAMP")),
        (0x1, ("REPEAT", "CLAMP")),
        (0xE, ("MIRROR", "MIRROR")),
        (0x80000000, ("REPEAT", "MIRROR")),
    ],
)
def test_wrap_flags(model, flags, wraps):
    model.samplers["wrap"] = flags
    raw, tpl = make_tpl()
    (slot,) = convert.to_scene(model, tpl).materials[0].textures
    assert (slot.wrap_s, slot.wrap_t) == wraps


def test_node_channels_are_exact_beziers(scene, model):
    ch = channels(scene)
    location = ch[("bone", "body", "location", 1)]
    assert location.interpolation == "BEZIER"
    assert location.times.tolist() == [0.0, 10.0] and location.values.ravel().tolist() == [1.0, 3.0]
    # tangent_in 45° → right handle of key 0 rises 1 per frame over a third of 10 frames
    np.testing.assert_allclose(location.handles_right[0, 0], [10 / 3, 1 + 10 / 3])
    np.testing.assert_allclose(location.handles_left[1, 0], [20 / 3, 3.0])
    frames = np.linspace(0, 10, 41)
    expected = Evaluator(model, model.animations[0].data).at(frames).node_floats
    np.testing.assert_allclose(convert.sample_channel(location, frames)[:, 0], expected[:, 25], atol=1e-6)
    rotation = ch[("bone", "body", "rotation_euler", 0)]
    np.testing.assert_allclose(
        convert.sample_channel(rotation, frames)[:, 0], np.radians(expected[:, 33]), atol=1e-6
    )


def test_shape_key_texture_and_visibility_channels(scene):
    (key,) = scene.meshes[0].shape_keys
    assert key.name == "walk.1"
    np.testing.assert_allclose(key.positions[[1, 2]], [[2, 0, 1], [1, 0, 2.5]])
    ch = channels(scene)
    weight = ch[("shape_key", "body", "walk.1", None)]
    assert (weight.interpolation, weight.times.tolist(), weight.values.ravel().tolist()) == (
        "LINEAR",
        [0, 10],
        [0, 1],
    )
    translate = ch[("material", "body", "texture.0.translate", None)]
    assert translate.interpolation == "CONSTANT"
    np.testing.assert_allclose(translate.values, [[0.25, 0], [0.75, 0]])
    assert ch[("material", "body", "texture.0.image_index", None)].values.ravel().tolist() == [0, 1]
    hide = ch[("object", "body", "hide", None)]
    assert (hide.interpolation, hide.values.ravel().tolist()) == ("CONSTANT", [0, 1])
    idle = next(a for a in scene.animations if a.name == "idle")
    assert idle.channels == [] and idle.extras["data"] is False
    walk = next(a for a in scene.animations if a.name == "walk")
    assert (walk.fps, walk.frame_start, walk.frame_end, walk.loop) == (60.0, 0.0, 20.0, True)


def native(anim: fmt.AnimationData) -> fmt.AnimationData:
    """The animation with its delta tables in this machine's byte order (as built in memory)."""
    anim = copy.deepcopy(anim)
    for table, _ in fmt.DELTA_TABLES.values():
        setattr(anim, table, getattr(anim, table).astype(getattr(anim, table).dtype.newbyteorder("=")))
    return anim


def varied(walk: fmt.AnimationData) -> list[fmt.Animation]:
    """The fixture's walk, an entry without data, the walk with one keyframe, in this machine's byte
    order, not looping from frame 5, and without keyframes."""
    still = copy.deepcopy(walk)
    still.base["loop"], still.base["start"] = 0, 5.0
    single = copy.deepcopy(walk)
    single.keyframes = single.keyframes[1:]  # one keyframe: applied in full at every time
    empty = copy.deepcopy(walk)
    empty.keyframes = empty.keyframes[:0]
    return [
        fmt.Animation(name, data)
        for name, data in [
            (b"walk", walk),
            (b"none", None),
            (b"single", single),
            (b"native", native(walk)),
            (b"still", still),
            (b"empty", empty),
        ]
    ]


def test_animations_converted_together_are_each_as_alone(model):
    model.animations = varied(model.animations[0].data)
    together = convert.to_scene(model)
    for a, animation in enumerate(model.animations):
        alone = copy.deepcopy(model)
        alone.animations = [fmt.Animation(b"x%d" % n, None) for n in range(a)] + [animation]
        assert_same_animation(together, convert.to_scene(alone), a)
    assert together.animations[0].channels


def test_animations_in_several_chunks_are_as_in_one(model, monkeypatch):
    model.animations = varied(model.animations[0].data)
    together = convert.to_scene(model)
    monkeypatch.setattr(evaluate, "CHUNK_CELLS", 1)  # every animation alone
    anims = [a.data for a in model.animations if a.data is not None and len(a.data.keyframes)]
    running = [evaluate.all_running_indices(anim) for anim in anims]
    assert len(evaluate.Sums.chunks(model, anims, running, "", [0] * len(anims))) == len(anims)
    chunked = convert.to_scene(model)
    for a in range(len(model.animations)):
        assert_same_animation(together, chunked, a)


def assert_same_animation(scene, other, a):
    """Animation ``a`` of both scenes has the same channels and shape keys, bit for bit."""
    got, want = scene.animations[a], other.animations[a]
    assert len(got.channels) == len(want.channels)
    for mine, theirs in zip(got.channels, want.channels, strict=True):
        assert (mine.target_kind, mine.target, mine.path, mine.index, mine.interpolation) == (
            theirs.target_kind,
            theirs.target,
            theirs.path,
            theirs.index,
            theirs.interpolation,
        )
        for field in ("times", "values", "handles_left", "handles_right"):
            x, y = getattr(mine, field), getattr(theirs, field)
            assert (x is None and y is None) or x.tobytes() == y.tobytes()
        assert mine.origin == theirs.origin
    keys = [k for k in scene.meshes[0].shape_keys if k.extras["animation"] == got.name]
    other_keys = [k for k in other.meshes[0].shape_keys if k.extras["animation"] == want.name]
    assert [k.positions.tobytes() for k in keys] == [k.positions.tobytes() for k in other_keys]


def test_baked_channels_reproduce_the_node_matrices(model):
    model.node_floats[24 + 12] = 0.5  # a rotation centre: no longer one float per channel
    scene = convert.to_scene(model)
    ch = channels(scene)
    location = ch[("bone", "body", "location", None)]
    rotation = ch[("bone", "body", "rotation_quaternion", None)]
    scale = ch[("bone", "body", "scale", None)]
    assert location.interpolation == "BEZIER" and len(location.times) == 21
    evaluator = Evaluator(model, model.animations[0].data)
    pose = evaluator.at(held(location.times)).node_floats
    expected = local_matrices(model, pose)[:, 0]
    np.testing.assert_allclose(compose(location.values, rotation.values, scale.values), expected, atol=1e-9)
    # Between the frames too: the handles follow the game's Hermite curves.
    frames = np.arange(0.0, 20.0, 0.1)
    quaternions = convert.sample_channel(rotation, frames)
    quaternions /= np.linalg.norm(quaternions, axis=1, keepdims=True)
    played = compose(
        convert.sample_channel(location, frames), quaternions, convert.sample_channel(scale, frames)
    )
    np.testing.assert_allclose(
        played, local_matrices(model, evaluator.at(frames).node_floats)[:, 0], atol=1e-4
    )


def held(times):
    """The walk's key times with its loop end (20) just before the seam, as the baked keys hold it."""
    return np.minimum(times, np.nextafter(20.0, 0.0))


def test_root_channels_carry_the_axis(model):
    anim = model.animations[0].data
    anim.node_deltas["step"][0] = 1  # move root translation y instead of the body's
    anim.node_deltas["step"][1] = 0
    scene = convert.to_scene(model)
    ch = channels(scene)
    location = ch[("bone", "root", "location", None)]
    pose = Evaluator(model, anim).at(held(location.times)).node_floats
    expected = axis_matrix("-Z", "Y") @ local_matrices(model, pose)[:, 1]
    np.testing.assert_allclose(location.values, expected[:, :3, 3], atol=1e-9)


# -- scene → model ------------------------------------------------------------------


def test_round_trip_is_byte_exact(data, scene):
    model, tpl = convert.from_scene(scene)
    assert tpl is None
    assert fmt.write(model) == data


def test_format_only_fields_are_plain_bytes(model, scene):
    kept = scene.extras["ttyd"]
    assert (kept["name"], kept["texture_name"]) == (b"c_test", b"c_test_tex")
    assert kept["tables"]["positions"] == fmt.table_bytes(model.positions)
    assert kept["layout"]["fill_bytes"] == [raw for _, raw in model.layout.fill]
    assert scene.skeletons[0].bone_extras[0]["name"] == b"root" and scene.meshes[0].extras["name"] == b"body"
    walk = next(a for a in scene.animations if a.name == "walk")
    assert walk.extras["tables"]["unknown_records"] == bytes(range(1, 9))


def test_round_trip_through_the_extras_codec_is_byte_exact(data):
    raw, tpl = make_tpl()
    tpl.images.append(tpl_format.image_from_pixels(np.full((8, 8, 4), 90, np.uint8), gx.C8))
    raw = tpl_format.write(tpl)
    tpl = tpl_format.read(raw)
    scene = convert.to_scene(fmt.read(data), tpl)
    through = lambda extras: extras_codec.decode(extras_codec.encode(extras))  # noqa: E731
    scene.extras = through(scene.extras)
    for item in scene.meshes + scene.materials + scene.images + scene.animations:
        item.extras = through(item.extras)
    scene.skeletons[0].bone_extras = [through(e) for e in scene.skeletons[0].bone_extras]
    model, tpl_back = convert.from_scene(scene)
    assert fmt.write(model) == data and tpl_format.write(tpl_back) == raw


def perturb(scene, amount=1e-6):
    scene = copy.deepcopy(scene)
    for mesh in scene.meshes:
        mesh.positions = mesh.positions + amount
        for layer in [mesh.normals, *mesh.uv_layers, *mesh.color_layers]:
            layer.data = layer.data + amount
        for key in mesh.shape_keys:
            key.positions = key.positions + amount
    for skeleton in scene.skeletons:
        skeleton.rest = skeleton.rest + amount
    for material in scene.materials:
        for slot in material.textures:
            slot.translate = (slot.translate[0] + amount, slot.translate[1] + amount)
            slot.rotate += amount
    for animation in scene.animations:
        for channel in animation.channels:
            channel.values = channel.values + amount
            channel.times = channel.times + amount
            if channel.handles_left is not None:
                channel.handles_left = channel.handles_left + amount
                channel.handles_right = channel.handles_right + amount
    return scene


def test_round_trip_survives_float_noise(data, scene):
    model, _ = convert.from_scene(perturb(scene))
    assert fmt.write(model) == data


def test_round_trip_with_tpl(data):
    raw, tpl = make_tpl()
    scene = convert.to_scene(fmt.read(data), tpl)
    assert scene.images[0].pixels.shape == (4, 4, 4) and scene.images[1].pixels.shape == (8, 4, 4)
    np.testing.assert_array_equal(scene.images[0].pixels, tpl.images[0].decode())
    model, tpl_back = convert.from_scene(scene)
    assert fmt.write(model) == data
    assert tpl_format.write(tpl_back) == raw


def test_edited_pixels_are_encoded_again(data):
    raw, tpl = make_tpl()
    scene = convert.to_scene(fmt.read(data), tpl)
    scene.images[0].source_bytes = None
    scene.images[0].pixels = np.full((4, 4, 4), 200, np.uint8)
    _, tpl_back = convert.from_scene(scene)
    np.testing.assert_array_equal(tpl_format.read(tpl_format.write(tpl_back)).images[0].decode(), 200)


def test_vertex_and_material_edits_are_written(scene):
    scene.meshes[0].positions[0] = [5.0, 0.0, 1.0]  # file x 5
    scene.materials[0].alpha_mode = "BLEND"
    scene.materials[0].backface_culling = True
    scene.materials[0].textures[0].wrap_s = "MIRROR"
    model, _ = convert.from_scene(scene)
    back = fmt.read(fmt.write(model))
    np.testing.assert_allclose(back.positions[0], [5, 0, 0])
    assert (back.shapes["display_mode"][0], back.shapes["cull_mode"][0]) == (3, 0)
    assert back.samplers["wrap"][0] == 0x6
    assert len(back.animations[0].data.node_deltas) == 2  # untouched animation kept as it was


def test_edited_animation_is_encoded_again(scene):
    location = channels(scene)[("bone", "body", "location", 1)]
    location.values[1, 0] = location.handles_left[1, 0, 1] = 4.0  # end at 4 instead of 3
    model, _ = convert.from_scene(scene)
    back = fmt.read(fmt.write(model))
    evaluator = Evaluator(back, back.animations[0].data)
    frames = np.linspace(0, 10, 21)
    np.testing.assert_allclose(
        evaluator.at(frames).node_floats[:, 25], convert.sample_channel(location, frames)[:, 0], atol=0.03
    )
    original = Evaluator(fmt.read(F.build()), fmt.read(F.build()).animations[0].data).at(frames)
    pose = evaluator.at(frames)
    np.testing.assert_allclose(pose.node_floats[:, 33], original.node_floats[:, 33], atol=0.05)
    np.testing.assert_allclose(pose.positions, original.positions)
    np.testing.assert_allclose(pose.translate, original.translate)
    assert (pose.visibility == original.visibility).all() and (
        pose.frame_offsets == original.frame_offsets
    ).all()
    assert back.animations[0].data.unknown_records.tobytes() == bytes(range(1, 9))


def test_kept_animations_are_compared_again_after_an_edit_adds_textures(model, monkeypatch):
    walk = model.animations[0].data
    model.animations = [fmt.Animation(b"walk", walk), fmt.Animation(b"kept", copy.deepcopy(walk))]
    scene = convert.to_scene(model)
    swap = channels(scene)[("material", "body", "texture.0.image_index", None)]
    swap.values = swap.values + 1  # images 1 and 2: image 2 has no texture entry yet
    calls = []
    original = channels_module.AnimationConverter.convert
    monkeypatch.setattr(
        channels_module.AnimationConverter, "convert", lambda self, *a: calls.append(a) or original(self, *a)
    )
    back, _ = convert.from_scene(scene)
    assert len(back.textures) == 3 and [len(c[0]) for c in calls] == [2, 1]
    kept, edited = (back.animations[n].data.texture_deltas for n in (1, 0))
    assert all(np.array_equal(kept[f], walk.texture_deltas[f]) for f in kept.dtype.names)  # its tables kept
    assert not np.array_equal(edited["frame_step"], walk.texture_deltas["frame_step"])


def test_values_beyond_what_deltas_hold_are_an_export_error(scene):
    location = channels(scene)[("bone", "body", "location", 1)]
    location.values = location.values + 1e15  # 1.3e14 entries of at most 127 sixteenths each
    with pytest.raises(
        ExportError, match=r"^animation '.+': values too far apart to encode: [0-9]+ delta entries$"
    ):
        convert.from_scene(scene)


def strip_extras(scene):
    scene = copy.deepcopy(scene)
    scene.extras = {}
    for item in scene.meshes + scene.materials + scene.images + scene.animations:
        item.extras = {}
    for mesh in scene.meshes:
        for key in mesh.shape_keys:
            key.extras = {}
    for skeleton in scene.skeletons:
        skeleton.bone_extras = []
    for material in scene.materials:
        for slot in material.textures:
            slot.extras = {}
    for animation in scene.animations:
        for channel in animation.channels:
            channel.extras = {}
    return scene


def test_scene_without_extras_exports_the_same_content(data, scene):
    model, _ = convert.from_scene(strip_extras(scene))
    out = fmt.write(model)
    back = fmt.read(out, "fresh")
    again = convert.to_scene(back)
    np.testing.assert_allclose(again.meshes[0].positions, scene.meshes[0].positions, atol=1e-6)
    np.testing.assert_allclose(again.skeletons[0].rest, scene.skeletons[0].rest, atol=1e-6)
    mesh, original = again.meshes[0], scene.meshes[0]
    corners = lambda m: m.positions[m.triangles.reshape(-1)]  # noqa: E731
    np.testing.assert_allclose(corners(mesh), corners(original), atol=1e-6)
    np.testing.assert_allclose(mesh.uv_layers[0].data, original.uv_layers[0].data, atol=1e-6)
    np.testing.assert_allclose(mesh.normals.data, original.normals.data, atol=1e-6)
    np.testing.assert_allclose(mesh.color_layers[0].data, original.color_layers[0].data, atol=1e-6)
    assert [m.alpha_mode for m in again.materials] == [m.alpha_mode for m in scene.materials]
    assert len(back.polygons) == 2 and set(back.polygons["count"]) == {3}
    want, got = channels(scene), channels(again)
    frames = np.linspace(0, 20, 41)
    for key in [("shape_key", "body", "walk.1", None), ("material", "body", "texture.0.translate", None)]:
        np.testing.assert_allclose(
            convert.sample_channel(got[key], frames), convert.sample_channel(want[key], frames), atol=1e-6
        )
    np.testing.assert_allclose(
        convert.sample_channel(got[("bone", "body", "location", 1)], frames),
        convert.sample_channel(want[("bone", "body", "location", 1)], frames),
        atol=0.03,
    )
    assert fmt.write(convert.from_scene(again)[0]) == out


def test_topology_edit_rebuilds_the_geometry(scene):
    mesh = scene.meshes[0]
    mesh.triangles = mesh.triangles[:1]
    mesh.material_indices = mesh.material_indices[:1]
    for layer in [mesh.normals, *mesh.uv_layers, *mesh.color_layers]:
        layer.data = layer.data[:3]
    model, _ = convert.from_scene(scene)
    back = fmt.read(fmt.write(model))
    assert back.polygons.tolist() == [(0, 3)]
    again = convert.to_scene(back)
    assert again.meshes[0].triangles.tolist() == [[0, 2, 1]]
    np.testing.assert_allclose(again.meshes[0].uv_layers[0].data, mesh.uv_layers[0].data, atol=1e-6)


def test_extra_mesh_on_an_occupied_bone_gets_its_own_group(scene):
    extra = copy.deepcopy(scene.meshes[0])
    extra.name, extra.extras, extra.shape_keys = "cape", {}, []
    scene.meshes.append(extra)
    model, _ = convert.from_scene(scene)
    back = fmt.read(fmt.write(model))
    assert [fmt.text(g["name"]) for g in back.groups][-1] == "root"
    assert sorted(back.groups["shape"].tolist()) == [-1, 0, 1]
    again = convert.to_scene(back)
    np.testing.assert_allclose(again.meshes[1].positions, extra.positions, atol=1e-6)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_fuzzed_models_convert_or_fail_cleanly(data, fuzz):
    mutated = bytearray(data)
    for _ in range(fuzz.draw(st.integers(1, 6))):
        mutated[fuzz.draw(st.integers(0, len(mutated) - 1))] = fuzz.draw(st.integers(0, 255))
    try:
        model = fmt.read(bytes(mutated), "fuzz")
    except FormatError:
        return
    with np.errstate(all="ignore"):
        scene = convert.to_scene(model)
        back, _ = convert.from_scene(scene)
    assert fmt.write(back) == bytes(mutated)


def test_baked_channels_are_encoded_again(model):
    model.node_floats[24 + 12] = 0.5  # rotation centre → baked location / quaternion / scale channels
    scene = strip_extras(convert.to_scene(model))
    back = fmt.read(fmt.write(convert.from_scene(scene)[0]))
    ch = channels(scene)
    times = held(ch[("bone", "body", "location", None)].times)
    pose = Evaluator(back, back.animations[0].data).at(times).node_floats
    body = int(np.flatnonzero(back.groups["name"] == b"body")[0])
    got = local_matrices(back, pose)[:, body]
    want = compose(
        *(ch[("bone", "body", p, None)].values for p in ("location", "rotation_quaternion", "scale"))
    )
    np.testing.assert_allclose(got, want, atol=0.05)  # node values are stored in 1/16 steps


# -- odd but readable models --------------------------------------------------------


def test_errors_found_while_converting_name_the_file_and_offset(model, monkeypatch):
    model.shapes["position_count"] = 9  # changed after reading: the converter checks again
    with pytest.raises(FormatError, match="positions") as error:
        convert.to_scene(model, filename="c_test")
    assert (error.value.filename, error.value.offset) == ("c_test", model.layout.offsets[0])
    model.shapes["position_count"] = 4
    monkeypatch.setattr(evaluate, "EVALUATION_BUDGET", 1)
    with pytest.raises(FormatError, match="too large") as error:
        convert.to_scene(model, filename="c_test")
    assert (error.value.filename, error.value.offset) == ("c_test", model.layout.animation_offsets[0])


def test_texture_transform_without_a_sampler_is_animated_without_channels(data, model):
    model.texcoord_transforms = np.concatenate([model.texcoord_transforms] * 2)
    model.animations[0].data.texture_deltas["step"][0] = 1  # the delta moves transform 1: no sampler uses it
    raw = fmt.write(model)
    scene = convert.to_scene(fmt.read(raw))
    assert not any(c.target_kind == "material" for c in scene.animations[0].channels)
    assert fmt.write(convert.from_scene(scene)[0]) == raw


@pytest.mark.parametrize("value", [0.0, np.nan, np.inf])
@pytest.mark.parametrize("node", [0, 24], ids=["root", "body"])
def test_collapsed_or_broken_groups_get_rests_a_bone_can_hold(data, model, node, value):
    model.node_floats[node + 3 : node + 6] = value  # the group's scale
    raw = fmt.write(model)
    with np.errstate(all="ignore"):
        scene = convert.to_scene(fmt.read(raw))
        back, _ = convert.from_scene(scene)
    (skeleton,) = scene.skeletons
    assert np.isfinite(skeleton.rest).all() and np.isfinite(skeleton.local_rest()).all()
    with np.errstate(all="ignore"):
        world = convert.default_axis() @ world_matrices(model, model.node_floats)[0]
        expected = model.positions @ world[:3, :3].T + world[:3, 3]
    np.testing.assert_array_equal(scene.meshes[0].positions, expected.astype(np.float32))  # as the game draws
    assert fmt.write(back) == raw


def test_kept_tables_that_do_not_fit_are_an_export_error(model, scene):
    groups = model.groups.copy()
    groups["child"][1] = 5
    scene.extras["ttyd"]["tables"]["groups"] = fmt.table_bytes(groups)
    with pytest.raises(
        ExportError, match="c_test: the model it makes is not valid: group child link outside"
    ):
        convert.from_scene(scene)
