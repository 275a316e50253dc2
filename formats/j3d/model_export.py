"""A Scene → a BMD/BDL model: the inverse of ``model_convert``.

An imported model carries its file (``Scene.extras[MODEL]``, the model's bytes as read) and each
mesh the digest of its geometry as built in Blender (``Mesh.extras[GEOMETRY]``, ``mesh_digest``).
Export reads the kept model and changes only what was edited, so an unedited model writes the
same bytes:

- a mesh whose digest and material are unchanged keeps its shape's bytes; an edited one becomes a
  ``model_write.ShapeData`` re-encoded by ``model_write.replace_shapes``, as does a new mesh (no
  shape of its own, or a copy of another shape's mesh); a shape without its mesh is removed;
- materials follow their MAT3 slot (``Material.extras[SLOT]``): a new name goes into the name
  table, a copy of a material (same slot, another name) becomes a new MAT3 entry copying its
  record;
- an image whose pixels changed (``Image.extras[PIXELS]``, ``pixels_digest``) is encoded again in
  its TEX1 format (or every image in ``image_format``), and so is an image a material's texture
  slot shows instead of its own (swapped): into the texture the slot showed;
- the joints must be the model's: a bone the model does not have is refused by name.

A scene without a kept model (made in Blender) becomes a new model (``model_write.new_model``).
"""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np

from ..errors import ExportError
from ..scene import Image, Layer, Material, Mesh, Scene, apply_matrix, axis_matrix
from ..textures import gx
from . import materials, model_build, model_convert, model_write
from . import model_geometry as geometry
from .container import aligned_padding
from .mat3 import MAT3, MATERIAL_DTYPE
from .model import Model, read
from .tex1 import BTI_DTYPE, BTI_SIZE, TEX1

MODEL = "model"  # Scene extras: the model's bytes as imported
GEOMETRY = "geometry"  # Mesh extras: mesh_digest of the mesh as built
SLOT = "mat3_slot"  # Material extras: the MAT3 slot the material was imported from
PIXELS = "pixels"  # Image extras: pixels_digest of the image as imported
SHAPES = "shapes"  # Scene extras: the shapes that became meshes (the others stay as they are)
ORIGINAL = "original"  # ExportOptions.image_format: each image in the format it was imported in
INDIRECT_SIZE = 0x138  # one MAT3 indirect record per material slot


def mesh_digest(mesh: Mesh) -> str:
    """A digest of what a shape is made of: positions, triangles, normals, UV and colour layers and
    skin, bit for bit (the material and the object's transform are compared on their own)."""
    digest = hashlib.sha1()
    layers = [("normals", mesh.normals), *[("uv", x) for x in mesh.uv_layers]]
    layers += [("color", x) for x in mesh.color_layers]
    arrays = [
        ("positions", mesh.positions),
        ("triangles", mesh.triangles),
        ("joints", mesh.skin_joints),
        ("weights", mesh.skin_weights),
    ]
    arrays += [
        (f"{kind} {layer.name} {layer.domain}", layer.data) for kind, layer in layers if layer is not None
    ]
    for name, array in arrays:
        if array is None:
            digest.update(f"{name} none".encode())
            continue
        array = np.ascontiguousarray(array)
        digest.update(f"{name} {array.dtype.str} {array.shape}".encode())
        digest.update(array.data)  # the bytes where they are (``tobytes`` would copy them)
    return digest.hexdigest()


def pixels_digest(pixels: np.ndarray) -> str:
    """A digest of (H, W, 4) uint8 pixels: an image whose digest is unchanged keeps its TEX1 bytes."""
    return hashlib.sha1(np.ascontiguousarray(pixels, np.uint8).data).hexdigest()


def from_scene(
    scene: Scene, image_format: str = ORIGINAL, filename: str = "<scene>", axis: np.ndarray | None = None
) -> Model:
    """The model of a Scene: the kept one with the edits applied, or a new one. ``axis`` (file →
    Blender, default ``model_convert.AXES``) turns a new model's Blender space into the file's."""
    kept = scene.extras.get(MODEL)
    if kept is None:
        to_file = np.linalg.inv(
            axis_matrix(*model_convert.AXES) if axis is None else np.asarray(axis, np.float64)
        )
        return _new_model(_transformed(scene, to_file), image_format, filename)
    model = read(kept, filename)
    _check_joints(model, scene, filename)
    slots = _materials(model, scene, filename)
    _images(model, scene, slots, image_format, filename)
    _shapes(model, scene, slots, filename)
    return model


# -- joints -------------------------------------------------------------------------------


def _check_joints(model: Model, scene: Scene, filename: str) -> None:
    """The armature's bones must be the model's joints with the same parents."""
    if not scene.skeletons:
        raise ExportError(f"{filename}: the model's armature is not part of the export")
    skeleton = scene.skeletons[0]
    names = list(model.jnt1.names)
    added = [n for n in skeleton.bone_names if n not in names]
    if added:
        raise ExportError(
            f"{filename}: bone {added[0]!r} of armature {skeleton.name!r} is not a joint of the model "
            "(the game knows only the model's joints: remove the bone or rename it back)"
        )
    missing = [n for n in names if n not in skeleton.bone_names]
    if missing:
        raise ExportError(f"{filename}: armature {skeleton.name!r} lacks the model's joint {missing[0]!r}")
    parents = geometry.read_graph(model, filename).parents
    index = {n: i for i, n in enumerate(skeleton.bone_names)}
    for j, name in enumerate(names):
        parent = skeleton.parents[index[name]]
        now = skeleton.bone_names[parent] if parent >= 0 else None
        was = names[parents[j]] if parents[j] >= 0 else None
        if now != was:
            raise ExportError(
                f"{filename}: bone {name!r} of armature {skeleton.name!r} has parent {now!r}; "
                f"the model's joint has {was!r} (the joint hierarchy cannot change)"
            )


# -- materials ----------------------------------------------------------------------------


def _materials(model: Model, scene: Scene, filename: str) -> list[int]:
    """The MAT3 slot of each scene material (-1: not one of the model's). Of the materials with one
    slot, the one still named as in the file (else the first) keeps it, taking its name into the
    name table; each other is a copy of the imported material: a new slot sharing its record."""
    mat3 = model.mat3
    original = list(mat3.names)
    slots = [m.extras.get(SLOT, -1) for m in scene.materials]
    slots = [
        s if isinstance(s, int) and 0 <= s < len(original) and _same_record(m, mat3.material(s)) else -1
        for s, m in zip(slots, scene.materials, strict=True)
    ]
    keeper: dict[int, int] = {}
    for i, slot in enumerate(slots):
        if slot >= 0 and (
            slot not in keeper
            or scene.materials[i].name == original[slot] != scene.materials[keeper[slot]].name
        ):
            keeper[slot] = i
    for i, slot in enumerate(slots):
        if slot < 0:
            continue
        if keeper[slot] == i:
            mat3.names[slot] = scene.materials[i].name
        else:
            slots[i] = _copy_material(model, slot, scene.materials[i].name)
    repeated = sorted({n for n in mat3.names if mat3.names.count(n) > max(original.count(n), 1)})
    if repeated:
        raise ExportError(
            f"{filename}: two materials are named {repeated[0]!r} (the game finds materials by name)"
        )
    return slots


def _same_record(material: Material, record: np.void) -> bool:
    """Whether the material was imported with this MAT3 record (not another model's in the same slot)."""
    kept = material.extras.get("mat3", {})
    return all(np.array_equal(record[name], kept.get(name, -1)) for name in MATERIAL_DTYPE.names)


def _copy_material(model: Model, slot: int, name: str) -> int:
    """A new MAT3 slot sharing the record of ``slot`` (a BDL becomes a BMD)."""
    mat3: MAT3 = model.mat3
    mat3.remap = np.append(np.asarray(mat3.remap, ">u2"), mat3.remap[slot]).astype(">u2")
    mat3.names.append(name)
    indirect = mat3.tables.get("indirect")
    used = INDIRECT_SIZE * (len(mat3.names) - 1)
    if indirect is not None and len(indirect) >= used:  # one record per slot: the new slot's after the last
        record = indirect[INDIRECT_SIZE * slot : INDIRECT_SIZE * (slot + 1)]
        mat3.tables["indirect"] = indirect[:used] + record + indirect[used:]
    as_bmd(model)  # MDL3's per-material display lists no longer match MAT3: the game builds them
    return len(mat3.names) - 1


def as_bmd(model: Model) -> None:
    """A BDL becomes a BMD: its MDL3 section (precompiled material display lists) is left out."""
    mdl3 = model.raw(b"MDL3")
    if mdl3 is not None:
        model.sections.remove(mdl3)
        model.kind = b"bmd3"


# -- images -------------------------------------------------------------------------------


def _images(model: Model, scene: Scene, slots: list[int], image_format: str, filename: str) -> None:
    """Images whose pixels changed (or every image, for another ``image_format``) encoded again into
    their TEX1 entries; a texture a material shows that is another image now (swapped in its image
    node) becomes that image."""
    tex1 = model.tex1
    wanted: dict[int, Image] = {}
    for image in scene.images:
        index = image.extras.get("tex1_index")
        if not isinstance(index, int) or not 0 <= index < len(tex1.headers):
            continue
        if image.pixels is None:
            continue  # a placeholder for texels the import could not decode: kept as they are
        if image_format != ORIGINAL or image.extras.get(PIXELS) != pixels_digest(image.pixels):
            wanted[index] = image
    tables = materials.read_tables(model.mat3)
    for material, slot in zip(scene.materials, slots, strict=True):
        if slot < 0:
            continue
        _, shown = materials.approximate(model.mat3, tables, slot, tex1, filename)
        for texture, index in zip(material.textures, shown, strict=False):
            image = scene.images[texture.image]
            if image.extras.get("tex1_index") != index and image.pixels is not None:
                wanted[index] = image
    for index, image in wanted.items():
        _encode_image(tex1, index, image, image_format)


def format_code(name: str) -> int:
    """The GX texture format code of a format name ("CMPR", "RGB5A3", …)."""
    codes = {v: k for k, v in gx.NAMES.items()}
    if name not in codes:
        raise ExportError(f"no GX texture format {name!r}; one of {', '.join(gx.NAMES.values())}")
    return codes[name]


def _encode_image(tex1: TEX1, index: int, image: Image, image_format: str) -> None:
    """Texture ``index`` encoded again from the image (as many mip levels as it had), its texels and
    palette appended to the TEX1 data (textures sharing the old data keep it)."""
    header = tex1.headers[index]
    fmt = int(header["format"]) if image_format == ORIGINAL else format_code(image_format)
    palette_format = None
    if fmt in gx.PALETTE_CAPACITY:
        kept = int(header["palette_format"]) if header["palette_count"] else None
        palette_format = kept if kept in gx.TLUT_NAMES else gx.TLUT_RGB5A3
    levels = max(int(header["mip_count"]), 1)
    pixels = np.asarray(image.pixels, np.uint8)
    height, width = pixels.shape[:2]
    levels = min(levels, 1 + int(np.log2(max(min(width, height), 1))))
    texels = bytearray()
    palette = None
    level = pixels
    for k in range(levels):
        data, level_palette = gx.encode(fmt, level, palette_format)
        texels += data
        palette = palette if k else level_palette
        if k + 1 < levels:
            level = _half(level)
    start = len(tex1.data)
    count = len(tex1.headers)
    relative = BTI_SIZE * (count - index) + start  # offsets count from each texture's own header
    new_data = bytes(tex1.data) + bytes(texels)
    header["format"] = fmt
    header["width"], header["height"] = width, height
    header["mip_count"] = levels
    header["mipmaps_enabled"] = int(levels > 1)
    header["data_offset"] = relative
    if palette is not None:
        header["palette_format"] = palette_format
        header["palette_count"] = len(palette) // 2
        header["palette_offset"] = relative + len(texels)
        new_data += palette
    else:
        header["palette_count"] = 0
    tex1.data = new_data + bytes(-len(new_data) % 32)


def _half(pixels: np.ndarray) -> np.ndarray:
    """The next mip level: 2×2 box filter (odd sizes lose their last row or column)."""
    h, w = pixels.shape[0] // 2 * 2, pixels.shape[1] // 2 * 2
    if not h or not w:
        return pixels[: max(h // 2, 1), : max(w // 2, 1)]
    blocks = pixels[:h, :w].astype(np.uint16).reshape(h // 2, 2, w // 2, 2, 4)
    return ((blocks.sum(axis=(1, 3)) + 2) // 4).astype(np.uint8)


# -- shapes -------------------------------------------------------------------------------


def _shapes(model: Model, scene: Scene, slots: list[int], filename: str) -> None:
    graph = geometry.read_graph(model, filename)
    count = len(model.shp1.remap)
    changed: dict[int, model_write.ShapeData] = {}
    added: list[model_write.ShapeData] = []
    seen: set[int] = set()
    imported = set(scene.extras.get(SHAPES, range(count)))
    names = list(model.jnt1.names)  # _check_joints: the skeleton has these bones, maybe in another order
    joint_index = np.array([names.index(n) for n in scene.skeletons[0].bone_names], np.int64)
    for mesh in scene.meshes:
        shape = mesh.extras.get("shape")
        material = _mesh_material(mesh, scene, slots, filename)
        own = isinstance(shape, int) and 0 <= shape < count and shape not in seen
        if own:
            seen.add(shape)
            unmoved = mesh.matrix is None  # the object where the import put it
            same = mesh.extras.get(GEOMETRY) == mesh_digest(mesh) and unmoved
            if same and material == int(graph.shape_materials[shape]):
                continue
            changed[shape] = shape_data(mesh, material, joint_index, filename)
        else:
            added.append(shape_data(mesh, material, joint_index, filename))
    removed = imported - seen
    if changed or added or removed:
        replaced = model_write.replace_shapes(model, changed, added, frozenset(removed), filename)
        model.sections = replaced.sections
        model.kind = replaced.kind


def _mesh_material(mesh: Mesh, scene: Scene, slots: list[int], filename: str) -> int:
    """The MAT3 slot of a mesh's material (one per shape)."""
    used = sorted(
        set(np.asarray(mesh.material_indices if mesh.material_indices is not None else [0]).tolist())
    )
    if not mesh.materials:
        raise ExportError(f"{filename}: mesh {mesh.name!r} has no material (give it one of the model's)")
    chosen = {mesh.materials[i] for i in used if i < len(mesh.materials)} or {mesh.materials[0]}
    if len(chosen) > 1:
        names = ", ".join(repr(scene.materials[m].name) for m in sorted(chosen))
        raise ExportError(
            f"{filename}: mesh {mesh.name!r} uses materials {names}: a shape has one (separate it by material)"
        )
    index = chosen.pop()
    if slots[index] < 0:
        raise ExportError(
            f"{filename}: mesh {mesh.name!r} uses material {scene.materials[index].name!r}, which is not "
            "one of the model's (duplicate one of them instead)"
        )
    return slots[index]


def shape_data(
    mesh: Mesh, material: int, joint_index: np.ndarray, filename: str = "<scene>"
) -> model_write.ShapeData:
    """A Scene mesh as ``model_write.ShapeData``: the file's Y-up model space, per-corner layers, its
    skin's bones as JNT1 joints (``joint_index``: the joint of each skeleton bone)."""
    mesh = apply_matrix(mesh)  # the object's own transform, relative to the armature
    triangles = np.asarray(mesh.triangles, np.int64).reshape(-1, 3)
    corners = triangles.reshape(-1)
    joints, weights = mesh.skin_joints, mesh.skin_weights
    if joints is None or weights is None:
        raise ExportError(f"{filename}: mesh {mesh.name!r} has no bone weights (weight it to the armature)")
    unweighted = ~(np.asarray(weights) > 0).any(axis=1)
    if unweighted.any():
        raise ExportError(
            f"{filename}: mesh {mesh.name!r} has {int(unweighted.sum())} vertices without bone weights"
        )

    def per_corner(layer: Layer) -> Layer:
        data = np.asarray(layer.data)
        return Layer(layer.name, data[corners] if layer.domain == "POINT" else data, "CORNER")

    uvs = [per_corner(layer) for layer in mesh.uv_layers]
    if uvs and materials.uv_layer_name(0) not in {u.name for u in uvs}:  # made in Blender: its first map
        uvs[0] = dataclasses.replace(uvs[0], name=materials.uv_layer_name(0))
    data = model_write.shape_data(
        dataclasses.replace(
            mesh,
            uv_layers=uvs,
            color_layers=[per_corner(layer) for layer in mesh.color_layers],
            skin_joints=joint_index[np.asarray(joints, np.int64)],
        )
    )
    data.material = material
    return data


# -- from scratch ---------------------------------------------------------------------------


def _new_model(scene: Scene, image_format: str, filename: str) -> Model:
    """A model made in Blender: its armature's bones as joints, its meshes as shapes, the materials
    they use (each showing the image of its first texture slot) and those images, through
    ``model_write.new_model``."""
    if not scene.skeletons:
        raise ExportError(f"{filename}: a J3D model needs an armature (select it with its meshes)")
    if not scene.meshes:
        raise ExportError(f"{filename}: armature {scene.skeletons[0].name!r} deforms no mesh")
    used = sorted({m.materials[i] for m in scene.meshes for i in _used(m)})
    slots = [-1] * len(scene.materials)
    for k, index in enumerate(used):
        slots[index] = k
    identity = np.arange(len(scene.skeletons[0].bone_names))
    shapes = [
        shape_data(m, _mesh_material(m, scene, slots, filename), identity, filename) for m in scene.meshes
    ]
    chosen = [scene.materials[i] for i in used]
    untextured = [m.name for m in chosen if not m.textures]
    if untextured:
        raise ExportError(
            f"{filename}: material {untextured[0]!r} has no image texture (a new model's materials each show one)"
        )
    fmt = format_code("CMPR" if image_format == ORIGINAL else image_format)
    textures = _new_textures([scene.images[m.textures[0].image] for m in chosen], fmt)
    skeleton = scene.skeletons[0]
    return model_write.new_model(
        model_build.joints_from_rest(skeleton.bone_names, list(skeleton.parents), skeleton.rest),
        shapes,
        _new_materials(chosen),
        textures,
        filename=filename,
    )


# GX values of the one-stage material a new model gets (../shared/notes/j3d-models.md §8).
_COLOR_TEXC, _COLOR_RASC, _COLOR_ZERO = 8, 10, 15
_ALPHA_TEXA, _ALPHA_RASA, _ALPHA_ZERO = 4, 5, 7
_CHANNEL_COLOR0A0 = 4
_TEXGEN_2X4 = 1
_ATTENUATION_NONE = 2
_FACTOR_ZERO, _FACTOR_INVERSE_SOURCE_ALPHA, _LOGIC_COPY = 0, 5, 3


def _new_materials(chosen: list[Material]) -> MAT3:
    """MAT3 for a new model: material k shows texture k (UV layer TEX0) times its colour register (the
    vertex colour CLR0 when the Blender material multiplies by it), unlit, with Blender's backface
    culling, alpha clip or blend."""
    count = len(chosen)
    records = np.zeros(count, MATERIAL_DTYPE)
    for name in MATERIAL_DTYPE.names:
        records[name] = 0xFFFF if MATERIAL_DTYPE.fields[name][0].base.itemsize == 2 else 0xFF
    blended = [m.alpha_mode == "BLEND" for m in chosen]
    clipped = [m.alpha_mode == "CLIP" for m in chosen]
    records["flag"] = np.where(blended, materials.MODE_TRANSLUCENT, 1)
    records["cull_mode"] = [int(m.backface_culling) for m in chosen]  # into (none, back)
    records["color_channel_count"] = records["texgen_count"] = records["tev_stage_count"] = 0
    records["z_mode"] = records["z_compare"] = records["dither"] = 0
    records["material_colors"][:, 0] = np.arange(count)
    records["color_channels"][:, :2] = np.array([[2 * bool(m.vertex_color)] * 2 for m in chosen]) + [0, 1]
    records["ambient_colors"][:, 0] = 0
    records["texgens"][:, 0] = 0
    records["textures"][:, 0] = np.arange(count)
    records["tev_orders"][:, 0] = 0
    records["tev_stages"][:, 0] = 0
    records["alpha_compare"] = np.arange(count)
    records["blend"] = np.where(blended, 1, 0)
    channel = np.zeros(
        4, materials.COLOR_CHANNEL_DTYPE
    )  # colour and alpha, from the register or the vertices
    channel["material_source"] = [0, 0, 1, 1]
    channel["attenuation"] = _ATTENUATION_NONE
    channel["pad"] = b"\xff\xff"
    stage = np.zeros(1, materials.TEV_STAGE_DTYPE)
    stage[0] = (0xFF, (_COLOR_ZERO, _COLOR_TEXC, _COLOR_RASC, _COLOR_ZERO), 0, 0, 0, 1, 0,
                (_ALPHA_ZERO, _ALPHA_TEXA, _ALPHA_RASA, _ALPHA_ZERO), 0, 0, 0, 1, 0, 0xFF)  # fmt: skip
    compares = np.zeros(count, materials.ALPHA_COMPARE_DTYPE)
    compares["comp0"] = np.where(clipped, materials.COMPARE_GEQUAL, materials.COMPARE_ALWAYS)
    compares["ref0"] = [
        round(m.alpha_threshold * 255) if c else 0 for m, c in zip(chosen, clipped, strict=True)
    ]
    compares["op"], compares["comp1"], compares["ref1"] = materials.ALPHA_OP_AND, materials.COMPARE_ALWAYS, 0
    compares["pad"] = b"\xff\xff\xff"
    # The colour register multiplies the texture: the material's colour where it tints the texture, else white.
    shown = [m.base_color if m.tint_texture else (1.0, 1.0, 1.0, m.base_color[3]) for m in chosen]
    colors = np.array([[round(c * 255) for c in color] for color in shown], np.uint8).reshape(-1, 4)
    tables = {
        "cull_modes": np.array([0, materials.CULL_BACK], ">u4").tobytes(),
        "material_colors": colors.tobytes(),
        "color_channel_counts": bytes([1]),
        "color_channels": channel.tobytes(),
        "ambient_colors": bytes([255, 255, 255, 255]),
        "texgen_counts": bytes([1]),
        "texgens": bytes([_TEXGEN_2X4, materials.TEXGEN_SOURCE_TEX0, materials.TEXGEN_MATRIX_IDENTITY, 0xFF]),
        "texture_remap": np.arange(count, dtype=">u2").tobytes(),
        "tev_orders": bytes([0, 0, _CHANNEL_COLOR0A0, 0xFF]),
        "tev_stage_counts": bytes([1]),
        "tev_stages": stage.tobytes(),
        "alpha_compare": compares.tobytes(),
        "blend": bytes(
            [
                0,
                1,
                _FACTOR_ZERO,
                _LOGIC_COPY,
                materials.BLEND_BLEND,
                materials.FACTOR_SRC_ALPHA,
                _FACTOR_INVERSE_SOURCE_ALPHA,
                _LOGIC_COPY,
            ]
        ),  # fmt: skip
        "z_modes": bytes([1, materials.COMPARE_LEQUAL, 1, 0xFF]),
        "z_compare": bytes([1]),
        "dither": bytes([1]),
    }
    tables = {name: data + aligned_padding(len(data), 4) for name, data in tables.items()}
    return MAT3(records, np.arange(count, dtype=">u2"), [m.name for m in chosen], tables)


def _new_textures(images: list[Image], fmt: int) -> TEX1:
    """A TEX1 of the images, each encoded in ``fmt`` (one level)."""
    tex1 = TEX1(np.zeros(len(images), BTI_DTYPE), [i.name for i in images], b"")
    for index, image in enumerate(images):
        header = tex1.headers[index]
        header["wrap_s"] = header["wrap_t"] = 1  # repeat
        header["min_filter"] = header["mag_filter"] = 1  # linear
        header["mip_count"] = 1
        if image.pixels is None:
            raise ExportError(f"image {image.name!r} has no pixels to encode")
        _encode_image(tex1, index, image, gx.NAMES[fmt])
    return tex1


def _transformed(scene: Scene, matrix: np.ndarray) -> Scene:
    """The scene with its skeletons' rests and its meshes (through their object matrices) turned by
    ``matrix``."""
    skeletons = [
        dataclasses.replace(s, rest=matrix @ np.asarray(s.rest, np.float64)) for s in scene.skeletons
    ]
    meshes = [
        dataclasses.replace(
            m, matrix=matrix if m.matrix is None else matrix @ np.asarray(m.matrix, np.float64)
        )
        for m in scene.meshes
    ]
    return dataclasses.replace(scene, skeletons=skeletons, meshes=meshes)


def _used(mesh: Mesh) -> list[int]:
    if not mesh.materials:
        return []
    indices = np.asarray(mesh.material_indices if mesh.material_indices is not None else [0])
    return sorted({int(i) for i in np.unique(indices) if i < len(mesh.materials)})
