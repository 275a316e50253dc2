"""Whether the F-curves give a channel's keys back bit for bit: decided in bulk for plain bone channels,
with the answer of the channel-by-channel restore that export runs."""

import bpy
import numpy as np
import pytest
from builder_support import chain_skeleton
from retro_models.formats import scene as sc
from retro_models.operators.blender import animation
from retro_models.operators.blender.build import build_scene
from retro_models.operators.blender.extract import extract_scene
from retro_models.operators.blender.records import read_record

FRAMES = np.array([0.0, 3.0, 7.5, 12.0, 20.0])


def plain_scene(seed: int) -> sc.Scene:
    """Float32 keys on a chain of bones, its second half with rotated rests: location, scale and stepped
    quaternions (plain: one map each), plus float64 keys, which the F-curves cannot hold."""
    rng = np.random.default_rng(seed)
    skeleton = chain_skeleton(rng, n=30)
    local = skeleton.local_rest()
    local[:15, :3, :3] = np.eye(3)  # not rotated, at quarter units: locations come back bit for bit
    local[:, :3, 3] = np.round(local[:, :3, 3] * 4) / 4
    skeleton.rest = local.copy()
    for i in range(1, len(local)):
        skeleton.rest[i] = skeleton.rest[i - 1] @ local[i]
    channels = []
    for i, bone in enumerate(skeleton.bone_names):
        loc = (local[i, :3, 3] + rng.integers(-512, 512, size=(len(FRAMES), 3)) / 1024).astype(np.float32)
        if i >= 15:
            loc = (loc * rng.uniform(0.5, 2.0, size=loc.shape)).astype(np.float32)
        scale = rng.uniform(0.2, 3.0, size=(len(FRAMES), 3)).astype(np.float32)
        quats = rng.normal(size=(len(FRAMES), 4))
        quats = (quats / np.linalg.norm(quats, axis=1, keepdims=True)).astype(np.float32)
        if i % 5 == 0:
            loc = loc.astype(np.float64) + 1e-9
        channels += [
            sc.Channel("bone", bone, "location", FRAMES, loc.astype(np.float64)),
            sc.Channel("bone", bone, "scale", FRAMES, scale.astype(np.float64)),
            sc.Channel("bone", bone, "rotation_quaternion", FRAMES, quats.astype(np.float64), "CONSTANT"),
        ]
    animation_ = sc.Animation("plain", channels, fps=30.0, frame_start=0.0, frame_end=20.0, skeleton=0)
    return sc.Scene("plain", [skeleton], [], animations=[animation_])


def kept(result) -> list[tuple[str, str, bool]]:
    """(target, path, whether the record keeps the Scene's keys) of every channel."""
    records = [c for action in result.actions for c in read_record(action).channels]
    return [(r.target, r.path, r.sources[0].keys is not None) for r in records]


@pytest.mark.parametrize("seed", [1, 2])
def test_bulk_answer_is_the_restores_and_export_gets_every_key_back(empty_scene, monkeypatch, seed):
    scene = plain_scene(seed)
    decided = []
    with monkeypatch.context() as patch:
        bulk_answers = animation._restores_exactly
        patch.setattr(
            animation, "_restores_exactly", lambda *args: decided.append(bulk_answers(*args)) or decided[-1]
        )
        bulk = kept(build_scene(scene, bpy.context))
    assert len(decided[0]) > len(scene.animations[0].channels) // 2  # most were decided in bulk
    with monkeypatch.context() as patch:
        patch.setattr(animation, "_restores_exactly", lambda *args: {})  # every channel on its own
        one_by_one = kept(build_scene(scene, bpy.context))
    assert bulk == one_by_one
    assert any(k for *_, k in bulk) and not all(k for *_, k in bulk)  # both answers occur

    result = build_scene(scene, bpy.context)
    got = extract_scene(bpy.context, result.armatures[0], result.objects).animations[0].channels
    want = {(c.target, c.path): c for c in scene.animations[0].channels}
    assert len(got) == len(want)
    for channel in got:
        expected = want[(channel.target, channel.path)]
        assert channel.interpolation == expected.interpolation
        assert np.asarray(channel.times).tobytes() == expected.times.tobytes()
        assert np.asarray(channel.values).tobytes() == expected.values.tobytes(), (
            channel.target,
            channel.path,
        )
