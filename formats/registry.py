"""One table of the format families: the files each reads and writes, how its files are
recognised, its options, and the functions that turn its files into a Scene and back.

Everything that lists families derives from ``FAMILIES``: the inspection command
(formats/inspect.py), the import and export operators with their menus and drag-and-drop
handlers (operators/import_export.py, ui/), and the Python entry for scripts (``import_file`` /
``export_file`` of the add-on package). The table's order is the menus' order.

Adding a family: its package under formats/ (file modules, converter with its default
``AXES``, ``inspect.py``, ``files.py`` with the options and ``load`` / ``save``), one entry here,
and operators/<name>.py for what it needs from Blender (see operators/import_export.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import archives
from .archives import inspect as archives_inspect
from .errors import FormatError
from .j3d import files as j3d_files
from .j3d import inspect as j3d_inspect
from .scene import Scene
from .tamsoft import files as tamsoft_files
from .tamsoft import inspect as tamsoft_inspect
from .textures import inspect as textures_inspect
from .tmrf import files as tmrf_files
from .tmrf import inspect as tmrf_inspect
from .toshi import files as toshi_files
from .toshi import inspect as toshi_inspect
from .ttyd import files as ttyd_files
from .ttyd import inspect as ttyd_inspect

HEADER_SIZE = 4096  # what family_for reads of a file to tell families apart


@dataclass(frozen=True)
class Importer:
    """A family's import: File > Import, drag-and-drop and ``import_file``."""

    idname: str  # the operator: bpy.ops.<idname>
    title: str  # the operator's name (the file browser's button)
    menu: str  # the File > Import entry
    description: str  # the operator's tooltip
    options: type  # the options dataclass (formats/options.py)
    load: Callable[[str, Any], Scene]  # (path, options) → Scene; raises FormatError
    # Which loaded scenes go onto the selection (operators/<family>.apply) instead of becoming new data.
    applies_to_selection: Callable[[Scene], bool] | None = None
    # Extensions of the files beside a model that this import loads with it (its Animations option on).
    pairs: tuple[str, ...] = ()
    # path → the models of a file that holds several (an archive): [] for none; None for a model file.
    models: Callable[[str], list[str] | None] | None = None
    # (path, options) → how many animations its import loads that a split import shares out between its
    # parts (formats/parts.py), told cheaply (from names); with it, ``load`` takes ``part=`` and reads only
    # that part's animations. The batch splits a big import between its workers.
    shared_animations: Callable[[str, Any], int] | None = None


@dataclass(frozen=True)
class Exporter:
    """A family's export: File > Export and ``export_file``."""

    idname: str
    title: str
    menu: str  # the File > Export entry
    description: str
    options: type
    # (scene, path, options) → every path written, all or none; warnings go to scene.warnings.
    save: Callable[[Scene, str, Any], list[str]]
    extensions: tuple[str, ...] = ()  # offered by the file browser; the first is the default
    note: str = ""  # shown above the options


@dataclass(frozen=True)
class Family:
    name: str  # its package formats/<name>/ (or ``converter``'s) and its Blender-side module operators/<name>.py
    label: str  # what users call its files (the drag-and-drop menu)
    extensions: tuple[str, ...]  # lower case, with the dot ("": files without one)
    detect: Callable[[bytes, str], bool]  # (the file's first bytes, its name) → the content is the family's
    summarize: Callable[[bytes, str], str]  # (the file's bytes, its name) → a readable summary
    importer: Importer | None = None
    exporter: Exporter | None = None
    converter: str = ""  # its converter module under formats/ (with AXES), when not <name>.convert

    @property
    def converter_module(self) -> str:
        return self.converter or f"{self.name}.convert"


def always(scene: Scene) -> bool:
    return True


FAMILIES: tuple[Family, ...] = (
    Family(
        "toshi",
        "Toshi / JPOG model",
        (".tmd",),
        toshi_inspect.detect,
        toshi_inspect.summarize,
        Importer(
            "import_scene.toshi_tmd",
            "Import Toshi TMD",
            "Toshi / JPOG model (.tmd)",
            "Import Jurassic Park: Operation Genesis models (.tmd) with their animations and materials",
            toshi_files.ImportOptions,
            toshi_files.load,
        ),
        Exporter(
            "export_scene.toshi_tmd",
            "Export Toshi TMD",
            "Toshi / JPOG model (.tmd)",
            "Export the selected armature and the meshes it deforms as a JPOG model (.tmd, .tkl, .tml)",
            toshi_files.ExportOptions,
            toshi_files.save,
            (".tmd",),
        ),
    ),
    Family(
        "ttyd",
        "Paper Mario TTYD model",
        ("",),  # the game's files have no extension: no drag-and-drop handler can match them
        ttyd_inspect.detect,
        ttyd_inspect.summarize,
        Importer(
            "import_scene.ttyd_model",
            "Import Paper Mario TTYD Model",
            "Paper Mario TTYD model",
            "Import Paper Mario: The Thousand-Year Door models (files under a/) with their TPL textures "
            "and animations",
            ttyd_files.ImportOptions,
            ttyd_files.load,
        ),
        Exporter(
            "export_scene.ttyd_model",
            "Export Paper Mario TTYD Model",
            "Paper Mario TTYD model",
            'Export the selected armature and its meshes as a Paper Mario TTYD model and its TPL ("<texture '
            'name>-")',
            ttyd_files.ExportOptions,
            ttyd_files.save,
        ),
    ),
    Family(
        "tamsoft",
        "Tamsoft model",
        tamsoft_files.EXTENSIONS,
        tamsoft_inspect.detect,
        tamsoft_inspect.summarize,
        Importer(
            "import_scene.tamsoft_tmd0",
            "Import Tamsoft Model",
            "Tamsoft model (.tmd, .cat)",
            "Import Tamsoft models (Senran Kagura and others): bare tmd0 (.tmd) or inside a CAT (.cat)",
            tamsoft_files.ImportOptions,
            tamsoft_files.load,
        ),
        Exporter(
            "export_scene.tamsoft_tmd0",
            "Export Tamsoft Model",
            "Tamsoft model (.tmd)",
            "Export the selected armature and the meshes it deforms as a Tamsoft model: a bare tmd0 (.tmd), "
            "or the CAT it was imported from with the model replaced (.cat)",
            tamsoft_files.ExportOptions,
            tamsoft_files.save,
            tamsoft_files.EXTENSIONS,
            note="A .cat name writes the model and texture CATs",
        ),
    ),
    Family(
        "tmrf",
        "Tertius media",
        tmrf_files.EXTENSIONS,
        tmrf_inspect.detect,
        tmrf_inspect.summarize,
        Importer(
            "import_scene.tertius_tmrf",
            "Import Tertius Media",
            f"Tertius media ({' '.join(tmrf_files.EXTENSIONS)})",
            "Import Tertius media resource files: skeletons, skinned and static meshes, animations",
            tmrf_files.ImportOptions,
            tmrf_files.load,
            applies_to_selection=tmrf_files.is_animation_only,
        ),
        Exporter(
            "export_scene.tertius_tmrf",
            "Export Tertius Media",
            "Tertius media",
            "Export the selected armature, meshes and actions as a Tertius media resource file",
            tmrf_files.ExportOptions,
            tmrf_files.save,
            tmrf_files.EXTENSIONS,
        ),
    ),
    # Before "j3d": a model's content is told from an animation's by its file type, not only its magic.
    Family(
        "j3d_model",
        "J3D model / GameCube-Wii archive",
        j3d_files.MODEL_EXTENSIONS + j3d_files.ARCHIVE_EXTENSIONS,
        lambda data, name: j3d_inspect.detect_model(data, name) or archives_inspect.detect(data, name),
        lambda data, name: (
            archives_inspect.summarize(data, name, kind_of)
            if archives_inspect.detect(data, name)
            else j3d_inspect.summarize(data, name)
        ),
        Importer(
            "import_scene.j3d_model",
            "Import J3D Model",
            "J3D model (.bmd, .bdl, .arc, .szs)",
            "Import Nintendo GameCube/Wii J3D models (.bmd, .bdl, Yaz0/Yay0-compressed or in a RARC/U8 "
            "archive: .arc .szs .carc): skinned armature, meshes, materials, textures and their animations",
            j3d_files.ModelImportOptions,
            j3d_files.load_model,
            pairs=j3d_files.PAIRED_EXTENSIONS,
            models=j3d_files.archive_models,
            shared_animations=j3d_files.shared_animations,
        ),
        Exporter(
            "export_scene.j3d_model",
            "Export J3D Model",
            "J3D model (.bmd, .bdl)",
            "Export the selected armature and the meshes it deforms as a J3D model (.bmd, .bdl): an imported "
            "model keeps every byte that was not edited",
            j3d_files.ModelExportOptions,
            j3d_files.save_model,
            j3d_files.MODEL_EXTENSIONS + j3d_files.ARCHIVE_EXTENSIONS,
        ),
        converter="j3d.model_convert",
    ),
    Family(
        "j3d",
        "J3D animation / material set",
        j3d_files.EXTENSIONS,
        j3d_inspect.detect,
        j3d_inspect.summarize,
        Importer(
            "import_scene.j3d_animation",
            "Apply J3D Animation / Material Set",
            "J3D animation / material set (.bck .btk .brk .btp .bpk .bca .bva .bla .blk .bmt)",
            "Apply J3D animations (.bck .bca to the active armature; .btk .brk .bpk .btp to the selected "
            "objects' materials, by name; .bva to the model's shapes; .bla .blk to the active mesh's shape "
            "keys) and material sets (.bmt)",
            j3d_files.ImportOptions,
            j3d_files.load,
            applies_to_selection=always,
        ),
        Exporter(
            "export_scene.j3d_animation",
            "Export J3D Animation",
            "J3D animation (.bck .btk .brk .bpk .btp .bca .bva .bla .blk)",
            "Export a J3D animation: the active armature's action as .bck .bca, the active material's as .btk "
            ".brk .bpk .btp, the active object's visibility as .bva, its shape keys' as .bla .blk (the file "
            "extension chooses), or into the archive it came from (.arc .szs …), replacing its member",
            j3d_files.ExportOptions,
            j3d_files.save,
            (*j3d_files.READERS, *j3d_files.ARCHIVE_EXTENSIONS),
        ),
    ),
    # Textures are imported with the models that use them; alone, they are only inspected.
    Family(
        "textures",
        "texture (TPL, DDS, GXT)",
        (".tpl", ".dds", ".gxt"),
        textures_inspect.detect,
        textures_inspect.summarize,
    ),
)


def read_header(path: str) -> bytes:
    """The first HEADER_SIZE bytes of a file (all of it when shorter)."""
    with open(path, "rb") as f:
        return f.read(HEADER_SIZE)


def read_whole(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def family_for(path: str, header: bytes | None = None) -> Family:
    """The family of a file: by extension, then by content.

    Among the families listing the file's extension, the first whose ``detect`` accepts the
    content (.tmd: Toshi or Tamsoft); else any family whose ``detect`` accepts it (a TTYD
    texture file has no extension either); else the first listing the extension, whose reader
    says what is wrong. ``header``: the file's first bytes (read when None; the inspection passes
    the whole file, which the detectors of formats without a magic number need).
    """
    if header is None:
        header = read_header(path)
    if archives.is_compressed(header):  # Yaz0/Yay0 around any family: look at what it holds
        if header[:4] == b"Yay0" and len(header) == HEADER_SIZE and os.path.isfile(path):
            header = read_whole(path)  # Yay0 keeps its streams apart: its start needs all of them
        header = archives.header(header, path, HEADER_SIZE)
    extension = os.path.splitext(os.path.basename(path))[1].lower()
    listed = [f for f in FAMILIES if extension in f.extensions]
    for family in listed + [f for f in FAMILIES if f not in listed]:
        if family.detect(header, path):
            return family
    if listed:
        return listed[0]
    raise FormatError(path, 0, f"not a supported file (starts with {header[:8]!r})")


def kind_of(data: bytes, name: str) -> str:
    """What a file is in a few words (an archive's listing): its family and its magic."""
    try:
        start = archives.header(data, name, HEADER_SIZE)
        family = family_for(name, start)
        known = family.detect(start, name)
    except FormatError:
        known = False
    magic = next((m for m in (start[:8], start[:4]) if m.isalnum()), b"") if known else b""
    if not known:
        return "unknown"
    return f"{family.label} ({magic.decode()})" if magic else family.label
