"""A JPOG model on disk: the TMD with the keyframe library (TKL) and material library (TML) it uses.

``load`` finds the libraries next to the model (the game's folders mix the case of file names)
and turns the trio into a Scene; ``save`` writes a Scene back as the TMD, its TKL and its TML.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ..errors import ExportError, FormatError
from ..files import files_in, read_bytes, search_folders, write_files
from ..options import Included, Panel, animations_option, option, oriented, texture_folder_option
from ..scene import Scene
from . import convert, tkl, tmd, tml

# Scene extras key: the keyframe library read at import (its bytes), appended to on export.
TKL_LIBRARY = "tkl_library"

INCLUDE = Panel("Include")
LIBRARIES = Panel("Libraries")
Orientation = oriented(convert.AXES)


@dataclass
class ImportOptions(Orientation):
    lods: str = option(
        "ALL",
        "Levels of Detail",
        "Which levels of detail to import",
        choices=(
            (
                "FIRST",
                "First Only",
                "Import the most detailed level only (export then leaves LOD1 and up out)",
            ),
            ("ALL", "All", "Import every level, each in its own collection (LOD1 and up hidden)"),
        ),
        panel=INCLUDE,
    )
    import_animations: bool = animations_option(panel=INCLUDE)
    tkl_mode: str = option(
        "AUTO",
        "Keyframe Library",
        "The keyframe library (.tkl) holding the animations' key values",
        choices=(
            ("AUTO", "Automatic", "The TKL named in the model's header, from the model's folder"),
            ("FILE", "Chosen File", "A TKL file chosen below"),
        ),
        panel=LIBRARIES,
    )
    tkl_file: str = option(
        "",
        "TKL File",
        "The keyframe library to use",
        path=True,
        shown_if=("tkl_mode", "FILE"),
        panel=LIBRARIES,
    )
    tml_mode: str = option(
        "AUTO",
        "Material Library",
        "The material library (.tml) holding the model's materials and textures",
        choices=(
            (
                "AUTO",
                "Automatic",
                "The TML with the model's name, else one in the folder defining its materials",
            ),
            ("FILE", "Chosen File", "A TML file chosen below"),
        ),
        panel=LIBRARIES,
    )
    tml_file: str = option(
        "",
        "TML File",
        "The material library to use",
        path=True,
        shown_if=("tml_mode", "FILE"),
        panel=LIBRARIES,
    )
    texture_folder: str = texture_folder_option(shown_if=("tml_mode", "AUTO"), panel=LIBRARIES)


@dataclass
class ExportOptions(Orientation, Included):
    tkl_mode: str = option(
        "APPEND",
        "Keyframe Library",
        "Where the animations' key values go",
        choices=(
            (
                "APPEND",
                "Append",
                "Append new keys to the model's library; indices other models use stay valid",
            ),
            ("NEW", "New Library", "Write a library of this model's keys only, under a new name"),
        ),
        panel=LIBRARIES,
    )
    new_tkl_name: str = option(
        "",
        "Library Name",
        "Name of the new keyframe library (at most 15 characters; 7 or fewer for older tools)",
        maxlen=15,
        shown_if=("tkl_mode", "NEW"),
        panel=LIBRARIES,
    )
    write_tml: bool = option(
        True,
        "Write Material Library",
        "Write the materials and textures as a .tml next to the model",
        panel=LIBRARIES,
    )
    lods: str = option(
        "ALL",
        "Levels of Detail",
        "Which levels of detail to write",
        choices=(
            ("ALL", "All", "Every level of detail (collections LOD0, LOD1, …)"),
            ("FIRST", "First Only", "Only the most detailed level"),
        ),
        panel=INCLUDE,
    )


def find_tkl(tmd_path: str, tkl_name: str) -> str | None:
    """The TKL the TMD header names, next to the TMD, whatever the case of its file name."""
    if not tkl_name:
        return None
    return files_in(os.path.dirname(tmd_path), ".tkl").get(f"{tkl_name.lower()}.tkl")


def find_tml(
    tmd_path: str, material_names: set[str], corrupt: list[str] | None = None, texture_folder: str = ""
) -> str | None:
    """A TML with the TMD's stem, else the first TML defining every material it uses: in the TMD's
    folder, then in ``texture_folder``.

    ``corrupt``: gets "name: problem" of each TML searched that could not be read.
    """
    stem = os.path.splitext(os.path.basename(tmd_path))[0].lower()
    wanted = {n.lower() for n in material_names}
    for folder in search_folders(tmd_path, texture_folder):
        tmls = files_in(folder, ".tml")
        if f"{stem}.tml" in tmls:
            return tmls[f"{stem}.tml"]
        for path in sorted(tmls.values()):
            try:
                names = tml.material_names(read_bytes(path), path)
            except (OSError, ValueError) as e:
                if corrupt is not None:
                    corrupt.append(f"{os.path.basename(path)}: {getattr(e, 'problem', e)}")
                continue
            if wanted <= {n.lower() for n in names}:
                return path
    return None


def library_name(header: dict) -> str:
    """The keyframe library name a TMD header's extras hold ("" for a model made in Blender)."""
    field = header.get("tkl_field", b"")
    return field.split(b"\0", 1)[0].decode("ascii", "replace")


def load(path: str, options: ImportOptions) -> Scene:
    """Read a TMD and the TKL and TML that go with it into a Scene.

    Libraries not chosen are found next to the model; a missing one is a
    warning in the scene, not an error.
    """
    model = tmd.read(read_bytes(path), path)
    animations = options.import_animations
    tkl_path = options.tkl_file if options.tkl_mode == "FILE" else ""
    tml_path = options.tml_file if options.tml_mode == "FILE" else ""
    warnings = []
    tkl_model = tml_model = tkl_bytes = None
    if animations and model.animations:
        tkl_path = tkl_path or find_tkl(path, model.tkl_name)
        if tkl_path:
            tkl_bytes = read_bytes(tkl_path)
            tkl_model = tkl.read(tkl_bytes, tkl_path)
        else:
            warnings.append(f"keyframe library {model.tkl_name!r}.tkl not found next to the model")
    corrupt: list[str] = []
    tml_path = tml_path or find_tml(path, model.material_names(), corrupt, options.texture_folder)
    if tml_path:
        try:
            tml_model = tml.read(read_bytes(tml_path), tml_path)
        except FormatError as e:
            raise FormatError(tml_path, e.offset, f"the material library is corrupt: {e.problem}") from e
    else:
        warnings.append(
            "no material library (.tml) defining the model's materials was found"
            + "".join(f"; corrupt: {c}" for c in corrupt)
        )
    axis = options.axis()
    scene = convert.to_scene(
        model, tkl_model, tml_model, axis=axis, lods=options.lods, animations=animations, filename=path
    )
    scene.name = os.path.splitext(os.path.basename(path))[0]
    scene.warnings[:0] = warnings
    if tkl_bytes is not None:
        scene.extras[TKL_LIBRARY] = tkl_bytes
    scene.skeletons[0].extras.update(
        tkl_file=tkl_path or "",
        tml_file=tml_path or "",
        axis=np.asarray(axis, np.float64).ravel().tolist(),  # for re-reading animations the same way
    )
    return scene


def library_scene(tmd_path: str, tkl_path: str, axis: np.ndarray) -> tuple[Scene, bytes]:
    """The animations of the model at ``tmd_path`` read against another keyframe library.

    The animation table lives in the TMD; returns the scene and the library's bytes.
    """
    model = tmd.read(read_bytes(tmd_path), tmd_path)
    data = read_bytes(tkl_path)
    scene = convert.to_scene(
        model, tkl.read(data, tkl_path), None, axis=axis, lods="FIRST", filename=tmd_path
    )
    return scene, data


def stored_library(scene: Scene) -> tkl.TKL | None:
    """The keyframe library kept with the import the scene was extracted from, if any."""
    if TKL_LIBRARY not in scene.extras:
        return None
    return tkl.read(scene.extras[TKL_LIBRARY], f"{scene.name} (stored keyframe library)")


def save(scene: Scene, path: str, options: ExportOptions) -> list[str]:
    """Write the TMD at ``path`` and its TKL (and TML) next to it; returns the paths written.

    ``tkl_mode`` "APPEND": new keys are appended to the model's library (the
    one in the destination folder when it exists, else the one kept at
    import) so every index other models use stays valid. "NEW": a library of
    this model's keys only, named ``new_tkl_name``, which the TMD then names.
    Nothing is written unless every file could be made; warnings go to the scene.
    """
    folder = os.path.dirname(os.path.abspath(path))
    if options.tkl_mode == "NEW":
        if not options.new_tkl_name:
            raise ExportError("give the new keyframe library a name")
        base, name = None, options.new_tkl_name
    else:
        name = library_name(scene.extras) or os.path.splitext(os.path.basename(path))[0][:7]
        existing = find_tkl(path, name)
        base = tkl.read(read_bytes(existing), existing) if existing else stored_library(scene)
        if base is None:
            scene.warnings.append(f"no keyframe library {name!r} to append to: writing a new one")
    model, library, materials = convert.from_scene(
        scene, axis=options.axis(), lods=options.lods, tkl=base, tkl_name=name
    )
    if len(library.name) > 7:
        scene.warnings.append(
            f"keyframe library name {library.name!r} is longer than 7 characters: the game reads it, "
            "some older JPOG tools do not"
        )
    files = {path: tmd.write(model), os.path.join(folder, f"{library.name}.tkl"): tkl.write(library)}
    if options.write_tml:
        files[os.path.splitext(path)[0] + ".tml"] = tml.write(materials)
    if base is not None:
        added = (len(library.positions) - len(base.positions), len(library.rotations) - len(base.rotations))
        if any(added):
            scene.warnings.append(
                f"appended {added[0]} positions and {added[1]} rotations to keyframe library {library.name!r}"
            )
    return write_files(files)
