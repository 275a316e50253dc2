"""The pose and skinned vertices the game shows for a TMD animation at a given time.

A reference for tests (what Blender shows after import must match it) and for
tools that need a posed model without Blender. Deliberately independent of
``convert`` so that it checks the importer rather than repeating it.

- Keys are parent-relative transforms in seconds. Between two keys the
  translation is interpolated linearly and the rotation spherically (slerp on
  the shorter arc, as the community tools and Blender's per-key sign
  continuity do); before the first key and after the last the end key holds.
- Channel flags (see ``tmd``): 0 keys rotation only, 1 both, 3 translation
  only; the part without keys, and a whole channel that is unused (2), has no
  keys or has unknown flags, stays at the node's rest value, which the node
  record stores as a local rotation (x y z w) and translation.
- World (model-space) matrices chain local ones through the hierarchy
  (parents precede children), column vectors: ``world = world[parent] @ local``.
- Skinning is linear blend: ``Σ w · world[j] @ inverse_bind[j] @ p`` with
  weight = byte / 255 (not renormalised: the exporters make them sum to 255)
  and j = palette[byte // 3] of the piece that draws the vertex.

Everything is vectorised over times, keys and vertices; the only loops run
over nodes and pieces.
"""

from __future__ import annotations

import numpy as np

from ..curves import key_segments, slerp
from ..scene import compose, world_from_local
from . import tmd as tmd_format
from .tkl import TKL
from .tmd import TMD


def _xyzw_to_wxyz(q: np.ndarray) -> np.ndarray:
    return np.asarray(q, np.float64)[..., [3, 0, 1, 2]]


def rest_local(model: TMD) -> tuple[np.ndarray, np.ndarray]:
    """(N, 3) translations and (N, 4) rotations (w x y z) of the node records' rest pose."""
    return (
        np.asarray(model.nodes["translation"], np.float64),
        _xyzw_to_wxyz(model.nodes["rotation"]),
    )


def lerp(key_times: np.ndarray, values: np.ndarray, times: np.ndarray) -> np.ndarray:
    """(T, D) values at ``times``: linear between keys, the end keys held outside them."""
    key_times = np.asarray(key_times, np.float64)
    values = np.asarray(values, np.float64).reshape(len(key_times), -1)
    times = np.asarray(times, np.float64).reshape(-1)
    if len(key_times) == 1:
        return np.repeat(values, len(times), axis=0)
    k, u = key_segments(key_times, times)
    a, b = values[k], values[k + 1]
    return a + (b - a) * u[:, None]


def local_pose(model: TMD, tkl: TKL | None, animation: int, times) -> tuple[np.ndarray, np.ndarray]:
    """(T, N, 3) translations and (T, N, 4) rotations (w x y z), parent-relative, at ``times`` seconds.

    Without a keyframe library every node stays at rest (the importer shows the same).
    """
    times = np.atleast_1d(np.asarray(times, np.float64))
    rest_t, rest_q = rest_local(model)
    translation = np.broadcast_to(rest_t, (len(times),) + rest_t.shape).copy()
    rotation = np.broadcast_to(rest_q, (len(times),) + rest_q.shape).copy()
    if tkl is None:
        return translation, rotation
    anim = model.animations[animation]
    for node, channel_id in enumerate(np.asarray(anim.channels).tolist()):
        channel = model.channels[channel_id]
        keys = channel.keys
        if not len(keys):
            continue
        key_times = keys["time"].astype(np.float64)
        if channel.flags in (tmd_format.CHANNEL_TRANSLATION_ROTATION, tmd_format.CHANNEL_TRANSLATION):
            translation[:, node] = lerp(key_times, _lookup(tkl.positions, keys["position"], node), times)
        if channel.flags in (tmd_format.CHANNEL_TRANSLATION_ROTATION, tmd_format.CHANNEL_ROTATION):
            q = _xyzw_to_wxyz(_lookup(tkl.rotations, keys["rotation"], node))
            rotation[:, node] = slerp(key_times, q, times)
    return translation, rotation


def _lookup(table: np.ndarray, indices: np.ndarray, node: int) -> np.ndarray:
    indices = np.asarray(indices, np.int64)
    if len(indices) and indices.max() >= len(table):
        raise ValueError(
            f"node {node}: key index {int(indices.max())} is outside the keyframe library ({len(table)} entries)"
        )
    return np.asarray(table, np.float64)[indices]


def rest_world(model: TMD) -> np.ndarray:
    """(N, 4, 4) model-space rest matrices chained from the node records (equal to the bind
    matrices in a consistent file)."""
    translation, rotation = rest_local(model)
    return world_from_local(compose(translation, rotation), model.nodes["parent"])


def pose(model: TMD, tkl: TKL | None, animation: int, time) -> np.ndarray:
    """Model-space node matrices of ``animation`` at ``time`` seconds: (N, 4, 4) for a scalar
    time, (T, N, 4, 4) for an array of times."""
    translation, rotation = local_pose(model, tkl, animation, time)
    world = world_from_local(compose(translation, rotation), model.nodes["parent"])
    return world[0] if np.ndim(time) == 0 else world


def vertex_joints(mesh: tmd_format.Mesh, node_count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The mesh's concatenated vertices with their (V, 4) node indices and (V, 4) weights.

    A vertex is skinned with the palette of the first piece whose strip draws
    it (the game binds a piece's palette for the draw call of its strip), or
    of the piece storing it when no strip draws it.
    """
    pieces = mesh.pieces
    if not pieces:
        empty = np.zeros((0, 4))
        return np.zeros(0, tmd_format.VERTEX_DTYPE), empty.astype(np.int64), empty
    vertices = np.concatenate([p.vertices for p in pieces])
    owner = np.repeat(np.arange(len(pieces)), [len(p.vertices) for p in pieces])
    for index in range(len(pieces) - 1, -1, -1):
        strip = pieces[index].strip.astype(np.int64)
        owner[strip[(strip >= 0) & (strip < len(owner))]] = index
    width = max(len(p.palette) for p in pieces) + 1  # the last column marks "outside the palette"
    table = np.full((len(pieces), width), -1, np.int64)
    for index, piece in enumerate(pieces):
        table[index, : len(piece.palette)] = piece.palette
    slot = np.minimum(vertices["bones"].astype(np.int64) // 3, width - 1)
    joints = table[owner[:, None], slot]
    weights = vertices["weights"].astype(np.float64) / 255.0
    bad = (weights > 0) & ((joints < 0) | (joints >= node_count))
    if bad.any():
        v = int(np.flatnonzero(bad.any(axis=1))[0])
        raise ValueError(f"mesh {mesh.material!r}: vertex {v} is weighted to a node outside its palette")
    return vertices, np.where(weights > 0, joints, 0), weights


def skin(model: TMD, lod: int, mesh: int, world: np.ndarray) -> np.ndarray:
    """(V, 3) positions of mesh ``mesh`` of LOD ``lod`` deformed by the (N, 4, 4) node matrices
    ``world``, in the order the mesh stores its vertices (pieces concatenated)."""
    vertices, joints, weights = vertex_joints(model.lods[lod].meshes[mesh], len(model.nodes))
    skinning = np.asarray(world, np.float64) @ tmd_format.matrices(model.nodes["inverse_bind"])
    points = np.concatenate([vertices["position"].astype(np.float64), np.ones((len(vertices), 1))], axis=1)
    # (V, 4, 4, 4) would be wasteful: blend the matrices first, then transform each vertex once.
    blended = (skinning[joints] * weights[:, :, None, None]).sum(axis=1)
    return (blended @ points[:, :, None])[:, :3, 0]
