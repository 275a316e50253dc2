"""The operators made from the registry: one per family's import and export, with its options."""

import dataclasses

import bpy
import pytest
from retro_models.formats.options import AXIS_FIELDS, describe
from retro_models.formats.registry import FAMILIES

OPERATIONS = [
    (family, operation)
    for family in FAMILIES
    for operation in (family.importer, family.exporter)
    if operation is not None
]


def rna_properties(idname: str):
    category, name = idname.split(".")
    return getattr(getattr(bpy.ops, category), name).get_rna_type().properties


@pytest.mark.parametrize(("family", "operation"), OPERATIONS, ids=lambda o: getattr(o, "idname", ""))
def test_each_option_is_a_property_with_its_default(addon, family, operation):
    properties = rna_properties(operation.idname)
    for field in dataclasses.fields(operation.options):
        prop = properties[field.name]
        shown = describe(field)
        if field.name not in AXIS_FIELDS:  # Forward / Up: Blender's orientation helper names them
            assert (prop.name, prop.description) == (shown.label, shown.description)
        if not isinstance(shown.choices, str):  # choices listed at run time have no fixed default
            assert prop.default == field.default, field.name
        if shown.path:
            assert prop.subtype == ("DIR_PATH" if shown.folder else "FILE_PATH")
    assert getattr(
        bpy.types, operation.idname.split(".")[0].upper() + "_OT_" + operation.idname.split(".")[1]
    )


def test_menus_list_every_family_in_the_registry_order(addon):
    from retro_models import ui

    class Layout:
        def __init__(self):
            self.entries = []

        def operator(self, idname, text):
            self.entries.append((idname, text))

    for draw, operation in ((ui._menu_import, "importer"), (ui._menu_export, "exporter")):
        menu = type("Menu", (), {"layout": Layout()})()
        draw(menu, bpy.context)
        expected = [
            (getattr(f, operation).idname, getattr(f, operation).menu)
            for f in FAMILIES
            if getattr(f, operation)
        ]
        assert menu.layout.entries == expected


class Layout:
    """Records what a draw() lays out: (panel id or "", property) per drawn option."""

    def __init__(self, panel: str = "", record=None):
        self.panel_id, self.drawn = panel, record if record is not None else []

    def panel(self, idname, default_closed):
        self.drawn.append((idname, "closed" if default_closed else "open"))
        return Layout(idname, self.drawn), Layout(idname, self.drawn)

    def label(self, text, icon="NONE"):
        pass

    def prop(self, owner, name):
        self.drawn.append((self.panel_id, name))


def drawn(family_name: str, operation: str, **values) -> list:
    from retro_models.operators import import_export

    (family,) = [f for f in FAMILIES if f.name == family_name]
    spec = getattr(family, operation)
    shown = type(
        "Shown",
        (import_export._Options,),
        {"family": family, "options_class": spec.options, "direction": operation[:6], "layout": Layout()},
    )()
    for field in dataclasses.fields(spec.options):
        setattr(shown, field.name, values.get(field.name, field.default))
    shown.draw(bpy.context)
    return shown.layout.drawn


def test_options_are_drawn_in_their_panels():
    assert drawn("toshi", "importer") == [
        ("RETRO_toshi_import_include", "open"),
        ("RETRO_toshi_import_include", "lods"),
        ("RETRO_toshi_import_include", "import_animations"),
        ("RETRO_toshi_import_libraries", "open"),
        ("RETRO_toshi_import_libraries", "tkl_mode"),
        ("RETRO_toshi_import_libraries", "tml_mode"),
        ("RETRO_toshi_import_libraries", "texture_folder"),  # shown while the TML is found automatically
        ("RETRO_toshi_import_transform", "closed"),
        ("RETRO_toshi_import_transform", "global_scale"),
        ("RETRO_toshi_import_transform", "axis_forward"),
        ("RETRO_toshi_import_transform", "axis_up"),
    ]
    chosen = drawn("toshi", "exporter", tkl_mode="NEW")
    in_panel = lambda slug: [name for panel, name in chosen if panel == f"RETRO_toshi_export_{slug}"]  # noqa: E731
    assert in_panel("libraries") == ["open", "tkl_mode", "new_tkl_name", "write_tml"]
    assert in_panel("include") == [
        "open",
        "use_selection",
        "use_visible",
        "use_active_collection",
        "use_mesh_modifiers",
        "lods",
    ]
    assert in_panel("transform") == ["closed", "global_scale", "axis_forward", "axis_up"]
    assert chosen[-1] == ("RETRO_toshi_export_transform", "axis_up")  # the last panel
    assert drawn("j3d", "importer")[-2:] == [
        ("RETRO_j3d_import_texture_patterns", "closed"),
        ("RETRO_j3d_import_texture_patterns", "textures_file"),
    ]
    assert drawn("tmrf", "exporter")[0] == ("", "file_contents")  # above the panels
    assert drawn("j3d", "exporter") == [("", "animation"), ("", "member")]  # no axis conversion
