"""A Paper Mario TTYD model on disk (the game's ``a/`` files) with the TPL of its textures.

The game's model files have no extension ("a/c_mario"); neither has the TPL that goes with
one, named after the header's texture name plus "-" ("a/c_mario-").
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..errors import FormatError
from ..files import find_file, read_bytes, search_folders, write_files
from ..options import Included, Panel, animations_option, option, oriented, texture_folder_option
from ..scene import Scene
from ..textures import gx
from ..textures import tpl as tpl_format
from . import convert, inspect
from . import model as fmt

TPL_SUFFIX = "-"
# GX formats offered for re-encoding edited textures (palette formats need a palette and keep theirs).
TEXTURE_FORMATS = (gx.I4, gx.I8, gx.IA4, gx.IA8, gx.RGB565, gx.RGB5A3, gx.RGBA8, gx.CMPR)
ORIGINAL = "ORIGINAL"

TEXTURES = Panel("Textures")
Orientation = oriented(convert.AXES)


@dataclass
class ImportOptions(Orientation):
    import_animations: bool = animations_option()
    tpl_mode: str = option(
        "AUTO",
        "Textures",
        "The TPL file holding the model's textures",
        choices=(
            ("AUTO", "Automatic", 'The TPL the model names (texture name + "-"), from the model\'s folder'),
            ("FILE", "Chosen File", "A TPL file chosen below"),
        ),
        panel=TEXTURES,
    )
    tpl_file: str = option(
        "", "TPL File", "The TPL file to use", path=True, shown_if=("tpl_mode", "FILE"), panel=TEXTURES
    )
    texture_folder: str = texture_folder_option(shown_if=("tpl_mode", "AUTO"), panel=TEXTURES)


@dataclass
class ExportOptions(Orientation, Included):
    texture_format: str = option(
        ORIGINAL,
        "Texture Format",
        "GX format of edited and new textures (unedited ones keep their bytes)",
        choices=(
            (ORIGINAL, "Original", "Each texture's format in the imported TPL (RGB5A3 for new ones)"),
            *(
                (gx.NAMES[f], gx.NAMES[f], f"Encode edited and new textures as {gx.NAMES[f]}")
                for f in TEXTURE_FORMATS
            ),
        ),
        panel=TEXTURES,
    )


def find_tpl(model_path: str, texture_name: str, texture_folder: str = "") -> str | None:
    """The TPL the header names ("<texture name>-") next to the model, else in ``texture_folder``,
    whatever the case of its name."""
    if not texture_name:
        return None
    return find_file(search_folders(model_path, texture_folder), texture_name + TPL_SUFFIX)


def load(path: str, options: ImportOptions) -> Scene:
    """Read a model and its TPL into a Scene; the TPL not chosen is found next to the model.

    A missing TPL is a warning (the materials then show placeholder images).
    """
    data = read_bytes(path)
    if not inspect.detect(data, path):
        raise FormatError(
            path, 0, "not a Paper Mario TTYD model (no 0x1B0-byte header with its tables inside the file)"
        )
    model = fmt.read(data, path)
    texture_name = fmt.text(model.header.texture_name)
    tpl_path = (options.tpl_file if options.tpl_mode == "FILE" else "") or find_tpl(
        path, texture_name, options.texture_folder
    )
    tpl = None
    warnings = []
    if tpl_path:
        tpl = tpl_format.read(read_bytes(tpl_path), tpl_path)
    else:
        where = "next to the model" + (" or in the Texture Folder" if options.texture_folder else "")
        warnings.append(f"texture file {texture_name + TPL_SUFFIX!r} not found {where}")
    scene = convert.to_scene(model, tpl, axis=options.axis(), filename=path)
    scene.warnings[:0] = warnings
    return scene


def save(scene: Scene, path: str, options: ExportOptions) -> list[str]:
    """Write the model at ``path`` and its TPL ("<texture name>-") next to it; returns the paths written.

    Unedited textures keep their encoded bytes; edited and new ones are encoded
    in their original GX format, or in ``texture_format`` when it is not "ORIGINAL".
    Nothing is written unless every file could be made.
    """
    chosen = next((f for f in TEXTURE_FORMATS if gx.NAMES[f] == options.texture_format), None)
    model, tpl = convert.from_scene(scene, axis=options.axis(), texture_format=chosen)
    files = {path: fmt.write(model)}
    if tpl is not None:
        tpl_name = fmt.text(model.header.texture_name) + TPL_SUFFIX
        files[os.path.join(os.path.dirname(os.path.abspath(path)), tpl_name)] = tpl_format.write(tpl)
    else:
        scene.warnings.append("the model has no image data: no TPL written")
    return write_files(files)
