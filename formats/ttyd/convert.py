"""TTYD models (and their TPL) ⇄ the neutral Scene.

Groups → one Skeleton. Each group is a bone (parents first; the file keeps
the root last) whose rest matrix is the group's world matrix from the node
floats; every shape becomes a mesh rigidly skinned to the bone of the group
that draws it, its vertices placed in armature space. A skeleton rather than
an object hierarchy: the Scene has no object parenting, one armature keeps
the whole tree, its names and order in one place, and every node animation
of a file animation lands in one action; the 24 node floats and the group
record travel in bone extras, so re-export writes them back exactly.

Meshes: the polygons are triangle fans (v0, vi, vi+1), flipped to
counter-clockwise (the GameCube treats clockwise as the front). Normals, UVs
(V flipped) and vertex colours are CORNER layers, since the file indexes each
attribute separately. One material per subshape, with one texture slot per
sampler: wrap modes from the sampler (or the TPL), the texture-coordinate
transform as the slot's translate, rotate (radians) and scale of one Blender
Mapping node (scale, rotate, then translate), which reproduces the game's
transform exactly (``slot_transform``; the translate is not the file's); backface
culling when the cull mode is 0 (back), alpha mode from the shape's display
mode (0 and 2 CLIP, 1 OPAQUE, 3 BLEND).

Animations (fps 60, one per entry; entries without data are kept empty):
- node floats → bone channels. When a node has no centres, no compensation,
  and uses only one of its two rotations, each animated float is its own
  channel component (``index``) with Bézier handles a third of each segment
  away along the game's tangents, which reproduces the Hermite curve exactly;
  otherwise (and for root bones, which carry the axis conversion) the local
  matrices are baked at every frame and keyframe time into ``location``,
  ``rotation_quaternion`` and ``scale`` (LINEAR).
- position deltas → one shape key per keyframe ("<animation>.<keyframe>",
  relative to the basis) with a LINEAR weight 0 → 1 over that keyframe's
  segment (CONSTANT for the first keyframe).
- texture-transform deltas → material channels ``texture.<slot>.translate``
  (K, 2: the Mapping location, ``mapping_location`` of the file's translation
  and the sampler's scale and rotation) and ``texture.<slot>.image_index``
  (K, 1, the scene image shown), both CONSTANT.
- visibility → object channels ``hide`` (1 hidden) on the meshes below the
  group, CONSTANT.
Normal deltas and the 8-byte records have no Scene counterpart: they travel
with the animation's tables in its extras.

Images: one per TPL image (decoded, with the encoded texels as source bytes);
without a TPL, one placeholder without pixels per TPL index the texture table
names (extras ``tpl_index``).

Re-export: the scene extras keep every table of the file (hex), the layout
and the header. ``from_scene`` starts from them and writes the scene's values
back where they differ from the kept ones by more than the tolerance: vertex
positions, normals, UVs and colours (when the topology is unchanged, else the
geometry of every mesh is rebuilt, one 3-corner fan per triangle), node
floats of bones whose rest changed, samplers, texture transforms, display and
cull modes, names. Animations are written from their kept tables when the
scene's channels still match them; changed ones are re-encoded from the
channels (quantised to the file's 1/16 steps).
"""

from __future__ import annotations

import numpy as np

from ..binary import with_endian
from ..errors import ExportError
from ..scene import (
    Animation,
    Channel,
    Image,
    Layer,
    Material,
    Mesh,
    Scene,
    ShapeKey,
    Skeleton,
    TextureSlot,
    axis_matrix,
    compose,
    matrix_to_quat,
)
from ..textures import gx
from ..textures import tpl as tpl_format
from . import model as fmt
from .evaluate import FPS, Evaluator, euler_zyx, local_matrices, node_matrix, tree_order, world_matrices
from .model import NODE_FLOATS, AnimationData, Model, text

EXTRAS_KEY = "ttyd"
AXES = ("-Z", "Y")  # the default (forward, up): the file is Y-up with characters facing +Z
TOLERANCE = 1e-4
DISPLAY_ALPHA = {0: "CLIP", 1: "OPAQUE", 2: "CLIP", 3: "BLEND"}
ALPHA_DISPLAY = {"CLIP": 0, "OPAQUE": 1, "BLEND": 3}
CULL_BACK, CULL_NONE = 0, 3
WRAP_NAMES = {0: "CLAMP", 1: "REPEAT", 2: "MIRROR"}
TEXCOORD_CENTER = 0.5  # the game rotates texture coordinates about (0.5, 0.5)
USE_TPL_WRAP = 0x80000000
DEFAULT_TEXTURE_FORMAT = gx.RGB5A3


def default_axis() -> np.ndarray:
    """The file is Y-up with characters facing +Z."""
    return axis_matrix(*AXES)


# -- small helpers -------------------------------------------------------------------


def _hex(table: np.ndarray) -> str:
    return np.ascontiguousarray(table, with_endian(table.dtype, fmt.ENDIAN)).tobytes().hex()


def _unhex(raw: str, dtype: np.dtype, components: int = 1) -> np.ndarray:
    values = np.frombuffer(bytes.fromhex(raw), with_endian(np.dtype(dtype), fmt.ENDIAN)).astype(dtype)
    return values.reshape(-1, components) if components > 1 else values


def _signed(value: int) -> int:
    """A u32 as a signed 32-bit int (extras hold 32-bit ints)."""
    return int(np.array(value, np.uint32).view(np.int32))


def _unsigned(value: int) -> int:
    return int(np.array(value, np.int32).view(np.uint32))


def _restore(original, expected, value, to_file) -> np.ndarray:
    """Rows of ``original`` (file values) where the scene ``value`` still equals what they showed as
    (``expected``) within tolerance; ``to_file(value)`` as float32 elsewhere."""
    original = np.asarray(original, np.float32)
    rows = len(original)
    if rows == 0:
        return original
    expected = np.asarray(expected, np.float64).reshape(rows, -1)
    value = np.asarray(value, np.float64).reshape(rows, -1)
    with np.errstate(invalid="ignore", over="ignore"):
        near = np.abs(value - expected) <= TOLERANCE * np.maximum(1.0, np.abs(expected))
        converted = np.asarray(to_file(value), np.float64).astype(np.float32).reshape(original.shape)
    near |= (value == expected) | (np.isnan(value) & np.isnan(expected))
    keep = near.all(axis=1).reshape((rows,) + (1,) * (original.ndim - 1))
    return np.where(keep, original, converted)


def positions_to_scene(matrix: np.ndarray, positions: np.ndarray) -> np.ndarray:
    return _apply(matrix, positions).astype(np.float32)


def normals_to_scene(matrix: np.ndarray, normals: np.ndarray) -> np.ndarray:
    return _normalize(np.asarray(normals, np.float64) @ _normal_matrix(matrix).T).astype(np.float32)


def _positions_to_file(unmatrix: np.ndarray):
    return lambda values: _apply(unmatrix, values)


def _normals_to_file(matrix: np.ndarray):
    return lambda values: _to_local_normals(values, matrix)


def uvs_to_file(uv: np.ndarray) -> np.ndarray:
    uv = np.asarray(uv, np.float64)
    return np.stack([uv[:, 0], 1.0 - uv[:, 1]], axis=1)


def mapping_location(translate, scale, rotate_degrees) -> np.ndarray:
    """(…, 2) Mapping-node location of the game's texture-coordinate transform (see ``slot_transform``)."""
    translate, scale = np.asarray(translate, np.float64), np.asarray(scale, np.float64)
    angle = np.radians(np.asarray(rotate_degrees, np.float64))
    x = translate[..., 0] - TEXCOORD_CENTER
    y = TEXCOORD_CENTER - translate[..., 1] - scale[..., 1]
    c, s = np.cos(angle), np.sin(angle)
    return np.stack([c * x - s * y + TEXCOORD_CENTER, s * x + c * y + TEXCOORD_CENTER], axis=-1)


def file_translate(location, scale, rotate_degrees) -> np.ndarray:
    """(…, 2) file translation (S, T) whose transform has the Mapping-node ``location``: the inverse of
    ``mapping_location`` for the same scale and rotation."""
    location, scale = np.asarray(location, np.float64), np.asarray(scale, np.float64)
    angle = np.radians(np.asarray(rotate_degrees, np.float64))
    x, y = location[..., 0] - TEXCOORD_CENTER, location[..., 1] - TEXCOORD_CENTER
    c, s = np.cos(angle), np.sin(angle)
    x, y = c * x + s * y, -s * x + c * y
    return np.stack([x + TEXCOORD_CENTER, TEXCOORD_CENTER - y - scale[..., 1]], axis=-1)


def slot_transform(
    translate, scale, rotate_degrees
) -> tuple[tuple[float, float], float, tuple[float, float]]:
    """The game's texture-coordinate transform as one Blender Mapping node: (location, rotation, scale).

    The game maps (S, T) (T down) by T(.5,.5)·R(−rot)·T(−.5,−.5)·T(t)·S(s): scale about the
    origin, translate, rotate about the centre. In Blender's UV (V = 1 − T) that is
    uv' = R(rot)·(s·uv + t') + (.5, .5) with t' = (tS − .5, .5 − tT − sT), which is exactly what
    a Mapping node computes (scale, rotate, then add its location) with location R(rot)·t' + (.5, .5).
    """
    location = mapping_location(translate, scale, rotate_degrees)
    return (
        (float(location[0]), float(location[1])),
        float(np.radians(rotate_degrees)),
        (float(scale[0]), float(scale[1])),
    )


def uvs_to_scene(texcoords: np.ndarray) -> np.ndarray:
    """File (S, T) with T down → Blender (U, V) with V up."""
    st = np.asarray(texcoords, np.float64)
    return np.stack([st[:, 0], 1.0 - st[:, 1]], axis=1).astype(np.float32)


def inverse(matrix: np.ndarray) -> np.ndarray:
    """(…, 4, 4) inverses: NaN where a matrix is not finite, the pseudo-inverse where it is singular."""
    shape = np.shape(matrix)
    matrix = np.asarray(matrix, np.float64).reshape(-1, 4, 4)
    finite = np.isfinite(matrix).all(axis=(-2, -1))
    out = np.full(matrix.shape, np.nan)
    regular = finite.copy()
    regular[finite] = np.abs(np.linalg.det(matrix[finite])) > 1e-300
    out[regular] = np.linalg.inv(matrix[regular])
    singular = finite & ~regular
    out[singular] = np.linalg.pinv(matrix[singular])
    return out.reshape(shape)


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per matrix of (…, 4, 4): equal within tolerance (NaN matching NaN)."""
    size = np.maximum(1.0, np.nan_to_num(np.abs(b), nan=1.0, posinf=1.0).max(axis=(-2, -1)))
    with np.errstate(invalid="ignore"):
        near = np.abs(a - b) <= TOLERANCE * size[..., None, None]
    return (near | (a == b) | (np.isnan(a) & np.isnan(b))).all(axis=(-2, -1))


def _unique_names(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        candidate, n = name, seen.get(name, 0)
        while candidate in seen:
            n += 1
            candidate = f"{name}.{n:03d}"
        seen[name] = n
        seen[candidate] = 0
        out.append(candidate)
    return out


def _apply(matrix: np.ndarray, points: np.ndarray) -> np.ndarray:
    return np.asarray(points, np.float64) @ matrix[:3, :3].T + matrix[:3, 3]


def _normal_matrix(matrix: np.ndarray) -> np.ndarray:
    """Cofactor matrix (det · inverse transpose, signed): defined even for zero scales."""
    c0, c1, c2 = matrix[:3, 0], matrix[:3, 1], matrix[:3, 2]
    cofactor = np.stack([np.cross(c1, c2), np.cross(c2, c0), np.cross(c0, c1)], axis=1)
    return cofactor * (-1.0 if np.linalg.det(matrix[:3, :3]) < 0 else 1.0)


def _normalize(v: np.ndarray) -> np.ndarray:
    length = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(length > 0, length, 1.0)


def decompose(matrices: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(…, 4, 4) → location (…, 3), quaternion (…, 4) and scale (…, 3); shear is dropped."""
    linear = matrices[..., :3, :3]
    scale = np.linalg.norm(linear, axis=-2)
    mirrored = np.linalg.det(linear) < 0
    scale[mirrored, 0] *= -1
    rotation = linear / np.where(scale == 0, 1.0, scale)[..., None, :]
    return matrices[..., :3, 3].copy(), matrix_to_quat(rotation), scale


def euler_xyz_degrees(rotation: np.ndarray) -> np.ndarray:
    """(…, 3, 3) rotation Rz·Ry·Rx → (…, 3) angles in degrees."""
    y = np.arcsin(np.clip(-rotation[..., 2, 0], -1.0, 1.0))
    x = np.arctan2(rotation[..., 2, 1], rotation[..., 2, 2])
    z = np.arctan2(rotation[..., 1, 0], rotation[..., 0, 0])
    return np.degrees(np.stack([x, y, z], axis=-1))


# -- geometry ------------------------------------------------------------------------


def shape_geometry(model: Model, s: int) -> dict:
    """Triangles of shape ``s`` and the pool index behind every corner.

    Returns 'triangles' (F, 3) local position indices, counter-clockwise; 'corners' {attribute:
    (3F,) local pool index, -1 where the subshape has no such attribute}; 'subshape' (F,) the
    subshape (0-based within the shape) of each triangle.
    """
    shape = model.shapes[s]
    first = int(shape["subshape_first"])
    pieces = []
    for d in range(int(shape["subshape_count"])):
        subshape = model.subshapes[first + d]
        corners = fmt.subshape_corner_indices(model, shape, subshape)
        start = int(subshape["polygon_first"])
        counts = model.polygons["count"][start : start + int(subshape["polygon_count"])]
        order = fmt.fan_triangles(counts)[:, [0, 2, 1]].reshape(-1)
        pieces.append((d, corners, order))
    keys = sorted({key for _, corners, _ in pieces for key in corners})
    per_corner = {
        key: np.concatenate([c[key][o] if key in c else np.full(len(o), -1, np.int64) for _, c, o in pieces])
        for key in keys
    }
    triangles = per_corner.get("position", np.zeros(0, np.int64)).reshape(-1, 3)
    subshape_of = np.concatenate(
        [np.full(len(o) // 3, d, np.int64) for d, _, o in pieces] + [np.zeros(0, np.int64)]
    )
    return {"triangles": triangles, "corners": per_corner, "subshape": subshape_of}


# -- model → scene -------------------------------------------------------------------


def to_scene(model: Model, tpl: tpl_format.TPL | None = None, axis: np.ndarray | None = None) -> Scene:
    fmt.validate(model)
    axis = default_axis() if axis is None else np.asarray(axis, np.float64)
    name = text(model.header.name)
    scene = Scene(name=name, extras={EXTRAS_KEY: _model_extras(model, tpl)})
    parents = fmt.group_parents(model.groups)
    world = world_matrices(model, model.node_floats, parents) if len(model.groups) else np.zeros((0, 4, 4))
    order = tree_order(parents)
    bone_of = np.full(len(parents), -1, np.int64)
    bone_of[order] = np.arange(len(order))
    if len(order):
        scene.skeletons.append(_skeleton(model, name, parents, order, bone_of, axis @ world[order]))

    scene.images = _images(model, tpl)
    image_of = _image_lookup(scene)
    material_of = _materials(model, scene, tpl, image_of)
    visible = model.visibility != 0
    for s in range(len(model.shapes)):
        scene.meshes.append(_mesh(model, s, axis, world, parents, bone_of, material_of, visible))
    mesh_names = _unique_names([m.name for m in scene.meshes])
    for mesh, mesh_name in zip(scene.meshes, mesh_names, strict=True):
        mesh.name = mesh.extras["label"] = mesh_name

    animation_names = _unique_names([text(a.name) for a in model.animations])
    for a, animation in enumerate(model.animations):
        result, shape_keys = _animation(
            model, scene, a, animation, animation_names[a], axis, world, parents, bone_of, image_of
        )
        scene.animations.append(result)
        for m, key in shape_keys:
            scene.meshes[m].shape_keys.append(key)
    return scene


def _model_extras(model: Model, tpl) -> dict:
    h = model.header
    extras = {
        "name": h.name.hex(),
        "texture_name": h.texture_name.hex(),
        "date": h.date.hex(),
        "flags": _signed(h.flags),
        "radius": _signed(h.radius),
        "height": _signed(h.height),
        "bbox": [float(v) for v in np.concatenate([h.bbox_min, h.bbox_max])],
        "tables": {name: _hex(model.block(name)) for name, _, _ in fmt.BLOCKS},
    }
    layout = model.layout
    if layout is not None:
        extras["layout"] = {
            "size": layout.size,
            "data_area": _signed(layout.data_area),
            "offsets": [_signed(o) for o in layout.offsets],
            "animation_offsets": [_signed(o) for o in layout.animation_offsets],
            "animation_sizes": [_signed(o) for o in layout.animation_sizes],
            "animation_tables": [_signed(o) for table in layout.animation_tables for o in table],
            "region_sizes": layout.region_sizes,
            "fill_offsets": [offset for offset, _ in layout.fill],
            "fill_bytes": [raw.hex() for _, raw in layout.fill],
        }
    if tpl is not None:
        extras["tpl"] = {
            "table_offset": -1 if tpl.table_offset is None else tpl.table_offset,
            "size": -1 if tpl.size is None else tpl.size,
            "unused_offsets": [offset for offset, _ in tpl.unused],
            "unused_bytes": [raw.hex() for _, raw in tpl.unused],
        }
    return extras


def _skeleton(model, name, parents, order, bone_of, rest) -> Skeleton:
    groups = model.groups[order]
    bone_extras = []
    for g, group in zip(order, groups, strict=True):
        node = int(group["node"])
        bone_extras.append(
            {
                "group": int(g),
                "name": bytes(group["name"]).hex(),
                "next": int(group["next"]),
                "child": int(group["child"]),
                "shape": int(group["shape"]),
                "visibility": int(group["visibility"]),
                "node": node,
                "compensate": _signed(int(group["compensate"])),
                "node_floats": [float(v) for v in model.node_floats[node : node + NODE_FLOATS]],
            }
        )
    bone_names = _unique_names([text(g["name"]) for g in groups])
    for extras, bone_name in zip(bone_extras, bone_names, strict=True):
        extras["label"] = bone_name
    return Skeleton(
        name=name or "ttyd",
        bone_names=bone_names,
        parents=np.where(parents[order] >= 0, bone_of[np.maximum(parents[order], 0)], -1).astype(np.int32),
        rest=rest,
        bone_extras=bone_extras,
    )


def _images(model: Model, tpl) -> list[Image]:
    textures = model.textures
    names: dict[int, str] = {}
    for texture in textures:
        names.setdefault(int(texture["tpl_index"]), text(texture["name"]))
    base = text(model.header.texture_name)
    if tpl is None:  # one image without pixels per TPL image the textures name
        return [
            Image(names[i], None, extras={"placeholder": True, "tpl_index": i})
            for i in np.unique(textures["tpl_index"]).tolist()
        ]
    images = []
    for i, image in enumerate(tpl.images):
        extras = {
            "format": image.format,
            "wrap_s": image.wrap_s,
            "wrap_t": image.wrap_t,
            "min_filter": image.min_filter,
            "mag_filter": image.mag_filter,
            "lod_bias": float(image.lod_bias),
            "edge_lod": image.edge_lod,
            "min_lod": image.min_lod,
            "max_lod": image.max_lod,
            "unpacked": image.unpacked,
            "header_offset": -1 if image.header_offset is None else image.header_offset,
            "data_offset": -1 if image.data_offset is None else image.data_offset,
        }
        if image.palette is not None:
            p = image.palette
            extras["palette"] = {
                "entry_count": p.entry_count,
                "unpacked": p.unpacked,
                "pad": p.pad,
                "format": p.format,
                "data": p.data.hex(),
                "header_offset": -1 if p.header_offset is None else p.header_offset,
                "data_offset": -1 if p.data_offset is None else p.data_offset,
            }
        images.append(
            Image(
                names.get(i, f"{base}-{i}"),
                image.decode(),
                image.width,
                image.height,
                source_bytes=image.data,
                source_format=gx.NAMES.get(image.format, str(image.format)),
                extras=extras,
            )
        )
    return images


def _wrap(flags: int, tpl_wrap: tuple[int, int]) -> tuple[str, str]:
    if flags & USE_TPL_WRAP:
        return WRAP_NAMES.get(tpl_wrap[0], "REPEAT"), WRAP_NAMES.get(tpl_wrap[1], "REPEAT")

    def one(repeat: int, mirror: int) -> str:
        return "MIRROR" if flags & mirror else "REPEAT" if flags & repeat else "CLAMP"

    return one(0x1, 0x4), one(0x2, 0x8)


def _image_lookup(scene: Scene):
    """TPL image index → scene image index (the game shows image 0 for an index past the TPL)."""
    known = tpl_index_of(scene, np.arange(len(scene.images)))
    order = np.argsort(known, kind="stable")

    def lookup(index):
        index = np.asarray(index, np.int64)
        if not len(known):
            return np.zeros_like(index)
        at = np.clip(np.searchsorted(known[order], index), 0, len(known) - 1)
        return np.where(known[order][at] == index, order[at], 0)

    return lookup


def tpl_index_of(scene: Scene, image) -> np.ndarray:
    """Scene image index → the TPL image index it stands for."""
    lookup = np.array([i.extras.get("tpl_index", n) for n, i in enumerate(scene.images)] or [0], np.int64)
    image = np.asarray(image, np.int64)
    return np.where(image < len(scene.images), lookup[np.minimum(image, len(lookup) - 1)], image)


def texture_image(model: Model, sampler: int, frame_offset: int) -> int:
    """TPL image shown by a sampler at a frame offset (the game falls back to image 0)."""
    texture = int(model.samplers["first_texture"][sampler]) + int(frame_offset)
    return int(model.textures["tpl_index"][texture]) if texture < len(model.textures) else 0


def _materials(model: Model, scene: Scene, tpl, image_of) -> dict[int, int]:
    """One material per subshape; returns subshape → material index."""
    material_of = {}
    names = []
    for s, shape in enumerate(model.shapes):
        count = int(shape["subshape_count"])
        for k in range(count):
            d = int(shape["subshape_first"]) + k
            if d in material_of:
                continue
            subshape = model.subshapes[d]
            slots = []
            for j in range(int(subshape["texture_count"])):
                sampler = int(subshape["samplers"][j])
                transform = model.texcoord_transforms[sampler]
                if not scene.images:
                    continue
                image = int(image_of(texture_image(model, sampler, transform["frame_offset"])))
                tpl_image = tpl.images[image] if tpl is not None else None
                wrap = int(model.samplers["wrap"][sampler])
                wrap_s, wrap_t = _wrap(wrap, (tpl_image.wrap_s, tpl_image.wrap_t) if tpl_image else (1, 1))
                translate, rotate, scale = slot_transform(
                    transform["translate"], transform["scale"], transform["rotate"]
                )
                slots.append(
                    TextureSlot(
                        image=image,
                        uv_layer=f"UV{j}",
                        wrap_s=wrap_s,
                        wrap_t=wrap_t,
                        translate=translate,
                        rotate=rotate,
                        scale=scale,
                        extras={"sampler": sampler, "slot": j},
                    )
                )
            display, cull = int(shape["display_mode"]), int(shape["cull_mode"])
            material_of[d] = len(scene.materials)
            names.append(text(shape["name"]) if count == 1 else f"{text(shape['name'])}.{k}")
            scene.materials.append(
                Material(
                    name="",
                    base_color=(1.0, 1.0, 1.0, 1.0),
                    textures=slots,
                    alpha_mode=DISPLAY_ALPHA.get(display, "OPAQUE"),
                    backface_culling=cull == CULL_BACK,
                    extras={"subshape": d, "shape": s, "display_mode": display, "cull_mode": cull},
                )
            )
    for material, name in zip(scene.materials, _unique_names(names), strict=True):
        material.name = material.extras["label"] = name
    return material_of


def _drawing_group(model: Model, s: int) -> int:
    drawn_by = np.flatnonzero(model.groups["shape"] == s)
    return int(drawn_by[0]) if len(drawn_by) else -1


def _chain(parents: np.ndarray, g: int) -> list[int]:
    chain = []
    while g >= 0:
        chain.append(g)
        g = int(parents[g])
    return chain


def _shape_matrix(axis: np.ndarray, world: np.ndarray, g: int) -> np.ndarray:
    return axis @ world[g] if g >= 0 else axis


def _mesh(model, s, axis, world, parents, bone_of, material_of, visible) -> Mesh:
    shape = model.shapes[s]
    g = _drawing_group(model, s)
    matrix = _shape_matrix(axis, world, g)
    first, count = int(shape["position_first"]), int(shape["position_count"])
    geometry = shape_geometry(model, s)
    corners = geometry["corners"]
    mesh = Mesh(
        name=text(shape["name"]),
        positions=positions_to_scene(matrix, model.positions[first : first + count]),
        triangles=geometry["triangles"].astype(np.int32),
        extras={"shape": s, "group": g, "name": bytes(shape["name"]).hex()},
    )
    if "normal" in corners:
        index = corners["normal"]
        pool = model.normals[int(shape["normal_first"]) :][np.maximum(index, 0)]
        normals = normals_to_scene(matrix, pool) * (index >= 0)[:, None]
        mesh.normals = Layer("Normal", normals, "CORNER")
    if "color" in corners:
        index = corners["color"]
        pool = model.colors[int(shape["color_first"]) :][np.maximum(index, 0)]
        mesh.color_layers.append(Layer("Col", (pool / 255.0).astype(np.float32), "CORNER"))
    for j in range(fmt.TEXCOORD_ARRAYS):
        index = corners.get(f"texcoord.{j}")
        if index is None:
            continue
        pool = model.texcoords[int(shape["texcoord_ranges"][j, 0]) :][np.maximum(index, 0)]
        mesh.uv_layers.append(Layer(f"UV{j}", uvs_to_scene(pool) * (index >= 0)[:, None], "CORNER"))
    subshapes = range(int(shape["subshape_first"]), int(shape["subshape_first"] + shape["subshape_count"]))
    mesh.materials = [material_of[d] for d in subshapes]
    mesh.material_indices = geometry["subshape"].astype(np.int32)
    if g >= 0:
        mesh.skeleton = 0
        mesh.skin_joints = np.full((count, 1), bone_of[g], np.int32)
        mesh.skin_weights = np.ones((count, 1), np.float32)
        mesh.hidden = not all(visible[model.groups["visibility"][c]] for c in _chain(parents, g))
    return mesh


# -- animations ----------------------------------------------------------------------

ROTATION_A, ROTATION_B = slice(6, 9), slice(9, 12)
PIVOTS = slice(12, 24)
MAX_BAKED_FRAMES = 100_000


def _animation(
    model, scene, a, animation, name, axis, world, parents, bone_of, image_of
) -> tuple[Animation, list]:
    """The scene animation of entry ``a`` and its shape keys as (mesh index, ShapeKey) pairs."""
    extras = {"entry": a, "name": animation.name.hex(), "label": name}
    anim = animation.data
    if anim is None:
        extras["data"] = False
        return Animation(name, fps=FPS, extras=extras), []
    extras["tables"] = {table: _hex(getattr(anim, table)) for table, _ in fmt.ANIMATION_TABLES}
    extras["bbox"] = [float(v) for v in anim.bbox]
    result = Animation(
        name,
        fps=FPS,
        frame_start=anim.start,
        frame_end=anim.end,
        loop=anim.loop,
        skeleton=0 if scene.skeletons else None,
        extras=extras,
    )
    if not len(anim.keyframes):
        return result, []
    evaluator = Evaluator(model, anim)
    shape_keys, channels = _shape_keys(model, scene, evaluator, name, axis, world)
    result.channels += _node_channels(model, scene, evaluator, axis, parents, bone_of)
    result.channels += channels
    result.channels += _texture_channels(model, scene, evaluator, image_of)
    result.channels += _visibility_channels(model, scene, evaluator, parents)
    return result, shape_keys


def _step_times(evaluator: Evaluator, changed: np.ndarray) -> np.ndarray:
    """The start and the times of the keyframes flagged in ``changed`` (K,), clamped to the start."""
    anim = evaluator.anim
    return np.unique(np.maximum(np.concatenate([[anim.start], evaluator.times[changed]]), anim.start))


def _node_direct(model, evaluator, g, parents, touched) -> bool:
    """Whether group g's animation maps onto per-component channels exactly."""
    group = model.groups[g]
    node = int(group["node"])
    floats = model.node_floats[node : node + NODE_FLOATS]
    mine = touched[node : node + NODE_FLOATS]
    uses_a = bool(floats[ROTATION_A].any() or mine[ROTATION_A].any())
    uses_b = bool(floats[ROTATION_B].any() or mine[ROTATION_B].any())
    times = evaluator.times
    steps = evaluator.node_hermite + evaluator.node_linear
    first_moves = bool(
        evaluator.columns(evaluator.node_index, steps[:1], np.arange(node, node + NODE_FLOATS)).any()
    )
    return (
        parents[g] >= 0
        and group["compensate"] == 0
        and not floats[PIVOTS].any()
        and not mine[PIVOTS].any()
        and not (uses_a and uses_b)
        and bool(np.all(np.diff(times) > 0))
        and (times[0] <= evaluator.anim.start or not first_moves)
    )


def _node_channels(model, scene, evaluator, axis, parents, bone_of) -> list[Channel]:
    anim = evaluator.anim
    _, index, _ = fmt.running_indices(anim.keyframes, "node", anim.node_deltas["step"])
    touched = np.zeros(len(model.node_floats), bool)
    touched[index] = True
    if not touched.any() or not scene.skeletons:
        return []
    bones = scene.skeletons[0].bone_names
    channels, baked = [], []
    for g, group in enumerate(model.groups):
        node = int(group["node"])
        moved = touched[node : node + NODE_FLOATS].any()
        parent = int(parents[g])
        if parent >= 0 and group["compensate"]:
            parent_node = int(model.groups["node"][parent])
            moved = moved or touched[parent_node + 3 : parent_node + 6].any()
        if not moved:
            continue
        if _node_direct(model, evaluator, g, parents, touched):
            channels += _direct_channels(model, evaluator, node, touched, bones[bone_of[g]])
        else:
            baked.append(g)
    if baked:
        channels += _baked_channels(model, evaluator, baked, axis, parents, bones, bone_of)
    return channels


def _direct_channels(model, evaluator, node, touched, bone) -> list[Channel]:
    floats = model.node_floats[node : node + NODE_FLOATS]
    doubled = bool(floats[ROTATION_A].any() or touched[node + 6 : node + 9].any())
    rotation = (6, np.radians(2.0)) if doubled else (9, np.radians(1.0))
    times = evaluator.times
    wanted = np.arange(node, node + NODE_FLOATS)
    hermite, linear, slope_in, slope_out = (
        evaluator.columns(evaluator.node_index, steps, wanted)
        for steps in (
            evaluator.node_hermite,
            evaluator.node_linear,
            evaluator.node_slope_in,
            evaluator.node_slope_out,
        )
    )
    cumulative = np.cumsum(hermite + linear, axis=0)
    count = len(times)
    durations = np.diff(times)
    lengths = np.concatenate([[durations[0] if count > 1 else 1.0], durations])  # segment ending at each key
    channels = []
    for path, (first, factor) in (("location", (0, 1.0)), ("rotation_euler", rotation), ("scale", (3, 1.0))):
        for c in range(3):
            f = node + first + c
            if not touched[f]:
                continue
            i = f - node
            values = (model.node_floats[f] + cumulative[:, i]) * factor
            start_slope = (slope_in[:, i] + linear[:, i] / lengths) * factor
            end_slope = (slope_out[:, i] + linear[:, i] / lengths) * factor
            third = lengths / 3.0
            left = np.stack([times - third, values - end_slope * third], axis=-1)
            right = np.empty_like(left)
            right[:-1, 0] = times[:-1] + third[1:]
            right[:-1, 1] = values[:-1] + start_slope[1:] * third[1:]
            right[-1] = (times[-1] + third[-1], values[-1])
            left[0, 1] = values[0]
            channels.append(
                Channel(
                    "bone",
                    bone,
                    path,
                    times.copy(),
                    values[:, None],
                    "BEZIER",
                    left[:, None, :],
                    right[:, None, :],
                    extras={"node_float": f},
                    index=c,
                )
            )
    return channels


def bake_times(anim: AnimationData, keyframe_times: np.ndarray) -> np.ndarray:
    """Every whole frame from start to end plus the keyframe times inside (only those for spans of
    more than MAX_BAKED_FRAMES, which no real animation has)."""
    span = anim.end - anim.start
    whole = np.isfinite(span) and 0 <= span <= MAX_BAKED_FRAMES
    frames = np.arange(np.ceil(anim.start), np.floor(anim.end) + 1.0) if whole else np.zeros(0)
    inside = keyframe_times[(keyframe_times >= anim.start) & (keyframe_times <= max(anim.end, anim.start))]
    times = np.union1d(frames, inside)
    return times if len(times) else np.array([anim.start])


def _baked_channels(model, evaluator, groups, axis, parents, bones, bone_of) -> list[Channel]:
    times = bake_times(evaluator.anim, evaluator.times)
    channels = []
    for g in groups:
        node = int(model.groups["node"][g])
        floats = evaluator.node_floats(times, np.arange(node, node + NODE_FLOATS))
        parent_scale = None
        if model.groups["compensate"][g] and parents[g] >= 0:
            parent_node = int(model.groups["node"][parents[g]])
            parent_scale = evaluator.node_floats(times, np.arange(parent_node + 3, parent_node + 6))
        with np.errstate(all="ignore"):
            matrices = node_matrix(floats, parent_scale)
        if parents[g] < 0:
            matrices = axis @ matrices
        location, rotation, scale = decompose(matrices)
        bone = bones[bone_of[g]]
        for path, values in (("location", location), ("rotation_quaternion", rotation), ("scale", scale)):
            channels.append(
                Channel("bone", bone, path, times.copy(), values, "LINEAR", extras={"baked": True})
            )
    return channels


def _shape_keys(model, scene, evaluator, name, axis, world) -> tuple[list, list[Channel]]:
    if not evaluator.position_steps.any():
        return [], []
    anim = evaluator.anim
    times = evaluator.times
    keys, channels = [], []
    for m, mesh in enumerate(scene.meshes):
        s = mesh.extras["shape"]
        shape = model.shapes[s]
        first, count = int(shape["position_first"]), int(shape["position_count"])
        matrix = _shape_matrix(axis, world, mesh.extras["group"])
        local = model.positions[first : first + count].astype(np.float64)
        steps = evaluator.columns(
            evaluator.position_index, evaluator.position_steps, np.arange(first, first + count)
        )
        for k in np.flatnonzero(steps.any(axis=(1, 2))):
            key = f"{name}.{k}"
            positions = _apply(matrix, local + steps[k]).astype(np.float32)
            keys.append((m, ShapeKey(key, positions, extras={"animation": name, "keyframe": int(k)})))
            if k == 0:
                key_times = (
                    np.array([times[0]]) if times[0] <= anim.start else np.array([anim.start, times[0]])
                )
                values = np.ones(1) if times[0] <= anim.start else np.array([0.0, 1.0])
                interpolation = "CONSTANT"
            else:
                key_times, values, interpolation = times[k - 1 : k + 1].copy(), np.array([0.0, 1.0]), "LINEAR"
            channels.append(Channel("shape_key", mesh.name, key, key_times, values[:, None], interpolation))
    return keys, channels


def _texture_channels(model, scene, evaluator, image_of) -> list[Channel]:
    changed = (evaluator.frame_steps != 0) | (evaluator.translate_steps != 0).any(axis=2)  # (K, touched)
    if not changed.any():
        return []
    channels = []
    for column in np.flatnonzero(changed.any(axis=0)):
        x = int(evaluator.texture_index[column])
        times = _step_times(evaluator, changed[:, column])
        pose = evaluator.at(times)
        transform = model.texcoord_transforms[x]
        translate = mapping_location(pose.translate[:, x], transform["scale"], transform["rotate"])
        tpl_images = [texture_image(model, x, o) for o in pose.frame_offsets[:, x]]
        images = image_of(np.array(tpl_images, np.int64)).astype(np.float64)
        for material in scene.materials:
            for slot in material.textures:
                if slot.extras["sampler"] != x:
                    continue
                j = slot.extras["slot"]
                for path, values in (("translate", translate), ("image_index", images[:, None])):
                    channels.append(
                        Channel(
                            "material", material.name, f"texture.{j}.{path}", times.copy(), values, "CONSTANT"
                        )
                    )
    return channels


def _visibility_channels(model, scene, evaluator, parents) -> list[Channel]:
    changed = evaluator.visibility_sets != 0
    if not changed.any():
        return []
    times = _step_times(evaluator, changed.any(axis=1))
    visible = evaluator.at(times).visibility
    touched = np.zeros(len(model.visibility), bool)
    touched[evaluator.visibility_index[changed.any(axis=0)]] = True
    channels = []
    for mesh in scene.meshes:
        g = mesh.extras["group"]
        if g < 0:
            continue
        groups = model.groups["visibility"][_chain(parents, g)]
        if not touched[groups].any():
            continue
        hidden = (~visible[:, groups]).any(axis=1).astype(np.float64)
        channels.append(Channel("object", mesh.name, "hide", times.copy(), hidden[:, None], "CONSTANT"))
    return channels


# -- scene → model -------------------------------------------------------------------


def from_scene(
    scene: Scene, axis: np.ndarray | None = None, texture_format: int | None = None
) -> tuple[Model, tpl_format.TPL | None]:
    """The model (and its TPL, None when the scene has no image data) described by ``scene``.

    ``texture_format``: the GX format of edited and new images (None: each image's own)."""
    axis = default_axis() if axis is None else np.asarray(axis, np.float64)
    extras = scene.extras.get(EXTRAS_KEY, {})
    model = _base_model(scene, extras)
    group_of_bone = _groups_from_skeleton(model, scene, axis)
    parents = fmt.group_parents(model.groups)
    world = world_matrices(model, model.node_floats, parents)
    rebuilt = not _update_geometry(model, scene, axis, world)
    if rebuilt:
        slot_samplers = _rebuild_geometry(model, scene, axis, group_of_bone)
        parents = fmt.group_parents(model.groups)
        world = world_matrices(model, model.node_floats, parents)
        shape_of = list(range(len(scene.meshes)))
    else:
        slot_samplers = _update_materials(model, scene)
        shape_of = [mesh.extras["shape"] for mesh in scene.meshes]
    mapping = (slot_samplers, shape_of)
    _animations_from_scene(model, scene, axis, parents, world, group_of_bone, rebuilt, mapping)
    fmt.validate(model)
    return model, _tpl_from_scene(scene, extras, texture_format)


def _base_model(scene: Scene, extras: dict) -> Model:
    model = Model()
    h = model.header
    if extras:
        h.name, h.texture_name, h.date = (bytes.fromhex(extras[k]) for k in ("name", "texture_name", "date"))
        h.flags, h.radius, h.height = (_unsigned(extras[k]) for k in ("flags", "radius", "height"))
        bbox = np.array(extras["bbox"], np.float32)
        h.bbox_min, h.bbox_max = bbox[:3], bbox[3:]
        for name, dtype, components in fmt.BLOCKS:
            model.set_block(name, _unhex(extras["tables"][name], dtype, components))
        layout = extras.get("layout")
        if layout is not None:
            tables = [_unsigned(o) for o in layout["animation_tables"]]
            model.layout = fmt.Layout(
                size=layout["size"],
                data_area=_unsigned(layout["data_area"]),
                offsets=[_unsigned(o) for o in layout["offsets"]],
                animation_offsets=[_unsigned(o) for o in layout["animation_offsets"]],
                animation_sizes=[_unsigned(o) for o in layout["animation_sizes"]],
                animation_tables=[tables[i : i + 8] for i in range(0, len(tables), 8)],
                region_sizes=list(layout["region_sizes"]),
                fill=[
                    (o, bytes.fromhex(b))
                    for o, b in zip(layout["fill_offsets"], layout["fill_bytes"], strict=True)
                ],
            )
    else:
        h.texture_name = fmt.encode_name(scene.name)
    if text(h.name) != scene.name:
        h.name = fmt.encode_name(scene.name)
    return model


def _raw_name(current: str, extras: dict) -> bytes:
    """The original name bytes unless the object was renamed."""
    if "name" in extras and extras.get("label") == current:
        return bytes.fromhex(extras["name"])
    return fmt.encode_name(current)


def identity_node() -> np.ndarray:
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


def _groups_from_skeleton(model: Model, scene: Scene, axis: np.ndarray) -> np.ndarray:
    """Groups and node floats from the first skeleton; returns the group of every bone."""
    if not scene.skeletons:
        return np.zeros(0, np.int64)
    skeleton = scene.skeletons[0]
    count = len(skeleton)
    bone_extras = skeleton.bone_extras if len(skeleton.bone_extras) == count else [{} for _ in range(count)]
    stored = [e.get("group") for e in bone_extras]
    same = count == len(model.groups) and sorted(g for g in stored if g is not None) == list(range(count))
    if same:
        group_of = np.array(stored, np.int64)
    else:
        group_of = count - 1 - np.arange(count)  # parents first in bones, root last in groups
        visibility = _shown_visibility(model)
        model.groups = np.zeros(count, fmt.GROUP_DTYPE)
        model.groups["shape"] = -1
        model.groups["visibility"] = visibility
        model.groups["node"] = np.arange(count) * NODE_FLOATS
        model.node_floats = np.tile(identity_node(), count)
    groups = model.groups
    for b, extras in enumerate(bone_extras):
        groups["name"][group_of[b]] = _raw_name(skeleton.bone_names[b], extras)
    parents = np.full(count, -1, np.int64)
    has_parent = skeleton.parents >= 0
    parents[group_of[has_parent]] = group_of[skeleton.parents[has_parent]]
    if not same or not np.array_equal(fmt.group_parents(groups), parents):
        _link(groups, parents)

    # Node floats: the kept ones while the bone's rest still shows them, else fresh ones.
    rest = np.asarray(skeleton.rest, np.float64)
    with np.errstate(all="ignore"):
        file_world = world_matrices(model, model.node_floats, parents)
        moved = ~_same(rest, axis @ file_world[group_of])
        roots = skeleton.parents < 0
        scene_local = rest.copy()
        scene_local[~roots] = inverse(rest[skeleton.parents[~roots]]) @ rest[~roots]
        scene_local[roots] = axis.T @ rest[roots]
        file_local = local_matrices(model, model.node_floats, parents)[group_of]
        changed = moved & ~_same(scene_local, file_local)
    for b in np.flatnonzero(changed):
        g = group_of[b]
        node = int(groups["node"][g])
        parent_scale = None
        if groups["compensate"][g] and parents[g] >= 0:
            parent_node = int(groups["node"][parents[g]])
            parent_scale = model.node_floats[parent_node + 3 : parent_node + 6].astype(np.float64)
        model.node_floats[node : node + NODE_FLOATS] = node_floats_from_matrix(scene_local[b], parent_scale)
    return group_of


def _shown_visibility(model: Model) -> int:
    """Index of a visibility group that is shown (added when there is none)."""
    shown = np.flatnonzero(model.visibility != 0)
    if len(shown):
        return int(shown[0])
    model.visibility = np.append(model.visibility, np.uint8(1))
    return len(model.visibility) - 1


def _append_group(model: Model, name: str, parent: int, visibility: int) -> int:
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


# geometry


def _corner_values(mesh: Mesh, layer: Layer | None) -> np.ndarray | None:
    if layer is None:
        return None
    data = np.asarray(layer.data, np.float64)
    return data if layer.domain == "CORNER" else data[np.asarray(mesh.triangles).reshape(-1)]


def _uv_layer(mesh: Mesh, j: int) -> Layer | None:
    named = [layer for layer in mesh.uv_layers if layer.name == f"UV{j}"]
    if named:
        return named[0]
    return (
        mesh.uv_layers[j]
        if j < len(mesh.uv_layers) and not any(layer.name.startswith("UV") for layer in mesh.uv_layers)
        else None
    )


def _to_local_normals(values: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    return _normalize(values @ matrix[:3, :3])


def _pool_entries(index: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pool entries the corners use and the scene value of the first corner using each."""
    valid = index >= 0
    entries, at = np.unique(index[valid], return_index=True)
    return entries, np.asarray(values)[valid][at]


def _update_geometry(model: Model, scene: Scene, axis: np.ndarray, world: np.ndarray) -> bool:
    """Write the scene's vertex values into the kept tables; False when the topology changed."""
    shapes = [m.extras.get("shape") for m in scene.meshes]
    if len(shapes) != len(model.shapes) or sorted(s for s in shapes if s is not None) != list(
        range(len(shapes))
    ):
        return False
    checked = []
    for mesh, s in zip(scene.meshes, shapes, strict=True):
        shape = model.shapes[s]
        geometry = shape_geometry(model, s)
        first = int(shape["subshape_first"])
        materials = [scene.materials[m].extras.get("subshape") for m in mesh.materials]
        indices = (
            np.zeros(len(mesh.triangles), np.int64)
            if mesh.material_indices is None
            else mesh.material_indices
        )
        if (
            len(mesh.positions) != shape["position_count"]
            or not np.array_equal(np.asarray(mesh.triangles), geometry["triangles"])
            or not np.array_equal(indices, geometry["subshape"])
            or materials != list(range(first, first + int(shape["subshape_count"])))
            or mesh.extras.get("group") != _drawing_group(model, s)
        ):
            return False
        checked.append((mesh, shape, geometry))
    for mesh, shape, geometry in checked:
        matrix = _shape_matrix(axis, world, mesh.extras["group"])
        unmatrix = inverse(matrix)
        first, count = int(shape["position_first"]), int(shape["position_count"])
        original = model.positions[first : first + count]
        model.positions[first : first + count] = _restore(
            original, positions_to_scene(matrix, original), mesh.positions, _positions_to_file(unmatrix)
        )
        corners = geometry["corners"]
        normals = _corner_values(mesh, mesh.normals)
        if normals is not None and "normal" in corners:
            entries, values = _pool_entries(corners["normal"], normals)
            at = int(shape["normal_first"]) + entries
            old = model.normals[at]
            model.normals[at] = _restore(old, normals_to_scene(matrix, old), values, _normals_to_file(matrix))
        if mesh.color_layers and "color" in corners:
            entries, values = _pool_entries(corners["color"], _corner_values(mesh, mesh.color_layers[0]))
            model.colors[int(shape["color_first"]) + entries] = np.round(np.clip(values, 0, 1) * 255).astype(
                np.uint8
            )
        for j in range(fmt.TEXCOORD_ARRAYS):
            uv = _corner_values(mesh, _uv_layer(mesh, j))
            if uv is None or f"texcoord.{j}" not in corners:
                continue
            entries, values = _pool_entries(corners[f"texcoord.{j}"], uv)
            at = int(shape["texcoord_ranges"][j, 0]) + entries
            old = model.texcoords[at]
            model.texcoords[at] = _restore(old, uvs_to_scene(old), values, uvs_to_file)
        model.shapes["name"][mesh.extras["shape"]] = _raw_name(mesh.name, mesh.extras)
    return True


def _update_materials(model: Model, scene: Scene) -> dict:
    """Write material settings into the kept tables; returns (material, slot) → sampler."""
    slot_samplers = {}
    for m, material in enumerate(scene.materials):
        d, s = material.extras.get("subshape"), material.extras.get("shape")
        if d is None or s is None:
            continue
        shape = model.shapes[s]
        if DISPLAY_ALPHA.get(int(shape["display_mode"]), "OPAQUE") != material.alpha_mode:
            model.shapes["display_mode"][s] = ALPHA_DISPLAY.get(material.alpha_mode, 1)
        if (shape["cull_mode"] == CULL_BACK) != material.backface_culling:
            model.shapes["cull_mode"][s] = CULL_BACK if material.backface_culling else CULL_NONE
        for slot in material.textures:
            sampler = slot.extras.get("sampler")
            if sampler is None or sampler >= len(model.samplers):
                continue
            _slot_to_sampler(model, scene, slot, sampler)
            slot_samplers[(m, slot.extras.get("slot", 0))] = sampler
    return slot_samplers


def _wrap_flags(flags: int, wrap_s: str, wrap_t: str) -> int:
    if flags & USE_TPL_WRAP:
        return flags
    if _wrap(flags, (1, 1)) == (wrap_s, wrap_t):
        return flags
    bits = {"REPEAT": (0x1, 0x2), "MIRROR": (0x4, 0x8), "CLAMP": (0, 0)}
    return (flags & ~0xF) | bits.get(wrap_s, (0x1, 0))[0] | bits.get(wrap_t, (0, 0x2))[1]


def _slot_to_sampler(model: Model, scene: Scene, slot: TextureSlot, sampler: int) -> None:
    """Write a texture slot's wrap, transform and image into sampler ``sampler``."""
    model.samplers["wrap"][sampler] = _wrap_flags(
        int(model.samplers["wrap"][sampler]), slot.wrap_s, slot.wrap_t
    )
    transform = model.texcoord_transforms[sampler : sampler + 1]
    kept = transform.copy()
    transform["scale"] = _restore(kept["scale"], kept["scale"], [slot.scale], lambda v: v)
    rotate = kept["rotate"]
    transform["rotate"] = _restore(rotate, np.radians(rotate.astype(np.float64)), [slot.rotate], np.degrees)
    transform["translate"] = _restore(
        kept["translate"],
        mapping_location(kept["translate"], kept["scale"], kept["rotate"]),
        [slot.translate],
        lambda v: file_translate(v, transform["scale"], transform["rotate"]),
    )
    model.texcoord_transforms[sampler] = transform[0]
    wanted = int(tpl_index_of(scene, slot.image))
    if texture_image(model, sampler, transform["frame_offset"][0]) != wanted:
        texture = int(model.samplers["first_texture"][sampler]) + int(transform["frame_offset"][0])
        if texture >= len(model.textures):
            model.samplers["first_texture"][sampler] = texture = _append_texture(model, scene, slot.image)
            model.texcoord_transforms["frame_offset"][sampler] = 0
        model.textures["tpl_index"][texture] = wanted


def _append_texture(model: Model, scene: Scene, image: int) -> int:
    """A texture entry showing scene image ``image``; returns its index."""
    record = np.zeros(1, fmt.TEXTURE_DTYPE)
    record["tpl_index"] = tpl_index_of(scene, image)
    record["name"] = fmt.encode_name(scene.images[image].name)[:52] if image < len(scene.images) else b""
    model.textures = np.concatenate([model.textures, record])
    return len(model.textures) - 1


def _new_sampler(model: Model, scene: Scene, slot: TextureSlot) -> int:
    sampler = np.zeros(1, fmt.SAMPLER_DTYPE)
    sampler["first_texture"] = _append_texture(model, scene, slot.image)
    sampler["wrap"] = _wrap_flags(0, slot.wrap_s, slot.wrap_t)
    transform = np.zeros(1, fmt.TEXCOORD_TRANSFORM_DTYPE)
    transform["scale"] = slot.scale
    transform["rotate"] = np.degrees(slot.rotate)
    transform["translate"] = file_translate(slot.translate, slot.scale, np.degrees(slot.rotate))
    model.samplers = np.concatenate([model.samplers, sampler])
    model.texcoord_transforms = np.concatenate([model.texcoord_transforms, transform])
    return len(model.samplers) - 1


def _dominant_bone(mesh: Mesh) -> int | None:
    if mesh.skin_joints is None or not len(mesh.skin_joints):
        return None
    joints = np.asarray(mesh.skin_joints)[:, 0].astype(np.int64)
    return int(np.bincount(joints).argmax())


def _unique_rows(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rows, inverse = np.unique(values, axis=0, return_inverse=True)
    return rows, inverse.reshape(-1)


def _rebuild_geometry(model: Model, scene: Scene, axis: np.ndarray, group_of_bone: np.ndarray) -> dict:
    """Every geometry table afresh from the meshes: one 3-corner fan per triangle, one subshape per material.

    Returns (material, slot) → sampler."""
    slot_samplers = {}
    old_subshapes, old_shapes = model.subshapes, model.shapes
    pools = {"positions": [], "normals": [], "colors": [], "texcoords": []}
    sizes = dict.fromkeys(pools, 0)
    indices = {key: [] for key in ["position", "normal", "color"] + [f"texcoord.{j}" for j in range(8)]}
    index_sizes = dict.fromkeys(indices, 0)
    polygons, subshapes, shapes = [], [], []
    if not len(model.groups) and scene.meshes:
        _append_group(model, "root", -1, visibility=_shown_visibility(model))
    model.groups["shape"] = -1
    polygon_count = 0
    for i, mesh in enumerate(scene.meshes):
        bone = _dominant_bone(mesh)
        g = (
            int(group_of_bone[bone])
            if bone is not None and bone < len(group_of_bone)
            else len(model.groups) - 1
        )
        if model.groups["shape"][g] >= 0:
            g = _append_group(model, mesh.name, g, int(model.groups["visibility"][g]))
        model.groups["shape"][g] = i
        parents = fmt.group_parents(model.groups)
        matrix = _shape_matrix(axis, world_matrices(model, model.node_floats, parents), g)
        shape = np.zeros(1, fmt.SHAPE_DTYPE)[0]
        shape["name"] = _raw_name(mesh.name, mesh.extras)
        local = _apply(inverse(matrix), mesh.positions).astype(np.float32)
        shape["position_first"], shape["position_count"] = sizes["positions"], len(local)
        pools["positions"].append(local)
        sizes["positions"] += len(local)

        triangles = np.asarray(mesh.triangles, np.int64)[:, [0, 2, 1]]  # back to the file's winding
        file_order = (np.arange(len(triangles) * 3).reshape(-1, 3)[:, [0, 2, 1]]).reshape(-1)
        per_corner = {"position": triangles.reshape(-1)}
        normals = _corner_values(mesh, mesh.normals)
        if normals is not None:
            rows, per_corner["normal"] = _unique_rows(
                _to_local_normals(normals[file_order], matrix).astype(np.float32)
            )
            shape["normal_first"], shape["normal_count"] = sizes["normals"], len(rows)
            pools["normals"].append(rows)
            sizes["normals"] += len(rows)
        if mesh.color_layers:
            colors = np.round(np.clip(_corner_values(mesh, mesh.color_layers[0]), 0, 1) * 255).astype(
                np.uint8
            )
            rows, per_corner["color"] = _unique_rows(colors[file_order])
            shape["color_first"], shape["color_count"] = sizes["colors"], len(rows)
            pools["colors"].append(rows)
            sizes["colors"] += len(rows)
        for j in range(fmt.TEXCOORD_ARRAYS):
            uv = _corner_values(mesh, _uv_layer(mesh, j))
            if uv is None:
                continue
            st = np.stack([uv[:, 0], 1.0 - uv[:, 1]], axis=1).astype(np.float32)[file_order]
            rows, per_corner[f"texcoord.{j}"] = _unique_rows(st)
            shape["texcoord_ranges"][j] = (sizes["texcoords"], len(rows))
            pools["texcoords"].append(rows)
            sizes["texcoords"] += len(rows)

        material_indices = (
            np.zeros(len(triangles), np.int64)
            if mesh.material_indices is None
            else np.asarray(mesh.material_indices)
        )
        materials = mesh.materials or [None]
        shape["subshape_first"], shape["subshape_count"] = len(subshapes), len(materials)
        first_material = scene.materials[materials[0]] if materials[0] is not None else None
        kept_shape = first_material.extras.get("shape") if first_material is not None else None
        display = (
            int(old_shapes["display_mode"][kept_shape])
            if kept_shape is not None and kept_shape < len(old_shapes)
            else 1
        )
        cull = (
            int(old_shapes["cull_mode"][kept_shape])
            if kept_shape is not None and kept_shape < len(old_shapes)
            else CULL_NONE
        )
        if first_material is not None:
            if DISPLAY_ALPHA.get(display, "OPAQUE") != first_material.alpha_mode:
                display = ALPHA_DISPLAY.get(first_material.alpha_mode, 1)
            if (cull == CULL_BACK) != first_material.backface_culling:
                cull = CULL_BACK if first_material.backface_culling else CULL_NONE
        shape["display_mode"], shape["cull_mode"] = display, cull
        for m, material_index in enumerate(materials):
            chosen = np.flatnonzero(material_indices == m)
            corners = (chosen[:, None] * 3 + np.arange(3)).reshape(-1)
            material = scene.materials[material_index] if material_index is not None else None
            subshape = np.zeros(1, fmt.SUBSHAPE_DTYPE)[0]
            kept = material.extras.get("subshape") if material is not None else None
            if kept is not None and kept < len(old_subshapes):
                subshape = old_subshapes[kept].copy()
            subshape["samplers"] = -1
            slots = material.textures[:8] if material is not None else []
            subshape["texture_count"] = len(slots)
            for j, slot in enumerate(slots):
                sampler = slot.extras.get("sampler")
                if sampler is not None and sampler < len(model.samplers):
                    _slot_to_sampler(model, scene, slot, sampler)
                else:
                    sampler = _new_sampler(model, scene, slot)
                subshape["samplers"][j] = sampler
                slot_samplers[(material_index, j)] = sampler
            subshape["polygon_first"], subshape["polygon_count"] = polygon_count, len(chosen)
            polygons.append(np.stack([np.arange(len(chosen)) * 3, np.full(len(chosen), 3)], axis=1))
            polygon_count += len(chosen)
            for key in indices:
                base_key = "texcoord_bases" if key.startswith("texcoord") else f"{key}_base"
                if key in per_corner:
                    if key.startswith("texcoord"):
                        subshape["texcoord_bases"][int(key.split(".")[1])] = index_sizes[key]
                    else:
                        subshape[base_key] = index_sizes[key]
                    indices[key].append(per_corner[key][corners])
                    index_sizes[key] += len(corners)
            subshapes.append(subshape)
        shapes.append(shape)

    model.positions = np.concatenate(pools["positions"] + [np.zeros((0, 3), np.float32)])
    model.normals = np.concatenate(pools["normals"] + [np.zeros((0, 3), np.float32)])
    model.colors = np.concatenate(pools["colors"] + [np.zeros((0, 4), np.uint8)])
    model.texcoords = np.concatenate(pools["texcoords"] + [np.zeros((0, 2), np.float32)])
    joined = {
        key: np.concatenate(parts + [np.zeros(0, np.int64)]).astype(np.uint32)
        for key, parts in indices.items()
    }
    model.position_indices, model.normal_indices, model.color_indices = (
        joined["position"],
        joined["normal"],
        joined["color"],
    )
    model.texcoord_indices = [joined[f"texcoord.{j}"] for j in range(fmt.TEXCOORD_ARRAYS)]
    model.polygons = np.zeros(polygon_count, fmt.POLYGON_DTYPE)
    if polygons:
        rows = np.concatenate(polygons)
        model.polygons["first"], model.polygons["count"] = rows[:, 0], rows[:, 1]
    model.subshapes = np.array(subshapes, fmt.SUBSHAPE_DTYPE)
    model.shapes = np.array(shapes, fmt.SHAPE_DTYPE)
    return slot_samplers


# animations


def sample_channel(channel: Channel, times: np.ndarray) -> np.ndarray:
    """(T, C) values of a channel at ``times`` (constant outside its keys)."""
    keys = np.asarray(channel.times, np.float64)
    values = np.asarray(channel.values, np.float64).reshape(len(keys), -1)
    times = np.asarray(times, np.float64)
    k0 = np.clip(np.searchsorted(keys, times, side="right") - 1, 0, len(keys) - 1)
    if channel.interpolation == "CONSTANT" or len(keys) == 1:
        return values[k0]
    k0 = np.minimum(k0, len(keys) - 2)
    k1 = k0 + 1
    span = np.where(keys[k1] > keys[k0], keys[k1] - keys[k0], 1.0)
    u = np.clip((times - keys[k0]) / span, 0.0, 1.0)[:, None]
    if channel.interpolation != "BEZIER" or channel.handles_left is None:
        return values[k0] + (values[k1] - values[k0]) * u
    right = np.asarray(channel.handles_right, np.float64).reshape(len(keys), -1, 2)
    left = np.asarray(channel.handles_left, np.float64).reshape(len(keys), -1, 2)
    x0, x1, x2, x3 = keys[k0][:, None], right[k0, :, 0], left[k1, :, 0], keys[k1][:, None]
    target = np.broadcast_to(times[:, None], x1.shape)
    lo, hi = np.zeros(x1.shape), np.ones(x1.shape)
    for _ in range(40):  # bisection on x(s) = t (monotonic for sane handles)
        s = (lo + hi) / 2
        x = (1 - s) ** 3 * x0 + 3 * (1 - s) ** 2 * s * x1 + 3 * (1 - s) * s**2 * x2 + s**3 * x3
        below = x < target
        lo, hi = np.where(below, s, lo), np.where(below, hi, s)
    s = (lo + hi) / 2
    y = (
        (1 - s) ** 3 * values[k0]
        + 3 * (1 - s) ** 2 * s * right[k0, :, 1]
        + 3 * (1 - s) * s**2 * left[k1, :, 1]
    )
    y = y + s**3 * values[k1]
    return np.where(times[:, None] <= keys[0], values[0], np.where(times[:, None] >= keys[-1], values[-1], y))


def _animations_from_scene(model, scene, axis, parents, world, group_of_bone, rebuilt, mapping) -> None:
    order = sorted(
        range(len(scene.animations)), key=lambda i: scene.animations[i].extras.get("entry", 1 << 30)
    )
    bone_of = np.full(len(model.groups), -1, np.int64)
    bone_of[group_of_bone] = np.arange(len(group_of_bone))
    model.animations = []
    for i in order:
        animation = scene.animations[i]
        extras = animation.extras
        name = _raw_name(animation.name, extras)
        if extras.get("data") is False and not animation.channels:
            model.animations.append(fmt.Animation(name, None))
            continue
        stored = _stored_animation(extras)
        entry = fmt.Animation(name, stored)
        if (
            stored is None
            or rebuilt
            or not _matches(model, scene, entry, animation, axis, world, parents, bone_of)
        ):
            entry.data = _encode_animation(
                model, scene, animation, stored, axis, world, parents, group_of_bone, *mapping
            )
        model.animations.append(entry)


def _stored_animation(extras: dict) -> AnimationData | None:
    tables = extras.get("tables")
    if tables is None:
        return None
    anim = AnimationData(bbox=np.array(extras["bbox"], np.float32))
    for table, dtype in fmt.ANIMATION_TABLES:
        setattr(anim, table, _unhex(tables[table], dtype))
    return anim


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return False
    with np.errstate(invalid="ignore", over="ignore"):
        near = np.abs(a - b) <= TOLERANCE * np.maximum(1.0, np.abs(b))
    return bool(np.all(near | (a == b) | (np.isnan(a) & np.isnan(b))))


def _matches(model, scene, entry, animation, axis, world, parents, bone_of) -> bool:
    """Whether the scene animation still shows exactly what the kept tables encode."""
    anim = entry.data
    try:
        fmt.validate_animation(model, entry)
    except ValueError:
        return False
    if (animation.loop, animation.frame_start, animation.frame_end) != (anim.loop, anim.start, anim.end):
        if not (
            animation.loop == anim.loop
            and _close([animation.frame_start, animation.frame_end], [anim.start, anim.end])
        ):
            return False
    expected, keys = _animation(
        model, scene, 0, entry, animation.name, axis, world, parents, bone_of, _image_lookup(scene)
    )

    def keyed(channels):
        return {(c.target_kind, c.target, c.path, c.index): c for c in channels}

    got, want = keyed(animation.channels), keyed(expected.channels)
    if got.keys() != want.keys():
        return False
    for key, channel in want.items():
        other = got[key]
        if other.interpolation != channel.interpolation or not all(
            _close(getattr(other, f), getattr(channel, f))
            for f in ("times", "values", "handles_left", "handles_right")
        ):
            return False
    for m, key in keys:
        found = [k for k in scene.meshes[m].shape_keys if k.name == key.name]
        if not found or not _close(found[0].positions, key.positions):
            return False
    return True


def _pack(kf: np.ndarray, index: np.ndarray, values: np.ndarray, count: int) -> tuple[np.ndarray, ...]:
    """Delta entries sorted by (keyframe, index) as (keyframe first, keyframe count, steps, values, keyframe).

    ``values`` (N, C) int may exceed the signed byte: such entries become several with step 0
    (the first carries everything else the caller attaches). Gaps above 255 get zero entries.
    """
    if not len(kf):
        empty = np.zeros(0, np.int64)
        return (
            np.zeros(count, np.int64),
            np.zeros(count, np.int64),
            empty,
            np.zeros((0, values.shape[1]), np.int64),
            empty,
        )
    order = np.lexsort((index, kf))
    kf, index, values = kf[order], index[order], values[order]
    parts = np.maximum(1, -(-np.abs(values).max(axis=1, initial=0) // 127))
    row = np.repeat(np.arange(len(kf)), parts)
    within = np.arange(len(row)) - np.repeat(np.cumsum(parts) - parts, parts)
    remaining = np.abs(values[row]) - 127 * within[:, None]
    split = np.sign(values[row]) * np.clip(remaining, 0, 127)
    kf, index, first_part = kf[row], index[row], within == 0
    previous = np.concatenate([[0], index[:-1]])
    new_keyframe = np.concatenate([[True], kf[1:] != kf[:-1]])
    step = index - np.where(new_keyframe, 0, previous)
    fillers = np.maximum(0, (step - 1) // 255)
    total = fillers + 1
    out_row = np.repeat(np.arange(len(kf)), total)
    position = np.arange(len(out_row)) - np.repeat(np.cumsum(total) - total, total)
    is_entry = position == fillers[out_row]
    steps = np.where(is_entry, step[out_row] - 255 * fillers[out_row], 255)
    out_values = np.where(is_entry[:, None], split[out_row], 0)
    out_kf = kf[out_row]
    counts = np.bincount(out_kf, minlength=count) if len(out_kf) else np.zeros(count, np.int64)
    firsts = np.cumsum(counts) - counts
    source = np.where(is_entry & first_part[out_row], order[row][out_row], -1)
    return firsts, counts, steps, out_values, source


def _slopes(channel: Channel, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Slopes (value per frame) of a channel at the start and the end of each segment ending at a time."""
    lengths = np.diff(times, prepend=times[0] - 1.0)
    eps = np.maximum(lengths * 1e-3, 1e-6)
    previous = np.concatenate([[times[0] - 1.0], times[:-1]])
    start = (sample_channel(channel, previous + eps)[:, 0] - sample_channel(channel, previous)[:, 0]) / eps
    end = (sample_channel(channel, times)[:, 0] - sample_channel(channel, times - eps)[:, 0]) / eps
    return start, end


def _encode_animation(
    model, scene, animation, stored, axis, world, parents, group_of_bone, slot_samplers, shape_of
):
    """Delta tables for a scene animation (values quantised to the file's steps)."""
    start = float(animation.frame_start)
    times = np.unique(
        np.concatenate([[start]] + [np.asarray(c.times, np.float64) for c in animation.channels]).astype(
            np.float32
        )
    ).astype(np.float64)
    count = len(times)
    anim = AnimationData(bbox=stored.bbox.copy() if stored is not None else np.zeros(6, np.float32))
    anim.base = np.array([(int(animation.loop), start, float(animation.frame_end))], fmt.BASE_DTYPE)
    anim.keyframes = np.zeros(count, fmt.KEYFRAME_DTYPE)
    anim.keyframes["time"] = times
    _encode_nodes(model, scene, animation, anim, times, axis, parents, group_of_bone)
    _encode_vertices(model, scene, animation, anim, times, axis, world, shape_of)
    _encode_textures(model, scene, animation, anim, times, slot_samplers)
    _encode_visibility(model, scene, animation, anim, times, shape_of)
    if stored is not None:
        anim.unknown_records = stored.unknown_records
        if np.array_equal(stored.keyframes["time"], anim.keyframes["time"]):
            anim.normal_deltas = stored.normal_deltas
            for part in ("first", "count"):
                anim.keyframes[f"normal_{part}"] = stored.keyframes[f"normal_{part}"]
    return anim


def _store(anim, kind, table, dtype, firsts, counts, steps, fields: dict) -> None:
    records = np.zeros(len(steps), dtype)
    records["step"] = steps
    for key, value in fields.items():
        records[key] = value
    setattr(anim, table, records)
    anim.keyframes[f"{kind}_first"], anim.keyframes[f"{kind}_count"] = firsts, counts


ELEMENT_PATHS = {"location": 0, "scale": 3}


def _encode_nodes(model, scene, animation, anim, times, axis, parents, group_of_bone) -> None:
    if not scene.skeletons:
        return
    bones = {name: b for b, name in enumerate(scene.skeletons[0].bone_names)}
    base = model.node_floats.astype(np.float64)
    target = np.broadcast_to(base, (len(times), len(base))).copy()
    start_slope, end_slope = np.zeros_like(target), np.zeros_like(target)
    driven = np.zeros(len(base), bool)
    whole: dict[int, dict[str, Channel]] = {}
    for channel in animation.channels:
        b = bones.get(channel.target)
        if channel.target_kind != "bone" or b is None or b >= len(group_of_bone):
            continue
        g = int(group_of_bone[b])
        node = int(model.groups["node"][g])
        if channel.index is None:
            whole.setdefault(g, {})[channel.path] = channel
            continue
        if channel.path == "rotation_euler":
            doubled = bool(base[node + 6 : node + 9].any())
            offset, factor = (6, np.radians(2.0)) if doubled else (9, np.radians(1.0))
        elif channel.path in ELEMENT_PATHS:
            offset, factor = ELEMENT_PATHS[channel.path], 1.0
        else:
            continue
        f = node + offset + channel.index
        target[:, f] = sample_channel(channel, times)[:, 0] / factor
        slopes = _slopes(channel, times)
        start_slope[:, f], end_slope[:, f] = slopes[0] / factor, slopes[1] / factor
        driven[f] = True
    for g, channels in whole.items():
        node = int(model.groups["node"][g])
        rest = local_matrices(model, model.node_floats, parents)[g]
        location, rotation, scale = decompose(rest)
        values = {"location": location, "rotation_quaternion": rotation, "scale": scale}
        if "rotation_euler" in channels:
            values["rotation_quaternion"] = None
        sampled = {
            path: sample_channel(channels[path], times)
            if path in channels
            else np.broadcast_to(v, (len(times), len(v)))
            for path, v in values.items()
            if v is not None
        }
        if "rotation_euler" in channels:
            rotations = euler_zyx(np.degrees(sample_channel(channels["rotation_euler"], times)))[:, :3, :3]
            sampled["rotation_quaternion"] = matrix_to_quat(rotations)
        matrices = compose(sampled["location"], sampled["rotation_quaternion"], sampled["scale"])
        if parents[g] < 0:
            matrices = axis.T @ matrices
        floats = node_floats_from_matrix(matrices).astype(np.float64)
        target[:, node : node + NODE_FLOATS] = floats
        secant = np.diff(floats, axis=0, prepend=floats[:1]) / np.diff(times, prepend=times[0] - 1.0)[:, None]
        start_slope[:, node : node + NODE_FLOATS] = end_slope[:, node : node + NODE_FLOATS] = secant
        driven[node : node + NODE_FLOATS] = True
    quantised = np.round((target - base) * 16).astype(np.int64)
    delta = np.diff(quantised, axis=0, prepend=np.zeros((1, len(base)), np.int64))
    tangent_in = np.clip(np.round(np.degrees(np.arctan(start_slope))), -89, 89).astype(np.int64)
    tangent_out = np.clip(np.round(np.degrees(np.arctan(end_slope))), -89, 89).astype(np.int64)
    tangent_in[0] = tangent_out[0] = 0  # the first keyframe applies at once
    used = driven & ((delta != 0) | (tangent_in != 0) | (tangent_out != 0))
    kf, index = np.nonzero(used)
    firsts, counts, steps, values, source = _pack(kf, index, delta[kf, index][:, None], len(times))
    has = source >= 0
    tin, tout = np.zeros(len(steps), np.int64), np.zeros(len(steps), np.int64)
    tin[has], tout[has] = (
        tangent_in[kf[source[has]], index[source[has]]],
        tangent_out[kf[source[has]], index[source[has]]],
    )
    _store(anim, "node", "node_deltas", fmt.NODE_DELTA_DTYPE, firsts, counts, steps,
           {"value": values[:, 0], "tangent_in": tin, "tangent_out": tout})  # fmt: skip


def _encode_vertices(model, scene, animation, anim, times, axis, world, shape_of) -> None:
    offsets = np.zeros((len(times), len(model.positions), 3))
    weights = {(c.target, c.path): c for c in animation.channels if c.target_kind == "shape_key"}
    for m, mesh in enumerate(scene.meshes):
        s = shape_of[m]
        shape = model.shapes[s]
        first, count = int(shape["position_first"]), int(shape["position_count"])
        g = _drawing_group(model, s)
        unmatrix = inverse(_shape_matrix(axis, world, g))
        basis = _apply(unmatrix, mesh.positions)
        for key in mesh.shape_keys:
            channel = weights.get((mesh.name, key.name))
            if channel is None or len(key.positions) != count:
                continue
            weight = sample_channel(channel, times)[:, 0]
            offsets[:, first : first + count] += weight[:, None, None] * (
                _apply(unmatrix, key.positions) - basis
            )
    quantised = np.round(offsets * 16).astype(np.int64)
    delta = np.diff(quantised, axis=0, prepend=np.zeros((1,) + quantised.shape[1:], np.int64))
    kf, index = np.nonzero((delta != 0).any(axis=2))
    firsts, counts, steps, values, _ = _pack(kf, index, delta[kf, index], len(times))
    _store(
        anim, "position", "position_deltas", fmt.VERTEX_DELTA_DTYPE, firsts, counts, steps, {"delta": values}
    )


def _encode_textures(model, scene, animation, anim, times, slot_samplers) -> None:
    materials = {m.name: i for i, m in enumerate(scene.materials)}
    base = model.texcoord_transforms
    translate = np.broadcast_to(
        base["translate"].astype(np.float64), (len(times),) + base["translate"].shape
    ).copy()
    frames = np.broadcast_to(base["frame_offset"].astype(np.int64), (len(times), len(base))).copy()
    for channel in animation.channels:
        parts = channel.path.split(".")
        if channel.target_kind != "material" or len(parts) != 3 or parts[0] != "texture":
            continue
        sampler = slot_samplers.get(
            (materials.get(channel.target), int(parts[1]) if parts[1].isdigit() else -1)
        )
        if sampler is None:
            continue
        values = sample_channel(channel, times)
        if parts[2] == "translate" and values.shape[1] == 2:
            translate[:, sampler] = file_translate(values, base["scale"][sampler], base["rotate"][sampler])
        elif parts[2] == "image_index":
            frames[:, sampler] = _frame_offsets(
                model, scene, sampler, np.round(values[:, 0]).astype(np.int64)
            )
    previous_t = np.concatenate([base["translate"][None].astype(np.float64), translate[:-1]])
    previous_f = np.concatenate([base["frame_offset"][None].astype(np.int64), frames[:-1]])
    d_translate = (translate.astype(np.float32) - previous_t.astype(np.float32)).astype(np.float32)
    d_frame = (frames - previous_f + 128) % 256 - 128
    kf, index = np.nonzero((d_frame != 0) | (d_translate != 0).any(axis=2))
    firsts, counts, steps, values, source = _pack(kf, index, np.zeros((len(kf), 1), np.int64), len(times))
    has = source >= 0
    frame_step, moved = np.zeros(len(steps), np.int64), np.zeros((len(steps), 2), np.float32)
    frame_step[has] = d_frame[kf[source[has]], index[source[has]]]
    moved[has] = d_translate[kf[source[has]], index[source[has]]]
    _store(anim, "texture", "texture_deltas", fmt.TEXTURE_DELTA_DTYPE, firsts, counts, steps,
           {"frame_step": frame_step, "translate": moved})  # fmt: skip


def _frame_offsets(model, scene, sampler: int, images: np.ndarray) -> np.ndarray:
    """Frame offsets from the sampler's first texture to a texture of each scene image (added when missing)."""
    first = int(model.samplers["first_texture"][sampler])
    out = np.zeros(len(images), np.int64)
    for image in np.unique(images):
        window = model.textures["tpl_index"][first : first + 256]
        found = np.flatnonzero(window == tpl_index_of(scene, image))
        if len(found):
            offset = int(found[0])
        else:
            offset = _append_texture(model, scene, int(image)) - first
            if not 0 <= offset < 256:
                raise ExportError(f"texture swap to image {image} is out of reach of sampler {sampler}")
        out[images == image] = offset
    return out


def _encode_visibility(model, scene, animation, anim, times, shape_of) -> None:
    meshes = {m.name: i for i, m in enumerate(scene.meshes)}
    shown = np.broadcast_to(model.visibility != 0, (len(times), len(model.visibility))).copy()
    driven = np.zeros(len(model.visibility), bool)
    for channel in animation.channels:
        m = meshes.get(channel.target)
        if channel.target_kind != "object" or channel.path != "hide" or m is None:
            continue
        g = _drawing_group(model, shape_of[m])
        if g < 0:
            continue
        v = int(model.groups["visibility"][g])
        shown[:, v] = sample_channel(channel, times)[:, 0] < 0.5
        driven[v] = True
    previous = np.concatenate([(model.visibility != 0)[None], shown[:-1]])
    kf, index = np.nonzero(driven & (shown != previous))
    firsts, counts, steps, _, source = _pack(kf, index, np.zeros((len(kf), 1), np.int64), len(times))
    values = np.zeros(len(steps), np.int64)
    has = source >= 0
    values[has] = np.where(shown[kf[source[has]], index[source[has]]], 1, -1)
    _store(
        anim,
        "visibility",
        "visibility_deltas",
        fmt.VISIBILITY_DELTA_DTYPE,
        firsts,
        counts,
        steps,
        {"value": values},
    )


# textures


def _tpl_from_scene(scene: Scene, extras: dict, texture_format: int | None) -> tpl_format.TPL | None:
    if not any(image.pixels is not None or image.source_bytes is not None for image in scene.images):
        return None
    kept = extras.get("tpl", {})
    images = []
    for image in scene.images:
        e = image.extras
        fields = {
            key: e[key]
            for key in (
                "wrap_s",
                "wrap_t",
                "min_filter",
                "mag_filter",
                "lod_bias",
                "edge_lod",
                "min_lod",
                "max_lod",
                "unpacked",
            )
            if key in e
        }
        palette = e.get("palette")
        encoding = e.get("format", DEFAULT_TEXTURE_FORMAT)
        if image.source_bytes is None and texture_format is not None:  # edited or new: the chosen format
            encoding, palette = texture_format, None
        if image.source_bytes is not None and "format" in e:
            tpl_image = tpl_format.TPLImage(
                image.width, image.height, e["format"], image.source_bytes, **fields
            )
            tpl_image.header_offset = e["header_offset"] if e.get("header_offset", -1) >= 0 else None
            tpl_image.data_offset = e["data_offset"] if e.get("data_offset", -1) >= 0 else None
            if palette is not None:
                tpl_image.palette = tpl_format.TPLPalette(
                    palette["entry_count"],
                    palette["unpacked"],
                    palette["pad"],
                    palette["format"],
                    bytes.fromhex(palette["data"]),
                )
                tpl_image.palette.header_offset = (
                    palette["header_offset"] if palette["header_offset"] >= 0 else None
                )
                tpl_image.palette.data_offset = (
                    palette["data_offset"] if palette["data_offset"] >= 0 else None
                )
        else:
            pixels = image.pixels if image.pixels is not None else np.zeros((1, 1, 4), np.uint8)
            fields.pop("max_lod", None)
            fields.pop("min_lod", None)
            tpl_image = tpl_format.image_from_pixels(
                pixels,
                encoding,
                palette["format"] if palette else None,
                **fields,
            )
        images.append(tpl_image)
    tpl = tpl_format.TPL(images)
    if kept:
        tpl.table_offset = kept["table_offset"] if kept.get("table_offset", -1) >= 0 else None
        tpl.size = kept["size"] if kept.get("size", -1) >= 0 else None
        tpl.unused = [
            (o, bytes.fromhex(b)) for o, b in zip(kept["unused_offsets"], kept["unused_bytes"], strict=True)
        ]
    return tpl
