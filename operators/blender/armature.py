"""Scene skeletons ⇄ Blender armatures, and bone channels ⇄ pose-bone F-curves.

Armatures: edit bones stand at the rotation part of each rest matrix, pointing along the
skeleton's bone display axis (``Skeleton.bone_display``), long enough to reach their farthest
child. Edit bones hold no scale: a rest scale (per axis of the bone, under a parent scaled
evenly) is carried by the pose bases instead (``rest_scales``), so poses deform as the scene
means at every frame and export gets the channels back; bones that would need shear are named
in a warning. The joint order, display rotation and rest scales are kept in custom properties.

Bone channels hold parent-relative values; a pose bone's basis is relative to its rest, so each
channel goes through the affine maps of ``curves.BoneMaps`` (``key_bone_channel``) and back
(``relative_channel``):
- LINEAR quaternion channels are spherical (``Channel``), F-curves linear per component: whole
  frames between keys where the two part get the slerp as keys (``curves.slerp_keys``,
  recorded, taken off on export while they still lie on the slerp).
- Quaternion keys are sign-flipped for continuity (recorded, flipped back on export).
- Euler channels keep their keys and Bézier handles when the bone's rest rotation
  (parent-relative) is the identity (the bone rotates XYZ); otherwise, and when a bone also has
  quaternion channels, they are baked to quaternions at every frame (``BuildResult.baked``).
- Channels of one component (``Channel.index``) become one F-curve when that component maps onto
  one pose component; otherwise the components of the bone and path are merged
  (``component_channels``); each component's channel travels in the record, split off again on
  export.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import bpy
import numpy as np

from ...formats.curves import (
    BoneMaps,
    bake_keys,
    bake_many,
    continuity_signs,
    continuous_angles,
    euler_to_matrix,
    frames_between_keys,
    map_keys,
    matrix_to_euler,
    sample,
    sample_many,
    slerp_keys,
    unslerp_keys,
)
from ...formats.scene import Channel, Scene, Skeleton, matrix_to_quat, quat_to_matrix
from . import compat, props
from .records import ChannelRecord, SceneChannel

BONE_PATHS = ("location", "rotation_quaternion", "rotation_euler", "scale")


@dataclass
class Rig:
    """An armature as the bone channels of one Scene skeleton animate it."""

    obj: bpy.types.Object
    pose_names: dict[str, str]  # Scene bone name → pose bone name
    maps: dict[str, BoneMaps]  # Scene bone name → its maps, from the Scene's rest
    components: dict = field(default_factory=dict)  # ``single_component``'s answers, by channel

    def single_component(self, channel: Channel) -> tuple[int, float, float] | None:
        """``_single_component`` of a per-component bone channel (asked again for every animation)."""
        key = (channel.target, channel.path, channel.index)
        if key not in self.components:
            pose_bone = self.obj.pose.bones[self.pose_names[channel.target]]
            self.components[key] = _single_component(channel, self.maps[channel.target], pose_bone)
        return self.components[key]

    @cached_property
    def exported(self) -> dict[str, BoneMaps]:
        """Pose bone name → its maps, from the rest export reads back (``extract_skeleton``)."""
        return bone_maps(extract_skeleton(self.obj))


def rig(armature_obj, skeleton: Skeleton, maps: dict[str, BoneMaps], blender_names: bool = False) -> Rig:
    """The Rig of a built armature; ``blender_names``: the skeleton names the bones as Blender does (else
    the built names, which Blender may have shortened, come from the joint order)."""
    order = skeleton.bone_names if blender_names else armature_obj.data[props.JOINT_ORDER]
    pose_names = dict(zip(skeleton.bone_names, order, strict=True))
    return Rig(armature_obj, pose_names, maps)


# -- build --------------------------------------------------------------------


def _display(skeleton: Skeleton) -> np.ndarray:
    return np.eye(4) if skeleton.bone_display is None else np.asarray(skeleton.bone_display, dtype=np.float64)


def _orthonormal(rest: np.ndarray) -> tuple[np.ndarray, float]:
    """Rest matrices without scale, shear or mirroring (edit bones cannot hold them), and how far off they were."""
    u, s, vt = np.linalg.svd(rest[:, :3, :3])
    mirrored = np.linalg.det(u @ vt) < 0
    u[mirrored, :, 2] *= -1
    s[mirrored, 2] *= -1
    out = rest.copy()
    out[:, :3, :3] = u @ vt
    return out, float(np.abs(s - 1).max(initial=0.0))


def bone_lengths(rest: np.ndarray, parents: np.ndarray, display: np.ndarray) -> np.ndarray:
    """Lengths that reach each bone's farthest child ahead of it, else half the parent's (or typical) length."""
    heads = rest[:, :3, 3]
    axes = (rest[:, :3, :3] @ display[:3, :3])[:, :, 1]
    lengths = np.zeros(len(parents))
    for i, parent in enumerate(parents):
        if parent >= 0:
            reach = (heads[i] - heads[parent]) @ axes[parent]
            lengths[parent] = max(lengths[parent], reach)
    extent = float(np.ptp(heads, axis=0).max(initial=0.0)) if len(heads) else 0.0
    typical = float(np.median(lengths[lengths > 0])) if (lengths > 0).any() else max(extent * 0.1, 0.1)
    minimum = typical * 0.1
    for i, parent in enumerate(parents):  # parents precede children
        if lengths[i] < minimum:
            lengths[i] = max(lengths[parent] * 0.5 if parent >= 0 else typical, minimum)
    return lengths


def build_armature(context, skeleton: Skeleton, collection, rotation_modes, result) -> bpy.types.Object:
    """The armature object of a skeleton; ``rotation_modes``: bone name → pose rotation mode."""
    armature = bpy.data.armatures.new(skeleton.name)
    obj = bpy.data.objects.new(skeleton.name, armature)
    obj[props.SCENE_NAME] = skeleton.name
    collection.objects.link(obj)
    display = _display(skeleton)
    rest, scales, _, _, inexact = rest_scales(skeleton)
    if inexact:
        result.warnings.append(
            f"{skeleton.name}: the rest scale of bones {', '.join(inexact[:8])} (uneven under a rotated child, "
            "or sheared) is not kept while they animate"
        )
    shown = rest @ display
    lengths = bone_lengths(rest, skeleton.parents, display)
    deform = np.ones(len(skeleton), bool) if skeleton.deform is None else np.asarray(skeleton.deform, bool)
    context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    edit_bones = [armature.edit_bones.new(name) for name in skeleton.bone_names]
    # In bulk: setting one bone's head, tail or flags looks through every bone (quadratic in bones).
    tails = np.zeros((len(edit_bones), 3))
    tails[:, 1] = lengths
    armature.edit_bones.foreach_set("head", np.zeros(tails.size, np.float32))
    armature.edit_bones.foreach_set("tail", tails.astype(np.float32).ravel())
    # The tail's distance is the length the matrix keeps; matrices column by column, as Blender stores them.
    armature.edit_bones.foreach_set("matrix", np.swapaxes(shown, 1, 2).astype(np.float32).ravel())
    armature.edit_bones.foreach_set("use_deform", deform)
    for bone, parent in zip(edit_bones, skeleton.parents, strict=True):
        if parent >= 0:
            bone.parent = edit_bones[parent]
    names = [b.name for b in edit_bones]
    bpy.ops.object.mode_set(mode="OBJECT")
    if names != list(skeleton.bone_names):
        result.warnings.append(f"{skeleton.name}: bone names were shortened or made unique by Blender")
    armature[props.JOINT_ORDER] = names
    if not np.allclose(scales, np.eye(3), atol=1e-9):
        armature[props.REST_SCALE] = scales.reshape(-1).tolist()
    if skeleton.bone_display is not None:
        armature[props.BONE_DISPLAY] = display.reshape(-1).tolist()
    props.set_extras(armature, skeleton.extras)
    for name, extras in zip(names, skeleton.bone_extras, strict=False):
        props.set_extras(armature.bones[name], extras)
    for name, pose_bone in zip(skeleton.bone_names, (obj.pose.bones[n] for n in names), strict=True):
        pose_bone.rotation_mode = rotation_modes.get(name, "QUATERNION")
    return obj


def rest_scales(skeleton: Skeleton) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """What edit bones cannot hold of the rest matrices, and how pose bases carry it instead.

    Edit bones hold rotations, so bone i stands at the rotation part Rᵢ of its rest Wᵢ
    (``_orthonormal``), leaving Kᵢ = Rᵢ⁻¹·Wᵢ (3×3). Skinning moves vertices by pose·Rᵢ⁻¹ where the
    scene means W(t)·Wᵢ⁻¹, so the pose matrix must be W(t)·Kᵢ⁻¹, and a bone whose channels give the
    parent-relative G gets the basis Lᵢ⁻¹·Kₚ·G·Kᵢ⁻¹ (L: the rotation-only local rest). With Kₚ a
    uniform kₚ and Kᵢ a diagonal k (in the bone's rest frame) that is G with its translation × kₚ
    and its scale × kₚ/k: affine maps of the channels (``BoneMaps``), exact at every frame, undone
    on export by their inverses (the extractor gets K back from ``props.REST_SCALE``). Otherwise the
    basis would need shear; such bones keep k = kₚ = 1 and are listed.

    Returns (rotation-only rests (N, 4, 4), K (N, 3, 3), k (N, 3), kₚ (N,), names of inexact bones).
    """
    full = np.asarray(skeleton.rest, dtype=np.float64)
    rest, _ = _orthonormal(full)
    scales = np.swapaxes(rest[:, :3, :3], 1, 2) @ full[:, :3, :3]
    # Rests read back from Blender are float32: differences that small are rounding, not scale.
    scales = np.where(np.abs(scales - np.eye(3)) <= 1e-5, np.eye(3), scales)
    diagonal = np.diagonal(scales, axis1=1, axis2=2)
    size = np.maximum(1.0, np.abs(diagonal).max(axis=1))
    is_diagonal = np.abs(scales - diagonal[:, :, None] * np.eye(3)).max(axis=(1, 2)) <= 1e-6 * size
    uniform = is_diagonal & (np.ptp(diagonal, axis=1) <= 1e-6 * size)
    parents = np.asarray(skeleton.parents)
    has_parent = parents >= 0
    exact = is_diagonal & np.where(has_parent, uniform[np.maximum(parents, 0)], True)
    bone_scale = np.where(exact[:, None], diagonal, 1.0)
    parent_scale = np.where(exact & has_parent, diagonal[np.maximum(parents, 0), 0], 1.0)
    unscaled = (scales == np.eye(3)).all(axis=(1, 2))
    lost = ~exact & ~(unscaled & np.where(has_parent, unscaled[np.maximum(parents, 0)], True))
    inexact = [name for name, bad in zip(skeleton.bone_names, lost, strict=True) if bad]
    return rest, scales, bone_scale, parent_scale, inexact


_RECENT_MAPS: dict[tuple, dict[str, BoneMaps]] = {}  # a few skeletons' maps, by their names and rest


def bone_maps(skeleton: Skeleton) -> dict[str, BoneMaps]:
    """Bone name → the maps between its parent-relative channels and its pose basis.

    The maps of a skeleton seen lately are given again: every animation applied to one armature
    (a model's hundreds of paired animations) asks for the same ones.
    """
    display = None if skeleton.bone_display is None else np.asarray(skeleton.bone_display, np.float64)
    key = (
        tuple(skeleton.bone_names),
        np.asarray(skeleton.parents, np.int64).tobytes(),
        np.asarray(skeleton.rest, np.float64).tobytes(),
        None if display is None else display.tobytes(),
    )
    if key not in _RECENT_MAPS:
        if len(_RECENT_MAPS) >= 4:
            _RECENT_MAPS.clear()
        _RECENT_MAPS[key] = _bone_maps(skeleton)
    return _RECENT_MAPS[key]


def _bone_maps(skeleton: Skeleton) -> dict[str, BoneMaps]:
    rest, _, bone_scale, parent_scale, _ = rest_scales(skeleton)
    local = Skeleton(skeleton.name, skeleton.bone_names, skeleton.parents, rest).local_rest()
    display = _display(skeleton)
    rest_quats = matrix_to_quat(local[:, :3, :3])
    display_quat = matrix_to_quat(display[:3, :3])
    maps = BoneMaps.many(local, display, rest_quats, display_quat, bone_scale, parent_scale)
    return dict(zip(skeleton.bone_names, maps, strict=True))


def rotation_modes(scene: Scene, maps: list[dict[str, BoneMaps]]) -> dict[tuple[int, str], str]:
    """(skeleton, bone) → 'XYZ' when its only rotation channels are eulers that map exactly, else 'QUATERNION'."""
    modes: dict[tuple[int, str], str] = {}
    for animation in scene.animations:
        if not scene.skeletons:
            break
        skeleton = animation.skeleton or 0
        for channel in animation.channels:
            bone = maps[skeleton].get(channel.target) if channel.target_kind == "bone" else None
            if bone is None:
                continue
            key = (skeleton, channel.target)
            exact_euler = "rotation_euler" in bone.maps
            if channel.path == "rotation_quaternion" or (
                channel.path == "rotation_euler" and not exact_euler
            ):
                modes[key] = "QUATERNION"
            elif channel.path == "rotation_euler":
                modes.setdefault(key, "XYZ")
    return modes


# -- bone channels, build side ----------------------------------------------------


def _single_component(channel: Channel, maps: BoneMaps, pose_bone) -> tuple[int, float, float] | None:
    """(pose component, factor, offset) when a per-component channel maps onto one pose component alone."""
    if channel.path not in maps.maps or (
        channel.path == "rotation_euler" and pose_bone.rotation_mode != "XYZ"
    ):
        return None
    a, b = maps.maps[channel.path]
    source = maps.permutations[channel.path]
    if source is None:
        return None
    r = source.tolist().index(channel.index)  # a permutation: every component once
    return r, float(a[r, channel.index]), float(b[r])


def component_channels(channels, rig: Rig) -> list[tuple[Channel, list[Channel] | None]]:
    """Channels ready to build, with the per-component bone channels (``Channel.index``) sorted out.

    A component that maps onto one pose component alone stays one F-curve (keys and handles
    exact). Otherwise (a rest rotation mixes the components, or eulers on a quaternion bone) the
    components of that bone and path are merged into one channel, built as a whole; the parts
    travel along so that an unedited export gets them back as they were.
    """
    out: list = []
    groups: dict[tuple[str, str], list[Channel]] = {}
    for channel in channels:
        bone = rig.maps.get(channel.target) if channel.target_kind == "bone" else None
        if (
            channel.index is None
            or bone is None
            or channel.path not in BONE_PATHS
            or rig.single_component(channel) is not None
        ):
            out.append(channel)
            continue
        parts = groups.get((channel.target, channel.path))
        if parts is None:
            parts = groups[(channel.target, channel.path)] = []
            out.append(parts)
        parts.append(channel)
    shared = {id(p): _shares_keys(p) for p in out if isinstance(p, list)}
    baking = [p for p in out if isinstance(p, list) and _bakes_merge(p, shared[id(p)])]
    baked = dict(zip(map(id, baking), _bake_merges(baking, rig.maps), strict=True))
    return [
        (_merged(p, rig.maps[p[0].target], shared[id(p)], baked.get(id(p))), p)
        if isinstance(p, list)
        else (p, None)
        for p in out
    ]


def _shares_keys(parts: list[Channel]) -> bool:
    """Whether ``parts`` are keyed at the same frames with the same interpolation."""
    first = parts[0]
    times = np.asarray(first.times, np.float64)
    return all(np.array_equal(p.times, times) and p.interpolation == first.interpolation for p in parts)


def _bakes_merge(parts: list[Channel], shared: bool) -> bool:
    """Whether ``_merged`` bakes ``parts`` (``shared``: ``_shares_keys``): components keyed at different
    frames, not all steps."""
    return not shared and not all(p.interpolation == "CONSTANT" for p in parts)


def _rows_by_curve(curve: np.ndarray, count: int) -> tuple[np.ndarray, list[tuple[int, slice]]]:
    """The rows of ``bake_many``'s ``curve`` (N,) sorted by curve (order kept within one), and the
    slice of those sorted rows each curve of ``count`` that has any holds."""
    order = np.argsort(curve, kind="stable")
    bounds = np.searchsorted(curve[order], np.arange(count + 1))
    return order, [(c, slice(bounds[c], bounds[c + 1])) for c in range(count) if bounds[c + 1] > bounds[c]]


def _bake_merges(groups: list[list[Channel]], maps: dict[str, BoneMaps]) -> list[tuple]:
    """``_merged``'s bake of each of ``groups`` (``_bakes_merge``), all in one ``bake_many``."""
    if not groups:
        return []
    rests = np.array([maps[parts[0].target].rest_values[parts[0].path] for parts in groups])
    keys = [  # of each part, as ``sample_many`` takes them (less the frames)
        [
            (
                p.times,
                np.asarray(p.values, np.float64).reshape(-1, 1),
                p.interpolation,
                p.handles_left,
                p.handles_right,
            )
            for p in parts
        ]
        for parts in groups
    ]

    def evaluate(curve, frames):  # every part of every group in one pass
        values = rests[curve]
        order, rows = _rows_by_curve(curve, len(groups))
        jobs, sampling = [], []
        for c, r in rows:
            where = order[r]
            at = (frames[where],)
            jobs += [(where, p.index) for p in groups[c]]
            sampling += [part + at for part in keys[c]]
        for (where, index), part in zip(jobs, sample_many(sampling), strict=True):
            values[where, index] = part[:, 0]
        return values

    times = [np.unique(np.concatenate([np.asarray(p.times, np.float64) for p in parts])) for parts in groups]
    return bake_many(times, evaluate)


def _merged(parts: list[Channel], maps: BoneMaps, shared: bool, baked: tuple | None) -> Channel:
    """One channel of every component of ``parts``' path; components they do not key hold the rest value.
    Components keyed at different frames (not ``shared``: ``_shares_keys``) are baked together
    (``baked``: ``_bake_merges``' keys of them), steps at their keys."""
    first = parts[0]
    rest = maps.rest_values[first.path]
    times = np.asarray(first.times, np.float64)
    interpolation, left, right = first.interpolation, None, None
    if shared:
        values = np.tile(rest, (len(times), 1))
        for p in parts:
            values[:, p.index] = np.asarray(p.values, np.float64).reshape(-1)
        if first.interpolation == "BEZIER" and all(p.handles_left is not None for p in parts):
            left, right = np.empty((2, len(times), len(rest), 2))  # unkeyed: at the rest value
            for side, handles in ((left, first.handles_left), (right, first.handles_right)):
                side[..., 0] = np.asarray(handles, np.float64)[:, :1, 0]
                side[..., 1] = rest
            for p in parts:
                left[:, p.index] = np.asarray(p.handles_left, np.float64)[:, 0]
                right[:, p.index] = np.asarray(p.handles_right, np.float64)[:, 0]
    else:

        def evaluate(frames):  # every part in one pass
            values = np.tile(rest, (len(frames), 1))
            sampled = sample_many(
                [
                    (p.times, np.asarray(p.values, np.float64).reshape(-1, 1), p.interpolation)
                    + (p.handles_left, p.handles_right, frames)
                    for p in parts
                ]
            )
            for p, part in zip(parts, sampled, strict=True):
                values[:, p.index] = part[:, 0]
            return values

        times = np.unique(np.concatenate([np.asarray(p.times, np.float64) for p in parts]))
        if all(p.interpolation == "CONSTANT" for p in parts):
            interpolation, values = "CONSTANT", evaluate(times)
        else:
            interpolation = "BEZIER"
            times, values, left, right = baked
    return Channel("bone", first.target, first.path, times, values, interpolation, left, right, first.extras)


class Posed(NamedTuple):
    """A whole-vector bone channel as ``pose_channels`` found it: its keys mapped onto the pose
    (``map_keys``: values, handles), or baked (``_baked``) where no affine map carries them; mapped
    quaternions with their ``continuity_signs``."""

    mapped: tuple | None
    baked: tuple | None
    signs: np.ndarray | None = None


def pose_channels(channels: list[Channel], rig: Rig) -> dict[int, Posed]:
    """Each of ``channels`` that ``key_bone_channel`` maps or bakes (steps aside), by id of the channel:
    mapped once here, the bakes in one ``bake_many`` per pose path for all, so that the bake costs no
    fixed time per channel. LINEAR quaternion channels that get slerp keys (``curves.slerp_keys``) are
    left to ``key_bone_channel``, which adds them first."""
    jobs: dict[str, list] = {}
    posed: dict[int, Posed] = {}
    candidates = []
    for channel in channels:
        maps = rig.maps.get(channel.target) if channel.target_kind == "bone" else None
        if (
            maps is None
            or channel.index is not None
            or channel.path not in BONE_PATHS
            or channel.interpolation == "CONSTANT"
            or not len(channel.times)
        ):
            continue
        candidates.append((channel, maps))
    slerped = _slerped([c for c, _ in candidates])
    mapped_channels = []  # (channel, map_keys' result)
    plain: dict[tuple, list] = {}  # keys' shape → [(channel, values, (a, b))]: no handles to map
    for (channel, maps), slerp in zip(candidates, slerped, strict=True):
        if slerp:
            continue
        times = np.asarray(channel.times, np.float64)
        values = np.asarray(channel.values, np.float64).reshape(len(times), -1)
        hl = None if channel.handles_left is None else np.asarray(channel.handles_left, np.float64)
        hr = None if channel.handles_right is None else np.asarray(channel.handles_right, np.float64)
        affine = _affine(channel.path, rig, channel.target)
        if affine is not None and (channel.interpolation != "BEZIER" or hl is None or hr is None):
            plain.setdefault(values.shape, []).append((channel, values, affine))
            continue
        mapped = None if affine is None else map_keys(values, hl, hr, channel.interpolation, *affine)
        if mapped is None:
            jobs.setdefault(channel.path, []).append(_BakeJob(channel, times, values, hl, hr, maps))
        else:
            mapped_channels.append((channel, mapped))
    for group in plain.values():  # map_keys' ``values @ a.T + b``, each matrix of the stack as alone
        a = np.swapaxes(np.stack([a for _, _, (a, _) in group]), 1, 2)
        b = np.stack([b for _, _, (_, b) in group])[:, None, :]
        mapped = np.stack([values for _, values, _ in group]) @ a + b
        mapped_channels += [
            (channel, (m, None, None)) for (channel, _, _), m in zip(group, mapped, strict=True)
        ]
    quaternions = []
    for channel, mapped in mapped_channels:
        if channel.path == "rotation_quaternion":
            quaternions.append((channel, mapped))
        else:
            posed[id(channel)] = Posed(mapped, None)
    if quaternions:  # the signs of all in one pass
        values = [mapped[0] for _, mapped in quaternions]
        curve = np.repeat(np.arange(len(values)), [len(v) for v in values])
        signs = continuity_signs(np.concatenate(values), curve)
        parts = np.split(signs, np.cumsum([len(v) for v in values])[:-1])
        for (channel, mapped), part in zip(quaternions, parts, strict=True):
            posed[id(channel)] = Posed(mapped, None, part)
    for group in jobs.values():
        for job, baked in zip(group, _baked(group), strict=True):
            posed[id(job.channel)] = Posed(None, baked)
    return posed


def _slerped(channels: list[Channel]) -> list[bool]:
    """Whether each channel is a LINEAR quaternion channel with whole frames between keys where
    ``slerp_keys`` may add keys, found for all in one pass."""
    linear = [c.path == "rotation_quaternion" and c.interpolation == "LINEAR" for c in channels]
    times = [np.asarray(c.times, np.float64) for c, q in zip(channels, linear, strict=True) if q]
    if not times:
        return linear
    curve = np.repeat(np.arange(len(times)), [len(t) for t in times])
    _, counts = frames_between_keys(np.concatenate(times), compat.MERGE_DISTANCE)
    slerped = np.zeros(len(times), bool)
    slerped[curve[:-1][(counts > 0) & (curve[1:] == curve[:-1])]] = True
    found = iter(slerped.tolist())
    return [q and next(found) for q in linear]


def _mapped(path, values, hl, hr, interpolation, rig: Rig, bone: str):
    """``map_keys`` of a whole-vector channel of ``bone`` onto its pose path; None when it has to be baked."""
    affine = _affine(path, rig, bone)
    return None if affine is None else map_keys(values, hl, hr, interpolation, *affine)


def _affine(path, rig: Rig, bone: str):
    """The map (a, b) of ``bone``'s channels of ``path`` onto its pose path; None when they have to be
    baked."""
    maps = rig.maps[bone]
    if path not in maps.maps or (
        path == "rotation_euler" and rig.obj.pose.bones[rig.pose_names[bone]].rotation_mode != "XYZ"
    ):
        return None
    return maps.maps[path]


def key_bone_channel(actions, channel, times, values, record: ChannelRecord, rig: Rig, posed=None):
    """Key a bone channel on its pose bone; returns its planned keys (``animation.Written``).
    ``posed``: the channel's ``pose_channels`` result, when it has one."""
    maps, pose_name = rig.maps[channel.target], rig.pose_names[channel.target]
    path = channel.path
    interpolation = channel.interpolation
    hl = None if channel.handles_left is None else np.asarray(channel.handles_left, np.float64)
    hr = None if channel.handles_right is None else np.asarray(channel.handles_right, np.float64)
    bone_path = f'pose.bones["{bpy.utils.escape_identifier(pose_name)}"].'
    if channel.index is not None:  # one component onto one pose component: factor and offset only
        component, factor, offset = rig.single_component(channel)
        record.array_index = component
        if hl is not None and hr is not None:
            hl, hr = hl.copy(), hr.copy()
            hl[..., 1] = hl[..., 1] * factor + offset
            hr[..., 1] = hr[..., 1] * factor + offset
        fcurves = actions.fcurves(rig.obj, "OBJECT", bone_path + path, 1, pose_name, record, (component,))
        return actions.write(fcurves, record, times, values * factor + offset, interpolation, hl, hr)
    if (
        path == "rotation_quaternion"
        and interpolation == "LINEAR"
        and (posed is None or posed.mapped is None)
    ):
        # Before the map: it is orthogonal on quaternions, so it carries the slerp, but which arc is
        # the shorter between keys half a turn apart (dot 0) is the channel's to say, not rounding's.
        # (A channel ``pose_channels`` mapped gets no slerp keys.)
        times, values, added = slerp_keys(times, values, compat.MERGE_DISTANCE)
        record.slerp = added.tolist()
        posed = None  # the keys changed: mapped again
    baked = None if posed is None else posed.baked
    mapped = None if posed is None else posed.mapped
    if mapped is None and baked is None:
        mapped = _mapped(path, values, hl, hr, interpolation, rig, channel.target)
    if mapped is None:
        record.baked = path
        if baked is None:
            baked = _baked([_BakeJob(channel, times, values, hl, hr, maps)])[0]
        times, mapped, interpolation, path = baked
        actions.result.baked.append(f"{actions.animation.name}: {channel.target} {channel.path}")
    new_values, hl, hr = mapped
    if path == "rotation_quaternion":
        new_values, hl, hr = _continuous(new_values, hl, hr, record, None if posed is None else posed.signs)
    fcurves = actions.fcurves(rig.obj, "OBJECT", bone_path + path, new_values.shape[1], pose_name, record)
    return actions.write(fcurves, record, times, new_values, interpolation, hl, hr)


class _BakeJob(NamedTuple):
    """A whole-vector bone channel no affine map carries, as ``key_bone_channel`` has it."""

    channel: Channel
    times: np.ndarray
    values: np.ndarray
    left: np.ndarray | None
    right: np.ndarray | None
    maps: BoneMaps


def _baked(jobs: list[_BakeJob]) -> list[tuple]:
    """(frames, (pose values, handles), interpolation, pose path) of each of ``jobs`` (of one path):
    Bézier keys that follow it at every frame and between frames (``curves.bake_many``, all in one);
    eulers become quaternions. Steps stay steps, at their keys."""
    path = jobs[0].channel.path
    euler = path == "rotation_euler"

    def pose(curve, frames):  # the rows of every job in one pass
        order, rows = _rows_by_curve(curve, len(jobs))
        sampled = sample_many(
            [
                (jobs[c].times, jobs[c].values, jobs[c].channel.interpolation, jobs[c].left, jobs[c].right)
                + (frames[order[r]],)
                for c, r in rows
            ]
        )
        if euler:
            rotations = euler_to_matrix(np.concatenate(sampled))
            rotations = np.split(rotations, np.cumsum([len(v) for v in sampled])[:-1])
            bases = [jobs[c].maps.basis_rotation(m) for (c, _), m in zip(rows, rotations, strict=True)]
            posed = matrix_to_quat(np.concatenate(bases))
        else:
            affine = [jobs[c].maps.maps[path] for c, _ in rows]
            posed = np.concatenate([v @ a.T + b for v, (a, b) in zip(sampled, affine, strict=True)])
        out = np.empty_like(posed)
        out[order] = posed
        return out

    pose_path = "rotation_quaternion" if euler else path
    out: list = [None] * len(jobs)
    bezier = []
    for i, job in enumerate(jobs):
        if job.channel.interpolation == "CONSTANT":
            out[i] = (
                job.times,
                (pose(np.full(len(job.times), i), job.times), None, None),
                "CONSTANT",
                pose_path,
            )
        else:
            bezier.append(i)
    if bezier:
        baked = bake_many(
            [jobs[i].times for i in bezier], lambda c, frames: pose(np.take(bezier, c), frames), euler
        )
        for i, (frames, values, left, right) in zip(bezier, baked, strict=True):
            out[i] = (frames, (values, left, right), "BEZIER", pose_path)
    return out


def _continuous(values, hl, hr, record: ChannelRecord, signs=None):
    """Quaternion keys (and handles) sign-flipped into the hemisphere of the previous key (``signs``:
    their ``continuity_signs``, when known); flips recorded."""
    signs = continuity_signs(values) if signs is None else signs
    flipped = np.flatnonzero(signs < 0)
    if not len(flipped):
        return values, hl, hr
    if not record.baked:
        record.flipped = flipped.tolist()
    values = values * signs[:, None]
    if hl is not None:
        hl = hl.copy()
        hr = hr.copy()
        hl[..., 1] *= signs[:, None]
        hr[..., 1] *= signs[:, None]
    return values, hl, hr


# -- extract --------------------------------------------------------------------


def _stored_display(armature) -> np.ndarray | None:
    if props.BONE_DISPLAY not in armature:
        return None
    return np.array(props.to_python(armature[props.BONE_DISPLAY]), dtype=np.float64).reshape(4, 4)


def extract_skeleton(armature_obj) -> Skeleton:
    """The Scene skeleton of an armature object: bones in the imported joint order (new bones after)."""
    armature = armature_obj.data
    bones = armature.bones
    recorded = props.to_python(armature[props.JOINT_ORDER]) if props.JOINT_ORDER in armature else []
    names = [n for n in recorded if n in bones]
    known = set(names)
    names += [b.name for b in bones if b.name not in known]
    names = _parents_first(names, bones)
    index = {n: i for i, n in enumerate(names)}
    parents = np.array([index[bones[n].parent.name] if bones[n].parent else -1 for n in names], np.int32)
    rest = np.array([np.array(bones[n].matrix_local, dtype=np.float64) for n in names]).reshape(-1, 4, 4)
    display = _stored_display(armature)
    if display is not None:
        rest = rest @ display.T
    scales = np.array(props.to_python(armature.get(props.REST_SCALE, [])), np.float64).reshape(-1, 3, 3)
    if len(scales) == len(recorded) and set(names) == set(recorded):  # the rest scale the bones cannot hold
        order = [recorded.index(n) for n in names]
        rest[:, :3, :3] = rest[:, :3, :3] @ scales[order]
    return Skeleton(
        props.scene_name(armature_obj),
        names,
        parents,
        rest,
        deform=np.array([bones[n].use_deform for n in names], bool),
        bone_extras=[props.get_extras(bones[n]) for n in names],
        extras=props.get_extras(armature),
        bone_display=display,
    )


@contextmanager
def rest_position(context, armature_obj) -> Iterator[None]:
    """The armature shown in its rest position for the duration (a no-op without one)."""
    if armature_obj is None or armature_obj.data.pose_position == "REST":
        yield
        return
    armature_obj.data.pose_position = "REST"
    context.view_layer.update()
    try:
        yield
    finally:
        armature_obj.data.pose_position = "POSE"
        context.view_layer.update()


def _parents_first(names: list[str], bones) -> list[str]:
    """``names`` reordered as little as needed so that every parent precedes its children."""
    placed: set[str] = set()
    ordered: list[str] = []

    def place(name: str) -> None:
        if name in placed:
            return
        parent = bones[name].parent
        if parent is not None:
            place(parent.name)
        placed.add(name)
        ordered.append(name)

    for name in names:
        place(name)
    return ordered


# -- bone channels, extract side --------------------------------------------------


def split(channel: Channel, parts: list[SceneChannel], maps: BoneMaps) -> list[Channel]:
    """A whole-vector channel as the per-component channels it was merged from, and as a new one each
    other component an edit moved off its rest value (Blender plays it, so export writes it)."""
    rest = maps.rest_values.get(channel.path)
    off_rest = np.zeros(0 if rest is None else len(rest), bool)
    for values in (channel.values, channel.handles_left, channel.handles_right):
        if rest is not None and values is not None:  # beyond float32 rounding of the pose mapped back
            change = (values[..., 1] if values.ndim == 3 else values) - rest
            if channel.path == "rotation_euler":  # an angle a turn away is the same
                change = (change + np.pi) % (2 * np.pi) - np.pi
            off_rest |= (np.abs(change) > 1e-5 * np.maximum(1.0, np.abs(rest))).any(axis=0)
    keyed = {part.index for part in parts}
    moved = [SceneChannel({}, int(i)) for i in np.flatnonzero(off_rest) if i not in keyed]
    out = []
    for part in parts + moved:
        i = part.index
        out.append(
            Channel(
                channel.target_kind,
                channel.target,
                channel.path,
                channel.times,
                channel.values[:, i : i + 1],
                channel.interpolation,
                None if channel.handles_left is None else channel.handles_left[:, i : i + 1],
                None if channel.handles_right is None else channel.handles_right[:, i : i + 1],
                extras=dict(part.extras),
                index=i,
            )
        )
    return out


def relative_channel(channel: Channel, pose_path: str, maps, record: ChannelRecord | None) -> Channel | None:
    """A pose bone's channel (``pose_path``: the pose property its F-curves key) turned back into the
    parent-relative one of the scene (the inverse of ``key_bone_channel``); None for a bone ``maps``
    (bone name → ``BoneMaps``) does not know. ``record``: what the builder changed on the way in (None
    for keys made in Blender): one component's factor and offset, sign flips, a bake, slerp keys (taken
    off while they lie on the slerp)."""
    bone = maps.get(channel.target)
    if bone is None or pose_path not in BONE_PATHS:
        return None
    if record is not None and record.array_index is not None:
        return _component_channel(channel, pose_path, bone, record.array_index, record.sources[0].index)
    flipped, baked = (record.flipped, record.baked) if record is not None else ([], "")
    channel = _relative_channel(channel, pose_path, bone, flipped, baked)
    if record is not None and record.slerp and channel.path == "rotation_quaternion":
        if channel.interpolation == "LINEAR":
            channel.times, channel.values = unslerp_keys(channel.times, channel.values, record.slerp)
    return channel


def _component_channel(channel: Channel, pose_path: str, bone: BoneMaps, component: int, index: int):
    """One pose component's F-curve turned back into component ``index`` of the parent-relative channel."""
    if pose_path not in bone.maps:
        return None
    a, b = bone.inverses[pose_path]
    scale, offset = a[index, component], b[index]
    channel.values = channel.values * scale + offset
    for side in ("handles_left", "handles_right"):
        handles = getattr(channel, side)
        if handles is not None:
            handles = handles.copy()
            handles[..., 1] = handles[..., 1] * scale + offset
            setattr(channel, side, handles)
    channel.path, channel.index = pose_path, index
    return channel


def _relative_channel(
    channel: Channel, pose_path: str, bone: BoneMaps, flipped: list[int], baked: str
) -> Channel:
    """A whole pose-space channel turned back into the parent-relative one: ``flipped`` keys' signs
    flipped back, a quaternion channel ``baked`` from eulers turned back into eulers."""
    values, left, right = channel.values, channel.handles_left, channel.handles_right
    if pose_path == "rotation_quaternion" and flipped and max(flipped) < len(values):
        signs = np.ones(len(values))
        signs[flipped] = -1
        values = values * signs[:, None]
        if left is not None:
            left, right = left.copy(), right.copy()
            left[..., 1] *= signs[:, None]
            right[..., 1] *= signs[:, None]
    if baked == "rotation_euler" or (pose_path == "rotation_euler" and pose_path not in bone.maps):
        # Back to parent-relative eulers (a quaternion baked from them, or euler keys on a rotated
        # rest): no per-component map exists, so the rotation Blender plays is baked again.
        times, interpolation = np.asarray(channel.times, np.float64), channel.interpolation

        def relative(frames):
            pose = sample(times, values, interpolation, left, right, frames)
            if pose_path == "rotation_quaternion":
                basis = quat_to_matrix(pose / np.linalg.norm(pose, axis=1, keepdims=True))
            else:
                basis = euler_to_matrix(pose)
            return matrix_to_euler(bone.relative_rotation(basis))

        channel.path, channel.handles_left, channel.handles_right = "rotation_euler", None, None
        if interpolation == "CONSTANT":
            channel.values = relative(times)
            return channel
        channel.times, channel.values, channel.handles_left, channel.handles_right = bake_keys(
            times, continuous_angles(relative, times)
        )
        channel.interpolation = "BEZIER"
        return channel
    a, b = bone.inverses[pose_path]
    mapped = map_keys(values, left, right, channel.interpolation, a, b)
    if mapped is None:  # Bézier handles the map cannot carry: the mapped curve baked
        times = np.asarray(channel.times, np.float64)
        channel.times, *mapped = bake_keys(
            times, lambda frames: sample(times, values, "BEZIER", left, right, frames) @ a.T + b
        )
        channel.interpolation = "BEZIER"
    channel.path = pose_path
    channel.values, channel.handles_left, channel.handles_right = mapped
    return channel
