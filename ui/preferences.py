"""The add-on's preferences: defaults users set once, which the import operators use when the
matching option is left empty."""

import bpy
from bpy.props import StringProperty

ADDON = __package__.rpartition(".")[0]  # the add-on's package: its preferences' bl_idname

# option → the preference that fills it when empty (in every family that has the option)
_FILLS = {"names_file": "tamsoft_names_file", "texture_folder": "texture_folder"}


class RetroPreferences(bpy.types.AddonPreferences):
    bl_idname = ADDON

    tamsoft_names_file: StringProperty(
        name="Tamsoft Bone Names",
        description="A text file of bone names (one a line) used when an import's Bone Names is empty",
        subtype="FILE_PATH",
    )
    texture_folder: StringProperty(
        name="Texture Folder",
        description="A folder searched last for texture files not found next to the model",
        subtype="DIR_PATH",
    )

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.prop(self, "texture_folder")
        layout.prop(self, "tamsoft_names_file")


def preferred(option: str) -> str:
    """The preference standing in for an empty option ("" when there is none or it is not set)."""
    name = _FILLS.get(option)
    addon = bpy.context.preferences.addons.get(ADDON) if name else None
    return getattr(addon.preferences, name, "") if addon and addon.preferences else ""


classes = (RetroPreferences,)
