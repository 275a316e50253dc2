"""Every operator of the extension as a user meets it: one-line tooltips, presets, the same label for
the same idea in every family, the Animations toggle, the add-on's preferences, the export report."""

import dataclasses
from collections import defaultdict

import bpy
import pytest
import tmrf_fixtures
import ttyd_fixtures
from demo_creature import demo_files
from retro_models.formats import registry
from retro_models.formats.options import AXIS_FIELDS, describe
from retro_models.operators import import_export
from retro_models.operators.blender import props
from tamsoft_fixtures import tmd0_bytes


def operator_rna(idname: str):
    """The registered operator's RNA: its description and properties as Blender shows them."""
    category, name = idname.split(".")
    return getattr(getattr(bpy.ops, category), name).get_rna_type()


def registered_operators() -> list[str]:
    """Every operator the extension registers (the generated import / export ones and the others)."""
    from retro_models import operators

    return [cls.bl_idname for cls in operators._classes()]


def test_every_property_has_a_one_line_tooltip(addon):
    for idname in registered_operators():
        rna = operator_rna(idname)
        assert rna.description.strip() and "\n" not in rna.description, idname
        for prop in rna.properties:
            if prop.identifier == "rna_type":
                continue
            where = f"{rna.identifier}.{prop.identifier}"
            assert prop.description.strip(), f"{where} has no tooltip"
            assert "\n" not in prop.description, f"{where}: tooltip on several lines"


def test_import_and_export_operators_have_presets(addon):
    for cls in import_export.classes:
        assert "PRESET" in cls.bl_options, cls.bl_idname


def test_the_same_idea_has_the_same_label_everywhere(addon):
    labels, names = defaultdict(set), defaultdict(set)
    for family in registry.FAMILIES:
        for operation in (family.importer, family.exporter):
            if operation is None:
                continue
            for f in dataclasses.fields(operation.options):
                labels[f.name].add(describe(f).label)
                names[describe(f).label].add(f.name)
    assert {n: ls for n, ls in labels.items() if len(ls) > 1} == {}
    assert {label: ns for label, ns in names.items() if len(ns) > 1} == {}


# Families whose files hold no animations (a tmd0 model has none): no Animations toggle.
WITHOUT_ANIMATIONS = {"tamsoft"}


def test_model_families_have_orientation_and_an_animations_toggle(addon):
    """A family with Forward / Up imports models: it has them and Scale on export too, and the Animations toggle."""
    for family in registry.FAMILIES:
        if family.importer is None:
            continue
        fields = {f.name for f in dataclasses.fields(family.importer.options)}
        if not set(AXIS_FIELDS) <= fields:
            continue
        shown = set(operator_rna(family.importer.idname).properties.keys())
        wanted = {"global_scale", "axis_forward", "axis_up"}
        if family.name not in WITHOUT_ANIMATIONS:
            wanted.add("import_animations")
        assert wanted <= shown, family.name
        if family.exporter:
            exported = {f.name for f in dataclasses.fields(family.exporter.options)}
            assert {"global_scale", *AXIS_FIELDS} <= exported, family.name


@pytest.mark.parametrize(
    "name, build",
    [("c_test", ttyd_fixtures.build), ("skeleton.tskl", tmrf_fixtures.full_file), ("demo.tmd", None)],
)
def test_animations_toggle(empty_scene, tmp_path, name, build):
    if build:
        (tmp_path / name).write_bytes(build())
    else:
        for file_name, data in demo_files().items():
            (tmp_path / file_name).write_bytes(data)
    family = registry.family_for(str(tmp_path / name))
    run = getattr(bpy.ops.import_scene, family.importer.idname.split(".")[1])
    assert run(filepath=str(tmp_path / name), import_animations=False) == {"FINISHED"}
    assert not bpy.data.actions and any(o.type == "ARMATURE" for o in bpy.data.objects)
    assert run(filepath=str(tmp_path / name)) == {"FINISHED"}
    assert bpy.data.actions


def test_preferences_fill_an_empty_bone_names_option(empty_scene, tmp_path):
    (tmp_path / "model.tmd").write_bytes(tmd0_bytes())
    (tmp_path / "names.txt").write_text("face_root\n")
    preferences = bpy.context.preferences.addons[addon_name()].preferences
    preferences.tamsoft_names_file = str(tmp_path / "names.txt")
    try:
        assert bpy.ops.import_scene.tamsoft_tmd0(filepath=str(tmp_path / "model.tmd")) == {"FINISHED"}
    finally:
        preferences.tamsoft_names_file = ""
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    assert "face_root" in armature.data.bones


def addon_name() -> str:
    from retro_models.ui.preferences import ADDON

    if ADDON not in bpy.context.preferences.addons:  # loaded from the checkout: enable it by name
        bpy.context.preferences.addons.new().module = ADDON
    return ADDON


def test_export_report_counts_what_was_written(empty_scene, tmp_path):
    import retro_models

    for file_name, data in demo_files().items():
        (tmp_path / file_name).write_bytes(data)
    retro_models.import_file(bpy.context, str(tmp_path / "demo.tmd"))
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    bpy.context.view_layer.objects.active = armature
    (tmp_path / "out").mkdir()
    report = retro_models.export_file(bpy.context, str(tmp_path / "out" / "demo.tmd"), family="toshi")
    assert report.counts["armatures"] == 1 and report.counts["meshes"] >= 1 and report.counts["actions"] == 2
    assert report.summary.startswith("Wrote demo.tmd, ") and ": 1 armature, " in report.summary


def test_export_includes_what_the_options_say(empty_scene, tmp_path):
    import retro_models
    from retro_models.formats.errors import ExportError

    for file_name, data in demo_files().items():
        (tmp_path / file_name).write_bytes(data)
    retro_models.import_file(bpy.context, str(tmp_path / "demo.tmd"), lods="ALL")  # LOD1 hidden
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    meshes = sorted((o for o in bpy.data.objects if o.type == "MESH"), key=lambda o: o.name)
    hidden = [o for o in meshes if not o.visible_get()]
    assert hidden and len(hidden) < len(meshes)
    bpy.context.view_layer.objects.active = armature
    for obj in bpy.context.view_layer.objects:
        obj.select_set(obj == armature)
    (tmp_path / "out").mkdir()

    def exported(**options) -> int:
        path = tmp_path / "out" / "demo.tmd"
        return retro_models.export_file(bpy.context, str(path), family="toshi", **options).counts["meshes"]

    assert exported() == len(meshes)
    assert exported(use_visible=True) == len(meshes) - len(hidden)
    with pytest.raises(ExportError, match="Selected Only"):
        exported(use_selection=True)  # only the armature is selected
    meshes[0].select_set(True)
    assert exported(use_selection=True) == 1
    collection = meshes[0].users_collection[0]
    bpy.context.view_layer.active_layer_collection = layer_of(
        bpy.context.view_layer.layer_collection, collection
    )
    in_collection = [o for o in meshes if o.name in collection.all_objects]
    assert 0 < len(in_collection) < len(meshes)
    assert exported(use_active_collection=True) == len(in_collection)


def test_apply_modifiers_exports_what_the_modifiers_make(empty_scene, tmp_path):
    import retro_models

    for file_name, data in demo_files().items():
        (tmp_path / file_name).write_bytes(data)
    retro_models.import_file(bpy.context, str(tmp_path / "demo.tmd"))
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    body = max((o for o in bpy.data.objects if o.type == "MESH"), key=lambda o: len(o.data.vertices))
    mirror = body.modifiers.new("Mirror", "MIRROR")
    mirror.use_mirror_merge = False
    own_mesh, meshes_before = body.data, len(bpy.data.meshes)
    bpy.context.view_layer.objects.active = armature

    def exported_vertices(**options) -> int:
        folder = tmp_path / f"out{len(options)}"
        folder.mkdir()
        retro_models.export_file(bpy.context, str(folder / "demo.tmd"), family="toshi", **options)
        scene = registry.family_for(str(folder / "demo.tmd")).importer.load(
            str(folder / "demo.tmd"), registry.family_for(str(folder / "demo.tmd")).importer.options()
        )
        return sum(len(m.positions) for m in scene.meshes)

    plain = exported_vertices()
    assert exported_vertices(use_mesh_modifiers=True) == plain + len(own_mesh.vertices)
    assert body.data == own_mesh and len(bpy.data.meshes) == meshes_before  # nothing left behind


def layer_of(layer, collection):
    if layer.collection == collection:
        return layer
    return next(filter(None, (layer_of(child, collection) for child in layer.children)), None)


def test_sidebar_shows_the_model_when_any_of_its_objects_is_selected(empty_scene, tmp_path):
    import retro_models

    for file_name, data in demo_files().items():
        (tmp_path / file_name).write_bytes(data)
    retro_models.import_file(bpy.context, str(tmp_path / "demo.tmd"))
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    mesh = next(o for o in bpy.data.objects if o.type == "MESH")
    toshi, animations = bpy.types.VIEW3D_PT_retro_toshi, bpy.types.VIEW3D_PT_retro_animations
    for obj in bpy.context.view_layer.objects:
        obj.select_set(obj == mesh)
    bpy.context.view_layer.objects.active = mesh
    assert toshi.poll(bpy.context) and animations.poll(bpy.context)
    assert animations.owners(bpy.context)[0][1] == armature
    groups = props.to_python(armature.data[props.ANIMATIONS])
    assert bpy.ops.retro_models.use_animation(group=groups[-1]) == {"FINISHED"}  # from the mesh too
    mesh.select_set(False)
    bpy.context.view_layer.objects.active = None
    assert not toshi.poll(bpy.context) and not animations.poll(bpy.context)


def test_readme_names_the_menus_and_the_command_as_registered(addon):
    import re
    import tomllib

    from retro_models.operators import batch
    from support import ROOT

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    imports = {f.importer.menu for f in registry.FAMILIES if f.importer}
    exports = {f.exporter.menu for f in registry.FAMILIES if f.exporter}
    for named in re.findall(r"File > Import > \*\*(.+?)\*\*", readme):
        assert named in imports, named
    for named in re.findall(r"File > Export > \*\*(.+?)\*\*", readme):
        assert named in exports, named
    table = [row.split("|")[1:-1] for row in readme.split("## Formats")[1].split("\n\n")[1].splitlines()[2:]]
    assert sorted(row[3].strip() for row in table) == sorted(imports)
    assert sorted(row[4].strip() for row in table if row[4].strip() != "–") == sorted(
        exports
    )  # – : no export
    assert f"blender -b -c {batch.COMMAND} " in readme and "bl_ext.user_default.retro_models" in readme
    manifest = tomllib.loads((ROOT / "blender_manifest.toml").read_text(encoding="utf-8"))
    assert manifest["copyright"] and ("website" not in manifest or manifest["website"] in readme)
