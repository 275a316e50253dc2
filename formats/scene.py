"""The neutral scene every format family converts to and from.

Readers produce format models that mirror their files; each family's converter
turns a model into a ``Scene`` and back. The Blender layer builds Blender data
from a ``Scene`` and extracts a ``Scene`` from Blender data, so it never needs
to know a file format. Arrays are numpy; everything a format stores that the
scene has no field for travels in ``extras`` (plain JSON-compatible values:
str, int, float, bool, lists and dicts of those, and bytes) and comes back on
export.

Conventions:
- Right-handed, Blender's Z-up unless a converter was asked for another axis
  conversion. Lengths in the file's units.
- Matrices are 4×4 float64, column vectors (``p' = M @ p``): translation in
  ``M[:3, 3]``.
- Quaternions are (w, x, y, z), Blender's order.
- Bone rest transforms are armature-space (``Skeleton.rest``); animation
  channels of bones hold parent-relative transforms (what the files store),
  and the Blender builder turns them into pose-space values.
- Image pixels are (height, width, 4) uint8, first row = top of the image.
- UV origin is bottom-left (Blender's); converters flip V where the file does not.
- Times in animations are in frames at ``Animation.fps``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace

import numpy as np

from .errors import FormatError

Extras = dict


@dataclass
class Skeleton:
    """Bones in file order; parents precede children."""

    name: str
    bone_names: list[str]
    parents: np.ndarray  # (N,) int32, -1 for roots
    rest: np.ndarray  # (N, 4, 4) float64 armature-space rest (bind) matrices
    deform: np.ndarray | None = None  # (N,) bool: False for bones nothing is skinned to
    bone_extras: list[Extras] = field(default_factory=list)  # per bone, same order
    extras: Extras = field(default_factory=dict)
    # Blender bones point along their local Y. Files whose bones point along
    # another axis give a (4, 4) rotation C: Blender shows bone i with
    # rest[i] @ C (skinning and animation are unchanged by it).
    bone_display: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.bone_names)

    def local_rest(self) -> np.ndarray:
        """Parent-relative rest matrices (N, 4, 4)."""
        local = self.rest.copy()
        has_parent = self.parents >= 0
        parent_inv = np.linalg.inv(self.rest[self.parents[has_parent]])
        local[has_parent] = parent_inv @ self.rest[has_parent]
        return local


def tree_order(parents: np.ndarray) -> list[int]:
    """Node indices with every parent before its children: by depth, in file order within one depth
    (−1: a root)."""
    parents = np.asarray(parents, np.int64)
    # Depths by pointer jumping: each round ``up`` goes twice as many links up, ``depth`` counts them.
    up = np.where(parents >= 0, parents, -1)
    depth = (up >= 0).astype(np.int64)
    for _ in range(len(parents).bit_length() + 1):
        going = np.flatnonzero(up >= 0)
        if not len(going):
            return np.argsort(depth, kind="stable").tolist()
        above = up[going]
        depth[going] += depth[above]
        up[going] = up[above]
    raise ValueError("the parent links form a cycle")


def world_from_local(local: np.ndarray, parents: np.ndarray) -> np.ndarray:
    """World (model-space) matrices (…, N, 4, 4) from parent-relative ones, down the tree
    (−1: a root). Leading axes (e.g. frames) are kept."""
    local = np.asarray(local, np.float64)
    world = local.copy()
    for i in tree_order(parents):
        parent = parents[i]
        if parent >= 0:
            world[..., i, :, :] = world[..., parent, :, :] @ local[..., i, :, :]
    return world


@dataclass
class Layer:
    """One named per-vertex ('POINT') or per-corner ('CORNER') attribute."""

    name: str
    data: np.ndarray  # (V, k) or (3·F, k)
    domain: str = "POINT"


@dataclass
class ShapeKey:
    name: str
    positions: np.ndarray  # (V, 3) float32, absolute
    extras: Extras = field(default_factory=dict)


@dataclass
class Mesh:
    """A triangle mesh. Corners are the triangles' vertex references in order."""

    name: str
    positions: np.ndarray  # (V, 3) float32
    triangles: np.ndarray  # (F, 3) int32, counter-clockwise seen from the front
    normals: Layer | None = None  # unit vectors, POINT or CORNER domain
    uv_layers: list[Layer] = field(default_factory=list)  # (·, 2) float32, V up
    color_layers: list[Layer] = field(default_factory=list)  # (·, 4) float32 in 0..1
    tangents: Layer | None = None  # (·, 4) float32: xyz + bitangent sign
    material_indices: np.ndarray | None = None  # (F,) int32 into ``materials``
    materials: list[int] = field(default_factory=list)  # indices into Scene.materials
    skeleton: int | None = None  # index into Scene.skeletons
    skin_joints: np.ndarray | None = None  # (V, K) int32 bone indices
    skin_weights: np.ndarray | None = None  # (V, K) float32, rows sum to 1 (0 = unused)
    shape_keys: list[ShapeKey] = field(default_factory=list)
    collection: str = ""  # e.g. "LOD1": the Blender collection the object goes into
    hidden: bool = False
    matrix: np.ndarray | None = None  # (4, 4) object matrix, identity when None
    extras: Extras = field(default_factory=dict)


@dataclass
class Image:
    name: str
    pixels: np.ndarray | None  # (H, W, 4) uint8, top row first; None when not decodable
    width: int = 0
    height: int = 0
    source_bytes: bytes | None = None  # the encoded texel data as stored in the file
    source_format: str = ""  # e.g. "DXT5", "RGBA8888", "CMPR"
    extras: Extras = field(default_factory=dict)


@dataclass
class TextureSlot:
    image: int  # index into Scene.images
    role: str = "base_color"  # base_color, normal, emission, ...
    uv_layer: str = ""
    wrap_s: str = "REPEAT"  # REPEAT, CLAMP, MIRROR
    wrap_t: str = "REPEAT"
    translate: tuple[float, float] = (0.0, 0.0)
    rotate: float = 0.0  # radians
    scale: tuple[float, float] = (1.0, 1.0)
    # The point rotation and scale apply about, ``uv' = S·R·(uv − c) + c + t``; None: Blender's
    # Mapping order about the origin (scale, rotate, translate).
    center: tuple[float, float] | None = None
    interpolation: str = "Linear"  # Linear, Closest (Blender's image interpolation names)
    extras: Extras = field(default_factory=dict)


@dataclass
class Material:
    name: str
    base_color: tuple[float, float, float, float] = (0.8, 0.8, 0.8, 1.0)
    textures: list[TextureSlot] = field(default_factory=list)
    alpha_mode: str = "OPAQUE"  # OPAQUE, CLIP, BLEND
    backface_culling: bool = False
    alpha_threshold: float = 0.5  # CLIP: alpha shows above it
    vertex_color: str = ""  # a colour layer multiplying the base colour and alpha ("" for none)
    tint_texture: bool = False  # the base colour multiplies the base texture (else the texture replaces it)
    additive: bool = False  # BLEND adds the surface onto what is behind it
    unlit: bool = False  # the colour shows as is, without lighting
    specular: float | None = None  # Principled Specular IOR Level (0: diffuse only); None: Blender's default
    extras: Extras = field(default_factory=dict)


@dataclass
class ChannelOrigin:
    """A channel as its file stored it: the encoded track, and a digest of the keys as imported.

    A family converter sets it on import; the Blender layer gives it back with every channel
    whose keys were not edited (and None with those that were), so export can reuse ``track``
    for a channel whose ``keys_digest`` still equals ``digest`` and encode only the others.
    """

    track: object = None  # any value the extras codec holds (formats.extras)
    digest: str = ""  # keys_digest of the channel as imported


def keys_digest(channel) -> str:
    """A digest of a channel's keys (``Channel``, or anything with its key fields): times, values,
    interpolation and Bézier handles, bit for bit as float64 (−0.0 is not 0.0)."""
    times = np.ascontiguousarray(channel.times, "<f8")
    rows = max(len(times), 1)  # one row per key (no keys: one empty row, as reshape cannot infer 0 × ?)
    digest = hashlib.sha1(f"{len(times)} {channel.interpolation}".encode())
    for array in (times, channel.values, channel.handles_left, channel.handles_right):
        if array is None:
            digest.update(b"none")
            continue
        array = np.ascontiguousarray(array, "<f8")
        columns = array.size // rows
        if rows * columns != array.size:
            raise ValueError(f"{array.shape} values do not make one row per key of {len(times)}")
        digest.update(f"({rows}, {columns})".encode())
        digest.update(array)  # its bytes, without a copy
    return digest.hexdigest()


# Extras key of a material texture-transform channel: the centre (u, v[, w]) its rotation and scale
# apply about, ``uv' = S·R·(uv − c) + c + t`` (rotate, then scale); without it, Blender's Mapping
# order (scale, rotate, translate about the origin).
TEXTURE_CENTER = "center"


@dataclass
class Channel:
    """Keys of one animated property of one target.

    ``target_kind`` is 'bone' (``target`` = bone name, values parent-relative),
    'material', 'object' or 'shape_key'; ``path`` names the property:
    - bone: 'location', 'rotation_quaternion', 'rotation_euler', 'scale';
    - object: 'hide' (1 hidden, 0 shown; CONSTANT);
    - shape_key (``target`` = mesh name): the shape key's name, its weight;
    - material: 'texture.<slot>.translate' (u, v), '.rotate' (radians), '.scale' (u, v), each may
      carry ``extras[TEXTURE_CENTER]``; 'texture.<slot>.image_index' (the Scene image the slot
      shows); 'color.base_color' (RGBA); any other path is a family's own (e.g. a colour
      register), kept and given back as it is.
    ``values`` has one column per component. Bézier handles are absolute (frame, value) pairs.
    LINEAR keys of a whole 'rotation_quaternion' (w, x, y, z) are interpolated
    spherically along the shorter arc (slerp; either sign of a key is the same
    rotation), not component by component.
    """

    target_kind: str
    target: str
    path: str
    times: np.ndarray  # (K,) float64 frames
    values: np.ndarray  # (K, C) float64
    interpolation: str = "LINEAR"  # LINEAR, BEZIER, CONSTANT
    handles_left: np.ndarray | None = None  # (K, C, 2)
    handles_right: np.ndarray | None = None  # (K, C, 2)
    extras: Extras = field(default_factory=dict)
    # One component of a vector property (Blender's array_index) when the file keys each
    # component separately; ``values`` is then (K, 1). None: all components, (K, C).
    index: int | None = None
    origin: ChannelOrigin | None = None  # the track as the file stored it (set by converters)


@dataclass
class Animation:
    name: str
    channels: list[Channel] = field(default_factory=list)
    fps: float = 30.0
    frame_start: float = 0.0
    frame_end: float = 0.0
    loop: bool = False
    # Looping as a game that wraps time at the end and clamps it before the start (TTYD): the start
    # shows before the start and at every end; else as Blender's Cycles (repeats before the start, the
    # last key at each end).
    hold_start: bool = False
    skeleton: int | None = None  # the skeleton bone channels address
    extras: Extras = field(default_factory=dict)


@dataclass
class Scene:
    name: str = ""
    skeletons: list[Skeleton] = field(default_factory=list)
    meshes: list[Mesh] = field(default_factory=list)
    materials: list[Material] = field(default_factory=list)
    images: list[Image] = field(default_factory=list)
    animations: list[Animation] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # for the import report
    extras: Extras = field(default_factory=dict)
    source: str = ""  # the file the scene was read from (kept with the import for re-reading and export)


# -- what a builder may take -----------------------------------------------------

LAST_FRAME = 1048574  # Blender's last frame (MAXFRAME): key times and ranges stay within ±it
MIN_FPS, MAX_FPS = 1e-6, 32767  # Blender's frame rates (a whole rate 1…32767 over a base up to 10⁶)
FLOAT32_MAX = float(np.finfo(np.float32).max)
POSE_LIMIT = 1e30  # what a bone's world matrix may reach, with room for Blender's own products


def validate(scene: Scene, filename: str = "") -> None:
    """Check what a builder will put into Blender, before it touches anything.

    Positions, rest and object matrices, shape keys and animation keys must be finite (a
    FormatError names the file and the field); so must frame rates and times, within what
    Blender holds. Normals, UVs, colours, tangents and skin weights, which a game draws anyway,
    have non-finite values replaced by 0 with a warning giving the count.
    """
    filename = filename or scene.source or scene.name or "<scene>"

    def refuse(values, what: str) -> None:
        # Blender stores single floats: a double beyond their range would become infinite there.
        bad = np.size(values) - np.count_nonzero(np.abs(np.asarray(values, np.float64)) <= FLOAT32_MAX)
        if bad:
            raise FormatError(
                filename, None, f"{what}: {bad} non-finite values (NaN, infinity or beyond float32)"
            )

    def tolerate(data, what: str):
        """``data`` with its non-finite values 0 (and a warning), or as it is."""
        if data is None or not np.issubdtype(np.asarray(data).dtype, np.floating):
            return data
        finite = np.isfinite(data)
        if finite.all():
            return data
        scene.warnings.append(f"{what}: {finite.size - np.count_nonzero(finite)} non-finite values set to 0")
        return np.where(finite, data, 0).astype(np.asarray(data).dtype)

    def tolerate_layer(layer: Layer | None, what: str) -> Layer | None:
        if layer is None:
            return None
        data = tolerate(layer.data, f"{what} {layer.name!r}")
        return layer if data is layer.data else replace(layer, data=data)

    for skeleton in scene.skeletons:
        refuse(skeleton.rest, f"skeleton {skeleton.name!r}: rest matrices")
        with np.errstate(all="ignore"):
            scales = np.abs(np.linalg.det(np.asarray(skeleton.rest, np.float64)[:, :3, :3]))
        flat = np.flatnonzero(~((scales > 0) & (scales <= FLOAT32_MAX)))  # no inverse to pose bones with
        if len(flat):
            bone = skeleton.bone_names[flat[0]]
            raise FormatError(
                filename, None, f"skeleton {skeleton.name!r}: the rest matrix of bone {bone!r} has no inverse"
            )
        if skeleton.bone_display is not None:
            refuse(skeleton.bone_display, f"skeleton {skeleton.name!r}: bone display rotation")
    for mesh in scene.meshes:
        where = f"mesh {mesh.name!r}"
        refuse(mesh.positions, f"{where}: positions")
        if mesh.matrix is not None:
            refuse(mesh.matrix, f"{where}: object matrix")
        for key in mesh.shape_keys:
            refuse(key.positions, f"{where}: shape key {key.name!r}")
        mesh.normals = tolerate_layer(mesh.normals, f"{where}: normals")
        mesh.tangents = tolerate_layer(mesh.tangents, f"{where}: tangents")
        mesh.uv_layers = [tolerate_layer(layer, f"{where}: UV layer") for layer in mesh.uv_layers]
        mesh.color_layers = [tolerate_layer(layer, f"{where}: colour layer") for layer in mesh.color_layers]
        mesh.skin_weights = tolerate(mesh.skin_weights, f"{where}: skin weights")
    skeletons: dict[int, tuple] = {}  # what _poses_within_floats needs of each skeleton, once
    for animation in scene.animations:
        where = f"animation {animation.name!r}"
        if not (MIN_FPS <= animation.fps <= MAX_FPS):
            raise FormatError(
                filename, None, f"{where}: frame rate {animation.fps} outside {MIN_FPS}…{MAX_FPS}"
            )
        _within_frames(filename, (animation.frame_start, animation.frame_end), f"{where}: frame range")
        _keys_within_floats(animation, filename, where)
        _poses_within_floats(scene, animation, filename, skeletons)


def _key_parts(channel: Channel):
    """What ``validate`` checks of a channel's keys, in order: (field, values, largest magnitude)."""
    yield "key values", channel.values, FLOAT32_MAX
    if TEXTURE_CENTER in channel.extras:  # the builder's Mapping nodes are keyed about it
        yield "texture centre", channel.extras[TEXTURE_CENTER], FLOAT32_MAX
    for handles in (channel.handles_left, channel.handles_right):
        if handles is not None:
            yield "key handles", handles, FLOAT32_MAX
    yield "key times", channel.times, LAST_FRAME


def _keys_within_floats(animation: Animation, filename: str, where: str) -> None:
    """Refuse key values, handles and texture centres beyond single floats (Blender stores them so)
    and key times beyond Blender's frames, naming the first such part; every channel in one pass."""
    flat, limits = [], []
    for channel in animation.channels:
        for _, values, limit in _key_parts(channel):
            flat.append(np.asarray(values).ravel())
            limits.append(limit)
    if not flat:
        return
    sizes = np.array([len(f) for f in flat])
    magnitudes = np.abs(np.concatenate(flat).astype(np.float64, copy=False))
    bad = ~(magnitudes <= np.repeat(limits, sizes))  # NaN too
    if not bad.any():
        return
    ends = np.cumsum(sizes)
    first = int(np.searchsorted(ends, np.argmax(bad), side="right"))
    channel, field_name = [(c, part[0]) for c in animation.channels for part in _key_parts(c)][first]
    what = f"{where}, {channel.target_kind} {channel.target!r} {channel.path}: {field_name}"
    if field_name == "key times":
        raise FormatError(filename, None, f"{what} must be finite and within ±{LAST_FRAME} frames")
    count = np.count_nonzero(bad[ends[first] - sizes[first] : ends[first]])
    raise FormatError(filename, None, f"{what}: {count} non-finite values (NaN, infinity or beyond float32)")


def _poses_within_floats(scene: Scene, animation: Animation, filename: str, skeletons: dict) -> None:
    """Refuse bone keys whose poses overflow single floats down the chain (scales multiply, and
    locations add up through them), from a bound of every bone's world matrix over all keys.
    ``skeletons``: what each skeleton index gives, kept between the animations of a scene."""
    skeleton_index = animation.skeleton or 0
    if skeleton_index >= len(scene.skeletons):
        return
    skeleton = scene.skeletons[skeleton_index]
    if skeleton_index not in skeletons:
        local = skeleton.local_rest()
        # Bounds of each bone's local 3×3 part (its largest stretch: the rotation keeps lengths, the
        # largest scale key stretches most) and of its translation's length.
        scale = np.linalg.norm(local[:, :3, :3], ord=2, axis=(1, 2)) if len(local) else np.zeros(0)
        shift = np.linalg.norm(local[:, :3, 3], axis=1)
        index = {name: i for i, name in enumerate(skeleton.bone_names)}
        skeletons[skeleton_index] = (index, scale, shift, tree_order(skeleton.parents))
    index, scale, shift, order = skeletons[skeleton_index]
    # The largest magnitude of each scale and location channel's values and handle values, at once.
    bones, scales, parts, owners = [], [], [], []
    for channel in animation.channels:
        bone = index.get(channel.target) if channel.target_kind == "bone" else None
        if bone is None or channel.path not in ("scale", "location"):
            continue
        bones.append(bone)
        scales.append(channel.path == "scale")
        parts += [channel.values] + [
            h[..., 1] for h in (channel.handles_left, channel.handles_right) if h is not None
        ]
        owners += [len(bones) - 1] * (len(parts) - len(owners))
    if bones:
        flat = [np.asarray(p).ravel() for p in parts]
        sizes = np.array([len(f) for f in flat])
        filled = sizes > 0  # reduceat takes no empty part
        largest = np.zeros(len(bones))
        if filled.any():
            starts = (np.cumsum(sizes) - sizes)[filled]
            magnitudes = np.abs(np.concatenate(flat).astype(np.float64, copy=False))
            np.maximum.at(largest, np.array(owners)[filled], np.maximum.reduceat(magnitudes, starts))
        bones, scales = np.array(bones), np.array(scales)
        scale, shift = scale.copy(), shift.copy()
        np.maximum.at(scale, bones[scales], largest[scales])
        np.maximum.at(shift, bones[~scales], np.sqrt(3) * largest[~scales])
    parents, scale, shift = np.asarray(skeleton.parents).tolist(), scale.tolist(), shift.tolist()
    linear, offset = [0.0] * len(parents), [0.0] * len(parents)
    for i in order:
        parent = parents[i]
        parent_linear, parent_offset = (linear[parent], offset[parent]) if parent >= 0 else (1.0, 0.0)
        linear[i] = parent_linear * scale[i]
        offset[i] = parent_offset + parent_linear * shift[i]
        if not max(linear[i], offset[i]) <= POSE_LIMIT:
            raise FormatError(
                filename,
                None,
                f"animation {animation.name!r}: the poses of bone {skeleton.bone_names[i]!r} go beyond "
                "single floats (its keys' scales and locations multiply down the chain)",
            )


def _within_frames(filename: str, times, what: str) -> None:
    times = np.asarray(times, np.float64)
    if times.size and not (np.isfinite(times).all() and np.abs(times).max() <= LAST_FRAME):
        raise FormatError(filename, None, f"{what} must be finite and within ±{LAST_FRAME} frames")


# -- small numeric helpers shared by the converters ---------------------------


def apply_matrix(mesh: Mesh) -> Mesh:
    """The mesh with its object matrix applied to positions, normals and shape keys (``matrix`` None).

    For formats that store no per-mesh transform.
    """
    if mesh.matrix is None:
        return mesh
    matrix = np.asarray(mesh.matrix, np.float64)
    linear, offset = matrix[:3, :3], matrix[:3, 3]

    def place(points):
        return (np.asarray(points, np.float64) @ linear.T + offset).astype(np.float32)

    def turn(layer, by):
        if layer is None:
            return None
        data = np.array(layer.data, np.float64)
        turned = data[:, :3] @ by
        length = np.linalg.norm(turned, axis=1, keepdims=True)
        data[:, :3] = turned / np.where(length > 0, length, 1)
        return replace(layer, data=data.astype(np.float32))

    keys = [replace(k, positions=place(k.positions)) for k in mesh.shape_keys]
    return replace(
        mesh,
        positions=place(mesh.positions),
        normals=turn(mesh.normals, np.linalg.inv(linear)),  # normals turn by the inverse transpose
        tangents=turn(mesh.tangents, linear.T),
        shape_keys=keys,
        matrix=None,
    )


def scale_lengths(scene: Scene, factor: float) -> None:
    """Make the scene ``factor`` times the size, in place: positions, shape keys, the translations of
    object and rest matrices, and the values (and handle values) of bone location channels."""
    for mesh in scene.meshes:
        mesh.positions = (np.asarray(mesh.positions, np.float64) * factor).astype(np.float32)
        for key in mesh.shape_keys:
            key.positions = (np.asarray(key.positions, np.float64) * factor).astype(np.float32)
        if mesh.matrix is not None:
            mesh.matrix = np.array(mesh.matrix, np.float64)
            mesh.matrix[:3, 3] *= factor
    for skeleton in scene.skeletons:
        skeleton.rest = np.array(skeleton.rest, np.float64)
        skeleton.rest[:, :3, 3] *= factor
    for animation in scene.animations:
        for channel in animation.channels:
            if (channel.target_kind, channel.path) != ("bone", "location"):
                continue
            channel.values = np.asarray(channel.values, np.float64) * factor
            for side in ("handles_left", "handles_right"):
                handles = getattr(channel, side)
                if handles is not None:
                    handles = np.array(handles, np.float64)
                    handles[..., 1] *= factor  # (frame, value) pairs
                    setattr(channel, side, handles)


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """(…, 4) quaternions (w, x, y, z) to (…, 3, 3) rotation matrices (normalised first)."""
    q = np.asarray(q, dtype=np.float64)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = np.moveaxis(q, -1, 0)
    m = np.empty(q.shape[:-1] + (3, 3))
    m[..., 0, 0] = 1 - 2 * (y * y + z * z)
    m[..., 0, 1] = 2 * (x * y - z * w)
    m[..., 0, 2] = 2 * (x * z + y * w)
    m[..., 1, 0] = 2 * (x * y + z * w)
    m[..., 1, 1] = 1 - 2 * (x * x + z * z)
    m[..., 1, 2] = 2 * (y * z - x * w)
    m[..., 2, 0] = 2 * (x * z - y * w)
    m[..., 2, 1] = 2 * (y * z + x * w)
    m[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return m


# ``matrix_to_quat``: the terms (w, x, y, z) take when the largest diagonal term is that of w, x, y or z.
_QUAT_TERMS = np.array([[0, 1, 2, 3], [1, 0, 4, 5], [2, 4, 0, 6], [3, 5, 6, 0]])


def matrix_to_quat(m: np.ndarray) -> np.ndarray:
    """(…, 3, 3) rotation matrices to (…, 4) unit quaternions (w, x, y, z), w ≥ 0."""
    m = np.asarray(m, dtype=np.float64)[..., :3, :3]
    t = np.stack(
        [
            1 + m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2],
            1 + m[..., 0, 0] - m[..., 1, 1] - m[..., 2, 2],
            1 - m[..., 0, 0] + m[..., 1, 1] - m[..., 2, 2],
            1 - m[..., 0, 0] - m[..., 1, 1] + m[..., 2, 2],
        ],
        axis=-1,
    )
    # Build from the largest diagonal term for numerical stability: of every term a case may take
    # (s / 4, the differences and sums of opposite entries over s), each case's four.
    k = np.argmax(t, axis=-1)
    s = np.sqrt(np.maximum(np.take_along_axis(t, k[..., None], -1)[..., 0], 1e-300)) * 2
    terms = np.stack(
        [
            s / 4,
            (m[..., 2, 1] - m[..., 1, 2]) / s,
            (m[..., 0, 2] - m[..., 2, 0]) / s,
            (m[..., 1, 0] - m[..., 0, 1]) / s,
            (m[..., 0, 1] + m[..., 1, 0]) / s,
            (m[..., 0, 2] + m[..., 2, 0]) / s,
            (m[..., 1, 2] + m[..., 2, 1]) / s,
        ],
        axis=-1,
    )
    q = np.take_along_axis(terms, _QUAT_TERMS[k], axis=-1)
    q *= np.where(q[..., :1] < 0, -1.0, 1.0)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def quat_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product of (…, 4) quaternions (w, x, y, z)."""
    aw, ax, ay, az = np.moveaxis(np.asarray(a, dtype=np.float64), -1, 0)
    bw, bx, by, bz = np.moveaxis(np.asarray(b, dtype=np.float64), -1, 0)
    return np.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=-1,
    )


def compose(translation: np.ndarray, quaternion: np.ndarray, scale: np.ndarray | None = None) -> np.ndarray:
    """(…, 4, 4) matrices from translations (…, 3), quaternions (…, 4) and optional scales (…, 3)."""
    translation = np.asarray(translation, dtype=np.float64)
    m = np.zeros(translation.shape[:-1] + (4, 4))
    rot = quat_to_matrix(quaternion)
    if scale is not None:
        rot = rot * np.asarray(scale, dtype=np.float64)[..., None, :]
    m[..., :3, :3] = rot
    m[..., :3, 3] = translation
    m[..., 3, 3] = 1.0
    return m


def axis_matrix(forward: str = "-Z", up: str = "Y") -> np.ndarray:
    """The 4×4 rotation taking a file's axes to Blender's (forward = Y, up = Z).

    Same matrix as ``bpy_extras.io_utils.axis_conversion(from_forward=forward,
    from_up=up)``. Only signed axis permutations result, so applying it to
    float32 data and then its transpose gives the same bits back.
    """
    vectors = {"X": (1, 0, 0), "Y": (0, 1, 0), "Z": (0, 0, 1)}

    def vec(name: str) -> np.ndarray:
        sign = -1.0 if name.startswith("-") else 1.0
        return sign * np.array(vectors[name.lstrip("-")], dtype=np.float64)

    f, u = vec(forward), vec(up)
    if abs(f @ u) > 0.5:
        raise ValueError(f"forward {forward} and up {up} must be different axes")
    # Rows: where each Blender axis comes from. Blender forward is Y, up is Z.
    src = np.stack([np.cross(f, u), f, u])
    m = np.eye(4)
    m[:3, :3] = src
    return m
