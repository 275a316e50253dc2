"""Names of the custom properties and attributes the builder leaves for the extractor.

Extras go whole into one ``"extras"`` property of the ID (or bone, or node), through the one
codec (``formats.extras``), so nothing else a user or another add-on stores there is mistaken
for them and every value a converter kept comes back as it was. Bytes at their top level (a
mesh's strips) are held as bytes properties, as Blender keeps them, rather than the codec's
base64 text; both forms read.
"""

from __future__ import annotations

import re

import bpy

from ...formats import extras as codec

EXTRAS = "extras"
SCENE_NAME = (
    "scene_name"  # object, material, image, collection: the name in the Scene (Blender may add ".001")
)
ANIMATIONS = "animations"  # armature data: the action groups imported for it
REST_POSE = "rest_pose"  # armature data: pose bone → {pose path: values} it shows when no action keys it
JOINT_ORDER = "joint_order"  # armature data: bone names in skeleton order
BONE_DISPLAY = "bone_display"  # armature data: the skeleton's bone display rotation, 16 floats
REST_SCALE = (
    "rest_scale"  # armature data: per bone (joint order) 9 floats, the rest's 3×3 the edit bone lacks
)
SOURCE_NORMAL = "source_normal"  # mesh attribute: the scene's normals, unchanged
TANGENT = "tangent"  # mesh attribute (FLOAT_VECTOR) + TANGENT_SIGN (FLOAT)
TANGENT_SIGN = "tangent_sign"
HIDDEN = "hidden"  # mesh object: Mesh.hidden, for when an animation drives the visibility
MESH_INFO = "import_info"  # mesh data: layer domains, skin influences, shape key extras…
ALPHA_MODE = "alpha_mode"  # material: the scene's alpha mode (CLIP is not a render setting since 4.2)
SLOT = "texture_slot"  # image texture node: slot index, role and wraps of the TextureSlot
COLOR_SLOT = "color_slot"  # RGB / Value node showing a keyed colour: its path, slot kind and number
SWITCHED_IMAGE = "switched_image"  # image texture node: an image material.switch_images shows (not a slot)
SOURCE_BYTES = "source_bytes"  # image: the encoded texels from the file (through the extras codec)
SOURCE_FORMAT = "source_format"
PIXELS_HASH = "pixels_hash"  # image: sha1 of the pixels as built, to tell whether they were edited
UNDECODED = "undecoded"  # image: the scene had no pixels; the image is a placeholder
ANIMATION = (
    "animation"  # action: its records.AnimationRecord (only through records.write_record / read_record)
)
SOURCE_FILE = "source_file"  # import collection: the file the import read (Scene.source)
SCENE = "imported_scene"  # import collection: scene name, materials, images and action groups in scene order


def to_python(value):
    """An ID property value as plain Python (dicts, lists, str, int, float, bool)."""
    if hasattr(value, "to_dict"):
        return {k: to_python(v) for k, v in value.items()}
    if hasattr(value, "to_list"):
        return value.to_list()
    if isinstance(value, (list, tuple)):
        return [to_python(v) for v in value]
    return value


def scene_name(owner) -> str:
    """The owner's Scene name: the imported one while Blender's differs only by a ".001" suffix."""
    stored = owner.get(SCENE_NAME)
    if isinstance(stored, str) and re.fullmatch(re.escape(stored) + r"(\.\d{3,})?", owner.name):
        return stored
    return owner.name


def set_extras(owner, extras: dict) -> None:
    """``extras`` through the codec, but bytes at its top level held as they are: Blender keeps bytes
    properties, without base64's cost (a mesh's strips and bone bytes). ``get_extras`` reads both."""
    if extras:
        owner[EXTRAS] = {str(k): v if type(v) is bytes else codec.encode(v) for k, v in extras.items()}


def get_extras(owner, *keys: str) -> dict:
    """The owner's extras, decoded; with ``keys``, only those present (cheap beside large ones)."""
    if EXTRAS not in owner:
        return {}
    stored = owner[EXTRAS]
    if keys:
        return {k: codec.decode(stored[k]) for k in keys if k in stored}
    return codec.decode(stored)


def source_file(objects) -> str:
    """The file the import of these objects read ("" when they were not imported from one)."""
    record = import_record(objects)
    return record.get(SOURCE_FILE, "") if record is not None else ""


def import_record(objects):
    """The import collection (the one holding ``SCENE``) of these objects, directly or through child collections."""
    parents = {child.as_pointer(): c for c in bpy.data.collections for child in c.children}
    for obj in objects:
        for collection in obj.users_collection:
            while collection is not None:
                if SCENE in collection:
                    return collection
                collection = parents.get(collection.as_pointer())
    return None
