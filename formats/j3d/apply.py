"""Scene-level steps between a J3D animation file and the Blender data it applies to.

A BCK names no joints: the file's joints are bound by index to the armature's (``bind_joints``).
A BTK's texture transforms live in the GameCube's V-down UV space (``to_blender_uv``). On export,
the loop mode follows how the action loops (``set_playback``), rotations keyed as quaternions
become the eulers a BCK keys (``quaternions_to_eulers``) and what is not keyed holds the rest
(``hold_rest``).
"""

from __future__ import annotations

import numpy as np

from ..curves import matrix_to_euler, sample
from ..errors import ExportError, FormatError
from ..scene import Animation, Channel, Scene, Skeleton, quat_to_matrix
from . import convert
from .bck import JOINT_COUNT_OFFSET

MAX_FRAMES = 0x7FFF  # a J3D file's frame count is a signed 16-bit value


def file_joints(name: str, count: int) -> Skeleton:
    """The joints of a BCK by index (the file names none), until ``bind_joints`` puts an armature's in place."""
    return Skeleton(
        name,
        [f"joint {i}" for i in range(count)],
        np.full(count, -1, np.int32),
        np.tile(np.eye(4), (count, 1, 1)),
    )


def bind_joints(scene: Scene, skeleton: Skeleton, path: str) -> None:
    """Bind a BCK's scene to ``skeleton`` (the armature's, in joint order), as the game matches joints:
    by index. A file made for a model with another joint count is refused."""
    joints = scene.skeletons[0].bone_names
    if len(joints) != len(skeleton.bone_names):
        raise FormatError(
            path,
            JOINT_COUNT_OFFSET,
            f"the animation has {len(joints)} joints but the armature has {len(skeleton.bone_names)}: "
            "it belongs to another model",
        )
    names = dict(zip(joints, skeleton.bone_names, strict=True))
    for animation in scene.animations:
        animation.skeleton = 0
        for channel in animation.channels:
            channel.target = names[channel.target]
    scene.skeletons = [skeleton]


def to_blender_uv(scene: Scene) -> None:
    """Texture transforms of a BTK from the GameCube's UV space (V down) to Blender's (V up).

    Flipping V turns the transform ``S·R(θ)·(uv − c) + c + t`` into the same form with
    −θ, −t_v and the centre's V at 1 − c_v: per-channel sign changes, so keys stay exact.
    The step is its own inverse: applied again, it goes back to the file's UV space.
    """
    for animation in scene.animations:
        animation.extras["uv_v_up"] = True
        for channel in animation.channels:
            match = convert.TEXTURE_PATH.match(channel.path)
            if match is None:
                continue
            if "center" in channel.extras:
                u, v, w = channel.extras["center"]
                channel.extras["center"] = [u, 1.0 - v, w]
            if match.group(2) == "rotate" or (match.group(2) == "translate" and channel.index == 1):
                channel.values = -np.asarray(channel.values, np.float64)
                for side in ("handles_left", "handles_right"):
                    handles = getattr(channel, side)
                    if handles is not None:
                        handles = np.array(handles, np.float64)
                        handles[..., 1] *= -1
                        setattr(channel, side, handles)


def set_playback(animation: Animation, looping: bool, mirrored: bool) -> None:
    """Loop mode and length for the file: the imported ones while the action still loops as imported
    (``looping``; ``mirrored``: ping-pong), else from how it loops now; J3D frames count from 0."""
    stored = animation.extras.get("loop_mode")
    if (
        stored is None
        or (stored in (convert.LOOP_REPEAT, convert.LOOP_MIRROR)) != looping
        or (looping and (stored == convert.LOOP_MIRROR) != mirrored)
    ):
        loop_mode = convert.LOOP_MIRROR if mirrored else convert.LOOP_REPEAT
        animation.extras["loop_mode"] = loop_mode if looping else convert.LOOP_ONCE
    animation.frame_start, animation.frame_end = 0.0, max(float(animation.frame_end), 0.0)
    if animation.frame_end > MAX_FRAMES:
        raise ExportError(
            f"animation {animation.name!r}: {animation.frame_end:g} frames, a J3D file holds at most {MAX_FRAMES}"
        )


def quaternions_to_eulers(animation: Animation) -> None:
    """Bone rotations keyed as quaternions (Blender's default) as the XYZ eulers a BCK keys, sampled at
    every whole frame of their keyed range (rotation keys sit on whole frames in the file)."""
    for channel in animation.channels:
        if channel.target_kind != "bone" or channel.path != "rotation_quaternion":
            continue
        times = np.asarray(channel.times, np.float64)
        frames = np.arange(np.rint(times[0]), np.rint(times[-1]) + 1)
        quats = sample(
            times, channel.values, channel.interpolation, channel.handles_left, channel.handles_right, frames
        )
        quats /= np.linalg.norm(quats, axis=1, keepdims=True)
        channel.path, channel.times, channel.interpolation = "rotation_euler", frames, "LINEAR"
        channel.values = matrix_to_euler(quat_to_matrix(quats))
        channel.handles_left = channel.handles_right = None


def hold_rest(animation: Animation, skeleton: Skeleton) -> None:
    """Joint components the action does not key hold their rest: a BCK track without keys means
    scale 1, rotation 0 and translation 0, not the model's rest."""
    local = skeleton.local_rest()
    scales = np.linalg.norm(local[:, :3, :3], axis=1)
    eulers = matrix_to_euler(local[:, :3, :3] / scales[:, None, :])
    rests = {
        "scale": scales,
        "rotation_euler": (eulers + np.pi) % (2 * np.pi) - np.pi,
        "location": local[:, :3, 3],
    }
    keyed = convert.ChannelIndex(animation.channels).by_key
    for joint, name in enumerate(skeleton.bone_names):
        for path, values in rests.items():
            animation.channels += [
                Channel(
                    "bone", name, path, np.zeros(1), np.array([[values[joint, axis]]]), "LINEAR", index=axis
                )
                for axis in range(3)
                if (name, path, axis) not in keyed
            ]
