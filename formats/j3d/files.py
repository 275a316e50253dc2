"""J3D files on disk: animations (.bck .btk .brk .bpk .btp), material sets (.bmt) and models
(.bmd .bdl).

The extension says the kind of an animation, as in the game's archives. ``load`` gives a scene
for the selection to take (``apply.bind_joints`` for a BCK); ``save`` writes one animation back.
``load_model`` gives a model's scene (the registry's "j3d_model" family); its bytes come from a
function, so that a model inside an archive reads the same way.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import ExportError, FormatError
from ..files import read_bytes, write_files
from ..options import Panel, option, oriented
from ..scene import Image, Scene
from . import apply, bck, bmt, bpk, brk, btk, btp, container, convert, material_set, model, model_convert

READERS = {".bck": bck, ".btk": btk, ".brk": brk, ".bpk": bpk, ".btp": btp}
EXTENSIONS = (*READERS, ".bmt")
MODEL_EXTENSIONS = (".bmd", ".bdl")
PLAYING = "PLAYING"  # the export of the action playing on the selection


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


def load(path: str, options: ImportOptions) -> Scene:
    """A J3D animation (one Animation; a BCK's joints by index) or material set (materials and images)."""
    data = read_bytes(path)
    extension = os.path.splitext(path)[1].lower()
    name = os.path.splitext(os.path.basename(path))[0]
    if extension == ".bmt":
        return material_set.bmt_to_scene(bmt.read(data, path), name, path)
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
    if extension == ".bck":
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
    """The kind of animation a file name asks for: its extension ("bck", "btk", …)."""
    extension = os.path.splitext(path)[1].lower()
    if extension not in READERS:
        raise ExportError(
            f"{os.path.basename(path)}: name the file .bck, .btk, .brk, .bpk or .btp (its kind)"
        )
    return extension[1:]


def save(scene: Scene, path: str, options: ExportOptions) -> list[str]:
    """Write the scene's animation (playback set, see ``apply.set_playback``) as the kind ``path`` names."""
    kind = kind_of(path)
    animation = scene.animations[0]
    joint_names = None
    if kind == "bck":
        apply.quaternions_to_eulers(animation)
        apply.hold_rest(animation, scene.skeletons[0])
        joint_names = scene.skeletons[0].bone_names
    elif kind == "btk":
        apply.to_blender_uv(scene)  # its own inverse: back to the GameCube's V-down UV space
    try:
        data = READERS[f".{kind}"].write(convert.from_scene(scene, joint_names=joint_names))
    except ValueError as e:
        raise ExportError(f"animation {animation.name!r}: {e}") from e
    return write_files({path: data})


ModelOrientation = oriented(model_convert.AXES)


@dataclass
class ModelImportOptions(ModelOrientation):
    """A model's import: the axis conversion goes onto its armature object."""


def load_model(path: str, options: ModelImportOptions, read: Callable[[str], bytes] = read_bytes) -> Scene:
    """A BMD/BDL model: one skeleton, a mesh per shape, its materials and textures."""
    name = os.path.splitext(os.path.basename(path))[0]
    return model_convert.to_scene(model.read(read(path), path), name, path, options.axis())
