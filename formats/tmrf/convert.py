"""TMRF files ⇄ the neutral Scene.

- AX3Skeleton → Skeleton (base poses are parent-relative; bone extras keep the
  stored base floats and name string).
- TriangleMesh → Mesh with one vertex per mesh vertex (positions from the named
  3DPoints list); AX3SkeletalDeform of that list → skin joints and weights;
  Normals or decoded CompressedNormals → POINT normals; each Texture → an image
  slot of the mesh's material (image named by the texture string, no pixels)
  and its TextureCoordinates → a UV layer; tangent vectors → ``Mesh.tangents``
  (horizontal vector + the signed scale of the vertical one: its sign, or the file's
  CompressedTangentVectors multiplier as it is, so 0.875 stays 0.875).
- AX3FrameAnimation → channels keyed once per frame at the file's fps;
  AX3TrackAnimation → channels keyed at the key times (seconds × ``TRACK_FPS``).
  Channels: ``location`` and ``rotation_quaternion`` (w, x, y, z) per bone.

The spec names no axes, so the default axis conversion is the identity. Texture
coordinates are taken as stored (V up), as the format's shader resources point
to an OpenGL-style engine.

``scene.extras["tmrf"]`` keeps the file's layout (string pool, every resource
in file order with the fields the scene has no place for: string references,
compression flags, base poses, key times, tangent data, shader resources,
TOC and hints), and each skeleton, mesh and animation records its resource in
``extras["tmrf_resource"]``. ``from_scene`` rebuilds that layout with the
scene's values, so an unedited scene writes the original bytes; objects
without a layout entry are added as new resources.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np

from .. import fit
from ..curves import sample
from ..scene import (
    Animation,
    Channel,
    Image,
    Layer,
    Material,
    Mesh,
    Scene,
    Skeleton,
    TextureSlot,
    compose,
    matrix_to_quat,
    quat_multiply,
    world_from_local,
)
from . import resources as res
from . import vectors
from .media import VERSION, Builder, MediaFile, Resource, StringTable, computed_hints, refresh_hints

TRACK_FPS = 30.0
AXES = ("Y", "Z")  # the default (forward, up): the identity, as the spec names no axes
TOLERANCE = 1e-5
NORMAL_MODES = ("none", "compressed")
TANGENT_MODES = ("none", "compressed", "high")
ANIMATION_MODES = ("frame", "track")
CONTENTS = {
    "everything": {"skeleton", "mesh", "skin", "animation", "other"},
    "static_mesh": {"mesh"},
    "skinned_model": {"mesh", "skin"},
    "skeleton": {"skeleton"},
    "animations": {"animation"},
    "animation_file": {"animation", "other"},  # an applied animation file written back: no rig added
}
KINDS = {  # content class → layout kind
    res.TableOfContents: "toc",
    res.Hints: "hints",
    res.Skeleton: "skeleton",
    res.PointList: "points",
    res.SkeletalDeform: "deform",
    res.TriangleMesh: "mesh",
    res.Normals: "normals",
    res.CompressedNormals: "compressed_normals",
    res.Texture: "texture",
    res.TextureCoordinates: "coordinates",
    res.TangentVectors: "tangents",
    res.CompressedTangentVectors: "compressed_tangents",
    res.HighCompressedTangentVectors: "high_tangents",
    res.FrameAnimation: "frame",
    res.TrackAnimation: "track",
    res.Opaque: "opaque",
}
TANGENT_CLASSES = (res.TangentVectors, res.CompressedTangentVectors, res.HighCompressedTangentVectors)
TANGENT_KINDS = {"none": "tangents", "compressed": "compressed_tangents", "high": "high_tangents"}
OWNED_KINDS = ("skeleton", "mesh", "frame", "track")  # layout kinds made from a scene object
MESH_PART_KINDS = ("normals", "compressed_normals", "texture", "coordinates", *TANGENT_KINDS.values())


# -- axis conversion (exact for the signed permutations of scene.axis_matrix) ------


def _apply(axis: np.ndarray, vectors_: np.ndarray) -> np.ndarray:
    """Rotate (N, 3) vectors by ``axis``; signed permutations move values without arithmetic."""
    rot = axis[:3, :3]
    v = np.asarray(vectors_, dtype=np.float64)
    if np.array_equal(rot, np.eye(3)):
        return v.copy()
    if np.array_equal(np.abs(rot).sum(axis=1), np.ones(3)) and np.isin(rot, (-1, 0, 1)).all():
        source = np.argmax(np.abs(rot), axis=1)
        return v[:, source] * rot[np.arange(3), source]
    return v @ rot.T


def _apply_matrices(axis: np.ndarray, matrices: np.ndarray) -> np.ndarray:
    """``axis @ m`` for (N, 4, 4) matrices; the identity leaves them untouched (NaN stays where it was)."""
    return np.array(matrices, np.float64) if np.array_equal(axis, np.eye(4)) else axis @ matrices


def _axis_quat(axis: np.ndarray) -> np.ndarray:
    return matrix_to_quat(axis[:3, :3])


def _root_channels(positions, quats_wxyz, axis, inverse=False):
    """Root bones' parent is the armature: apply the axis conversion (or undo it) to their keys."""
    rot = axis.T if inverse else axis
    if np.array_equal(rot[:3, :3], np.eye(3)):
        return positions, quats_wxyz
    return _apply(rot, positions), quat_multiply(_axis_quat(rot), quats_wxyz)


# -- file → scene ------------------------------------------------------------------


class _Import:
    def __init__(self, model: MediaFile, axis: np.ndarray):
        self.model, self.axis = model, axis
        self.totals = computed_hints(model)
        self.strings = model.strings
        self.resources = model.walk()
        self.index = {id(r): i for i, r in enumerate(self.resources)}
        self.parent = {id(c): self.index[id(r)] for r in self.resources for c in r.children}
        self.names = model.names()
        self.scene = Scene(warnings=list(model.warnings))
        self.skeletons: dict[str, int] = {}
        self.images: dict[str, int] = {}
        self.roots: dict[int, set[str]] = {}  # for _is_root

    def label(self, i: int, fallback: str) -> str:
        return self.names.get(i, (None, None))[0] or fallback

    def text(self, ref: int, fallback: str) -> str:
        return self.strings.name(int(ref)) or fallback

    def run(self) -> Scene:
        layout = [self.describe(r) for r in self.resources]
        for i, r in enumerate(self.resources):
            if isinstance(r.content, res.Skeleton):
                self.skeleton(i, r.content)
        for i, r in enumerate(self.resources):
            if isinstance(r.content, res.TriangleMesh):
                self.mesh(i, r, layout)
            elif isinstance(r.content, res.FrameAnimation):
                self.frame_animation(i, r.content)
            elif isinstance(r.content, res.TrackAnimation):
                self.track_animation(i, r.content)
        common_rate(self.scene.animations)
        for item in self.scene.skeletons + self.scene.meshes + self.scene.animations:
            item.extras["tmrf_name"] = item.name  # a different name on export is a rename
        self.scene.extras["tmrf"] = {
            "version": self.model.version,
            "pool": self.strings.pool,
            "spans": [int(v) for v in np.asarray(self.strings.spans).ravel()],
            "resources": layout,
        }
        return self.scene

    def describe(self, resource: Resource) -> dict:
        """The layout entry of a resource: what the scene has no field for."""
        c = resource.content
        d = {"kind": KINDS[type(c)], "type": int(resource.type), "parent": self.parent.get(id(resource), -1)}
        if resource.tail:
            d["tail"] = resource.tail
        if isinstance(c, res.Opaque):
            d["data"] = c.data
        elif isinstance(c, res.TableOfContents):
            d.update(
                names=_ints(c.names), dtls=_ints(c.dtls), types=_ints(c.types), resources=_ints(c.resources)
            )
        elif isinstance(c, res.Hints):
            d.update(types=_ints(c.types), data_types=_ints(c.data_types), counts=_ints(c.counts))
            # What the file's resources added up to, so that unchanged totals keep the stored hints.
            totals = self.totals.get(self.index[id(resource)], {})
            d.update(total_keys=[f"{t}/{k}" for t, k in totals], total_counts=_ints(list(totals.values())))
        elif isinstance(c, res.PointList):
            # Points no mesh uses have no place in the scene.
            loose = np.setdiff1d(np.arange(len(c.points)), self.used_points(resource))
            d.update(count=len(c.points), loose_indices=_ints(loose), loose_points=_floats(c.points[loose]))
        elif isinstance(c, res.SkeletalDeform):
            d.update(
                skeleton=int(c.skeleton),
                bindings=_ints(c.bindings),
                weight_counts=_ints(c.weight_counts),
                weight_bindings=_ints(c.weights["binding"]),
                weight_factors=_floats(c.weights["factor"]),
                point_blends=_ints(c.point_blends),
            )
        elif isinstance(c, res.TriangleMesh):
            d.update(point_list=int(c.point_list), vertex_points=_ints(c.vertex_points))
        elif isinstance(c, res.CompressedNormals):
            # Coefficients that the shown normals do not encode back to (any A with B = 0, or a
            # mesh whose Normals say otherwise) are kept with the normal shown for them.
            shown = self.shown_normals(self.resources[self.parent[id(resource)]])
            fixes = np.flatnonzero((vectors.encode_normals(shown) != c.coefficients).any(axis=1))
            d.update(
                fix_indices=_ints(fixes),
                fix_coefficients=_ints(c.coefficients[fixes]),
                fix_normals=_floats(shown[fixes]),
            )
        elif isinstance(c, res.Texture):
            d["texture"] = int(c.texture)
        elif isinstance(c, res.TangentVectors):
            d.update(horizontal=_floats(c.horizontal), vertical=_floats(c.vertical))
        elif isinstance(c, res.CompressedTangentVectors):
            d.update(horizontal=_floats(c.horizontal), multipliers=_floats(c.multipliers))
        elif isinstance(c, res.HighCompressedTangentVectors):
            d["coefficients"] = _ints(c.coefficients)
        elif isinstance(c, res.FrameAnimation):
            d.update(
                skeleton=int(c.skeleton),
                frame_count=int(c.frame_count),
                fps=float(c.fps),
                bones=[int(b.bone) for b in c.bones],
                bases=_floats(
                    np.concatenate(
                        [a for b in c.bones for a in (b.base_position, b.base_orientation)] or [[]]
                    )
                ),
                flags=[int(b.flags) for b in c.bones],
            )
        elif isinstance(c, res.TrackAnimation):
            d.update(
                name=int(c.name),
                skeleton=int(c.skeleton),
                length=float(c.length),
                bindings=_ints(c.bindings),
                key_counts=[len(t) for t in c.tracks],
                times=_floats(np.concatenate([t["time"] for t in c.tracks] or [[]])),
            )
        return d

    @staticmethod
    def shown_normals(mesh: Resource) -> np.ndarray | None:
        """The normals the scene gets (file axes, float32): the Normals, else the decoded CompressedNormals."""
        for wanted in (res.Normals, res.CompressedNormals):
            for child in mesh.children:
                if isinstance(child.content, wanted):
                    if wanted is res.Normals:
                        return child.content.normals
                    return vectors.decode_normals(child.content.coefficients).astype(np.float32)
        return None

    def used_points(self, points: Resource) -> np.ndarray:
        name = self.names.get(self.index[id(points)], (None, None))[0]
        used = [
            r.content.vertex_points
            for r in self.resources
            if isinstance(r.content, res.TriangleMesh)
            and name is not None
            and self.strings.name(r.content.point_list) == name
            and self.model.find(name, res.POINTS) is points
        ]
        return np.unique(np.concatenate(used)) if used else np.zeros(0, np.int64)

    def skeleton(self, i: int, content: res.Skeleton) -> None:
        bones = content.bones
        parents = bones["parent"].astype(np.int32) - 1
        world = world_from_local(compose(bones["position"], bones["orientation"][:, [3, 0, 1, 2]]), parents)
        names = [self.text(ref, f"bone{j}") for j, ref in enumerate(bones["name"])]
        name = self.label(i, f"skeleton{i}")
        base = np.concatenate([bones["position"], bones["orientation"]], axis=1)
        self.skeletons.setdefault(name, len(self.scene.skeletons))
        self.scene.skeletons.append(
            Skeleton(
                name,
                names,
                parents,
                _apply_matrices(self.axis, world),
                bone_extras=[
                    {"base": [float(v) for v in row], "name_ref": int(ref)}
                    for row, ref in zip(base, bones["name"], strict=True)
                ],
                extras={"tmrf_resource": i},
            )
        )

    def mesh(self, i: int, resource: Resource, layout: list[dict]) -> None:
        content: res.TriangleMesh = resource.content
        name = self.label(i, f"mesh{i}")
        point_name = self.strings.name(content.point_list)
        points = self.model.find(point_name, res.POINTS) if point_name is not None else None
        vertex_count = len(content.vertex_points)
        if points is None:
            self.scene.warnings.append(f"mesh {name}: no point list {point_name!r}; positions are zero")
            file_positions = np.zeros((vertex_count, 3))
        else:
            file_positions = points.content.points[content.vertex_points]
        mesh = Mesh(
            name,
            _apply(self.axis, file_positions).astype(np.float32),
            content.triangles.astype(np.int32),  # decision 13: counter-clockwise, as in Blender
            extras={"tmrf_resource": i},
        )
        shown = self.shown_normals(resource)
        normals = None if shown is None else shown.astype(np.float64)
        coefficients = next(
            (
                c.content.coefficients
                for c in resource.children
                if isinstance(c.content, res.CompressedNormals)
            ),
            None,
        )
        if normals is not None:
            mesh.normals = Layer("normals", _apply(self.axis, normals).astype(np.float32))
        if points is not None:
            self.skin(mesh, points, content.vertex_points, layout)
        material = Material(name)
        for child in resource.children:
            if isinstance(child.content, res.Texture):
                self.texture(mesh, material, child, normals, coefficients, layout[self.index[id(child)]])
        if material.textures:
            mesh.materials = [len(self.scene.materials)]
            self.scene.materials.append(material)
        self.scene.meshes.append(mesh)

    def skin(self, mesh: Mesh, points: Resource, vertex_points: np.ndarray, layout: list[dict]) -> None:
        node = next((c for c in points.children if isinstance(c.content, res.SkeletalDeform)), None)
        if node is None:
            return
        deform = node.content
        skeleton_name = self.strings.name(deform.skeleton)
        if skeleton_name not in self.skeletons:
            layout[self.index[id(node)]]["unresolved"] = True  # the scene has no skin to rebuild it from
            self.scene.warnings.append(
                f"mesh {mesh.name}: no skeleton {skeleton_name!r}; the skin is left out"
            )
            return
        mesh.skeleton = self.skeletons[skeleton_name]
        skeleton = self.scene.skeletons[mesh.skeleton]
        bone_index = {n: j for j, n in enumerate(skeleton.bone_names)}
        binding_bones = np.array(
            [bone_index.get(self.strings.name(int(b)), -1) for b in deform.bindings], np.int32
        )
        if (binding_bones < 0).any():
            self.scene.warnings.append(
                f"mesh {mesh.name}: bone bindings missing from {skeleton_name!r} are ignored"
            )
        joints, weights = _blend_table(deform, binding_bones)
        blends = deform.point_blends[vertex_points]
        mesh.skin_joints, mesh.skin_weights = joints[blends], weights[blends]

    def texture(self, mesh, material, texture: Resource, normals, coefficients, entry: dict) -> None:
        name = self.strings.name(int(texture.content.texture))
        slot = None
        if name is not None:  # a Texture without a texture name only carries coordinates
            if name not in self.images:
                self.images[name] = len(self.scene.images)
                self.scene.images.append(Image(name, None))
            slot = TextureSlot(self.images[name])
        for child in texture.children:
            c = child.content
            if isinstance(c, res.TextureCoordinates):
                layer_name = _unique(name or "UVMap", {layer.name for layer in mesh.uv_layers})
                mesh.uv_layers.append(Layer(layer_name, c.coordinates.astype(np.float32)))
                entry["uv_layer"] = layer_name
                if slot is not None:
                    slot.uv_layer = layer_name
            elif mesh.tangents is None and isinstance(c, TANGENT_CLASSES):
                pair = _decode_tangents(c, normals, coefficients)
                if pair is None:
                    self.scene.warnings.append(f"mesh {mesh.name}: tangents without the normals they need")
                    continue
                horizontal, vertical = pair
                sign = np.ones(len(horizontal))
                if isinstance(c, res.CompressedTangentVectors):
                    sign = c.multipliers.astype(np.float64)  # the signed scale, kept whole (0.875 stays)
                elif normals is not None:
                    sign[np.sum(np.cross(normals, horizontal) * vertical, -1) < 0] = -1.0
                data = np.concatenate([_apply(self.axis, horizontal), sign[:, None]], axis=1)
                mesh.tangents = Layer("tangents", data.astype(np.float32))
        if slot is not None:
            material.textures.append(slot)

    def frame_animation(self, i: int, content: res.FrameAnimation) -> None:
        fps = float(content.fps)
        if not np.isfinite(fps) or fps <= 0:
            self.scene.warnings.append(f"frame animation {i}: {fps} frames per second; shown at {TRACK_FPS}")
            fps = TRACK_FPS
        animation = self.animation(i, content.skeleton, fps, max(content.frame_count - 1, 0))
        times = np.arange(content.frame_count, dtype=np.float64)  # decision 10: frame i is at i / fps
        decoded = res.decode_bones(content.bones)  # every bone of one compression in one pass
        for bone, positions, orientations in zip(content.bones, *decoded, strict=True):
            self.bone_channels(animation, self.text(bone.bone, ""), times, positions, orientations)
            _keep_values(animation, self.text(bone.bone, ""), positions, orientations)

    def track_animation(self, i: int, content: res.TrackAnimation) -> None:
        animation = self.animation(i, content.skeleton, TRACK_FPS, float(content.length) * TRACK_FPS)
        if content.name:
            animation.name = self.text(content.name, animation.name)
        for binding, track in zip(content.bindings, content.tracks, strict=True):
            times = track["time"].astype(np.float64) * TRACK_FPS
            self.bone_channels(
                animation, self.text(binding, ""), times, track["position"], track["orientation"]
            )
            _keep_values(animation, self.text(binding, ""), track["position"], track["orientation"])

    def animation(self, i: int, skeleton_ref: int, fps: float, end: float) -> Animation:
        skeleton = self.skeletons.get(self.strings.name(skeleton_ref))
        animation = Animation(self.label(i, f"animation{i}"), fps=fps, frame_end=end, skeleton=skeleton)
        animation.extras["tmrf_resource"] = i
        self.scene.animations.append(animation)
        return animation

    def bone_channels(self, animation, bone: str, times, positions, orientations_xyzw) -> None:
        positions = np.asarray(positions, np.float64)
        # Decision 10: the file's quaternions are x, y, z, w; keys are whole parent-relative transforms.
        quats = np.asarray(orientations_xyzw, np.float64)[:, [3, 0, 1, 2]]
        if _is_root(self.roots, self.scene, animation.skeleton, bone):
            positions, quats = _root_channels(positions, quats, self.axis)
        animation.channels.append(Channel("bone", bone, "location", times, positions))
        animation.channels.append(Channel("bone", bone, "rotation_quaternion", times.copy(), quats))


def _ints(values) -> list[int]:
    return np.asarray(values).ravel().astype(np.int64).tolist()


def _unsigned(values) -> np.ndarray:
    return np.asarray(values, np.uint32).ravel()


def _floats(values) -> list[float]:
    return np.asarray(values, np.float32).ravel().tolist()


def _blend_table(deform: res.SkeletalDeform, binding_bones: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(B, K) bone indices and weights of each weight blend; bindings without a bone (-1) weigh 0."""
    counts = deform.weight_counts.astype(np.int64)
    width = int(counts.max()) if len(counts) else 0
    blend_of = np.repeat(np.arange(len(counts)), counts)
    slot = np.arange(len(deform.weights)) - np.repeat(deform.starts, counts)
    joints = np.zeros((len(counts), width), np.int32)
    weights = np.zeros((len(counts), width), np.float32)
    bones = binding_bones[deform.weights["binding"]] if len(binding_bones) else np.zeros(0, np.int32)
    joints[blend_of, slot] = np.maximum(bones, 0)
    weights[blend_of, slot] = np.where(bones >= 0, deform.weights["factor"], 0)
    return joints, weights


def _decode_tangents(c, normals, coefficients) -> tuple[np.ndarray, np.ndarray] | None:
    if isinstance(c, res.TangentVectors):
        return c.horizontal.astype(np.float64), c.vertical.astype(np.float64)
    if isinstance(c, res.CompressedTangentVectors):
        if normals is None:
            return None
        horizontal = c.horizontal.astype(np.float64)
        # Decision 12: the mesh's Normals, else its decoded CompressedNormals.
        return horizontal, vectors.compressed_tangent_vertical(normals, horizontal, c.multipliers)
    if coefficients is None:
        return None
    return vectors.decode_high_tangents(coefficients, c.coefficients)


def _is_root(roots: dict[int, set[str]], scene: Scene, skeleton: int | None, bone: str) -> bool:
    """Whether the first bone of that name in the skeleton is a root; ``roots`` keeps each skeleton's
    root names once found (a lookup per animated bone, not a search of the bone names)."""
    if skeleton is None:
        return False
    if skeleton not in roots:
        sk = scene.skeletons[skeleton]
        first: dict[str, int] = {}
        for i, name in enumerate(sk.bone_names):
            first.setdefault(name, i)
        roots[skeleton] = {name for name, i in first.items() if sk.parents[i] < 0}
    return bone in roots[skeleton]


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 1
    while candidate in taken:
        candidate, n = f"{name}.{n:03d}", n + 1
    return candidate


KIND = "tmrf_kind"  # animation extras: "frame" or "track", the kind a new resource of it is written as
OWN_FPS = "tmrf_fps"  # animation extras: the file's own rate when the scene shows it at another


def common_rate(animations: list[Animation], rate: float | None = None) -> None:
    """Every animation at ``rate`` (the scene's; by default the first one's), keys moved so that each
    still plays at its own speed; its own rate kept under ``OWN_FPS`` for export."""
    if not animations:
        return
    rate = animations[0].fps if rate is None else rate
    for animation in animations:
        if animation.fps != rate:
            animation.extras.setdefault(OWN_FPS, animation.fps)
            _rescale(animation, rate / animation.fps)
            animation.fps = rate


def _own_rate(animation: Animation) -> Animation:
    """The animation at its file's own rate again (a copy), when the scene shows it at another."""
    own = animation.extras.get(OWN_FPS)
    if own is None or not own > 0 or animation.fps == own:
        return animation
    animation = copy.deepcopy(animation)
    _rescale(animation, own / animation.fps)
    animation.fps = own
    return animation


def _rescale(animation: Animation, factor: float) -> None:
    """Key times (and handle frames) and the range multiplied by ``factor``; whole results stay whole."""

    def scaled(times):
        times = np.asarray(times, np.float64) * factor
        whole = np.round(times)
        return np.where(np.abs(times - whole) <= 1e-9 * np.maximum(1.0, np.abs(whole)), whole, times)

    animation.frame_start = float(scaled(animation.frame_start))
    animation.frame_end = float(scaled(animation.frame_end))
    for channel in animation.channels:
        channel.times = scaled(channel.times)
        for side in ("handles_left", "handles_right"):
            handles = getattr(channel, side)
            if handles is not None:
                handles = np.array(handles, np.float64)
                handles[..., 0] = scaled(handles[..., 0])
                setattr(channel, side, handles)


def to_scene(model: MediaFile, axis: np.ndarray | None = None) -> Scene:
    return _Import(model, np.eye(4) if axis is None else np.asarray(axis, np.float64)).run()


# -- scene → file ------------------------------------------------------------------


def _split_seams(mesh: Mesh) -> Mesh:
    """The mesh with a vertex of its own for every distinct set of corner values (a UV, normal, colour
    or tangent seam), as the file keeps one value per vertex; a mesh without seams comes back as it is.
    A vertex keeps its index for the values of its first corner; the others are added after the last."""
    layers = [mesh.normals, *mesh.uv_layers, *mesh.color_layers, mesh.tangents]
    corner = [layer for layer in layers if layer is not None and layer.domain == "CORNER"]
    corners = np.asarray(mesh.triangles, np.int64).reshape(-1)
    if not corner or not len(corners):
        return mesh
    rows = [corners[:, None]] + [
        np.asarray(layer.data, np.float64).reshape(len(corners), -1) for layer in corner
    ]
    _, first, inverse = np.unique(
        np.concatenate(rows, axis=1), axis=0, return_index=True, return_inverse=True
    )
    vertex = corners[first]
    order = np.lexsort((first, vertex))
    primary = np.zeros(len(first), bool)
    primary[order[np.r_[True, vertex[order][1:] != vertex[order][:-1]]]] = True
    if primary.all():
        return mesh
    extra = np.flatnonzero(~primary)
    extra = extra[np.argsort(first[extra])]
    count = len(mesh.positions)
    new_index = np.empty(len(first), np.int64)
    new_index[primary] = vertex[primary]
    new_index[extra] = count + np.arange(len(extra))
    source = np.concatenate([np.arange(count), vertex[extra]])
    corner_of = np.full(len(source), -1, np.int64)  # a corner of each vertex (−1: none)
    corner_of[new_index] = first

    def point_layer(layer: Layer | None) -> Layer | None:
        if layer is None:
            return None
        data = np.asarray(layer.data)
        if layer.domain != "CORNER":
            return dataclasses.replace(layer, data=data[source])
        out = np.zeros((len(source),) + data.shape[1:], data.dtype)
        out[corner_of >= 0] = data[corner_of[corner_of >= 0]]
        return dataclasses.replace(layer, data=out, domain="POINT")

    def rows_of(values):
        return None if values is None else np.asarray(values)[source]

    return dataclasses.replace(
        mesh,
        positions=np.asarray(mesh.positions)[source],
        triangles=new_index[inverse.ravel()].reshape(-1, 3).astype(np.int32),
        normals=point_layer(mesh.normals),
        uv_layers=[point_layer(layer) for layer in mesh.uv_layers],
        color_layers=[point_layer(layer) for layer in mesh.color_layers],
        tangents=point_layer(mesh.tangents),
        skin_joints=rows_of(mesh.skin_joints),
        skin_weights=rows_of(mesh.skin_weights),
        shape_keys=[
            dataclasses.replace(k, positions=np.asarray(k.positions)[source]) for k in mesh.shape_keys
        ],
    )


def _per_vertex(layer: Layer, triangles: np.ndarray, vertex_count: int) -> np.ndarray:
    """A layer's values per vertex (a corner layer gives each vertex one of its corners' values)."""
    if layer.domain == "POINT":
        return np.asarray(layer.data)
    out = np.zeros((vertex_count, layer.data.shape[1]), layer.data.dtype)
    out[np.asarray(triangles).ravel()] = layer.data
    return out


KEPT_VALUES = "tmrf_values"  # animation extras: {bone: the file's (K, 7) float32 keys, as bytes}


def _keep_values(animation: Animation, bone: str, positions, orientations_xyzw) -> None:
    """The file's key values of a bone, kept so that export gives back every key not edited bit for bit
    (an edited channel comes back from Blender with float noise on its other keys too)."""
    values = np.concatenate([np.asarray(positions), np.asarray(orientations_xyzw)], axis=1)
    animation.extras.setdefault(KEPT_VALUES, {})[bone] = values.astype(np.float32).tobytes()


def _kept_values(animation: Animation, bone: str, positions, quats_xyzw) -> tuple[np.ndarray, np.ndarray]:
    """Positions (per component) and orientations (per key, either sign) still within tolerance of the
    kept file values, replaced by them."""
    raw = animation.extras.get(KEPT_VALUES, {}).get(bone)
    if not isinstance(raw, bytes) or len(raw) != len(positions) * 28:
        return positions, quats_xyzw
    kept = np.frombuffer(raw, np.float32).reshape(-1, 7)
    with np.errstate(invalid="ignore"):
        near = np.abs(positions - kept[:, :3]) <= TOLERANCE
        positions = np.where(near, kept[:, :3], positions)
        same = (np.abs(quats_xyzw - kept[:, 3:]) <= TOLERANCE).all(axis=1)
        flipped = (np.abs(quats_xyzw + kept[:, 3:]) <= TOLERANCE).all(axis=1)
    quats_xyzw = np.where((same | flipped)[:, None], kept[:, 3:], quats_xyzw)
    return positions, quats_xyzw


def _bone_values(channels: list[Channel], path: str, times: np.ndarray, default: np.ndarray) -> np.ndarray:
    """Values of one property at ``times``: the keys themselves where the times are the keys', else
    the curve as it plays there (Bézier easing, steps; quaternions normalised)."""
    out = np.repeat(np.asarray(default, np.float64)[None], len(times), 0)
    for channel in channels:
        if channel.path != path or not len(channel.times):
            continue
        columns = list(range(out.shape[1])) if channel.index is None else [channel.index]
        if np.array_equal(channel.times, times, equal_nan=True):
            out[:, columns] = channel.values  # the keys themselves, whatever their values
        else:
            out[:, columns] = sample(
                channel.times,
                channel.values,
                channel.interpolation,
                channel.handles_left,
                channel.handles_right,
                times,
            )
    if path == "rotation_quaternion":
        between = ~np.isin(times, np.concatenate([c.times for c in channels if c.path == path] or [[]]))
        length = np.linalg.norm(out, axis=1, keepdims=True)
        out = np.where(between[:, None] & (length > 0), out / np.where(length > 0, length, 1), out)
    return out


class _MeshData:
    """A scene mesh on its way back to the file: per-vertex values in file axes."""

    def __init__(self, export: _Export, mesh: Mesh, fixes: dict | None = None):
        self.mesh = mesh
        self.vertex_count = len(mesh.positions)
        self.axis_t = export.axis.T
        self.positions = _apply(export.axis.T, mesh.positions).astype(np.float32)
        self.normals = None
        if mesh.normals is not None:
            normals = _per_vertex(mesh.normals, mesh.triangles, self.vertex_count)
            self.normals = _apply(export.axis.T, normals).astype(np.float32)
        self.slots = [slot for m in mesh.materials for slot in export.scene.materials[m].textures]
        self.textures = 0  # Texture resources seen so far
        self.slots_used = 0  # image slots they took
        self.fixes = fixes or {"fix_indices": [], "fix_coefficients": [], "fix_normals": []}
        self._coefficients = None

    def coefficients(self) -> np.ndarray:
        if self._coefficients is None:
            coefficients = vectors.encode_normals(self.normals)
            indices = np.asarray(self.fixes["fix_indices"], np.int64)
            kept = np.asarray(self.fixes["fix_coefficients"], np.uint16).reshape(-1, 2)
            shown = np.asarray(self.fixes["fix_normals"], np.float64).reshape(-1, 3)
            inside = indices < self.vertex_count
            indices, kept, shown = indices[inside], kept[inside], shown[inside]
            unchanged = np.isclose(shown, self.normals[indices], rtol=0, atol=TOLERANCE, equal_nan=True).all(
                axis=1
            )
            coefficients[indices[unchanged]] = kept[unchanged]
            self._coefficients = coefficients
        return self._coefficients

    def uv(self, name: str, position: int) -> np.ndarray | None:
        layers = {layer.name: layer for layer in self.mesh.uv_layers}
        layer = layers.get(name)
        if layer is None and position < len(self.mesh.uv_layers):
            layer = self.mesh.uv_layers[position]
        return None if layer is None else _per_vertex(layer, self.mesh.triangles, self.vertex_count)

    def tangents(self, kind: str) -> object | None:
        """Tangent content of ``kind`` from the scene's tangent layer (vertical = sign · normal × horizontal)."""
        if self.mesh.tangents is None or self.normals is None:
            return None
        data = _per_vertex(self.mesh.tangents, self.mesh.triangles, self.vertex_count)
        horizontal = _apply(self.axis_t, data[:, :3])
        sign = np.where(data[:, 3] < 0, -1.0, 1.0)
        normals = self.normals.astype(np.float64)
        # The fourth component is the multiplier of decision 12 (± 1 unless the file said otherwise).
        multipliers = data[:, 3].astype(np.float64)
        if kind == "tangents":
            vertical = np.cross(normals, horizontal) * multipliers[:, None]
            return res.TangentVectors(horizontal.astype(np.float32), vertical.astype(np.float32))
        if kind == "compressed_tangents":
            return res.CompressedTangentVectors(horizontal.astype(np.float32), multipliers.astype(np.float32))
        coefficients = self.coefficients()
        vertical = np.cross(vectors.decode_normals(coefficients), horizontal) * sign[:, None]
        return res.HighCompressedTangentVectors(
            vectors.encode_high_tangents(coefficients, horizontal, vertical)
        )


class _Export:
    def __init__(self, scene: Scene, axis, normals, tangents, animation, s16, content):
        for value, allowed, what in (
            (normals, NORMAL_MODES, "normals"),
            (tangents, TANGENT_MODES, "tangents"),
            (animation, ANIMATION_MODES, "animation"),
            (content, CONTENTS, "content"),
        ):
            if value is not None and value not in allowed:
                raise ValueError(f"{what} must be one of {', '.join(allowed)}, not {value!r}")
        if tangents == "high" and normals == "none":
            raise ValueError("high-compressed tangents need compressed normals")
        self.scene, self.normals, self.tangent_mode, self.animation_mode, self.s16 = (
            scene,
            normals,
            tangents,
            animation,
            s16,
        )
        self.axis = np.eye(4) if axis is None else np.asarray(axis, np.float64)
        self.kinds = CONTENTS[content]
        self.roots: dict[int, set[str]] = {}  # for _is_root
        stored = scene.extras.get("tmrf") or {}
        self.layout: list[dict] = list(stored.get("resources", []))  # entries replaced, never changed
        strings = StringTable(
            stored.get("pool", b""), np.array(stored.get("spans", []), np.uint32).reshape(-1, 2)
        )
        self.model = MediaFile(strings, [], stored.get("version", VERSION))
        self.strings = strings
        self.used: dict[str, set[int]] = {
            "skeleton": set(),
            "mesh": set(),
            "animation": set(),
        }  # scene indices
        self.other_tocs: list[tuple[Resource, list]] = []  # TOCs after the first, with their entries
        self.hints: dict[int, dict] = {}  # id of a rebuilt Hints resource → its layout entry
        self.fitted: list[tuple[int, float]] = []  # (keys added, largest error) of each fitted channel
        self.rest_bases: dict[int, dict[str, np.ndarray]] = {}  # id of a skeleton → ``_rest_bases``

    def rest_base(self, skeleton: Skeleton | None, bone: str) -> np.ndarray:
        """A bone's rest pose as ``_rest_bases`` gives it (no turn at the origin for a bone not in it)."""
        if skeleton is not None and id(skeleton) not in self.rest_bases:
            self.rest_bases[id(skeleton)] = _rest_bases(skeleton)
        bases = self.rest_bases[id(skeleton)] if skeleton is not None else {}
        return bases.get(bone, np.array([0, 0, 0, 0, 0, 0, 1], np.float32))

    def ref(self, name: str | None, preferred: int = 0, unnamed: str | None = None) -> int:
        """A string reference for ``name``, keeping ``preferred`` when it still says the same
        (and 0 when the name is the placeholder the importer gave a nameless item)."""
        if name == unnamed and (preferred == 0 or self.strings.name(preferred) == ""):
            return preferred
        if preferred and 0 < preferred <= len(self.strings) and self.strings.name(preferred) == name:
            return preferred
        return self.strings.ref(name)

    def skeleton_ref(self, skeleton: Skeleton | None, d: dict | None) -> int:
        """The skeleton an animation binds to; a name the file had without a skeleton stays, and so
        does the binding of an animation file written back (whatever armature it was applied to)."""
        stored = d["skeleton"] if d is not None else 0
        if skeleton is None or (d is not None and self.kinds == CONTENTS["animation_file"]):
            return stored
        return self.ref(skeleton.name, stored)

    # -- contents built from scene objects ------------------------------------------

    def skeleton_content(self, skeleton: Skeleton) -> res.Skeleton:
        world = _apply_matrices(self.axis.T, skeleton.rest)
        parents = np.asarray(skeleton.parents, np.int64)
        local = world.copy()
        has_parent = parents >= 0
        local[has_parent] = np.linalg.inv(world[parents[has_parent]]) @ world[has_parent]
        bones = np.zeros(len(skeleton), res.BONE_DTYPE)
        bones["parent"] = parents + 1
        bones["position"] = local[:, :3, 3]
        bones["orientation"] = matrix_to_quat(local)[:, [1, 2, 3, 0]]
        extras = skeleton.bone_extras if len(skeleton.bone_extras) == len(skeleton) else [{}] * len(skeleton)
        has_base = np.array([len(e.get("base", ())) == 7 for e in extras], bool)
        if has_base.any():
            # The stored base poses win while the rest pose they give is the scene's (within tolerance).
            base = np.array(
                [e["base"] if ok else [0] * 7 for e, ok in zip(extras, has_base, strict=True)], np.float32
            )
            original = world_from_local(compose(base[:, :3], base[:, [6, 3, 4, 5]]), parents)
            close = has_base & np.isclose(original, world, rtol=0, atol=10 * TOLERANCE, equal_nan=True).all(
                axis=(1, 2)
            )
            bones["position"][close] = base[close, :3]
            bones["orientation"][close] = base[close, 3:]
        bones["name"] = [
            self.ref(name, int(e.get("name_ref", 0)), f"bone{j}")
            for j, (name, e) in enumerate(zip(skeleton.bone_names, extras, strict=True))
        ]
        return res.Skeleton(bones)

    def deform_content(self, skeleton_index: int, point_count: int, parts) -> res.SkeletalDeform:
        """A deformation built from (vertex points, joints, weights) of the meshes using the points."""
        skeleton = self.scene.skeletons[skeleton_index]
        width = max((j.shape[1] for _, j, _ in parts), default=0)
        point_joints = np.zeros((point_count, width), np.int32)
        point_weights = np.zeros((point_count, width), np.float32)
        for vertex_points, joints, weights in parts:
            point_joints[vertex_points, : joints.shape[1]] = joints
            point_weights[vertex_points, : weights.shape[1]] = weights
        point_joints[point_weights == 0] = 0
        rows = np.concatenate([point_joints.view(np.uint32), point_weights.view(np.uint32)], axis=1)
        unique, blend_of_point = np.unique(rows, axis=0, return_inverse=True)
        blend_joints = unique[:, :width].view(np.int32)
        blend_weights = unique[:, width:].view(np.float32)
        used = blend_weights != 0
        bones = np.unique(blend_joints[used])
        weights = np.zeros(int(used.sum()), res.WEIGHT_DTYPE)
        weights["binding"] = np.searchsorted(bones, blend_joints[used])
        weights["factor"] = blend_weights[used]
        return res.SkeletalDeform(
            self.strings.ref(skeleton.name),
            np.array([self.strings.ref(skeleton.bone_names[b]) for b in bones], np.uint32),
            used.sum(axis=1).astype(np.uint32),
            weights,
            blend_of_point.reshape(-1).astype(np.uint32),
        )

    def frame_content(self, animation: Animation, d: dict | None = None) -> res.FrameAnimation:
        by_bone = _bone_channels(animation)
        skeleton = self.scene.skeletons[animation.skeleton] if animation.skeleton is not None else None
        stored = d is not None and all(
            len(c.times) == d["frame_count"] for cs in by_bone.values() for c in cs
        )
        frame_count = (
            d["frame_count"]
            if stored
            else max(int(round(animation.frame_end - animation.frame_start)) + 1, 0)
        )
        times = animation.frame_start + np.arange(frame_count, dtype=np.float64)
        fps = animation.fps
        if d is not None and (abs(d["fps"] - fps) <= TOLERANCE or not d["fps"] > 0):
            fps = d["fps"]
        bones: list[res.FrameBone] = []
        names = []
        if d is not None:
            for j, (ref, flags) in enumerate(zip(d["bones"], _unsigned(d["flags"]), strict=True)):
                name = self.strings.name(ref) or ""
                if name in by_bone:
                    base = np.array(d["bases"][7 * j : 7 * j + 7], np.float32)
                    bones.append(res.FrameBone(ref, base[:3], base[3:], int(flags)))
                    names.append(name)
        first_new = len(bones)
        known = set(names)
        for name in by_bone:
            if name not in known:
                base = self.rest_base(skeleton, name)
                bones.append(res.FrameBone(self.strings.ref(name), base[:3], base[3:], res.REGENERATE_W))
                names.append(name)
        for k, (bone, name) in enumerate(zip(bones, names, strict=True)):
            positions, quats = self.file_values(animation, name, by_bone[name], times, bone)
            if k >= first_new:  # q and −q turn alike; with W ≥ 0, W can be regenerated
                quats = quats * np.where(quats[:, 3:] < 0, -1.0, 1.0)
            bone.flags = _frame_flags(bone, positions, quats, self.s16)
            bone.set_frames(positions, quats)
        return res.FrameAnimation(
            self.skeleton_ref(skeleton, d),
            frame_count,
            np.float32(fps),
            bones,
        )

    def track_content(self, animation: Animation, d: dict | None = None) -> res.TrackAnimation:
        by_bone = _bone_channels(animation)
        skeleton = self.scene.skeletons[animation.skeleton] if animation.skeleton is not None else None
        names = [self.strings.name(b) or "" for b in d["bindings"]] if d is not None else []
        names = [n for n in names if n in by_bone] + [n for n in by_bone if n not in names]
        stored_times = {}
        if d is not None:
            starts = np.concatenate([[0], np.cumsum(d["key_counts"])]).astype(np.int64)
            for j, ref in enumerate(d["bindings"]):
                stored_times[self.strings.name(ref) or ""] = np.array(
                    d["times"][starts[j] : starts[j + 1]], np.float32
                )
        tracks, bindings = [], []
        for j, name in enumerate(names):
            frames, positions, quats = self.track_keys(animation, name, by_bone[name])
            seconds = (frames - animation.frame_start) / animation.fps
            original = stored_times.get(name)
            if (
                original is not None
                and len(original) == len(seconds)
                and np.allclose(original, seconds, atol=TOLERANCE)
            ):
                seconds = original
            keys = np.zeros(len(frames), res.KEY_DTYPE)
            keys["time"], keys["position"], keys["orientation"] = seconds, positions, quats
            tracks.append(keys)
            preferred = d["bindings"][j] if d is not None and j < len(d["bindings"]) else 0
            bindings.append(self.ref(name, preferred, ""))
        length = (animation.frame_end - animation.frame_start) / animation.fps
        if d is not None and abs(d["length"] - length) <= TOLERANCE:
            length = d["length"]
        if d is not None and _new_name(animation) is None:
            name_ref = d["name"]
        else:
            name_ref = self.strings.ref(animation.name)
        return res.TrackAnimation(
            name_ref,
            self.skeleton_ref(skeleton, d),
            np.float32(length),
            np.array(bindings, np.uint32),
            tracks,
        )

    def track_keys(self, animation, bone_name, channels) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Key frames, positions (K, 3) and x, y, z, w orientations (K, 4) of a bone's track.

        The game interpolates track keys as LINEAR channels mean (positions linearly, orientations
        by slerp), so linear channels of a bone read from a file give their own keys. A curve it
        cannot play so (Bézier easing, steps, or LINEAR quaternion keys made in Blender, which Blender
        plays component by component) gets the fewest keys ``fit.game_keys`` finds that play
        Blender's pose within ``fit.TOLERANCE`` at every frame and sub-frame; how many go to
        ``self.fitted``.
        """
        # A bone read from a file: its LINEAR quaternion keys are the file's slerp (the Blender layer
        # shows that with helper keys, and takes them off again).
        read = bone_name in animation.extras.get(KEPT_VALUES, {})
        linear = all(c.interpolation == "LINEAR" and (read or c.path == "location") for c in channels)
        if linear or any(c.index is not None for c in channels):
            channel_times = [c.times for c in channels]
            if all(np.array_equal(t, channel_times[0]) for t in channel_times):
                frames = np.asarray(channel_times[0], np.float64)  # keeps keys that share a time
            else:
                frames = np.unique(np.concatenate(channel_times))
            return frames, *self.file_values(animation, bone_name, channels, frames, None)
        frames, values, added, error = fit.game_keys(channels, np.zeros(0), blender=not read)
        self.fitted.append((added, error))
        played = {c.path: v for c, v in zip(channels, values, strict=True)}
        position, quat = self.unkeyed(animation, bone_name, None)
        positions = played.get("location", np.repeat(position[None], len(frames), 0))
        quats = played.get("rotation_quaternion", np.repeat(quat[None], len(frames), 0))
        return frames, *self.in_file(animation, bone_name, positions, quats)

    def file_values(self, animation, bone_name, channels, times, bone: res.FrameBone | None):
        """Positions (K, 3) and x, y, z, w orientations (K, 4) of a bone in the file's terms."""
        default_position, default_quat = self.unkeyed(animation, bone_name, bone)
        positions = _bone_values(channels, "location", times, default_position)
        quats = _bone_values(channels, "rotation_quaternion", times, default_quat)
        return self.in_file(animation, bone_name, positions, quats)

    def unkeyed(self, animation, bone_name, bone: res.FrameBone | None) -> tuple[np.ndarray, np.ndarray]:
        """Position and w, x, y, z orientation of a property the bone's channels do not key: the frame
        bone's base pose, else the rest pose (what Blender shows for it)."""
        if bone is not None:
            return bone.base_position, bone.base_orientation[[3, 0, 1, 2]]
        skeleton = self.scene.skeletons[animation.skeleton] if animation.skeleton is not None else None
        rest = self.rest_base(skeleton, bone_name).astype(np.float64)
        return rest[:3], rest[[6, 3, 4, 5]]

    def in_file(self, animation, bone_name, positions, quats):
        """Scene positions and w, x, y, z quaternions of a bone in the file's terms (roots turned back,
        values still within tolerance of the file's given back bit for bit)."""
        if _is_root(self.roots, self.scene, animation.skeleton, bone_name):
            positions, quats = _root_channels(positions, quats, self.axis, inverse=True)
        return _kept_values(animation, bone_name, positions, quats[:, [1, 2, 3, 0]])

    # -- the layout of an imported file, rebuilt -------------------------------------

    def rebuild(self) -> Builder:
        layout = self.layout
        owners = {
            "skeleton": _owners(self.scene.skeletons, layout, {"skeleton"}),
            "mesh": _owners(self.scene.meshes, layout, {"mesh"}),
            "animation": _owners(self.scene.animations, layout, {"frame", "track"}),
        }
        built: dict[int, Resource] = {}
        meshes: dict[int, _MeshData] = {}  # layout index of a mesh or texture → its mesh
        textures: dict[int, tuple[TextureSlot, dict, int]] = {}
        renamed: dict[int, str | None] = {}
        for i, d in enumerate(layout):
            parent = d["parent"]
            if parent >= 0 and parent not in built:
                continue
            if d["kind"] in OWNED_KINDS:
                content = self.owned_content(i, d, owners, meshes, renamed)
            elif d["kind"] in MESH_PART_KINDS:
                content, d = self.mesh_part(i, d, meshes, textures)
            else:
                content = self.stored_content(d)
            if content is None:
                continue
            resource = Resource(d["type"], content, [], d.get("tail", b""))
            (built[parent].children if parent >= 0 else self.model.resources).append(resource)
            built[i] = resource
        self.fill_points(built, meshes)
        self.hints = {id(built[i]): d for i, d in enumerate(layout) if d["kind"] == "hints" and i in built}
        return self.toc_builder(built, renamed)

    def stored_content(self, d: dict) -> object | None:
        """A resource the layout describes by itself (point lists and skins get their values later)."""
        kind = d["kind"]
        if kind == "opaque":
            return res.Opaque(d["data"]) if "other" in self.kinds else None
        if kind == "toc":
            return res.TableOfContents()
        if kind == "hints":
            return res.Hints(*(_unsigned(d[k]) for k in ("types", "data_types", "counts")))
        if kind == "points" and "mesh" in self.kinds:
            content = res.PointList(np.zeros((d["count"], 3), np.float32))
            content.points[d["loose_indices"]] = np.array(d["loose_points"], np.float32).reshape(-1, 3)
            return content
        if kind == "deform" and "skin" in self.kinds:
            return res.SkeletalDeform()
        return None

    def owned_content(self, i: int, d: dict, owners: dict, meshes: dict, renamed: dict) -> object | None:
        """The skeleton, mesh or animation made from the scene object that came from layout entry ``i``."""
        kind = d["kind"]
        group = "animation" if kind in ("frame", "track") else kind
        if group not in self.kinds or i not in owners[group]:
            return None
        k = owners[group][i]
        if kind == "skeleton":
            item = self.scene.skeletons[k]
            content = self.skeleton_content(item)
        elif kind == "mesh":
            item = self.scene.meshes[k]
            if len(item.positions) != len(d["vertex_points"]):
                return None
            fixes = next(
                (e for e in self.layout if e["parent"] == i and e["kind"] == "compressed_normals"), None
            )
            meshes[i] = _MeshData(self, item, fixes)
            content = res.TriangleMesh(
                d["point_list"], np.array(d["vertex_points"], np.uint32), item.triangles.astype(np.uint32)
            )
        else:
            item = self.scene.animations[k]
            if self.animation_mode not in (None, kind):
                return None
            if self.kinds == CONTENTS["animation_file"]:
                item = self.with_unbound(item, d)
            content = (self.frame_content if kind == "frame" else self.track_content)(item, d)
        renamed[i] = _new_name(item)
        self.used[group].add(k)
        return content

    def with_unbound(self, animation: Animation, d: dict) -> Animation:
        """The animation with channels, at their file values, for the bones the armature it was
        applied to lacks (``files.retarget`` left them out), so that its file is written back whole."""
        if d["kind"] == "frame":
            refs = d["bones"]
            times = [animation.frame_start + np.arange(d["frame_count"], dtype=np.float64)] * len(refs)
        else:
            refs = d["bindings"]
            starts = np.concatenate([[0], np.cumsum(d["key_counts"])]).astype(np.int64)
            seconds = np.array(d["times"], np.float64)
            times = [
                animation.frame_start + seconds[a:b] * animation.fps
                for a, b in zip(starts[:-1], starts[1:], strict=True)
            ]
        bound = {c.target for c in animation.channels}
        kept = animation.extras.get(KEPT_VALUES, {})
        channels = []
        for ref, frames in zip(refs, times, strict=True):
            name = self.strings.name(ref) or ""
            raw = kept.get(name)
            if name in bound or not isinstance(raw, bytes) or len(raw) != 28 * len(frames):
                continue
            values = np.frombuffer(raw, np.float32).reshape(-1, 7).astype(np.float64)
            channels.append(Channel("bone", name, "location", frames, values[:, :3]))
            channels.append(
                Channel("bone", name, "rotation_quaternion", frames.copy(), values[:, [6, 3, 4, 5]])
            )
        return (
            dataclasses.replace(animation, channels=animation.channels + channels) if channels else animation
        )

    def mesh_part(self, i: int, d: dict, meshes: dict, textures: dict) -> tuple[object | None, dict]:
        """Normals, a texture, its coordinates or tangents of a rebuilt mesh, with the layout entry to
        write them by (its type changes with the encoding)."""
        kind, parent = d["kind"], d["parent"]
        if kind in ("normals", "compressed_normals"):
            data = meshes[parent]
            if data.normals is None:
                return None, d
            mode = self.normals or ("none" if kind == "normals" else "compressed")
            if mode == "none":
                content, type_name = res.Normals(data.normals), res.NORMALS
            else:
                content, type_name = res.CompressedNormals(data.coefficients()), res.COMPRESSED_NORMALS
            if (mode == "none") != (kind == "normals"):  # another encoding than the file's
                d = {**d, "type": self.strings.ident(type_name)}
            return content, d
        if kind == "texture":
            data = meshes[parent]
            content = slot = None
            if d["texture"] != 0:  # a named texture is the next image slot of the mesh
                slot = data.slots[data.slots_used] if data.slots_used < len(data.slots) else None
                data.slots_used += 1
            if d["texture"] == 0 or slot is not None:
                name = self.scene.images[slot.image].name if slot is not None else None
                content = res.Texture(self.ref(name, d["texture"], ""))
                meshes[i], textures[i] = data, (slot, d, data.textures)
            data.textures += 1
            return content, d
        if kind == "coordinates":
            slot, texture, position = textures[parent]
            uv = meshes[parent].uv(
                texture.get("uv_layer", slot.uv_layer if slot is not None else ""), position
            )
            return (None if uv is None else res.TextureCoordinates(uv.astype(np.float32))), d
        return self.stored_tangents(meshes[parent], d)

    def stored_tangents(self, data: _MeshData, d: dict) -> tuple[object | None, dict]:
        kind = TANGENT_KINDS[self.tangent_mode] if self.tangent_mode else d["kind"]
        count = data.vertex_count
        if kind == d["kind"]:
            if kind == "high_tangents" and len(d["coefficients"]) == count:
                return res.HighCompressedTangentVectors(np.array(d["coefficients"], np.uint16)), d
            horizontal = np.array(d.get("horizontal", []), np.float32).reshape(-1, 3)
            if len(horizontal) == count and kind == "tangents":
                return res.TangentVectors(horizontal, np.array(d["vertical"], np.float32).reshape(-1, 3)), d
            if len(horizontal) == count and kind == "compressed_tangents":
                return res.CompressedTangentVectors(horizontal, np.array(d["multipliers"], np.float32)), d
        content_class = {v: k for k, v in KINDS.items()}[kind]
        return data.tangents(kind), {**d, "type": self.strings.ident(_TYPE_NAMES[content_class])}

    def fill_points(self, built: dict[int, Resource], meshes: dict[int, _MeshData]) -> None:
        """Point lists get the positions and skins of the meshes that use them. A list whose
        meshes are all gone goes too; one that no mesh used in the file stays as it was."""
        names = _layout_names(self.layout, self.strings)
        for i, d in enumerate(self.layout):
            if d["kind"] != "points" or i not in built:
                continue
            users = [
                (j, data)
                for j, data in meshes.items()
                if self.layout[j]["kind"] == "mesh"
                and self.strings.name(self.layout[j]["point_list"]) == names.get(i)
            ]
            points = built[i]
            never_used = len(d["loose_indices"]) == d["count"]
            if not users and not never_used:
                _remove(self.model, points)
                continue
            self.place_points(points.content, users, built)
            for k, child in list(built.items()):
                if self.layout[k]["parent"] == i and isinstance(child.content, res.SkeletalDeform):
                    deform = _stored_deform(self.layout[k])
                    if users and not self.layout[k].get("unresolved", False):
                        deform = self.matching_deform(deform, users, len(points.content.points))
                    if deform is None:
                        points.children.remove(child)
                    else:
                        child.content = deform
        alive = {id(r) for r in self.model.walk()}
        for k in [k for k, r in built.items() if id(r) not in alive]:
            del built[k]

    def place_points(self, points: res.PointList, users, built: dict[int, Resource]) -> None:
        """The meshes' vertex positions into the point list. A point whose vertices now disagree keeps
        the vertices still at its position (else the first one's position), and each other position
        gets a new point, so that no vertex's move is lost; a point all of whose vertices moved alike
        moves."""
        vertex_points = [np.array(self.layout[j]["vertex_points"], np.int64) for j, _ in users]
        if not users:
            return
        point_of = np.concatenate(vertex_points)
        where = np.concatenate([np.asarray(data.positions, np.float32) for _, data in users])
        original = points.points[point_of]
        # Per point, the position it keeps: a vertex still at the original value, else its first vertex's.
        moved = ~(where == original).all(axis=1)
        order = np.lexsort((np.arange(len(point_of)), moved, point_of))
        first = np.ones(len(order), bool)
        first[1:] = point_of[order][1:] != point_of[order][:-1]
        kept = np.empty((len(points.points), 3), np.float32)
        kept[point_of[order][first]] = where[order][first]
        stays = (where == kept[point_of]).all(axis=1) | (np.isnan(where) & np.isnan(kept[point_of])).all(
            axis=1
        )
        moved_to = point_of.copy()
        if not stays.all():
            rows = np.concatenate([point_of[~stays, None], where[~stays]], axis=1, dtype=np.float64)
            unique, new = np.unique(rows, axis=0, return_inverse=True)
            moved_to[~stays] = len(points.points) + new.ravel()
            points.points = np.concatenate([points.points, unique[:, 1:].astype(np.float32)])
        points.points[point_of[stays]] = where[stays]
        start = 0
        for (j, _), vp in zip(users, vertex_points, strict=True):
            mine = moved_to[start : start + len(vp)]
            start += len(vp)
            if not np.array_equal(mine, vp):
                self.layout[j] = {**self.layout[j], "vertex_points": _ints(mine)}
                built[j].content.vertex_points = mine.astype(np.uint32)

    def matching_deform(
        self, stored: res.SkeletalDeform, users, point_count: int
    ) -> res.SkeletalDeform | None:
        """The stored deformation when every mesh's skin still matches it, else one built from the skins."""
        skinned = [
            data.mesh
            for _, data in users
            if data.mesh.skin_joints is not None and data.mesh.skeleton is not None
        ]
        if len(skinned) != len(users):
            return None
        skeleton_index = skinned[0].skeleton
        skeleton = self.scene.skeletons[skeleton_index]
        bone_index = {n: j for j, n in enumerate(skeleton.bone_names)}
        binding_bones = np.array(
            [bone_index.get(self.strings.name(int(b)), -1) for b in stored.bindings], np.int32
        )
        joints, weights = _blend_table(stored, binding_bones)
        same = len(stored.point_blends) == point_count
        for j, data in users:
            vertex_points = np.array(self.layout[j]["vertex_points"], np.int64)
            if not same:
                break
            blends = stored.point_blends[vertex_points]
            expected = _dense_weights(joints[blends], weights[blends], len(skeleton))
            actual = _dense_weights(data.mesh.skin_joints, data.mesh.skin_weights, len(skeleton))
            same = data.mesh.skeleton == skeleton_index and np.allclose(
                expected,
                actual,
                rtol=0,
                atol=TOLERANCE,
                equal_nan=True,  # a NaN weight read is kept
            )
        if same:
            return stored
        parts = [
            (
                np.array(self.layout[j]["vertex_points"], np.int64),
                data.mesh.skin_joints,
                data.mesh.skin_weights,
            )
            for j, data in users
        ]
        return self.deform_content(skeleton_index, point_count, parts)

    def toc_builder(self, built: dict[int, Resource], renamed: dict[int, str]) -> Builder:
        """The first TOC keeps its entries for what is still there (renamed objects get their new
        names) and receives the new resources; further TOCs keep theirs."""
        tocs = [(i, d) for i, d in enumerate(self.layout) if d["kind"] == "toc" and i in built]
        names = _layout_names(self.layout, self.strings)
        main = None
        for n, (i, d) in enumerate(tocs):
            entries = []
            for name, dtl, type_, old in zip(d["names"], d["dtls"], d["types"], d["resources"], strict=True):
                if old in built:
                    if renamed.get(old) is not None:
                        name = self.strings.ref(renamed[old])
                    entries.append((name, dtl, type_, built[old]))
            if n == 0:
                main = (built[i], entries)
            else:
                self.other_tocs.append((built[i], entries))
        hints = next((i for i, d in enumerate(self.layout) if d["kind"] == "hints" and i in built), None)
        dtl = names.get(hints) if hints is not None else None
        toc, entries = main if main is not None else (None, [])
        return Builder.around(self.model, toc, dtl, entries)

    # -- new objects -----------------------------------------------------------------

    def add_new(self, builder: Builder) -> None:
        used = self.used
        if "skeleton" in self.kinds:
            for k, skeleton in enumerate(self.scene.skeletons):
                if k not in used["skeleton"]:
                    builder.add(res.SKELETON, self.skeleton_content(skeleton), skeleton.name)
        if "mesh" in self.kinds:
            for k, mesh in enumerate(self.scene.meshes):
                if k not in used["mesh"]:
                    self.add_mesh(builder, mesh)
        if "animation" in self.kinds:
            for k, animation in enumerate(self.scene.animations):
                if k not in used["animation"]:
                    if (self.animation_mode or animation.extras.get(KIND, "frame")) == "frame":
                        builder.add(res.FRAME_ANIMATION, self.frame_content(animation), animation.name)
                    else:
                        builder.add(res.TRACK_ANIMATION, self.track_content(animation), animation.name)

    def add_mesh(self, builder: Builder, mesh: Mesh) -> None:
        data = _MeshData(self, mesh)
        points_name = f"{mesh.name}.points"
        points = builder.add(res.POINTS, res.PointList(data.positions), points_name)
        if "skin" in self.kinds and mesh.skin_joints is not None and mesh.skeleton is not None:
            parts = [(np.arange(data.vertex_count), mesh.skin_joints, mesh.skin_weights)]
            builder.add(
                res.SKELETAL_DEFORM,
                self.deform_content(mesh.skeleton, data.vertex_count, parts),
                parent=points,
            )
        content = res.TriangleMesh(
            self.strings.ref(points_name),
            np.arange(data.vertex_count, dtype=np.uint32),
            mesh.triangles.astype(np.uint32),
        )
        node = builder.add(res.TRIANGLE_MESH, content, mesh.name)
        normal_mode = self.normals or "compressed"
        if data.normals is not None:
            if normal_mode == "none":
                builder.add(res.NORMALS, res.Normals(data.normals), parent=node)
            else:
                builder.add(res.COMPRESSED_NORMALS, res.CompressedNormals(data.coefficients()), parent=node)
        slots = data.slots or [None] * len(mesh.uv_layers)
        tangent_mode = self.tangent_mode or "none"
        for position, slot in enumerate(slots):
            name = self.scene.images[slot.image].name if slot is not None else None
            texture = builder.add(res.TEXTURE, res.Texture(self.strings.ref(name or None)), parent=node)
            uv = data.uv(slot.uv_layer if slot is not None else "", position)
            if uv is not None:
                builder.add(
                    res.TEXTURE_COORDINATES, res.TextureCoordinates(uv.astype(np.float32)), parent=texture
                )
            kind = TANGENT_KINDS[tangent_mode]
            tangents = (
                data.tangents(kind)
                if position == 0 and (kind != "high_tangents" or normal_mode == "compressed")
                else None
            )
            if tangents is not None:
                builder.add(_TYPE_NAMES[type(tangents)], tangents, parent=texture)


_TYPE_NAMES = {cls: name for name, (cls, _) in res.CONTENT_TYPES.items()}


def _new_name(item) -> str | None:
    """The object's name if it was renamed since the import, else None."""
    return None if item.name == item.extras.get("tmrf_name") else item.name


def _stored_deform(d: dict) -> res.SkeletalDeform:
    weights = np.zeros(len(d["weight_bindings"]), res.WEIGHT_DTYPE)
    weights["binding"], weights["factor"] = d["weight_bindings"], d["weight_factors"]
    return res.SkeletalDeform(
        d["skeleton"],
        np.array(d["bindings"], np.uint32),
        np.array(d["weight_counts"], np.uint32),
        weights,
        np.array(d["point_blends"], np.uint32),
    )


def _owners(items, layout: list[dict], kinds: set[str]) -> dict[int, int]:
    """Layout index → the first scene object that came from it."""
    out: dict[int, int] = {}
    for k, item in enumerate(items):
        i = item.extras.get("tmrf_resource")
        if isinstance(i, int) and 0 <= i < len(layout) and layout[i]["kind"] in kinds:
            out.setdefault(i, k)
    return out


def _layout_names(layout: list[dict], strings: StringTable) -> dict[int, str | None]:
    """Layout index → TOC name (the first entry wins, as in MediaFile.names)."""
    out: dict[int, str | None] = {}
    for d in layout:
        if d["kind"] == "toc":
            for name, index in zip(d["names"], d["resources"], strict=True):
                out.setdefault(index, strings.name(name))
    return out


def _remove(model: MediaFile, resource: Resource) -> None:
    for holder in [model.resources] + [r.children for r in model.walk()]:
        if any(r is resource for r in holder):
            holder[:] = [r for r in holder if r is not resource]
            return


def _bone_channels(animation: Animation) -> dict[str, list[Channel]]:
    out: dict[str, list[Channel]] = {}
    for channel in animation.channels:
        if channel.target_kind == "bone" and channel.path in ("location", "rotation_quaternion"):
            out.setdefault(channel.target, []).append(channel)
    return out


def _rest_bases(skeleton: Skeleton) -> dict[str, np.ndarray]:
    """Each bone's parent-relative rest pose: x, y, z position and x, y, z, w orientation."""
    local = skeleton.local_rest()
    bases = np.concatenate([local[:, :3, 3], matrix_to_quat(local)[:, [1, 2, 3, 0]]], axis=1).astype(
        np.float32
    )
    return dict(zip(skeleton.bone_names, bases, strict=True))


def _frame_flags(bone: res.FrameBone, positions: np.ndarray, quats: np.ndarray, s16: bool | None) -> int:
    """The bone's flags, with copy flags only where every frame equals the base pose (within
    tolerance) and W regenerated only where that gives the stored W back."""
    flags = bone.flags
    base = np.concatenate([bone.base_position, bone.base_orientation]).astype(np.float64)
    values = np.concatenate([positions, quats], axis=1)
    for k, bit in enumerate(res.COPY_POSITION + res.COPY_ORIENTATION):
        if len(values) and np.abs(values[:, k] - base[k]).max() > TOLERANCE:
            flags &= ~bit
    regenerated = np.sqrt(np.maximum(0.0, 1.0 - np.sum(quats[:, :3] ** 2, axis=1)))
    if len(values) and np.abs(regenerated - quats[:, 3]).max(initial=0) > 1e-3:
        flags &= ~res.REGENERATE_W
    if s16 is not None:
        flags = flags | res.ORIENTATION_S16 if s16 else flags & ~res.ORIENTATION_S16
    return flags


def _dense_weights(joints: np.ndarray, weights: np.ndarray, bone_count: int) -> np.ndarray:
    """(V, bones) weight of each bone per vertex, whatever the order of the influences."""
    out = np.zeros((len(joints), max(bone_count, 1)))
    rows = np.repeat(np.arange(len(joints)), joints.shape[1])
    np.add.at(out, (rows, np.clip(joints.ravel(), 0, bone_count - 1)), weights.ravel())
    return out


def from_scene(
    scene: Scene,
    normals: str | None = None,
    tangents: str | None = None,
    animation: str | None = None,
    s16: bool | None = None,
    content: str = "everything",
    axis: np.ndarray | None = None,
) -> MediaFile:
    """A TMRF model from a scene.

    normals: "none" (Normals) or "compressed" (CompressedNormals); tangents:
    "none" (TangentVectors), "compressed" or "high"; animation: "frame" or
    "track"; s16: orientations of frame animations as s16; content: "everything",
    "static_mesh", "skinned_model", "skeleton" or "animations". None keeps each
    imported resource's own encoding (new ones: compressed normals, no tangent
    compression, frame animations, f32 orientations).
    """
    scene = dataclasses.replace(
        scene,
        meshes=[_split_seams(m) for m in scene.meshes],
        animations=[_own_rate(a) for a in scene.animations],
    )
    export = _Export(scene, axis, normals, tangents, animation, s16, content)
    builder = export.rebuild() if export.layout else Builder(strings=export.strings)
    export.add_new(builder)
    model = builder.finish(hints=False)
    index = {id(r): i for i, r in enumerate(model.walk())}
    for toc, entries in export.other_tocs:
        toc.content.names = np.array([e[0] for e in entries], np.uint32)
        toc.content.dtls = np.array([e[1] for e in entries], np.uint32)
        toc.content.types = np.array([e[2] for e in entries], np.uint32)
        toc.content.resources = np.array([index[id(e[3])] for e in entries], np.int64)
    # Hints stay as stored while the resources add up to what they did in the file.
    totals = computed_hints(model)
    unchanged = set()
    for i, resource in enumerate(model.walk()):
        stored = export.hints.get(id(resource))
        now = totals.get(i, {})
        if stored is not None and [f"{t}/{k}" for t, k in now] == stored["total_keys"]:
            if _ints(list(now.values())) == stored["total_counts"]:
                unchanged.add(i)
    refresh_hints(model, skip=unchanged)
    added = sum(count for count, _ in export.fitted)
    if added:
        scene.warnings.append(
            f"{added} keys added to track animations so that the game's linear interpolation plays "
            f"Blender's curves (within {max(error for _, error in export.fitted):.2g} at every frame and "
            "sub-frame)"
        )
    return model
