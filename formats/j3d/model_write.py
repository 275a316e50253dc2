"""Edited and new BMD/BDL models: shapes re-encoded from mesh arrays, the rest of the model kept.

``replace_shapes(model, {shape: ShapeData}, added, removed)`` is the inverse of the importer
(``model_convert.shape_mesh``): each vertex gets a draw matrix (one joint with weight 1 → a
rigid DRW1 entry; several → an EVP1 envelope), its position and normal go back through that
matrix's inverse (rigid vertices end up joint-local, weighted ones in model space, exactly
undoing ``D · p``), and its corners' attributes become indices into the VTX1 arrays. What the
game needs is rebuilt for the edited shapes only:

- VTX1: arrays are shared, so every existing entry stays where it is; a value an edited shape
  needs is looked up (exactly in fixed-point arrays, within float noise in f32 ones) and appended
  only when absent, in the array's component type and shift. A value a fixed-point array cannot
  hold turns that array into f32 (its existing values keep their exact meaning).
- DRW1/EVP1: a joint or an envelope (joints, weights) already there is reused; new ones are
  added, DRW1 kept in the layout the game's tools write (rigid entries, one entry per envelope,
  the weighted block again) and the other shapes' matrix slots renumbered to match.
- SHP1: triangles split greedily into packets of at most ten draw matrices (a slot that keeps the
  previous packet's matrix is written 0xFFFF), each packet's triangles turned into strips
  (``strips.py``), bounding box and radius recomputed. Every other shape's descriptor list,
  packets and display-list bytes are copied.
- INF1: the scene graph loses removed shapes, gains added ones (under the root joint, each after
  its own material node), and moves a shape whose material changed; packet and position counts.
- JNT1: bounds are recomputed for the joints whose vertices changed extent (each joint's box in
  its own space around the bind-pose vertices it moves); the stored bounds of the others are
  kept (they are authoring leftovers that no formula reproduces).
- MAT3, TEX1 and a BDL's MDL3 are kept as they are. MDL3 holds each material's GX commands
  compiled from MAT3 and nothing from the shapes, so it stays valid while MAT3 is unedited.
  ``rename_materials`` renames MAT3's materials and MDL3's copy of the names (the runtime finds
  MDL3's lists by material index; they hold no names and stay byte for byte). Any other MAT3
  edit (colours, TEV, textures) makes MDL3 stale: such a model must be written as a BMD (no
  MDL3) until MDL3 is generated from MAT3, which this module does not do.

``new_model`` makes a model from nothing (joints, materials, textures, shapes) by building an
empty one with ``model_build`` and adding the shapes with ``replace_shapes``. ``shape_data``
turns an imported Scene mesh back into ShapeData (the importer's layer names).

What the format cannot hold raises ``ExportError`` naming the file and the shape: a joint index
out of range, a vertex without weights or with more than ``MAX_WRITTEN_INFLUENCES`` joints, a
shape without faces, a material MAT3 does not have, an array needing more than 65,536 entries
(u8 indices are widened to u16 when they no longer fit), NBT normals, a shape the reader cannot
decode (direct vertex data).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import ExportError
from ..rows import match_rows, unique_rows
from ..scene import Mesh
from . import materials, model_build
from . import model_geometry as geometry
from . import strips as stripper
from .container import RawSection, aligned_padding, write_names
from .mat3 import MAT3
from .model import (
    ARRAY_ATTRIBUTES,
    DESCRIPTOR_DTYPE,
    DRW1,
    EVP1,
    FORMAT_DTYPE,
    GRAPH_DTYPE,
    GROUP_DTYPE,
    INF1,
    JNT1,
    MAX_SLOTS,
    NODE_CLOSE,
    NODE_END,
    NODE_JOINT,
    NODE_MATERIAL,
    NODE_OPEN,
    NODE_SHAPE,
    PACKET_DTYPE,
    RIGID,
    SHAPE_DTYPE,
    SHP1,
    VTX1,
    WEIGHTED,
    Model,
)
from .model_convert import normal_matrices
from .tex1 import TEX1

MAX_INDEX = 0xFFFF  # a u16 array index
MAX_WRITTEN_INFLUENCES = 8  # more joints per vertex than the game's tools ever wrote (5 seen)
NORMAL_TOLERANCE = 2e-5  # per component: float32 noise of a reader's turned, normalised normal
WELL_CONDITIONED = 10.0  # a draw matrix turning directions by at most this stretch
WEIGHT_DIGITS = 6  # weights equal to this many decimals are one envelope
MULTI, SINGLE = 3, 0


@dataclass
class ShapeData:
    """One shape's geometry as the importer's Mesh gives it (``model_convert.shape_mesh``): the
    file's Y-up model space, the bind pose as the game draws it."""

    positions: np.ndarray  # (V, 3) float
    triangles: np.ndarray  # (T, 3) int, counter-clockwise from the front (Scene convention)
    joints: np.ndarray  # (V, K) int JNT1 indices
    weights: np.ndarray  # (V, K) float, rows sum to 1 (weight 0 = unused)
    normals: np.ndarray | None = None  # (V, 3) per vertex or (3T, 3) per corner, unit, model space
    colors: list[np.ndarray | None] = field(default_factory=lambda: [None, None])  # CLR0, CLR1 (3T, 4) 0..1
    uvs: list[np.ndarray | None] = field(default_factory=lambda: [None] * 8)  # TEX0..7 (3T, 2), V = 1 - t
    material: int = 0  # MAT3 material index


def _checked(data: ShapeData, shape: str) -> ShapeData:
    """``data`` with every array in the shape it must have (float64 / int64), or an ExportError
    saying which array of which shape does not fit."""

    def array(name: str, values, dtype, columns: tuple[int, ...], rows: int | None) -> np.ndarray:
        out = np.asarray(values, dtype)
        if out.ndim != 2 or out.shape[1] not in columns or (rows is not None and len(out) != rows):
            want = f"({rows if rows is not None else 'N'}, {'|'.join(map(str, columns))})"
            raise ExportError(f"{shape}: {name} has shape {out.shape}, expected {want}")
        if out.dtype.kind == "f" and not np.isfinite(out).all():
            raise ExportError(f"{shape}: {name} holds a value that is not a number")
        return out

    positions = array("positions", data.positions, np.float64, (3,), None)
    triangles = array("triangles", data.triangles, np.int64, (3,), None)
    count, corners = len(positions), 3 * len(triangles)
    if not count or not corners:
        raise ExportError(f"{shape}: no vertices or no faces to write")
    if triangles.min() < 0 or triangles.max() >= count:
        raise ExportError(f"{shape}: a face uses vertex {int(triangles.max())} of {count}")
    joints = array("joint indices", data.joints, np.int64, tuple(range(1, 65)), count)
    weights = array("weights", data.weights, np.float64, (joints.shape[1],), count)
    normals = None
    if data.normals is not None:
        per_vertex = len(np.asarray(data.normals)) == count
        normals = array("normals", data.normals, np.float64, (3,), count if per_vertex else corners)
    if len(data.colors) > 2 or len(data.uvs) > 8:
        raise ExportError(
            f"{shape}: {len(data.colors)} colour and {len(data.uvs)} UV layers (at most 2 and 8)"
        )
    colors = [
        None if c is None else array(f"colour layer {k}", c, np.float64, (3, 4), corners)
        for k, c in enumerate(data.colors)
    ]
    uvs = [
        None if uv is None else array(f"UV layer {k}", uv, np.float64, (2,), corners)
        for k, uv in enumerate(data.uvs)
    ]
    return ShapeData(
        positions, triangles, joints, weights, normals,
        colors + [None] * (2 - len(colors)), uvs + [None] * (8 - len(uvs)), int(data.material),
    )  # fmt: skip


def shape_data(mesh: Mesh) -> ShapeData:
    """A Scene mesh in the importer's form (one shape: ``model_convert.shape_mesh``) as ShapeData."""
    layers = {layer.name: layer.data for layer in mesh.uv_layers + mesh.color_layers}
    count = len(mesh.positions)
    joints = mesh.skin_joints if mesh.skin_joints is not None else np.zeros((count, 1), np.int64)
    weights = mesh.skin_weights if mesh.skin_weights is not None else np.ones((count, 1))
    return ShapeData(
        positions=mesh.positions,
        triangles=mesh.triangles,
        joints=joints,
        weights=weights,
        normals=None if mesh.normals is None else mesh.normals.data,
        colors=[layers.get(materials.color_layer_name(k)) for k in range(2)],
        uvs=[layers.get(materials.uv_layer_name(k)) for k in range(8)],
        material=mesh.materials[0] if mesh.materials else 0,
    )


# -- VTX1 -----------------------------------------------------------------------------------


def _components(attribute: int, entry) -> int:
    if attribute in (geometry.CLR0, geometry.CLR1):
        return geometry.COLOR_SIZES[int(entry["type"])]
    return geometry._components(attribute, int(entry["count"]))


def _new_format(attribute: int) -> tuple:
    """The format entry of an array a model did not have: f32 (RGBA8 for colours)."""
    if attribute in (geometry.CLR0, geometry.CLR1):
        return (attribute, 1, 5, 0, b"\xff" * 3)
    count = 0 if attribute == geometry.NRM else 1
    return (attribute, count, 4, 0, b"\xff" * 3)


class _Arrays:
    """The VTX1 arrays being extended: existing entries kept, new values appended."""

    def __init__(self, model: Model, used: dict[int, int]):
        self.model = model
        self.formats = model.vtx1.formats.copy()
        self.bytes = dict(model.vtx1.arrays)
        self.rows: dict[int, np.ndarray] = {}  # attribute → every stored row (existing, then added)
        self.used = used  # attribute → entries the original shapes use (positions: INF1's count)
        self.changed: set[int] = set()
        self.order = list(model.vtx1.layout.order)

    def entry(self, attribute: int):
        found = np.flatnonzero(self.formats["attribute"] == attribute)
        return self.formats[found[0]] if len(found) else None

    def _stored(self, attribute: int) -> np.ndarray:
        if attribute in self.rows:
            return self.rows[attribute]
        entry = self.entry(attribute)
        if entry is None:
            end = np.flatnonzero(self.formats["attribute"] == 0xFF)
            at = int(end[0]) if len(end) else len(self.formats)
            self.formats = np.insert(self.formats, at, np.array([_new_format(attribute)], FORMAT_DTYPE))
            entry = self.entry(attribute)
            name = f"array{attribute}"
            if self.order:
                later = [n for n in self.order if n.startswith("array") and _rank(n) > _rank(name)]
                self.order.insert(self.order.index(later[0]) if later else len(self.order), name)
            rows = np.zeros((0, _components(attribute, entry)), self._dtype(attribute))
        else:
            data = self.bytes.get(attribute, b"")
            dtype = self._dtype(attribute)
            width = _components(attribute, entry)
            available = len(data) // (dtype.itemsize * width)
            count = min(self.used.get(attribute, available), available)
            rows = np.frombuffer(data, dtype, count * width).reshape(count, width)
        self.rows[attribute] = rows
        return rows

    def _dtype(self, attribute: int) -> np.dtype:
        entry = self.entry(attribute)
        if attribute in (geometry.CLR0, geometry.CLR1):
            return np.dtype("u1")
        return np.dtype(geometry.COMPONENT_TYPES[int(entry["type"])])

    def _to_float(self, attribute: int) -> None:
        """A fixed-point array that cannot hold a new value becomes f32, its values unchanged."""
        entry = self.entry(attribute)
        shift = geometry.stored_shift(attribute, int(entry["type"]), int(entry["shift"]))
        rows = self._stored(attribute).astype(np.float64) * 2.0**-shift
        at = np.flatnonzero(self.formats["attribute"] == attribute)[0]
        self.formats[at]["type"], self.formats[at]["shift"] = 4, 0
        self.rows[attribute] = rows.astype(">f4")

    def index(
        self,
        attribute: int,
        values: np.ndarray,
        shape: str,
        prefer: np.ndarray | None = None,
        append: bool = True,
    ) -> np.ndarray:
        """Indices of ``values`` (floats; colours (N, 4) uint8 RGBA) in the array, appending the new
        ones (``append`` False: -1 for them); entries in ``prefer`` are looked at first."""
        stored = self._stored(attribute)
        entry = self.entry(attribute)
        kind, shift = int(entry["type"]), int(entry["shift"])
        width = _components(attribute, entry)
        if attribute in (geometry.CLR0, geometry.CLR1):
            raw, tolerance = geometry.encode_colors(values, kind), 0.0
        else:
            values = np.asarray(values, np.float64)[:, :width]
            raw = geometry.encode_array(values, attribute, kind, shift)
            if raw is None and not append:
                return np.full(len(values), -1, np.int64)
            if raw is None:
                self._to_float(attribute)
                stored, kind = self.rows[attribute], 4
                raw = geometry.encode_array(values, attribute, kind, 0)
            tolerance = 0.0
            if kind == 4:
                scale = max(float(np.abs(raw).max(initial=0)), float(np.abs(stored).max(initial=0)), 1.0)
                tolerance = scale * 2.0**-18
        raw = raw.astype(stored.dtype)
        wanted = raw.astype(np.float64)
        found = np.full(len(raw), -1, np.int64)
        if prefer is not None and len(prefer):
            hit = match_rows(stored[prefer].astype(np.float64), wanted, tolerance)
            found = np.where(hit >= 0, prefer[hit], -1)
        rest = found < 0
        found[rest] = match_rows(stored.astype(np.float64), wanted[rest], tolerance)
        missing = found < 0
        if missing.any() and append:
            ids, first = unique_rows(raw[missing])
            new = raw[missing][first]
            found[missing] = len(stored) + ids
            self.rows[attribute] = np.concatenate([stored, new])
            self.changed.add(attribute)
        if len(found) and found.max() > MAX_INDEX:
            name = geometry.ATTRIBUTE_NAMES[attribute]
            raise ExportError(
                f"{shape}: the {name} array would need {found.max() + 1} entries (at most 65536)"
            )
        return found

    def distinct(
        self, attribute: int, values: np.ndarray, groups: np.ndarray, own: np.ndarray, shape: str
    ) -> np.ndarray:
        """Like ``index``, for vertices: a reader makes one vertex per (entry, draw matrix) in that
        order, so two vertices of one group never share an entry, and where the array holds a
        value more than once, each vertex takes the first copy that keeps the vertices in their
        order, preferring the entries ``own`` (those the shape used before); a copy is appended
        when none is free."""
        found = self.index(attribute, values, shape, own)
        rows = self.rows[attribute]
        value_class, _ = unique_rows(rows)
        copies = np.bincount(value_class)
        span = int(groups.max(initial=0)) + 1
        key = found * span + groups
        order = np.argsort(key, kind="stable")
        repeat = np.zeros(len(key), bool)
        repeat[order[1:]] = key[order[1:]] == key[order[:-1]]
        choice = np.flatnonzero((copies[value_class[found]] > 1) | repeat)
        if not len(choice):
            return found
        members: dict[int, list[int]] = {}
        wanted = set(value_class[found[choice]].tolist())
        ranked = np.lexsort((np.arange(len(value_class)), ~np.isin(np.arange(len(value_class)), own)))
        for entry in ranked.tolist():
            c = int(value_class[entry])
            if c in wanted:
                members.setdefault(c, []).append(entry)
        taken = set((key[np.setdiff1d(np.arange(len(key)), choice)]).tolist())
        for i in choice.tolist():
            c, g = int(value_class[found[i]]), int(groups[i])
            previous = int(found[i - 1]) * span + int(groups[i - 1]) if i else -1
            free = [e for e in members[c] if e * span + g not in taken]
            later = [e for e in free if e * span + g > previous]
            if later or free:
                found[i] = (later or free)[0]
            else:  # every copy is some other vertex of this group: one more copy
                found[i] = len(self.rows[attribute])
                self.rows[attribute] = np.concatenate(
                    [self.rows[attribute], self.rows[attribute][[members[c][0]]]]
                )
                members[c].append(int(found[i]))
                self.changed.add(attribute)
            taken.add(int(found[i]) * span + g)
        return found

    def decoded(self, attribute: int) -> np.ndarray | None:
        """The existing rows as readers see them (float64), None without the array."""
        if self.entry(attribute) is None:
            return None
        entry = self.entry(attribute)
        rows = self._stored(attribute).astype(np.float64)
        return rows * 2.0 ** -geometry.stored_shift(attribute, int(entry["type"]), int(entry["shift"]))

    def section(self) -> VTX1:
        arrays = dict(self.bytes)
        for attribute in self.changed:
            arrays[attribute] = self.rows[attribute].astype(self._dtype(attribute)).tobytes()
        arrays = {a: arrays[a] for a in ARRAY_ATTRIBUTES if a in arrays}
        return VTX1(self.formats, arrays, replace(self.model.vtx1.layout, order=self.order))

    def count(self, attribute: int) -> int:
        return len(self._stored(attribute))


def _rank(name: str) -> int:
    return ARRAY_ATTRIBUTES.index(int(name[5:]))


def _decoded(model: Model, shape: int, filename: str) -> geometry.ShapeGeometry | None:
    """A shape's display lists decoded; None for one the reader leaves out (direct vertex data)."""
    try:
        return geometry.decode_shape(model, shape, filename)
    except geometry.Unsupported:
        return None


def _used_entries(model: Model, shapes: list[geometry.ShapeGeometry | None]) -> dict[int, int]:
    """Per VTX1 attribute, how many entries the model's shapes use (positions: INF1's count). With a
    shape that cannot be decoded, every stored entry counts as used (none is cut off)."""
    if any(shape is None for shape in shapes):
        return {geometry.POS: model.inf1.vertex_count}
    used: dict[int, int] = {}
    for shape in shapes:
        for attribute, index in shape.indices.items():
            source = geometry.NRM if attribute == geometry.NBT else attribute
            used[source] = max(used.get(source, 0), int(index.max(initial=-1)) + 1)
    used[geometry.POS] = max(used.get(geometry.POS, 0), model.inf1.vertex_count)
    return used


# -- DRW1 / EVP1 ------------------------------------------------------------------------------


def _skin_key(joints: np.ndarray, weights: np.ndarray) -> tuple:
    """A draw matrix's identity: ("rigid", joint) or ("envelope", joints, weights), joints ascending."""
    keep = weights != 0
    joints, weights = joints[keep], weights[keep].astype(np.float64)
    order = np.argsort(joints, kind="stable")
    joints, weights = joints[order], weights[order] / weights.sum()
    if len(joints) == 1:
        return ("rigid", int(joints[0]))
    return ("envelope", tuple(int(j) for j in joints), tuple(np.round(weights, WEIGHT_DIGITS).tolist()))


class _Draws:
    """DRW1 and EVP1 as edited shapes need them: existing entries reused, new ones added."""

    def __init__(self, model: Model, world: np.ndarray):
        self.model, self.world = model, world
        drw1, evp1 = model.drw1, model.evp1
        self.kinds, self.values = drw1.kinds.astype(np.int64), drw1.values.astype(np.int64)
        starts = evp1.starts()[: len(evp1.counts)]
        self.envelopes = [
            (evp1.joints[s : s + c].astype(np.int64), evp1.weights[s : s + c].astype(np.float64))
            for s, c in zip(starts.tolist(), evp1.counts.tolist(), strict=True)
        ]
        self.index: dict[tuple, int] = {}  # skin key → DRW1 entry
        self.envelope_of: dict[tuple, int] = {}
        for e, (js, ws) in enumerate(self.envelopes):
            self.envelope_of.setdefault(_skin_key(js, ws), e)
        for d in range(len(self.kinds) - 1, -1, -1):  # the first entry of each wins
            if self.kinds[d] == RIGID:
                self.index[("rigid", int(self.values[d]))] = d
            elif self.values[d] < len(self.envelopes):
                self.index[_skin_key(*self.envelopes[self.values[d]])] = d
        self.new_rigid: list[int] = []
        self.new_envelopes: list[tuple] = []

    def add(self, key: tuple) -> None:
        """A skin the edited shapes use; without a DRW1 entry, one is made (and its envelope, if new)."""
        if key in self.index or key in self.new_rigid or key in self.new_envelopes:
            return
        (self.new_rigid if key[0] == "rigid" else self.new_envelopes).append(key)

    def build(self) -> tuple[DRW1, EVP1, np.ndarray]:
        """The new DRW1 and EVP1, and the new index of every old DRW1 entry."""
        drw1, evp1 = self.model.drw1, self.model.evp1
        old = len(self.kinds)
        renumber = np.arange(old, dtype=np.int64)
        if not self.new_rigid and not self.new_envelopes:
            return drw1, evp1, renumber
        old_index = dict(self.index)
        envelopes = len(self.envelopes)
        added_envelopes = [k for k in self.new_envelopes if k not in self.envelope_of]
        orphans = len(added_envelopes) < len(self.new_envelopes)  # envelopes of EVP1 no DRW1 entry names
        for k in added_envelopes:
            self.envelope_of[k] = envelopes + added_envelopes.index(k)
        rigid = int(np.argmax(self.kinds != RIGID)) if (self.kinds != RIGID).any() else old
        weighted = envelopes + len(added_envelopes)
        layout = self.kinds[rigid:]
        canonical = (
            old == rigid + 2 * envelopes
            and (layout == WEIGHTED).all()
            and np.array_equal(self.values[rigid:], np.tile(np.arange(envelopes), 2))
            and not orphans
        )
        rigid_joints = [k[1] for k in self.new_rigid]
        if canonical:  # rigid entries, the weighted block, the weighted block again
            kinds = [RIGID] * (rigid + len(rigid_joints)) + [WEIGHTED] * (2 * weighted)
            values = list(self.values[:rigid]) + rigid_joints + list(range(weighted)) * 2
            renumber[rigid:] += len(rigid_joints)
            renumber[rigid + envelopes :] += len(added_envelopes)
            self.index = {k: int(renumber[d]) for k, d in old_index.items()}
            for j, d in zip(rigid_joints, range(rigid, rigid + len(rigid_joints)), strict=True):
                self.index[("rigid", j)] = d
            for k in self.new_envelopes:
                self.index[k] = rigid + len(rigid_joints) + self.envelope_of[k]
        else:  # an unusual layout: new entries after it
            kinds = list(self.kinds) + [RIGID] * len(rigid_joints) + [WEIGHTED] * len(self.new_envelopes)
            values = list(self.values) + rigid_joints + [self.envelope_of[k] for k in self.new_envelopes]
            for d, k in enumerate(self.new_rigid + self.new_envelopes, start=old):
                self.index[k] = d
        if len(kinds) > MAX_INDEX:
            raise ExportError(f"the model would need {len(kinds)} draw matrices (at most {MAX_INDEX})")
        new_drw1 = replace(drw1, kinds=np.array(kinds, "u1"), values=np.array(values, ">u2"))
        new_evp1 = evp1
        if added_envelopes:
            binds = np.asarray(evp1.inverse_binds, np.float64)
            if len(binds) < len(self.world):  # every joint gets an inverse bind: its rest matrix inverted
                missing = np.linalg.pinv(self.world[len(binds) :])[:, :3, :]
                binds = np.concatenate([binds.reshape(-1, 3, 4), missing])
            new_evp1 = replace(
                evp1,
                counts=np.concatenate([evp1.counts, [len(k[1]) for k in added_envelopes]]).astype("u1"),
                joints=np.concatenate([evp1.joints, [j for k in added_envelopes for j in k[1]]]).astype(
                    ">u2"
                ),
                weights=np.concatenate([evp1.weights, [w for k in added_envelopes for w in k[2]]]).astype(
                    ">f4"
                ),
                inverse_binds=binds.astype(">f4"),
            )
        return new_drw1, new_evp1, renumber


def _vertex_keys(data: ShapeData, joints_count: int, shape: str) -> tuple[list[tuple], np.ndarray]:
    """The distinct skins of a shape's vertices and which one each vertex has."""
    joints = np.asarray(data.joints, np.int64).reshape(len(data.positions), -1)
    weights = np.asarray(data.weights, np.float64).reshape(len(data.positions), -1)
    used = weights != 0
    if (used & ((joints < 0) | (joints >= joints_count))).any():
        bad = int(joints[used & ((joints < 0) | (joints >= joints_count))][0])
        raise ExportError(
            f"{shape}: a vertex is weighted to joint {bad}; the model has {joints_count} joints"
        )
    if not used.any(axis=1).all():
        raise ExportError(f"{shape}: {int((~used.any(axis=1)).sum())} vertices have no joint weight")
    if (np.abs(np.where(used, weights, 0).sum(axis=1)) < 1e-9).any():
        raise ExportError(f"{shape}: a vertex's joint weights add up to nothing")
    if used.sum(axis=1).max(initial=0) > MAX_WRITTEN_INFLUENCES:
        raise ExportError(f"{shape}: a vertex has more than {MAX_WRITTEN_INFLUENCES} joint weights")
    rows = np.concatenate([np.where(used, joints, -1), np.round(np.where(used, weights, 0), 7)], axis=1)
    inverse, first = unique_rows(rows)
    k = joints.shape[1]
    keys = [_skin_key(r[:k].astype(np.int64), r[k:]) for r in rows[first]]
    return keys, inverse


# -- the scene graph ---------------------------------------------------------------------------


def _tree(graph: np.ndarray) -> list[list]:
    """INF1 nodes as a tree: [op, index, children]."""
    root: list[list] = []
    stack = [root]
    last = None
    for op, index in graph.tolist():
        if op == NODE_OPEN:
            stack.append(last[2])
        elif op == NODE_CLOSE:
            stack.pop()
        elif op == NODE_END:
            break
        else:
            last = [op, index, []]
            stack[-1].append(last)
    return root


def _nodes(tree: list[list]) -> np.ndarray:
    """The tree in Nintendo's nesting: a node opens a level only when something hangs under it."""
    out: list[tuple[int, int]] = []

    def visit(nodes: list[list]) -> None:
        for op, index, children in nodes:
            out.append((op, index))
            if children:
                out.append((NODE_OPEN, 0))
                visit(children)
                out.append((NODE_CLOSE, 0))

    visit(tree)
    out.append((NODE_END, 0))
    return np.array(out, GRAPH_DTYPE)


def _edit_graph(graph: np.ndarray, renumber: dict[int, int], materials: dict[int, int], added: list[tuple]):
    """Shapes renumbered (missing from ``renumber``: removed), moved to new materials, added."""
    tree = _tree(graph)

    def walk(nodes: list[list], parent: list | None) -> list[list]:
        out = []
        for node in nodes:
            had_shape = any(n[0] == NODE_SHAPE for n in node[2])
            node[2] = walk(node[2], node)
            if node[0] == NODE_MATERIAL and had_shape and not any(n[0] == NODE_SHAPE for n in node[2]):
                out.extend(node[2])  # its shape was removed: the game would draw a material without one
                continue
            if node[0] != NODE_SHAPE:
                out.append(node)
                continue
            if node[1] not in renumber:  # removed: what hung under it moves up
                out.extend(node[2])
                continue
            old = node[1]
            node[1] = renumber[old]
            material = materials.get(old)
            if material is None or (
                parent is not None and parent[0] == NODE_MATERIAL and parent[1] == material
            ):
                out.append(node)
            elif (
                parent is not None
                and parent[0] == NODE_MATERIAL
                and sum(n[0] == NODE_SHAPE for n in parent[2]) == 1
            ):
                parent[1] = material
                out.append(node)
            else:
                out.append([NODE_MATERIAL, material, [node]])
        return out

    tree = walk(tree, None)
    root = next((n for n in tree if n[0] == NODE_JOINT), None)
    for shape, material in added:
        (root[2] if root is not None else tree).append([NODE_MATERIAL, material, [[NODE_SHAPE, shape, []]]])
    return _nodes(tree)


# -- SHP1 -------------------------------------------------------------------------------------


@dataclass
class _Encoded:
    record: np.void  # SHAPE_DTYPE
    descriptors: bytes  # its list, end entry included
    groups: list[tuple[int, int, list[int]]]  # (current, slot count, slots)
    lists: list[bytes]  # one display list per packet, 32-byte padded


def _runs(order: np.ndarray, triangle_draws: np.ndarray) -> list[np.ndarray]:
    """Triangles taken in ``order`` and cut greedily into runs needing ≤ 10 draw matrices."""
    packets, start, current = [], 0, set()
    for k, draws in enumerate(triangle_draws[order].tolist()):
        merged = current | set(draws)
        if len(merged) > MAX_SLOTS:
            packets.append(order[start:k])
            start, merged = k, set(draws)
        current = merged
    packets.append(order[start:])
    return [p for p in packets if len(p)]


def _packets(triangle_draws: np.ndarray) -> list[np.ndarray]:
    """Triangles (by the draw matrices of their corners) split into packets of ≤ 10 matrices: greedy
    runs in the given order (an imported mesh keeps its packets' order) or, when fewer, in order
    of the matrices they need (faces in any order still share packets)."""
    given = _runs(np.arange(len(triangle_draws)), triangle_draws)
    needs = np.sort(triangle_draws, axis=1)
    grouped = _runs(np.lexsort(needs.T[::-1]), triangle_draws)
    return grouped if len(grouped) < len(given) else given


def _slots(needed: list[set[int]]) -> list[tuple[list[int], dict[int, int]]]:
    """Per packet: the slot values (0xFFFF: keep what the previous packet loaded) and slot of each matrix."""
    out = []
    loaded: list[int | None] = [None] * MAX_SLOTS
    for first, matrices in enumerate(needed):
        kept = {slot: d for slot, d in enumerate(loaded) if d in matrices} if first else {}
        free = (slot for slot in range(MAX_SLOTS) if slot not in kept)
        placed = dict(kept)
        for d in sorted(matrices - set(kept.values())):
            placed[next(free)] = d
        count = max(placed) + 1
        # a slot this packet does not use keeps what was loaded there (or repeats a matrix it needs)
        filler = [0xFFFF if loaded[slot] is not None else min(matrices) for slot in range(count)]
        values = [0xFFFF if slot in kept else placed.get(slot, filler[slot]) for slot in range(count)]
        for slot, d in placed.items():
            loaded[slot] = d
        out.append((values, {d: slot for slot, d in placed.items()}))
    return out


def _unit(vectors: np.ndarray) -> np.ndarray:
    length = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(length > 0, length, 1)


def _normal_indices(
    arrays: _Arrays, normals: np.ndarray, corner_draw: np.ndarray, matrices: np.ndarray, shape: str
) -> np.ndarray:
    """NRM indices of model-space corner normals. An existing normal is reused when the reader would
    turn it into the wanted one: compared by direction with Dᵀ·n (the inverse of the reader's
    D⁻ᵀ) where the draw matrix is well conditioned, and where the reader compares (after its own
    turn) for nearly flat joint scales; others are turned back by Dᵀ and appended."""
    turned = _unit(np.einsum("nji,nj->ni", matrices[corner_draw, :3, :3], normals))
    existing = arrays.decoded(geometry.NRM)
    if existing is None or not len(existing):
        return arrays.index(geometry.NRM, turned, shape)
    linear = matrices[:, :3, :3]
    conditioned = np.linalg.cond(linear) < WELL_CONDITIONED
    found = np.full(len(normals), -1, np.int64)
    direct = conditioned[corner_draw]
    found[direct] = match_rows(_unit(existing[:, :3]), turned[direct], NORMAL_TOLERANCE)
    misses = found < 0
    if misses.any():
        turn = normal_matrices(matrices)
        for d in np.unique(corner_draw[misses & ~direct]).tolist():
            at = np.flatnonzero(misses & (corner_draw == d))
            found[at] = match_rows(_unit(existing[:, :3] @ turn[d].T), normals[at], NORMAL_TOLERANCE)
    missing = np.flatnonzero(found < 0)
    if len(missing):
        found[missing] = arrays.index(geometry.NRM, turned[missing], shape)
    return found


def _encode_shape(
    data: ShapeData,
    shape: str,
    arrays: _Arrays,
    draw_of_key: dict[tuple, int],
    keys: list[tuple],
    key_of_vertex: np.ndarray,
    matrices: np.ndarray,
    old_record: np.void | None,
    old_descriptors: np.ndarray | None,
    own_positions: np.ndarray,
) -> _Encoded:
    positions, triangles, count = data.positions, data.triangles, len(data.positions)
    draw = np.array([draw_of_key[k] for k in keys], np.int64)[key_of_vertex]  # per vertex
    inverse = np.linalg.pinv(matrices)
    stored = np.einsum("nij,nj->ni", inverse[draw, :3, :3], positions) + inverse[draw, :3, 3]
    # GX winding: each triangle clockwise from the front; corner c of the stream is corner `source` of the data.
    source = (np.arange(len(triangles))[:, None] * 3 + np.array([0, 2, 1])).reshape(-1)
    corner_vertex = triangles[:, [0, 2, 1]].reshape(-1)
    corner_draw = draw[corner_vertex]
    columns = [corner_draw, arrays.distinct(geometry.POS, stored, draw, own_positions, shape)[corner_vertex]]
    attributes = [geometry.POS]
    if data.normals is not None:
        normals = np.asarray(data.normals, np.float64).reshape(-1, 3)
        if len(normals) == count:
            normals = normals[corner_vertex]
        elif len(normals) == 3 * len(triangles):
            normals = normals[source]
        else:
            raise ExportError(
                f"{shape}: {len(normals)} normals for {count} vertices and {len(triangles)} faces"
            )
        entry = arrays.entry(geometry.NRM)
        if entry is not None and int(entry["count"]) != 0:
            raise ExportError(f"{shape}: the model's normals carry binormals and tangents (NBT), not written")
        columns.append(_normal_indices(arrays, normals, corner_draw, matrices, shape))
        attributes.append(geometry.NRM)
    for k, colors in enumerate(data.colors):
        if colors is not None:
            rgba = np.rint(np.clip(np.asarray(colors, np.float64)[source], 0, 1) * 255).astype(np.uint8)
            if rgba.shape[1] == 3:
                rgba = np.concatenate([rgba, np.full((len(rgba), 1), 255, np.uint8)], axis=1)
            columns.append(arrays.index(geometry.CLR0 + k, rgba, shape))
            attributes.append(geometry.CLR0 + k)
    for k, uv in enumerate(data.uvs):
        if uv is not None:
            uv = np.asarray(uv, np.float64)[source]
            columns.append(arrays.index(geometry.TEX[k], np.stack([uv[:, 0], 1 - uv[:, 1]], axis=1), shape))
            attributes.append(geometry.TEX[k])
    # One GX vertex per distinct (draw matrix, indices) corner.
    table = np.stack(columns, axis=1)
    corner_of, first = unique_rows(table)
    vertices = table[first]
    gx_triangles = corner_of.reshape(-1, 3)

    old_types = {} if old_descriptors is None else dict(old_descriptors.tolist())
    distinct = np.unique(draw)
    multi = len(distinct) > 1 or geometry.PNMTXIDX in old_types
    descriptor = [(geometry.PNMTXIDX, geometry.INDEX_DIRECT)] if multi else []
    widths = []
    for k, attribute in enumerate(attributes):
        fits_u8 = vertices[:, k + 1].max(initial=0) <= 0xFF
        u8 = old_types.get(attribute) == geometry.INDEX_U8 and fits_u8
        widths.append("u1" if u8 else ">u2")
        descriptor.append((attribute, geometry.INDEX_U8 if u8 else geometry.INDEX_U16))
    descriptor.append((0xFF, 0))
    fields = ([("m", "u1")] if multi else []) + [
        (f"a{a}", w) for a, w in zip(attributes, widths, strict=True)
    ]
    vertex_dtype = np.dtype(fields)

    triangle_draws = vertices[gx_triangles, 0]
    packets = _packets(triangle_draws) if multi else [np.arange(len(gx_triangles))]
    slots = _slots([set(triangle_draws[p].reshape(-1).tolist()) for p in packets])
    groups, lists = [], []
    for packet, (values, slot_of) in zip(packets, slots, strict=True):
        records = np.zeros(len(vertices), vertex_dtype)
        for k, attribute in enumerate(attributes):
            records[f"a{attribute}"] = vertices[:, k + 1]
        if multi:
            lookup = np.zeros(int(vertices[:, 0].max()) + 1, np.int64)
            lookup[list(slot_of)] = list(slot_of.values())
            records["m"] = lookup[vertices[:, 0]] * 3
        lists.append(stripper.display_list(gx_triangles[packet], records))
        first_loaded = values[0] if values[0] != 0xFFFF else next(d for d, s in slot_of.items() if s == 0)
        groups.append((first_loaded, len(values), values))
    bind = positions if multi else stored
    record = np.zeros((), SHAPE_DTYPE)
    matrix_type = MULTI if multi else SINGLE
    if old_record is not None and not multi and int(old_record["matrix_type"]) in (1, 2):
        matrix_type = int(old_record["matrix_type"])  # billboards stay billboards
    record["matrix_type"], record["pad"], record["pad2"] = matrix_type, 0xFF, 0xFFFF
    record["packet_count"] = len(packets)
    used = bind[np.unique(triangles)]
    record["bbox_min"], record["bbox_max"] = used.min(axis=0), used.max(axis=0)
    record["radius"] = float(np.linalg.norm(used, axis=1).max())
    return _Encoded(record, np.array(descriptor, DESCRIPTOR_DTYPE).tobytes(), groups, lists)


def _descriptor_end(shp1: SHP1) -> int:
    """Where the descriptor lists end (the table's padding after)."""
    end = 0
    for s in range(len(shp1.remap)):
        at = int(shp1.shapes()[s]["descriptor_offset"])
        end = max(end, at + (len(shp1.descriptor_list(s)) + 1) * DESCRIPTOR_DTYPE.itemsize)
    return end


def _place(table: bytearray, item: bytes, step: int) -> int:
    """Offset of ``item`` in ``table`` at a multiple of ``step``, appended when absent."""
    at = table.find(item)
    while at >= 0 and at % step:
        at = table.find(item, at + 1)
    if at < 0:
        at = len(table)
        table += item
    return at


def _shp1(
    model: Model, order: list[int | None], encoded: dict[int, _Encoded], renumber: np.ndarray
) -> tuple[SHP1, int]:
    """SHP1 with the shapes in ``order`` (old indices; an encoded shape replaces or adds one). The
    slot table is laid out again in shape order: the runs of untouched shapes as they were (shared
    where they were shared), an edited shape's runs each once."""
    shp1 = model.shp1
    records = shp1.shapes()
    descriptors = bytearray(shp1.descriptors[: _descriptor_end(shp1)])
    old_slots = shp1.slots.astype(np.int64)
    old_slots = np.where(old_slots == 0xFFFF, 0xFFFF, renumber[np.minimum(old_slots, len(renumber) - 1)])
    slots: list[int] = []
    runs: dict[tuple, int] = {}
    old_runs: dict[int, int] = {}  # an untouched run's first slot: before → now
    span = {}  # the longest run starting at each old first slot
    for first, count in shp1.groups[["first", "count"]].tolist():
        span[first] = max(span.get(first, 0), count)
    entries, groups, packets, lists = [], [], [], bytearray()
    for key in order:
        if key in encoded:
            e = encoded[key]
            record = e.record.copy()
            record["descriptor_offset"] = _place(descriptors, e.descriptors, DESCRIPTOR_DTYPE.itemsize)
            record["first_group"] = record["first_packet"] = len(groups)
            for (current, count, values), data in zip(e.groups, e.lists, strict=True):
                groups.append((current, count, _run(slots, runs, values)))
                packets.append((len(data), len(lists)))
                lists += data
        else:
            record = records[key].copy()
            first_group, first_packet = int(record["first_group"]), int(record["first_packet"])
            record["first_group"] = record["first_packet"] = len(groups)
            for p in range(int(record["packet_count"])):
                current, count, first = shp1.groups[first_group + p].tolist()
                size, offset = shp1.packets[first_packet + p].tolist()
                current = current if current == 0xFFFF else int(renumber[min(current, len(renumber) - 1)])
                if first not in old_runs:
                    old_runs[first] = len(slots)
                    slots.extend(old_slots[first : first + span[first]].tolist())
                groups.append((current, count, old_runs[first]))
                packets.append((size, len(lists)))
                lists += shp1.lists[offset : offset + size]
        entries.append(record)
    section = replace(
        shp1,
        entries=np.array(entries, SHAPE_DTYPE),
        remap=np.arange(len(entries), dtype=">u2"),
        names=[shp1.names[k] if k < len(shp1.names) else f"shape{k}" for k in order] if shp1.names else [],
        descriptors=bytes(descriptors),
        slots=np.array(slots, ">u2"),
        lists=bytes(lists),
        groups=np.array(groups, GROUP_DTYPE).reshape(-1),
        packets=np.array(packets, PACKET_DTYPE).reshape(-1),
    )
    return section, len(groups)


def _run(slots: list[int], runs: dict[tuple, int], values: list[int]) -> int:
    """Where a packet's run of slots starts in the table (appended the first time it is seen)."""
    key = tuple(values)
    if key not in runs:
        runs[key] = len(slots)
        slots.extend(values)
    return runs[key]


# -- the entry points -----------------------------------------------------------------------


def replace_shapes(
    model: Model,
    shapes: dict[int, ShapeData],
    added: list[ShapeData] = (),
    removed: set[int] = frozenset(),
    filename: str = "<bytes>",
) -> Model:
    """A new Model: the shapes in ``shapes`` re-encoded, ``added`` appended, ``removed`` dropped;
    every other shape's packets, display lists and matrix tables, every other section, padding
    and unknown field written as they were."""
    shape_count = len(model.shp1.remap)
    for s in list(shapes) + list(removed):
        if not 0 <= s < shape_count:
            raise ExportError(f"{filename}: shape {s} is not one of the model's {shape_count} shapes")
    graph = geometry.read_graph(model, filename)
    world = geometry.world_matrices(model, graph.parents)
    material_count = len(model.mat3.names)
    edits = {s: d for s, d in shapes.items() if s not in removed}
    jobs = [(s, d, f"{filename}: shape{s}") for s, d in edits.items()]
    jobs += [(shape_count + k, d, f"{filename}: added shape {k}") for k, d in enumerate(added)]
    jobs = [(key, _checked(data, name), name) for key, data, name in jobs]
    edits = {key: data for key, data, _ in jobs if key < shape_count}
    added = [data for key, data, _ in jobs if key >= shape_count]
    for _, data, name in jobs:
        if not 0 <= int(data.material) < material_count:
            raise ExportError(f"{name}: material {data.material} is not one of the model's {material_count}")

    draws = _Draws(model, world)
    skins = {}
    for key, data, name in jobs:
        skins[key] = _vertex_keys(data, len(world), name)
        for k in skins[key][0]:
            draws.add(k)
    drw1, evp1, renumber = draws.build()
    sections = {type(s): s for s in model.sections}
    sections[DRW1], sections[EVP1] = drw1, evp1
    staged = replace(model, sections=[sections.get(type(s), s) for s in model.sections])
    matrices = geometry.draw_skin(staged, world, filename).matrices

    decoded = [_decoded(model, s, filename) for s in range(shape_count)]
    for s in shapes:
        if decoded[s] is None:
            raise ExportError(
                f"{filename}: shape{s} sends vertex data in its display lists (direct), not written"
            )
    arrays = _Arrays(model, _used_entries(model, decoded))
    own = {s: np.unique(g.indices.get(geometry.POS, [])).astype(np.int64) for s, g in enumerate(decoded) if g}
    old_records = model.shp1.shapes()
    encoded = {}
    for key, data, name in jobs:
        old = key < shape_count
        encoded[key] = _encode_shape(
            data,
            name,
            arrays,
            draws.index,
            *skins[key],
            matrices,
            old_records[key] if old else None,
            model.shp1.descriptor_list(key, filename) if old else None,
            own[key] if old else np.zeros(0, np.int64),
        )
    order = [s for s in range(shape_count) if s not in removed] + [shape_count + k for k in range(len(added))]
    shp1, packet_count = _shp1(model, order, encoded, renumber)
    new_index = {old: new for new, old in enumerate(order) if old < shape_count}
    moved = {s: int(d.material) for s, d in edits.items() if int(d.material) != int(graph.shape_materials[s])}
    added_nodes = [(len(new_index) + i, int(d.material)) for i, d in enumerate(added)]
    inf1 = replace(
        model.inf1,
        graph=_edit_graph(model.inf1.graph, new_index, moved, added_nodes),
        packet_count=packet_count,
        vertex_count=arrays.count(geometry.POS),
    )
    sections.update({INF1: inf1, SHP1: shp1, VTX1: arrays.section()})
    skin = geometry.draw_skin(model, world, filename)
    positions = geometry.decode_array(model, geometry.POS, filename)
    before = [_imported(g, positions, skin) for g in decoded if g is not None]
    after = [
        edits[s] if s in encoded else _imported(decoded[s], positions, skin)
        for s in range(shape_count)
        if s not in removed and decoded[s] is not None
    ]
    sections[JNT1] = _joint_bounds(model.jnt1, world, before, after + list(added))
    # the header's counts and sizes are written true (a file that declared others keeps its tag and trailer)
    framing = replace(model.framing, section_count_delta=0, file_size_delta=0, size_overrun=0)
    return Model(model.kind, [sections.get(type(s), s) for s in model.sections], framing)


def _imported(g: geometry.ShapeGeometry, positions: np.ndarray | None, skin: geometry.Skin) -> ShapeData:
    """A shape's bind-pose vertices and skin as the importer places them (no corner data)."""
    if positions is None or geometry.POS not in g.indices:
        empty = np.zeros((0, 1))
        return ShapeData(np.zeros((0, 3)), np.zeros((0, 3), np.int64), empty.astype(np.int64), empty)
    keys = g.indices[geometry.POS] * len(skin.matrices) + g.draw
    _, first = np.unique(keys, return_index=True)
    points = positions[g.indices[geometry.POS][first]].astype(np.float64)
    if points.shape[1] == 2:
        points = np.concatenate([points, np.zeros((len(points), 1))], axis=1)
    matrices = skin.matrices[g.draw[first]]
    positions = np.einsum("nij,nj->ni", matrices[:, :3, :3], points) + matrices[:, :3, 3]
    return ShapeData(
        positions, np.zeros((0, 3), np.int64), skin.joints[g.draw[first]], skin.weights[g.draw[first]]
    )


def _extents(world: np.ndarray, shapes: list[ShapeData]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per joint, the box (in the joint's own space) and the radius around the bind-pose vertices it
    moves; NaN for joints that move none."""
    inverse = np.linalg.pinv(world)  # a joint scaled to nothing has no inverse
    low, high = np.full((len(world), 3), np.inf), np.full((len(world), 3), -np.inf)
    radius = np.full(len(world), -np.inf)
    for data in shapes:
        positions = np.asarray(data.positions, np.float64).reshape(-1, 3)
        if not len(positions):
            continue
        joints = np.asarray(data.joints, np.int64).reshape(len(positions), -1)
        weights = np.asarray(data.weights, np.float64).reshape(len(positions), -1)
        vertex, column = np.nonzero(weights != 0)
        joint = joints[vertex, column]
        local = np.einsum("nij,nj->ni", inverse[joint, :3, :3], positions[vertex]) + inverse[joint, :3, 3]
        np.minimum.at(low, joint, local)
        np.maximum.at(high, joint, local)
        np.maximum.at(radius, joint, np.linalg.norm(local, axis=1))
    none = ~np.isfinite(radius)
    low[none], high[none], radius[none] = np.nan, np.nan, np.nan
    return low, high, radius


def _joint_bounds(jnt1: JNT1, world: np.ndarray, before: list[ShapeData], after: list[ShapeData]) -> JNT1:
    """JNT1 with new bounds for the joints whose vertices changed extent; the rest as stored (the
    stored values are authoring leftovers that no formula reproduces, so they are kept while valid)."""
    old, new = _extents(world, before), _extents(world, after)
    scale = max(1.0, float(np.nanmax(np.abs(new[0]), initial=0)), float(np.nanmax(np.abs(new[1]), initial=0)))
    changed = np.zeros(len(world), bool)
    for o, n in zip(old, new, strict=True):
        o, n = o.reshape(len(world), -1), n.reshape(len(world), -1)
        changed |= (np.isnan(o) != np.isnan(n)).any(axis=1) | (
            np.abs(np.nan_to_num(o - n)) > 1e-4 * scale
        ).any(axis=1)
    if not changed.any():
        return jnt1
    entries = jnt1.joints().copy()
    low, high, radius = (np.nan_to_num(x) for x in new)
    entries["bbox_min"][changed], entries["bbox_max"][changed] = low[changed], high[changed]
    entries["radius"][changed] = radius[changed]
    return replace(jnt1, entries=entries, remap=np.arange(len(entries), dtype=">u2"))


def new_model(
    joints: list[model_build.Joint],
    shapes: list[ShapeData],
    materials: list[str] | MAT3,
    textures: list[tuple[str, np.ndarray]] | TEX1 = (),
    kind: bytes = b"bmd3",
    scaling_rule: int = 0,
    filename: str = "<new model>",
) -> Model:
    """A model made from scratch: the joints (parents first), materials and textures as
    ``model_build.skeleton`` takes them, every shape encoded as ``replace_shapes`` adds one, and
    each joint's bounds from the vertices it moves (``_joint_bounds``). Only BMD: a BDL's MDL3 (each material's
    precompiled GX commands) is not generated."""
    if kind != b"bmd3":
        raise ExportError(
            f"{filename}: a new model can be written as BMD only (a BDL needs MDL3 display lists)"
        )
    if not joints:
        raise ExportError(f"{filename}: a model needs at least one joint")
    for j, joint in enumerate(joints):
        if not -1 <= joint.parent < j or (joint.parent == -1) != (j == 0):
            raise ExportError(
                f"{filename}: joint {joint.name!r} must come after its parent and only joint 0 is the root"
            )
    empty = model_build.skeleton(joints, materials, textures, scaling_rule)
    return replace_shapes(empty, {}, shapes, filename=filename)


MDL3_NAMES = 0x20  # MDL3 header: offset of its name table (the section's last table)


def rename_materials(model: Model, names: list[str], filename: str = "<bytes>") -> Model:
    """The model with its materials renamed: MAT3's name table and, in a BDL, the copy MDL3 keeps
    (MDL3's display lists are found by material index and hold no names: they stay as they are)."""
    if len(names) != len(model.mat3.names):
        raise ExportError(f"{filename}: {len(names)} material names for {len(model.mat3.names)} materials")
    sections = []
    for section in model.sections:
        if isinstance(section, MAT3):
            section = replace(section, names=list(names))
        elif isinstance(section, RawSection) and section.magic == b"MDL3":
            at = int.from_bytes(section.data[MDL3_NAMES : MDL3_NAMES + 4], "big")
            body = bytearray(section.data[:at] + write_names(list(names)))
            body += aligned_padding(len(body), 32)
            body[4:8] = len(body).to_bytes(4, "big")
            section = replace(section, data=bytes(body))
        sections.append(section)
    return replace(model, sections=sections)
