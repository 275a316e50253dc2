"""A Tamsoft model on disk: a bare tmd0, or a model CAT with the texture CAT next to it.

``load`` keeps each CAT minus the payloads that travel elsewhere (the model in the scene, the
textures on its images), so that ``save`` can put an edited model back into the CAT it came from.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import ExportError, FormatError
from ..files import write_files
from ..options import Included, Panel, option, oriented
from ..scene import Scene
from ..toshi import tmd as toshi_tmd
from . import cat, convert, names, tmd0

EXTENSIONS = (".tmd", ".cat")
# Scene extras: the file the model came from, and its CAT without the model payload.
CONTAINER = "cat"
# ... and its texture CAT without the texture payloads (those travel on the images).
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


@dataclass
class ExportOptions(Orientation, Included):
    pass


def read_names(path: str) -> list[str]:
    with open(path, encoding="utf-8", errors="replace") as f:
        return names.parse_names(f.read())


def _stored_container(package: cat.Package) -> dict:
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


def _stored_texture_container(package: cat.Package) -> dict:
    """The texture CAT minus the payloads of the model's textures (each image keeps its own)."""
    container = package.texture_cat
    count = min(len(container.payloads), len(package.model.textures))
    return {
        "endian": container.endian,
        "header_size": container.header_size,
        "name_block": container.name_block,
        "texture_count": count,
        "other_payloads": list(container.payloads[count:]),
    }


def texture_container_bytes(stored: dict, images) -> tuple[bytes, list[str]]:
    """The stored texture CAT with its textures taken from ``images`` (the exported model's), and warnings."""
    payloads, warnings = convert.texture_payloads(images, stored["texture_count"])
    payloads += [bytes(p) for p in stored["other_payloads"]]
    container = cat.CAT(stored["endian"], stored["header_size"], stored["name_block"], payloads)
    return cat.write(container), warnings


def load(path: str, options: ImportOptions) -> Scene:
    """Read a bare tmd0 or a model CAT (with the texture CAT next to it) into a Scene.

    ``names_file``: one bone name per line; names whose hash matches a bone
    name it, the others keep ``bone_<hash>``.
    """
    with open(path, "rb") as f:
        if f.read(len(toshi_tmd.MAGIC)) == toshi_tmd.MAGIC:  # JPOG models share the .tmd extension
            raise FormatError(path, 0, "a Toshi / JPOG model (TMDL), not a Tamsoft tmd0: use its importer")
    package = cat.open_model(Path(path))
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
            files[str(texture_path)], warnings = texture_container_bytes(stored_textures, scene.images)
            scene.warnings.extend(warnings)
    return write_files(files)
