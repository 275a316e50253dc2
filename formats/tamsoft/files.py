"""A Tamsoft model on disk: a bare tmd0, or a model CAT with the texture CAT next to it.

``load`` keeps each CAT minus the payloads that travel elsewhere (the model in the scene, the
textures on its images), so that ``save`` can put an edited model back into the CAT it came from.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ExportError, FormatError
from ..files import write_files
from ..options import Included, Panel, option, oriented, texture_folder_option
from ..scene import Scene
from ..textures import dds, gxt
from ..toshi import tmd as toshi_tmd
from . import cat, convert, names, texture_cat, tmd0

EXTENSIONS = (".tmd", ".cat")
# Scene extras: the file the model came from, and its CAT without the model payload.
CONTAINER = "cat"
# ... and its texture CAT without the DDS files the images carry.
TEXTURE_CONTAINER = "texture_cat"

Orientation = oriented(convert.AXES)


@dataclass
class ImportOptions(Orientation):
    names_file: str = option(
        "",
        "Bone Names",
        "A text file with one bone name per line: a name whose hash matches a bone names it "
        "(the file stores hashes only)",
        path=True,
        panel=Panel("Bones"),
    )
    texture_folder: str = texture_folder_option(panel=Panel("Textures"))


@dataclass
class ExportOptions(Orientation, Included):
    pass


def read_names(path: str) -> list[str]:
    with open(path, encoding="utf-8", errors="replace") as f:
        return names.parse_names(f.read())


@dataclass
class Package:
    """A model as found on disk: bare or inside a CAT, with the textures of the CAT next to it."""

    model: tmd0.TMD0
    name: str
    textures: list[tuple[str, texture_cat.Resource | None]] | None  # per model texture
    cat: cat.CAT | None = None  # the model CAT, to write an edited model back into
    index: int = 0  # the model's payload in ``cat``
    texture_cat: cat.CAT | None = None  # the texture CAT, to write edited textures back into
    warnings: list[str] = field(default_factory=list)


def open_model(path: Path, texture_folder: str = "") -> Package:
    """Read a bare tmd0 or a model CAT, and its texture CAT (next to it, else in ``texture_folder``)
    when there is one.

    The model is named after the package of the CAT's first line; its textures are the resources
    the CAT's name list names, found by name in the texture CAT."""
    path = Path(path)
    data = path.read_bytes()
    if data[:4] in tmd0.MAGICS:
        return Package(tmd0.read(data, str(path)), path.stem, None)
    container = cat.read(data, str(path))
    index = cat.model_index(container, str(path))
    model = tmd0.read(container.payloads[index], str(path), container.payload_offset(index))
    package = Package(model, texture_cat.package_name(container) or path.stem, None, container, index)
    texture_path = cat.texture_cat_path(path, texture_folder)
    if texture_path is not None:
        package.texture_cat = cat.read(texture_path.read_bytes(), str(texture_path))
        found = texture_cat.resources(package.texture_cat, str(texture_path))
        package.textures, warnings = texture_cat.model_textures(
            len(model.textures), texture_cat.resource_names(container), found
        )
        package.warnings += [f"{texture_path.name}: {w}" for w in warnings]
    elif len(package.model.textures):
        package.warnings.append(f"no texture CAT next to {path.name}: textures are left empty")
    return package


def _stored_container(package: Package) -> dict:
    """The model's CAT minus the model itself (kept by its hash), to write an edited model back into."""
    container = package.cat
    return {
        "endian": container.endian,
        "header_size": container.header_size,
        "name_block": container.name_block,
        "index": package.index,
        "model_sha1": hashlib.sha1(container.payloads[package.index]).hexdigest(),
        "payloads": [b"" if i == package.index else p for i, p in enumerate(container.payloads)],
    }


def container_bytes(stored: dict, model_bytes: bytes) -> bytes:
    """The stored CAT with ``model_bytes`` as its model payload."""
    index = stored["index"]
    payloads = [bytes(p) for p in stored["payloads"]]
    # An unchanged model goes back as it was; replace_payload pads only a changed one.
    unchanged = hashlib.sha1(model_bytes).hexdigest() == stored["model_sha1"]
    payloads[index] = model_bytes if unchanged else b""
    container = cat.CAT(stored["endian"], stored["header_size"], stored["name_block"], payloads)
    return cat.write(cat.replace_payload(container, index, model_bytes))


def _stored_texture_container(package: Package) -> dict:
    """The texture CAT as parts to reassemble: a DDS file a model texture shows travels on its image
    (``{"image": i}``), every other byte stays here (GXT files too, with the images that show them)."""
    container = package.texture_cat
    owner: dict[tuple[int, int], int] = {}  # (payload, slot) → the first model texture showing it
    for i, (_, resource) in enumerate(package.textures or []):
        if resource is not None:
            owner.setdefault((resource.payload, resource.slot), i)
    payloads = []
    for index, payload in enumerate(container.payloads):
        if texture_cat.is_bundle(payload):
            bundle = texture_cat.read_bundle(payload)
            parts = [_part(data, owner.get((index, k)), {}) for k, data in enumerate(bundle.resources)]
            layout = {
                "header_size": bundle.header_size,
                "padding": bundle.header_padding,
                "tail": bundle.tail,
            }
            payloads.append({"bundle": layout, "parts": parts})
        elif payload[:4] == gxt.MAGIC:
            shown = {str(slot): i for (p, slot), i in owner.items() if p == index}
            payloads.append({"parts": [_part(payload, None, shown)]})
        else:
            payloads.append({"parts": [_part(payload, owner.get((index, 0)), {})]})
    return {
        "endian": container.endian,
        "header_size": container.header_size,
        "name_block": container.name_block,
        "payloads": payloads,
    }


def _part(data: bytes, image: int | None, shown: dict[str, int]) -> dict:
    """One stored file: a DDS shown by ``image`` is left to that image; a GXT keeps its bytes here
    with the images that show its textures (``shown``: texture → image)."""
    if data[:4] == gxt.MAGIC:
        if image is not None:
            shown = {"0": image}
        return {"bytes": data, "gxt_images": shown}
    if image is not None and data[:4] == dds.MAGIC:
        return {"image": image}
    return {"bytes": data}


def texture_container_bytes(stored: dict, images) -> bytes:
    """The stored texture CAT with the textures of ``images`` (the exported model's)."""
    payloads = convert.texture_payloads(images, stored["payloads"])
    container = cat.CAT(stored["endian"], stored["header_size"], stored["name_block"], payloads)
    return cat.write(container)


def load(path: str, options: ImportOptions) -> Scene:
    """Read a bare tmd0 or a model CAT (with the texture CAT next to it) into a Scene.

    ``names_file``: one bone name per line; names whose hash matches a bone
    name it, the others keep ``bone_<hash>``.
    """
    with open(path, "rb") as f:
        if f.read(len(toshi_tmd.MAGIC)) == toshi_tmd.MAGIC:  # JPOG models share the .tmd extension
            raise FormatError(path, 0, "a Toshi / JPOG model (TMDL), not a Tamsoft tmd0: use its importer")
    package = open_model(Path(path), options.texture_folder)
    names_file = options.names_file
    candidates = read_names(names_file) if names_file else []
    scene = convert.to_scene(
        package.model, package.textures, candidates, axis=options.axis(), name=package.name, filename=path
    )
    scene.warnings[:0] = package.warnings
    if candidates and scene.skeletons:
        bones = scene.skeletons[0].bone_names
        matched = sum(not names.FALLBACK.match(b) for b in bones)
        if not matched:
            scene.warnings.append(
                f"none of the {len(candidates)} names in {os.path.basename(names_file)} "
                f"matches any of the {len(bones)} bone hashes"
            )
    if package.cat is not None:
        scene.extras[CONTAINER] = _stored_container(package)
    if package.texture_cat is not None:
        scene.extras[TEXTURE_CONTAINER] = _stored_texture_container(package)
    return scene


def save(scene: Scene, path: str, options: ExportOptions) -> list[str]:
    """Write the model at ``path``: a bare tmd0, or (for a ``.cat`` path) the CAT it was imported from
    with the model replaced, and the texture CAT next to it (``_mdl_`` → ``_tex_``) with the images.
    A path with neither extension gets ``.tmd``. Returns the paths written; writes nothing on error."""
    if os.path.splitext(path)[1].lower() not in EXTENSIONS:
        path += EXTENSIONS[0]
    model_bytes = tmd0.write(convert.from_scene(scene, axis=options.axis()))
    if os.path.splitext(path)[1].lower() != ".cat":
        return write_files({path: model_bytes})  # a bare tmd0 has no texture container
    stored = scene.extras.get(CONTAINER)
    if stored is None:
        raise ExportError("the model was not imported from a CAT: export it as .tmd")
    files = {path: container_bytes(stored, model_bytes)}
    stored_textures = scene.extras.get(TEXTURE_CONTAINER)
    if stored_textures is not None:
        texture_path = cat.texture_cat_name(Path(path))
        if texture_path is None:
            scene.warnings.append(
                f"{os.path.basename(path)} has no _mdl_ in its name: its texture CAT was not written"
            )
        else:
            files[str(texture_path)] = texture_container_bytes(stored_textures, scene.images)
    return write_files(files)
