"""Channel origins: one decision whether a channel was edited.

An unedited channel comes back exactly as imported (keys bit for bit) with its origin, whatever
the builder did to fit it into F-curves; moving one key of one channel gives that channel (and
the channels merged with it into the same F-curves) no origin and leaves every other channel
exact, with its origin.
"""

import bpy
import numpy as np
import pytest
from builder_support import random_quats
from retro_models.formats import scene as sc
from retro_models.operators.blender import compat
from retro_models.operators.blender.build import build_scene
from retro_models.operators.blender.extract import extract_scene
from retro_models.operators.blender.records import read_record

FRAMES = np.array([0.0, 4.0, 9.5, 14.0, 20.0])


def origin_scene() -> sc.Scene:
    """A looping animation whose channels each need a different change to fit into F-curves."""
    rng = np.random.default_rng(11)
    local = sc.compose(rng.normal(size=(3, 3)), random_quats(rng, 3))  # rotated rests
    local[0] = np.eye(4)  # …but the root's
    parents = np.array([-1, 0, 1], np.int32)
    skeleton = sc.Skeleton("Rig", ["root", "arm", "hand"], parents, sc.world_from_local(local, parents))
    arm_rest = local[1, :3, 3]
    turns = np.array(
        [[1.0, 0, 0, 0], [-0.5, -(0.75**0.5), 0, 0], [0, 0, 1, 0], [0.6, 0, 0, -0.8], [-1, 0, 0, 0]]
    )
    channels = [
        # A rotated rest, values no float32 holds.
        sc.Channel("bone", "arm", "location", FRAMES, arm_rest + rng.normal(size=(5, 3)) / 3),
        # Wide turns between keys: slerp keys at whole frames; keys sign-flipped into one hemisphere.
        sc.Channel("bone", "arm", "rotation_quaternion", FRAMES, turns),
        # Keys beyond the loop (0…16): cut at its ends.
        sc.Channel("bone", "root", "location", FRAMES - 3.0, np.float32(rng.normal(size=(5, 3))) * 1.0),
        # Keys closer than F-curves keep apart, and float32 values on an unrotated bone.
        sc.Channel(
            "bone",
            "root",
            "scale",
            np.array([0.0, 6.0, 6.0005, 12.0]),
            np.float32(rng.uniform(1, 2, (4, 3))) * 1.0,
        ),
        # Components keyed apart on a rotated bone: merged into one vector of F-curves.
        sc.Channel("bone", "hand", "location", FRAMES, rng.normal(size=(5, 1)), index=0),
        sc.Channel("bone", "hand", "location", FRAMES[::2], rng.normal(size=(3, 1)), index=2),
        # Bézier keys on a material property, about a texture centre (an offset on the way in).
        sc.Channel(
            "material",
            "Skin",
            "texture.0.translate",
            FRAMES,
            rng.normal(size=(5, 2)),
            "BEZIER",
            np.stack([np.broadcast_to((FRAMES - 1)[:, None], (5, 2)), rng.normal(size=(5, 2))], -1),
            np.stack([np.broadcast_to((FRAMES + 1)[:, None], (5, 2)), rng.normal(size=(5, 2))], -1),
            extras={sc.TEXTURE_CENTER: [0.5, 0.25, 0.0]},
        ),
    ]
    for i, channel in enumerate(channels):
        channel.origin = sc.ChannelOrigin(
            {"track": i, "raw": bytes([i, 255]), "none": None}, sc.keys_digest(channel)
        )
    image = sc.Image("skin", np.zeros((2, 2, 4), np.uint8), 2, 2)
    material = sc.Material("Skin", textures=[sc.TextureSlot(0)])
    mesh = sc.Mesh(
        "Body", np.eye(3, dtype=np.float32), np.array([[0, 1, 2]], np.int32), materials=[0], skeleton=0
    )
    animation = sc.Animation(
        "wave", channels, fps=30.0, frame_start=0.0, frame_end=16.0, loop=True, skeleton=0
    )
    return sc.Scene("origins", [skeleton], [mesh], [material], [image], [animation])


def extracted(result) -> list[sc.Channel]:
    return extract_scene(bpy.context, result.armatures[0], result.objects).animations[0].channels


def assert_as_imported(got: sc.Channel, want: sc.Channel) -> None:
    what = f"{want.target} {want.path} {want.index}"
    assert (got.target, got.path, got.index, got.interpolation, got.extras) == (
        want.target,
        want.path,
        want.index,
        want.interpolation,
        want.extras,
    ), what
    assert got.origin == want.origin, what
    assert sc.keys_digest(got) == want.origin.digest, what  # every key, bit for bit


@pytest.fixture
def built(empty_scene):
    scene = origin_scene()
    return scene, build_scene(scene, bpy.context)


def test_the_channels_need_every_change_the_builder_makes(built):
    """The scene exercises what the test names: a loop cut, slerp keys, flips, spread keys, a merge."""
    _, result = built
    records = [c for action in result.actions for c in read_record(action).channels]
    assert any(r.loop for r in records) and any(r.slerp for r in records) and any(r.flipped for r in records)
    assert any(r.merged for r in records) and any(r.offset for r in records)
    assert any(s.keys is None for r in records for s in r.sources)  # some come back from the F-curves alone


def test_unedited_channels_come_back_as_imported_with_their_origins(built):
    scene, result = built
    got = extracted(result)
    assert len(got) == len(scene.animations[0].channels)
    for channel, want in zip(got, scene.animations[0].channels, strict=True):
        assert_as_imported(channel, want)


# (data path, array index) of an F-curve of each channel, by the channel's place in the scene.
CURVES = {
    0: ('pose.bones["arm"].location', 1),
    1: ('pose.bones["arm"].rotation_quaternion', 2),
    2: ('pose.bones["root"].location', 0),
    3: ('pose.bones["root"].scale', 2),
    4: ('pose.bones["hand"].location', 0),
    6: ('nodes["Mapping 0"].inputs[1].default_value', 1),
}


@pytest.mark.parametrize("moved", sorted(CURVES), ids=lambda i: f"channel{i}")
def test_moving_one_key_takes_the_origin_of_that_channel_only(built, moved):
    scene, result = built
    data_path, index = CURVES[moved]
    fcurve = next(
        fc
        for action in result.actions
        for fc in compat.action_fcurves(action)
        if (fc.data_path, fc.array_index) == (data_path, index)
    )
    fcurve.keyframe_points[2].co.y += 0.125
    fcurve.update()
    edited = {moved, 5} if moved == 4 else {moved}  # channels 4 and 5 share their F-curves
    got = {(c.target, c.path, c.index): c for c in extracted(result)}
    for i, want in enumerate(scene.animations[0].channels):
        channel = got[(want.target, want.path, want.index)]
        if i in edited:
            assert channel.origin is None
        else:
            assert_as_imported(channel, want)
