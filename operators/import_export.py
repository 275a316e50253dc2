"""The import and export operators, made from the registry of families (formats/registry.py).

Each family's importer becomes an ``IMPORT_SCENE_OT_…`` operator and its exporter an
``EXPORT_SCENE_OT_…`` one: properties from the options dataclass (formats/options.py),
Forward / Up with the family's default axes, options drawn in their panels. Operators and
scripts (``import_file`` / ``export_file``) run the same two paths, ``import_path`` (load, then
build new data or apply to the selection, everything created removed again on failure) and
``export_path`` (the selection as a Scene, then save: every file or none).

What a family needs from Blender lives in operators/<family>.py, which defines:

- ``export_scene(context, path, options) -> Scene``: the selection to export (exporting families);
- ``apply_to_selection(context, scene, path, options) -> (BuildResult, notes)``: a loaded scene
  onto the selection, for the scenes the importer's ``applies_to_selection`` picks;
- optionally ``after_build(scene, result)``: finishing touches on newly built data (may return notes);
  ``default_path(context)``: the file name the export browser suggests; ``check(operator,
  context)``: the export file name kept in step with the options; and the functions an
  option's ``choices`` names.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import bpy
from bpy.props import (
    BoolProperty,
    CollectionProperty,
    EnumProperty,
    FloatProperty,
    IntProperty,
    StringProperty,
)
from bpy_extras.io_utils import ExportHelper, ImportHelper, orientation_helper

from ..formats import registry
from ..formats.errors import FormatError, RetroError
from ..formats.options import AXIS_FIELDS, describe, make

# Datablock collections an import may add to; rolled back together on failure.
_ID_COLLECTIONS = (
    "objects",
    "meshes",
    "materials",
    "images",
    "actions",
    "armatures",
    "collections",
    "node_groups",
    "shape_keys",
)


def _snapshot() -> dict[str, set[int]]:
    return {name: {id_.as_pointer() for id_ in getattr(bpy.data, name)} for name in _ID_COLLECTIONS}


@contextmanager
def rollback_on_error() -> Iterator[None]:
    """Remove every datablock created inside the block if it raises, then re-raise."""
    before = _snapshot()
    try:
        yield
    except BaseException:
        for name in _ID_COLLECTIONS:
            if name == "shape_keys":
                continue  # removed with their meshes
            data = getattr(bpy.data, name)
            for id_ in [i for i in data if i.as_pointer() not in before[name]]:
                data.remove(id_)
        raise


class Progress:
    """A window-manager progress bar over ``total`` steps (no-op without a window)."""

    def __init__(self, context, total: int):
        self.wm = context.window_manager if context.window else None
        self.total = max(total, 1)
        self.done = 0
        if self.wm:
            self.wm.progress_begin(0, self.total)

    def fraction(self, step_fraction: float) -> None:
        if self.wm:
            self.wm.progress_update(self.done + step_fraction)

    def step(self) -> None:
        self.done += 1
        self.fraction(0.0)

    def end(self) -> None:
        if self.wm:
            self.wm.progress_end()


@dataclass
class ImportReport:
    """What importing one file made: datablocks per kind, warnings, and where it went (notes)."""

    path: str
    counts: dict[str, int]
    warnings: list[str]
    notes: list[str]

    @property
    def summary(self) -> str:
        parts = ", ".join(f"{n} {kind}" for kind, n in self.counts.items() if n)
        return f"{os.path.basename(self.path)}: {parts or 'nothing imported'}"

    def __str__(self) -> str:
        return self.summary + "".join(f"\n  warning: {w}" for w in self.warnings)


@dataclass
class ExportReport:
    """What an export wrote: every path, and the warnings."""

    paths: list[str]
    warnings: list[str]

    @property
    def summary(self) -> str:
        return "Wrote " + ", ".join(os.path.basename(p) for p in self.paths)

    def __str__(self) -> str:
        return self.summary + "".join(f"\n  warning: {w}" for w in self.warnings)


def blender_side(family: registry.Family):
    """The family's Blender-side module, operators/<family name>.py."""
    return importlib.import_module(f"{__package__}.{family.name}")


def import_path(context, family: registry.Family, path: str, options, progress: Progress | None = None):
    """Import one file with the family's importer; nothing is left of it when it fails."""
    from .blender.build import build_scene

    importer = family.importer
    counts: dict[str, int] = {}
    warnings: list[str] = []
    notes: list[str] = []
    with rollback_on_error():
        loaded = importer.load(path, options)
        if progress:
            progress.step()
        # A file holding several models (an archive) loads as a list: one collection each, by its name.
        scenes = loaded if isinstance(loaded, list) else [loaded]
        for scene in scenes:
            scene.source = path
            if importer.applies_to_selection and importer.applies_to_selection(scene):
                result, done = blender_side(family).apply_to_selection(context, scene, path, options)
                notes += done
            else:
                name = scene.name if isinstance(loaded, list) else os.path.splitext(os.path.basename(path))[0]
                result = build_scene(
                    scene, context, collection_name=name, progress=progress and progress.fraction
                )
                finish = getattr(blender_side(family), "after_build", None)
                if finish:
                    notes += finish(scene, result) or []
            for kind, n in result.counts().items():
                counts[kind] = counts.get(kind, 0) + n
            warnings += scene.warnings
        if progress:
            progress.step()
    return ImportReport(path, counts, warnings, notes)


def export_path(context, family: registry.Family, path: str, options) -> ExportReport:
    """Export the selection with the family's exporter: every file or none."""
    scene = blender_side(family).export_scene(context, path, options)
    return ExportReport(family.exporter.save(scene, path, options), scene.warnings)


def import_file(context, path: str, **options) -> ImportReport:
    """See the add-on package's ``import_file``."""
    family = registry.family_for(path)
    if family.importer is None:
        raise FormatError(
            path, 0, f"a {family.label} file: the add-on imports these with the models using them"
        )
    return import_path(context, family, path, make(family.importer.options, options))


def export_file(context, path: str, *, family: str = "", **options) -> ExportReport:
    """See the add-on package's ``export_file``."""
    chosen = _exporting_family(path, family)
    return export_path(context, chosen, path, make(chosen.exporter.options, options))


def _exporting_family(path: str, name: str) -> registry.Family:
    exporting = [f for f in registry.FAMILIES if f.exporter]
    if name:
        found = [f for f in exporting if f.name == name]
        if not found:
            raise TypeError(
                f"no family {name!r} exports; choose one of {', '.join(f.name for f in exporting)}"
            )
        return found[0]
    extension = os.path.splitext(os.path.basename(path))[1].lower()
    found = [f for f in exporting if extension in (f.exporter.extensions or ("",))]
    if len(found) != 1:
        candidates = ", ".join(f.name for f in (found or exporting))
        raise TypeError(f"{path}: say which family writes it with family= (one of {candidates})")
    return found[0]


# -- the operators --------------------------------------------------------------------------


def _property(field: dataclasses.Field, module):
    """The bpy property of one option."""
    shown = describe(field)
    common = {"name": shown.label, "description": shown.description}
    if isinstance(shown.choices, str):  # listed at run time by the family's Blender-side module
        return EnumProperty(items=getattr(module, shown.choices), **common)
    if shown.choices:
        return EnumProperty(items=shown.choices, default=field.default, **common)
    if isinstance(field.default, bool):
        return BoolProperty(default=field.default, **common)
    if isinstance(field.default, int):
        return IntProperty(default=field.default, **common)
    if isinstance(field.default, float):
        return FloatProperty(default=field.default, **common)
    subtype = "FILE_PATH" if shown.path else "NONE"
    return StringProperty(default=field.default, subtype=subtype, maxlen=shown.maxlen, **common)


def _option_fields(options_class) -> list[dataclasses.Field]:
    """The options drawn as the family's own (Forward / Up come from Blender's orientation helper)."""
    return [f for f in dataclasses.fields(options_class) if f.name not in AXIS_FIELDS]


def _glob(extensions) -> str:
    return ";".join(f"*{e}" for e in extensions) or "*"


class _Options:
    """Mix-in of the generated operators: their options as the family's dataclass, and how they look."""

    family: registry.Family
    options_class: type
    direction: str  # "import" or "export"
    note = ""

    def family_options(self):
        values = {}
        for field in dataclasses.fields(self.options_class):
            value = getattr(self, field.name)
            values[field.name] = bpy.path.abspath(value) if describe(field).path and value else value
        return self.options_class(**values)

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        if self.note:
            layout.label(text=self.note, icon="INFO")
        panels: dict = {}
        for field in _option_fields(self.options_class):
            panels.setdefault(describe(field).panel, []).append(field)
        for field in panels.pop(None, []):
            self._draw_option(layout, field)
        for panel, fields in panels.items():
            slug = panel.label.lower().replace(" ", "_")
            header, body = layout.panel(
                f"RETRO_{self.family.name}_{self.direction}_{slug}", default_closed=panel.closed
            )
            header.label(text=panel.label)
            if body:
                for field in fields:
                    self._draw_option(body, field)
        if hasattr(self, "axis_forward"):
            header, body = layout.panel(
                f"RETRO_{self.family.name}_{self.direction}_transform", default_closed=True
            )
            header.label(text="Transform")
            if body:
                body.prop(self, "axis_forward")
                body.prop(self, "axis_up")

    def _draw_option(self, layout, field) -> None:
        shown_if = describe(field).shown_if
        if shown_if is None or getattr(self, shown_if[0]) == shown_if[1]:
            layout.prop(self, field.name)


class _Importer(_Options, ImportHelper):
    """Multi-file selection, drag-and-drop, reports and progress of every import operator."""

    files: CollectionProperty(type=bpy.types.OperatorFileListElement, options={"HIDDEN", "SKIP_SAVE"})
    directory: StringProperty(subtype="DIR_PATH", options={"HIDDEN", "SKIP_SAVE"})
    direction = "import"
    bl_options = {"REGISTER", "UNDO", "PRESET"}

    def invoke(self, context, event):
        # Drag-and-drop sets filepath: show the options in a popup instead of the browser.
        return self.invoke_popup(context)

    def paths(self) -> list[str]:
        if self.files and self.directory:
            return [os.path.join(self.directory, f.name) for f in self.files if f.name]
        return [self.filepath]

    def execute(self, context):
        paths = self.paths()
        options = self.family_options()
        progress = Progress(context, 2 * len(paths))
        failed = 0
        try:
            for path in paths:
                try:
                    report = import_path(context, self.family, path, options, progress)
                except (RetroError, OSError) as e:
                    failed += 1
                    self.report({"ERROR"}, str(e))
                    continue
                for note in report.notes:
                    self.report({"INFO"}, note)
                for warning in report.warnings:
                    self.report({"WARNING"}, f"{os.path.basename(path)}: {warning}")
                self.report({"INFO"}, report.summary)
        finally:
            progress.end()
        return {"CANCELLED"} if failed == len(paths) else {"FINISHED"}


class _Exporter(_Options, ExportHelper):
    """Object mode, reports and the written files of every export operator."""

    direction = "export"
    bl_options = {"REGISTER", "PRESET"}

    @classmethod
    def poll(cls, context):
        return context.mode == "OBJECT"

    def invoke(self, context, event):
        suggest = getattr(blender_side(self.family), "default_path", None)
        if not self.filepath and suggest:
            self.filepath = suggest(context)
        return super().invoke(context, event)

    def check(self, context):
        keep_in_step = getattr(blender_side(self.family), "check", None)
        return keep_in_step(self, context) if keep_in_step else super().check(context)

    def execute(self, context):
        progress = Progress(context, 1)  # the busy cursor while the files are made
        try:
            report = export_path(context, self.family, self.filepath, self.family_options())
        except (RetroError, OSError) as e:
            self.report({"ERROR"}, str(e))
            return {"CANCELLED"}
        finally:
            progress.end()
        for warning in report.warnings:
            self.report({"WARNING"}, warning)
        self.report({"INFO"}, report.summary)
        return {"FINISHED"}


def _operator(family: registry.Family, operation, base: type, extensions) -> type:
    """The operator class of one family's import or export."""
    module = blender_side(family)
    attributes = {
        "__annotations__": {
            "filter_glob": StringProperty(default=_glob(extensions), options={"HIDDEN"}),
            **{f.name: _property(f, module) for f in _option_fields(operation.options)},
        },
        "bl_idname": operation.idname,
        "bl_label": operation.title,
        "bl_description": operation.description,
        "bl_options": base.bl_options,
        "filename_ext": next(iter(extensions), ""),
        "family": family,
        "options_class": operation.options,
    }
    if len(extensions) > 1:
        attributes["check_extension"] = None  # the extension the user types says what to write: keep it
    if getattr(operation, "note", ""):
        attributes["note"] = operation.note
    category, name = operation.idname.split(".")
    cls = type(f"{category.upper()}_OT_{name}", (bpy.types.Operator, base), attributes)
    axes = [f.default for f in dataclasses.fields(operation.options) if f.name in AXIS_FIELDS]
    return orientation_helper(*axes)(cls) if axes else cls


def _classes() -> list[type]:
    made = []
    for family in registry.FAMILIES:
        if family.importer:
            made.append(_operator(family, family.importer, _Importer, family.extensions))
        if family.exporter:
            made.append(_operator(family, family.exporter, _Exporter, family.exporter.extensions))
    return made


classes = _classes()
