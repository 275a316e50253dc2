"""Groups ⇄ one Skeleton: every group a bone, parents first (the file keeps the root last).

A bone's rest is the group's world matrix from the node floats, the axis conversion on
top (``bone_rests``: also for groups a zero scale collapses); the group record and its 24
node floats travel in the bone's extras. On export the kept node floats stay while the
bone's rest still shows them; a moved bone gets fresh ones (translation, scale and
rotation B, no centres).

An uneven rest scale above a group that an animation moves rides in the pose instead
(``scale_in_pose``): the rests and meshes of that subtree are the world matrices without it
(``scene_world``) and every animation keys the scale. Blender's bones hold no rest scale;
the pose carries it, shear included, into the moving children, which is what the game draws;
with no animation keying it, the bone's rest pose does (``rest_pose_scales``).
"""

from __future__ import annotations

import numpy as np

from ..scene import Scene, Skeleton
from . import model as fmt
from .evaluate import local_matrices, world_matrices
from .kept import raw_name, same_matrices, unique_names
from .matrices import euler_xyz_degrees, inverse, invertible
from .model import NODE_FLOATS, Model, text
from .tables import signed


def scene_skeleton(model, name, parents, order, bone_of, rest, freed) -> Skeleton:
    """The skeleton of the groups in ``order`` (parents first), each group's record in its bone's extras
    (and ``scale_in_pose`` on the ``freed`` groups)."""
    groups = model.groups[order]
    bone_extras = []
    for g, group in zip(order, groups, strict=True):
        node = int(group["node"])
        bone_extras.append(
            {
                "group": int(g),
                "name": bytes(group["name"]),
                "next": int(group["next"]),
                "child": int(group["child"]),
                "shape": int(group["shape"]),
                "visibility": int(group["visibility"]),
                "node": node,
                "compensate": signed(int(group["compensate"])),
                "node_floats": [float(v) for v in model.node_floats[node : node + NODE_FLOATS]],
            }
        )
        if freed[g]:
            bone_extras[-1]["scale_in_pose"] = True
    bone_names = unique_names([text(g["name"]) for g in groups])
    for extras, bone_name in zip(bone_extras, bone_names, strict=True):
        extras["label"] = bone_name
    return Skeleton(
        name=name or "ttyd",
        bone_names=bone_names,
        parents=np.where(parents[order] >= 0, bone_of[np.maximum(parents[order], 0)], -1).astype(np.int32),
        rest=rest,
        bone_extras=bone_extras,
    )


def rest_pose_scales(skeleton: Skeleton) -> dict[str, list[float]]:
    """Bone name → the scale channel value its bone shows with no animation playing: the rest scale of
    the groups whose scale rides in the pose (their rests do not show it; the file keeps it)."""
    return {
        name: extras["node_floats"][3:6]
        for name, extras in zip(skeleton.bone_names, skeleton.bone_extras, strict=False)
        if extras.get("scale_in_pose")
    }


def scale_in_pose(model: Model, parents: np.ndarray, running: list[dict]) -> np.ndarray:
    """(G,) bool: groups with an uneven scale that reaches a descendant an animation moves (a child
    that compensates its parent's scale stops it: ``compensated_frames``); ``running``: the
    ``model.animations_running_indices`` of the animations with data."""
    groups = model.groups
    scale = model.node_floats[groups["node"].astype(np.int64)[:, None] + np.arange(3, 6)]
    size = np.maximum(1.0, np.abs(scale).max(axis=1, initial=0.0))
    uneven = np.ptp(scale, axis=1) > 1e-6 * size
    moved_floats = np.zeros(len(model.node_floats) + 1, bool)
    for kinds in running:
        moved_floats[np.minimum(kinds["node"][1], len(model.node_floats))] = True
    moved = moved_floats[groups["node"].astype(np.int64)[:, None] + np.arange(NODE_FLOATS)].any(axis=1)
    reaches_moved = np.zeros(len(groups), bool)
    for g in np.flatnonzero(moved):  # few groups; each walk is one chain
        path = chain(parents, int(g))
        for child, parent in zip(path[:-1], path[1:], strict=True):
            reaches_moved[parent] |= groups["compensate"][child] == 0
    return uneven & reaches_moved


def rest_scale(rest: np.ndarray) -> np.ndarray:
    """(4, 4) K of a rest matrix R·K, R its rotation (the polar factor, where Blender's bone stands)."""
    u, _, vt = np.linalg.svd(rest[:3, :3])
    if np.linalg.det(u @ vt) < 0:
        u[:, 2] *= -1
    k = np.eye(4)
    k[:3, :3] = (u @ vt).T @ rest[:3, :3]
    return k


def compensated_frames(model: Model, axis, world, parents, g: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(Kₚ, K) of group ``g`` when it compensates an uneven rest scale of its parent, else None.

    Blender poses the parent without its rest scale Kₚ (its bone cannot hold one) and, under an
    uneven Kₚ, takes the child's channel relative to that pose; the compensated local has no shear,
    so the channel Kₚ · local · K⁻¹ (K: the child's own rest scale) plays exactly.
    """
    parent = int(parents[g])
    if parent < 0 or not model.groups["compensate"][g]:
        return None
    kp = rest_scale(axis @ world[parent])[:3, :3]
    diagonal = np.diagonal(kp)
    size = max(1.0, float(np.abs(diagonal).max()))
    if np.abs(kp - np.diag(diagonal)).max() <= 1e-6 * size and np.ptp(diagonal) <= 1e-6 * size:
        return None  # even: the channel maps as it is
    return rest_scale(axis @ world[parent]), rest_scale(axis @ world[g])


def scene_world(model: Model, parents: np.ndarray, freed: np.ndarray) -> np.ndarray:
    """(G, 4, 4) world matrices the rests and meshes show: without the scale of the ``freed`` groups
    (``scale_in_pose``, G bool or fewer: groups past them are not freed)."""
    return world_matrices(model, scene_floats(model, freed), parents)


def scene_floats(model: Model, freed: np.ndarray) -> np.ndarray:
    """The node floats with a unit scale on the ``freed`` groups."""
    floats = model.node_floats.copy()
    nodes = model.groups["node"][: len(freed)][np.asarray(freed, bool)].astype(np.int64)
    floats[nodes[:, None] + np.arange(3, 6)] = 1.0
    return floats


def freed_groups(model: Model, skeleton: Skeleton | None, group_of_bone: np.ndarray) -> np.ndarray:
    """(G,) bool: the groups whose bones' extras say their scale rides in the pose."""
    freed = np.zeros(len(model.groups), bool)
    if skeleton is not None and len(skeleton.bone_extras) == len(group_of_bone):
        flagged = [bool(e.get("scale_in_pose")) for e in skeleton.bone_extras]
        freed[np.asarray(group_of_bone, np.int64)[np.array(flagged, bool)]] = True
    return freed


def bone_rests(axis: np.ndarray, world: np.ndarray) -> np.ndarray:
    """(G, 4, 4) rest matrices of the groups' bones: the axis conversion of their world matrices.

    Where a world matrix collapses (a zero scale) or is not finite, the bone rests at the group's
    position alone: a bone needs an invertible rest, and the meshes, placed by the world matrix
    itself, still show what the game draws (collapsed, or nothing).
    """
    rest = axis @ world
    position = np.eye(4) + np.zeros_like(world)
    position[:, :3, 3] = np.where(np.isfinite(world[:, :3, 3]), world[:, :3, 3], 0.0)
    return np.where(invertible(rest)[:, None, None], rest, axis @ position)


def drawing_group(model: Model, s: int) -> int:
    """The first group that draws shape ``s`` (−1 for none)."""
    drawn_by = np.flatnonzero(model.groups["shape"] == s)
    return int(drawn_by[0]) if len(drawn_by) else -1


def chain(parents: np.ndarray, g: int) -> list[int]:
    """Group ``g`` and its ancestors up to the root."""
    out = []
    while g >= 0:
        out.append(g)
        g = int(parents[g])
    return out


def shape_matrix(axis: np.ndarray, world: np.ndarray, g: int) -> np.ndarray:
    """File → scene matrix of the vertices group ``g`` draws (−1: no group, the axis conversion alone)."""
    return axis @ world[g] if g >= 0 else axis


def identity_node() -> np.ndarray:
    """The 24 node floats of a group that does not move its children: unit scale, nothing else."""
    node = np.zeros(NODE_FLOATS, np.float32)
    node[3:6] = 1.0
    return node


def node_floats_from_matrix(local: np.ndarray, parent_scale: np.ndarray | None = None) -> np.ndarray:
    """(…, 24) node floats (translation, scale, rotation B; no centres) giving (…, 4, 4) local matrices."""
    local = np.asarray(local, np.float64)
    linear = local[..., :3, :3]
    if parent_scale is not None:  # compensated: the matrix already divides by the parent's scale
        linear = np.asarray(parent_scale, np.float64)[..., :, None] * linear
    scale = np.linalg.norm(linear, axis=-2)
    scale[..., 0] *= np.where(np.linalg.det(linear) < 0, -1.0, 1.0)
    node = np.zeros(local.shape[:-2] + (NODE_FLOATS,))
    node[..., 0:3] = local[..., :3, 3]
    node[..., 3:6] = scale
    node[..., 9:12] = euler_xyz_degrees(linear / np.where(scale == 0, 1.0, scale)[..., None, :])
    return node.astype(np.float32)


def _link(groups: np.ndarray, parents: np.ndarray) -> None:
    """Child and sibling links for ``parents``; the last group heads the list of roots."""
    count = len(groups)
    groups["child"] = -1
    groups["next"] = -1
    roots = [count - 1] + [g for g in range(count - 1) if parents[g] < 0]
    for siblings in [roots] + [list(np.flatnonzero(parents == g)) for g in range(count)]:
        if not siblings:
            continue
        parent = parents[siblings[0]]
        if parent >= 0:
            groups["child"][parent] = siblings[0]
        for a, b in zip(siblings[:-1], siblings[1:], strict=True):
            groups["next"][a] = b


def groups_from_skeleton(model: Model, scene: Scene, axis: np.ndarray) -> np.ndarray:
    """Groups and node floats from the first skeleton; returns the group of every bone."""
    if not scene.skeletons:
        return np.zeros(0, np.int64)
    skeleton = scene.skeletons[0]
    count = len(skeleton)
    bone_extras = skeleton.bone_extras if len(skeleton.bone_extras) == count else [{} for _ in range(count)]
    stored = [e.get("group") for e in bone_extras]
    kept = count == len(model.groups) and sorted(g for g in stored if g is not None) == list(range(count))
    if kept:
        group_of = np.array(stored, np.int64)
    else:
        group_of = count - 1 - np.arange(count)  # parents first in bones, root last in groups
        visibility = shown_visibility(model)
        model.groups = np.zeros(count, fmt.GROUP_DTYPE)
        model.groups["shape"] = -1
        model.groups["visibility"] = visibility
        model.groups["node"] = np.arange(count) * NODE_FLOATS
        model.node_floats = np.tile(identity_node(), count)
    groups = model.groups
    for b, extras in enumerate(bone_extras):
        groups["name"][group_of[b]] = raw_name(skeleton.bone_names[b], extras)
    parents = np.full(count, -1, np.int64)
    has_parent = skeleton.parents >= 0
    parents[group_of[has_parent]] = group_of[skeleton.parents[has_parent]]
    if not kept or not np.array_equal(fmt.group_parents(groups), parents):
        _link(groups, parents)

    # Node floats: the kept ones while the bone's rest still shows them, else fresh ones.
    rest = np.asarray(skeleton.rest, np.float64)
    freed = freed_groups(model, skeleton, group_of)
    floats = scene_floats(model, freed)
    with np.errstate(all="ignore"):
        file_world = world_matrices(model, floats, parents)
        moved = ~same_matrices(rest, bone_rests(axis, file_world)[group_of])
        roots = skeleton.parents < 0
        scene_local = rest.copy()
        scene_local[~roots] = inverse(rest[skeleton.parents[~roots]]) @ rest[~roots]
        scene_local[roots] = axis.T @ rest[roots]
        file_local = local_matrices(model, floats, parents)[group_of]
        changed = moved & ~same_matrices(scene_local, file_local)
    for b in np.flatnonzero(changed):
        g = group_of[b]
        node = int(groups["node"][g])
        parent_scale = None
        if groups["compensate"][g] and parents[g] >= 0:
            parent_node = int(groups["node"][parents[g]])
            parent_scale = floats[parent_node + 3 : parent_node + 6].astype(np.float64)
        scale = model.node_floats[node + 3 : node + 6].copy()
        model.node_floats[node : node + NODE_FLOATS] = node_floats_from_matrix(scene_local[b], parent_scale)
        if freed[g]:  # its rest shows no scale: the file's stays
            model.node_floats[node + 3 : node + 6] *= scale
    return group_of


def shown_visibility(model: Model) -> int:
    """Index of a visibility group that is shown (added when there is none)."""
    shown = np.flatnonzero(model.visibility != 0)
    if len(shown):
        return int(shown[0])
    model.visibility = np.append(model.visibility, np.uint8(1))
    return len(model.visibility) - 1


def append_group(model: Model, name: str, parent: int, visibility: int) -> int:
    """A new group with an identity node, placed before the root (which stays last); returns its index."""
    groups = model.groups
    record = np.zeros(1, fmt.GROUP_DTYPE)
    record["name"], record["shape"], record["visibility"] = fmt.encode_name(name), -1, visibility
    record["node"] = len(model.node_floats)
    record["next"] = record["child"] = -1
    model.node_floats = np.concatenate([model.node_floats, identity_node()])
    if not len(groups):
        model.groups = record
        return 0
    at = len(groups) - 1
    for key in ("next", "child"):
        groups[key] = np.where(groups[key] >= at, groups[key] + 1, groups[key])
    model.groups = np.concatenate([groups[:at], record, groups[at:]])
    parent = parent + 1 if parent >= at else parent
    if parent >= 0:
        model.groups["next"][at] = model.groups["child"][parent]
        model.groups["child"][parent] = at
    return at
