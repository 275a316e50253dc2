"""J3D files on disk: animations (.bck .btk .brk .bpk .btp .bca .bva .bla .blk), material sets
(.bmt) and models (.bmd .bdl).

The extension says the kind of an animation, as in the game's archives. ``load`` gives a scene
for the selection to take (``apply.bind_joints`` for a BCK); ``save`` writes one animation back,
to a file or into an archive as the member it came from. ``load_model`` gives a model's scene (the
registry's "j3d_model" family); its bytes come from a function, so that a model inside an archive
reads the same way. What is read from an archive keeps its member path (``ARCHIVE_MEMBER`` in the
extras of the animation and of the model's scene); ``export_member`` and ``write_export`` put an
export back there.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field, fields

import numpy as np

from .. import archives
from ..archives import writeback
from ..archives.layout import member_name
from ..errors import ExportError, FormatError
from ..files import files_in, read_bytes, write_files
from ..options import Included, Panel, option, oriented
from ..parts import Part
from ..scene import Image, Scene
from . import (
    apply,
    bca,
    bck,
    bmt,
    bpk,
    brk,
    btk,
    btp,
    bva,
    cluster,
    container,
    convert,
    inspect,
    material_set,
    model,
    model_convert,
    model_export,
)

READERS = {
    ".bck": bck,
    ".btk": btk,
    ".brk": brk,
    ".bpk": bpk,
    ".btp": btp,
    ".bca": bca,
    ".bva": bva,
    ".bla": cluster.bla,
    ".blk": cluster.blk,
}
JOINT_KINDS = ("bck", "bca")  # joint animations: joints matched by index
# The animations a model import loads with the model they fit (no cluster data to fit BLA / BLK to).
PAIRED_EXTENSIONS = tuple(e for e in READERS if e not in (".bla", ".blk"))
EXTENSIONS = (*READERS, ".bmt")
MODEL_EXTENSIONS = (".bmd", ".bdl")
PLAYING = "PLAYING"  # the export of the action playing on the selection
# Extras key (of an animation, of a model's scene): the archive member it was read from, which an
# export into that archive (or a copy of it) replaces.
ARCHIVE_MEMBER = "archive_member"


@dataclass
class ImportOptions:
    set_frame_range: bool = option(
        False,
        "Set Frame Range",
        "Set the scene's frame rate (30) and range from the animation's length",
        panel=Panel("Playback"),
    )
    textures_file: str = option(
        "",
        "Textures From",
        "The model (.bmd .bdl) or material set (.bmt) whose textures a .btp switches between; "
        "empty: the textures of a material set applied before",
        path=True,
        panel=Panel("Texture Patterns", closed=True),
    )


@dataclass
class ExportOptions:
    animation: str = option(
        PLAYING,
        "Animation",
        "The J3D animation applied to the active armature or material to export",
        choices="animation_items",
    )
    member: str = option(
        "",
        "Archive Member",
        "Exporting into an archive (.arc .szs .carc …): the member to replace, by its path in the archive "
        "(bck/wait.bck); empty: the one the animation was imported from",
    )


def load(path: str, options: ImportOptions) -> Scene:
    """A J3D animation (one Animation; a BCK's joints by index) or material set (materials and images)."""
    data = read_bytes(path)
    extension = os.path.splitext(path)[1].lower()
    name = os.path.splitext(os.path.basename(path))[0]
    if extension == ".bmt":
        return material_set.bmt_to_scene(bmt.read(data, path), name, path)
    return load_animation(data, path)


def load_animation(data: bytes, path: str) -> Scene:
    """A J3D animation file's scene, its kind from its extension (a BCK's joints by index)."""
    extension = os.path.splitext(path)[1].lower()
    name = os.path.splitext(os.path.basename(path))[0]
    if extension not in READERS:
        if data[:4] == container.MODEL_MAGIC:
            raise FormatError(
                path,
                None,
                f"{os.path.basename(path)} is a J3D model, not a J3D animation or material set: this "
                "importer applies those; a model's textures reach a BTP through its Textures File option",
            )
        raise FormatError(path, 0, f"not a J3D animation or material set ({', '.join(EXTENSIONS)})")
    model = READERS[extension].read(data, path)
    if extension[1:] in JOINT_KINDS:
        joints = apply.file_joints(name, model.joint_count)
        scene = convert.to_scene(model, joints.bone_names, name, filename=path)
        scene.skeletons = [joints]
        return scene
    scene = convert.to_scene(model, None, name, filename=path)
    if extension == ".btk":
        apply.to_blender_uv(scene)
    return scene


def pattern_indices(scene: Scene) -> list[int]:
    """The texture indices a BTP scene switches between."""
    return sorted(
        {
            int(v)
            for a in scene.animations
            for c in a.channels
            if convert.IMAGE_INDEX_PATH.match(c.path)
            for v in np.rint(np.asarray(c.values)).ravel()
        }
    )


def pattern_images(textures_path: str, indices: list[int]) -> dict[int, Image]:
    """The textures ``indices`` of a model (.bmd .bdl) or material set (.bmt), decoded: those a BTP
    switches between (indices past its texture list are left out)."""
    data = read_bytes(textures_path)
    is_set = textures_path.lower().endswith(".bmt")
    textures = (bmt.read if is_set else bmt.cut_from_model)(data, textures_path).tex1
    if textures is None:
        raise FormatError(textures_path, 0, "expected a TEX1 section (the textures a BTP switches between)")
    return {
        i: material_set.tex1_image(textures, i, textures_path) for i in indices if i < len(textures.headers)
    }


def kind_of(path: str) -> str:
    """The kind of animation a file (or archive member) name asks for: its extension ("bck", "btk", …)."""
    extension = os.path.splitext(path)[1].lower()
    if extension not in READERS:
        raise ExportError(f"{os.path.basename(path)}: name the file {', '.join(READERS)} (its kind)")
    return extension[1:]


def is_archive_path(path: str) -> bool:
    """Whether an export to ``path`` goes into an archive: an archive's extension, or an existing
    archive (compressed or not) under any name."""
    if os.path.splitext(path)[1].lower() in ARCHIVE_EXTENSIONS:
        return True
    if not os.path.isfile(path):
        return False
    with open(path, "rb") as f:
        return archives.is_archive(f.read(64))


def export_member(path: str, named: str, recorded: str) -> str | None:
    """The member an export to ``path`` replaces when ``path`` is an archive (None when it is not):
    the one ``named``, else the one the data was imported from (``recorded``, its ARCHIVE_MEMBER)."""
    if not is_archive_path(path):
        return None
    member = named or recorded
    if not member:
        raise ExportError(
            f"{os.path.basename(path)}: name the archive member to replace (Archive Member): the data was "
            "not imported from an archive"
        )
    return member


def write_export(path: str, member: str | None, data: bytes) -> list[str]:
    """Write an export's ``data`` at ``path``, or, with ``member`` (``export_member``), into the archive
    at ``path`` as that member (every other member kept, compressed again as it was); all or nothing."""
    if member is None:
        return write_files({path: data})
    if not os.path.isfile(path):
        raise ExportError(f"{path}: no archive there to export into (export into an existing .arc or .szs)")
    return write_files({path: writeback.replace_members(read_bytes(path), path, {member: data})})


def save(scene: Scene, path: str, options: ExportOptions) -> list[str]:
    """Write the scene's animation (playback set, see ``apply.set_playback``) as the kind ``path`` names,
    or, into an archive, as the member it replaces (``export_member``)."""
    animation = scene.animations[0]
    member = export_member(path, options.member, animation.extras.get(ARCHIVE_MEMBER, ""))
    kind = kind_of(member or path)
    joint_names = None
    if kind in JOINT_KINDS:
        apply.quaternions_to_eulers(animation)
        apply.hold_rest(animation, scene.skeletons[0])
        joint_names = scene.skeletons[0].bone_names
    elif kind == "btk":
        apply.to_blender_uv(scene)  # its own inverse: back to the GameCube's V-down UV space
    try:
        data = READERS[f".{kind}"].write(convert.from_scene(scene, joint_names=joint_names))
    except ValueError as e:
        raise ExportError(f"animation {animation.name!r}: {e}") from e
    return write_export(path, member, data)


ModelOrientation = oriented(model_convert.AXES)
ARCHIVE_EXTENSIONS = (".arc", ".szs", ".carc", ".rarc", ".u8")
# The folders of a game's archive that hold its models' animations (the same names unpacked on disk).
ANIMATION_FOLDERS = ("bck", "brk", "btk", "btp", "bpk", "bca", "bva")
MODEL_FOLDERS = ("bmd", "bdl")


@dataclass
class ModelImportOptions(ModelOrientation):
    """A model's import: the axis conversion goes onto its armature object."""

    model: str = option(
        "",
        "Model",
        "In an archive: the model to import, by its path in the archive or its name (bmd/ma_mdl1.bmd or "
        "ma_mdl1; python -m formats.inspect lists them); empty: every model, one collection each",
    )
    import_animations: bool = option(
        True,
        "Animations",
        "Also load the model's animations (.bck .brk .btk .btp .bpk .bca .bva), each as an action: from its folder "
        "(and the bck/ … folders beside a bmd/ or bdl/ folder), or from its archive's folder and bck/ … "
        "folders; those made for another model (another joint or shape count, none of its materials) are left out",
    )


@dataclass
class ModelScene(Scene):
    """A model's Scene and the scenes of the animation files that belong to it (a BCK's joints still by
    index), which operators/j3d_model.py applies to the built model the way the J3D import applies them,
    each at its place among the model's animations (``paired_places``)."""

    paired: list[Scene] = field(default_factory=list)
    paired_places: list[int] = field(default_factory=list)


def load_model(
    path: str,
    options: ModelImportOptions,
    read: Callable[[str], bytes] = read_bytes,
    part: Part | None = None,
) -> Scene | list[Scene]:
    """A BMD/BDL model (compressed or not) with its animations: one skeleton, a mesh per shape, its
    materials and textures. An archive (RARC, U8, compressed or not) gives a list: its models, or the
    one ``options.model`` names. ``part``: each model with only the animations that part of a split
    import builds (``formats.parts``; BCKs and BCAs are shared out), the others not read."""
    data = read(path)
    if archives.is_archive(data):
        return _archive_models(archives.read_archive(data, path), path, options, part)
    name = os.path.splitext(os.path.basename(path))[0]
    scene = _model_scene(archives.unwrap(data, path), path, name, options)
    if options.import_animations and os.path.isdir(os.path.dirname(path) or "."):
        found = _folder_animations(os.path.dirname(path) or ".")
        _pair(scene, [(p, lambda p=p: read_bytes(p), "") for p in found], part)
    return scene


def shared_animations(path: str, options: ModelImportOptions) -> int:
    """How many BCKs and BCAs the import of ``path`` may load with its models, by their names (cheap):
    those beside a model file (``_folder_animations``), or an archive's in its models' and animation
    folders. The batch splits an import of many (``formats.parts``)."""
    if not options.import_animations:
        return 0
    listed = _listed_archive(path, _stamp(path))
    if listed is None:
        found = _folder_animations(os.path.dirname(path) or ".")
        return sum(os.path.splitext(p)[1].lower()[1:] in JOINT_KINDS for p in found)
    members, models = listed
    folders = {os.path.dirname(m).lower() for m in models}
    return sum(
        os.path.splitext(m.path)[1].lower()[1:] in JOINT_KINDS and _in_animation_folder(m.path, folders)
        for m in members
    )


def _model_scene(data: bytes, filename: str, name: str, options: ModelImportOptions) -> ModelScene:
    scene = model_convert.to_scene(model.read(data, filename), name, filename, options.axis())
    # What the export needs travels with the import: the model as read, and which shapes became meshes.
    scene.extras[model_export.MODEL] = data
    scene.extras[model_export.SHAPES] = [m.extras["shape"] for m in scene.meshes]
    for image in scene.images:
        if image.pixels is not None:
            image.extras[model_export.PIXELS] = model_export.pixels_digest(image.pixels)
    return ModelScene(**{f.name: getattr(scene, f.name) for f in fields(Scene)})


def _folder_animations(folder: str) -> list[str]:
    """The animation files beside a model, and in the bck/ … folders beside its bmd/ or bdl/ folder."""
    folders = [folder]
    if os.path.basename(os.path.abspath(folder)).lower() in MODEL_FOLDERS:
        parent = os.path.dirname(os.path.abspath(folder))
        folders += [
            p for n, p in sorted(files_in(parent).items()) if n in ANIMATION_FOLDERS and os.path.isdir(p)
        ]
    return [p for f in folders for _, p in sorted(files_in(f, tuple(READERS)).items())]


def _archive_models(archive, path: str, options: ModelImportOptions, part: Part | None) -> list[Scene]:
    members = list(archive.members())
    models = _model_members(members, path)
    wanted = options.model.replace("\\", "/").strip("/").lower()
    chosen = [
        m
        for m in models
        if not wanted or wanted in (m.path.lower(), os.path.splitext(os.path.basename(m.path))[0].lower())
    ]
    if not chosen:
        listed = ", ".join(m.path for m in models) or "none"
        what = f"no model {options.model!r}" if wanted else "no J3D model (.bmd .bdl)"
        raise FormatError(path, 0, f"{what} in the archive; its models: {listed}")
    scenes = []
    for member in chosen:
        filename = member_name(path, member.path)
        name = os.path.splitext(os.path.basename(member.path))[0]
        scene = _model_scene(archives.unwrap(member.data, filename), filename, name, options)
        scene.extras[ARCHIVE_MEMBER] = member.path
        if options.import_animations:
            folder = {os.path.dirname(member.path).lower()}
            found = [
                m
                for m in members
                if os.path.splitext(m.path)[1].lower() in READERS and _in_animation_folder(m.path, folder)
            ]
            _pair(scene, [(member_name(path, m.path), lambda m=m: m.data, m.path) for m in found], part)
        scenes.append(scene)
    return scenes


def _in_animation_folder(member: str, model_folders: set[str]) -> bool:
    """Whether an archive member lies where a model's animations do: a folder of the models, or one
    named for animations (``ANIMATION_FOLDERS``)."""
    folder = os.path.dirname(member).lower()
    return folder in model_folders or folder.rpartition("/")[2] in ANIMATION_FOLDERS


def _model_members(members: list, path: str) -> list:
    return [
        m
        for m in members
        if inspect.detect_model(archives.header(m.data, member_name(path, m.path), 8), m.path)
    ]


def archive_models(path: str) -> list[str] | None:
    """The models of an archive, by their paths in it ([] for an archive of other files); None for a
    model file."""
    listed = _listed_archive(path, _stamp(path))
    return None if listed is None else listed[1]


def _stamp(path: str) -> tuple[int, int]:
    status = os.stat(path)
    return status.st_mtime_ns, status.st_size


@functools.lru_cache(maxsize=1)
def _listed_archive(path: str, stamp: tuple[int, int]) -> tuple[list, list[str]] | None:
    """The members of the archive at ``path`` (as of ``stamp``: its modification time and size) and the
    paths of its models; None for a model file. The batch asks ``archive_models`` and then
    ``shared_animations`` of one file: it is decompressed once."""
    data = read_bytes(path)
    if not archives.is_archive(data):
        return None
    members = list(archives.read_archive(data, path).members())
    return members, [m.path for m in _model_members(members, path)]


def _pair(
    scene: ModelScene, candidates: list[tuple[str, Callable[[], bytes], str]], part: Part | None
) -> None:
    """Load into ``scene.paired`` the animations of ``candidates`` (file name, its bytes, its archive
    member path or "") made for the model: a BCK or BCA with its joint count, a BVA with its shape
    count, the others animating at least one of its materials (the import reads no cluster data to fit
    a BLA or BLK to). An animation's place is its candidate's among those that passed the header check,
    so that a part (only its animations read) places them as the whole import does. A damaged file
    raises its FormatError."""
    counts = {
        ".bck": (bck.JOINT_COUNT_OFFSET, len(scene.skeletons[0].bone_names)),
        ".bca": (bca.JOINT_COUNT_OFFSET, len(scene.skeletons[0].bone_names)),
        ".bva": (bva.SHAPE_COUNT_OFFSET, len(scene.meshes)),
    }
    checked = []  # (file name, its bytes, member, extension), made for the model as far as its header says
    for filename, data, member in candidates:
        extension = os.path.splitext(filename)[1].lower()
        if extension not in PAIRED_EXTENSIONS:
            continue
        raw = archives.unwrap(data(), filename)
        if extension in counts:
            at, count = counts[extension]
            if len(raw) >= at + 2 and int.from_bytes(raw[at : at + 2], "big") != count:
                continue  # another model's (a damaged one is left to the reader below)
        checked.append((filename, raw, member, extension))
    built = range(len(checked))
    if part is not None:
        built = part.built([extension[1:] in JOINT_KINDS for *_, extension in checked])
    materials = {m.name for m in scene.materials}
    for place in built:
        filename, raw, member, extension = checked[place]
        loaded = load_animation(raw, filename)
        if member:
            loaded.animations[0].extras[ARCHIVE_MEMBER] = member
        if extension in counts or any(c.target in materials for a in loaded.animations for c in a.channels):
            scene.paired.append(loaded)
            scene.paired_places.append(place)


IMAGE_FORMATS = (
    (model_export.ORIGINAL, "As Imported", "Each edited image in the GX format it had (new images: CMPR)"),
    *(
        (name, name, f"Every image encoded as {name} again")
        for name in ("CMPR", "RGB5A3", "RGBA8", "RGB565", "I8", "IA8", "C8")
    ),
)


@dataclass
class ModelExportOptions(ModelOrientation, Included):
    """Forward / Up: how a model made in Blender turns into the file's Y-up space (an imported model's
    armature carries its own conversion, and its armature space is the file's)."""

    image_format: str = option(
        model_export.ORIGINAL,
        "Image Format",
        "The GX format of the images written: each edited one as imported, or every one in one format",
        choices=IMAGE_FORMATS,
    )
    member: str = option(
        "",
        "Archive Member",
        "Exporting into an archive (.arc .szs .carc …): the model to replace, by its path in the archive "
        "(bmd/ma_mdl1.bmd); empty: the one the model was imported from",
    )


def model_bytes(
    scene: Scene, options: ModelExportOptions, filename: str = "<scene>", as_bmd: bool = False
) -> bytes:
    """The BMD/BDL bytes of a model's scene (``model_export.from_scene``): an archive's member as well.
    ``as_bmd``: a BDL is written as a BMD (without its MDL3 section)."""
    built = model_export.from_scene(scene, options.image_format, filename, options.axis())
    if as_bmd:
        model_export.as_bmd(built)
    return model.write(built)


def save_model(scene: Scene, path: str, options: ModelExportOptions) -> list[str]:
    """Write the scene's model at ``path``: a .bmd name writes a BMD; a .bdl name writes the model's own
    kind (a model without MDL3 stays a BMD inside, as the game's loader reads either). Nothing is
    written on error."""
    member = export_member(path, options.member, scene.extras.get(ARCHIVE_MEMBER, ""))
    extension = os.path.splitext(member or path)[1].lower()
    if extension not in MODEL_EXTENSIONS:
        raise ExportError(f"{os.path.basename(member or path)}: name the file .bmd or .bdl")
    filename = path if member is None else member_name(path, member)
    data = model_bytes(scene, options, filename, as_bmd=extension == ".bmd")
    if extension == ".bdl" and data[4:8] != b"bdl4":
        scene.warnings.append(
            f"{os.path.basename(path)}: written as a BMD (no MDL3 display lists for its materials)"
        )
    return write_export(path, member, data)
