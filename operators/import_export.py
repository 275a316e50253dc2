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
from ..formats.errors import ExportError, FormatError, RetroError
from ..formats.options import AXIS_FIELDS, TRANSFORM, describe, make
from ..formats.parts import Part
from .batch import counts_text

# Datablock collections an import may add to (rolled back together on failure) and whose existing
# datablocks it may change (restored as they were).
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
    "scenes",
)


def _snapshot() -> dict[str, set[int]]:
    return {name: {id_.as_pointer() for id_ in getattr(bpy.data, name)} for name in _ID_COLLECTIONS}


def _properties(owner) -> dict:
    """The owner's custom properties as plain Python (a copy that later edits leave alone)."""
    from .blender.props import to_python

    return {key: to_python(value) for key, value in owner.items()}


def _put_properties(owner, before: dict) -> None:
    from .blender.props import to_python

    for key in [k for k in owner.keys() if k not in before]:
        del owner[key]
    for key, value in before.items():
        if key not in owner or to_python(owner[key]) != value:
            owner[key] = value


class _ExistingData:
    """What an import or apply may change in the datablocks that exist before it: names, custom
    properties, assigned actions, pose-bone rotation modes, material node trees (nodes, links and
    their properties) and the scenes' frame rate and range. ``restore`` puts all of it back."""

    def __init__(self):
        self.ids = []
        self.trees = []
        self.pose_bones = []
        self.scenes = []
        for name in _ID_COLLECTIONS:
            for id_ in getattr(bpy.data, name):
                self._capture(id_)
                tree = getattr(id_, "node_tree", None) if name == "materials" else None
                if tree is not None:
                    self._capture(tree, id_)
                    self.trees.append((id_.as_pointer(), *self._tree(tree)))
        for obj in bpy.data.objects:
            if obj.pose is not None:
                for bone in obj.pose.bones:
                    self.pose_bones.append((obj.as_pointer(), bone, bone.rotation_mode, _properties(bone)))
        for scene in bpy.data.scenes:
            render = scene.render
            self.scenes.append((scene, render.fps, render.fps_base, scene.frame_start, scene.frame_end))

    def _capture(self, id_, owner=None) -> None:
        """``owner``: the datablock an embedded one (a material's node tree) lives and dies with."""
        animation = getattr(id_, "animation_data", None)
        action = slot = None
        if animation is not None:
            action = animation.action
            slot = getattr(getattr(animation, "action_slot", None), "identifier", None)
        self.ids.append(
            (
                (owner or id_).as_pointer(),
                id_,
                id_.name,
                _properties(id_),
                animation is not None,
                action,
                slot,
            )
        )

    @staticmethod
    def _tree(tree):
        nodes = {node.name: _properties(node) for node in tree.nodes}
        links = {_link_key(link) for link in tree.links}
        return tree, nodes, links

    def restore(self) -> None:
        alive = set().union(*_snapshot().values())  # an apply may have removed what it replaced
        for owner, id_, name, properties, animated, action, slot in self.ids:
            if owner not in alive:
                continue
            if id_.name != name:
                id_.name = name
            _put_properties(id_, properties)
            if not hasattr(id_, "animation_data"):
                continue
            if not animated:
                if id_.animation_data is not None:
                    id_.animation_data_clear()
                continue
            if id_.animation_data.action != action:
                id_.animation_data.action = action
            if slot is not None and action is not None:
                id_.animation_data.action_slot = next(s for s in action.slots if s.identifier == slot)
        for owner, tree, nodes, links in self.trees:
            if owner not in alive:
                continue
            for node in [n for n in tree.nodes if n.name not in nodes]:
                tree.nodes.remove(node)
            for link in [k for k in tree.links if _link_key(k) not in links]:
                tree.links.remove(link)
            for from_node, from_socket, to_node, to_socket in links - {_link_key(k) for k in tree.links}:
                outputs, inputs = tree.nodes[from_node].outputs, tree.nodes[to_node].inputs
                tree.links.new(
                    next(s for s in outputs if s.identifier == from_socket),
                    next(s for s in inputs if s.identifier == to_socket),
                )
            for node in tree.nodes:
                _put_properties(node, nodes[node.name])
        for owner, bone, mode, properties in self.pose_bones:
            if owner not in alive:
                continue
            bone.rotation_mode = mode
            _put_properties(bone, properties)
        for scene, fps, fps_base, start, end in self.scenes:
            scene.render.fps, scene.render.fps_base = fps, fps_base
            scene.frame_start, scene.frame_end = start, end


def _link_key(link) -> tuple[str, str, str, str]:
    return link.from_node.name, link.from_socket.identifier, link.to_node.name, link.to_socket.identifier


@contextmanager
def rollback_on_error() -> Iterator[None]:
    """If the block raises: remove every datablock created inside it, put back what it changed in
    the existing ones (``_ExistingData``), then re-raise."""
    before = _snapshot()
    existing = _ExistingData()
    try:
        yield
    except BaseException:
        for name in _ID_COLLECTIONS:
            if name == "shape_keys":
                continue  # removed with their meshes
            data = getattr(bpy.data, name)
            for id_ in [i for i in data if i.as_pointer() not in before[name]]:
                data.remove(id_)
        existing.restore()
        raise


class Progress:
    """A window-manager progress bar over ``total`` steps and what is being done in the status bar
    (no-op without a window)."""

    def __init__(self, context, total: int, status: str = ""):
        self.wm = context.window_manager if context.window else None
        self.workspace = context.workspace if context.window else None
        self.total = max(total, 1)
        self.done = 0
        if self.wm:
            self.wm.progress_begin(0, self.total)
        self.status(status)

    def status(self, text: str) -> None:
        if self.workspace and text:
            self.workspace.status_text_set(text)

    def fraction(self, step_fraction: float) -> None:
        if self.wm:
            self.wm.progress_update(self.done + step_fraction)

    def step(self) -> None:
        self.done += 1
        self.fraction(0.0)

    def end(self) -> None:
        if self.wm:
            self.wm.progress_end()
        if self.workspace:
            self.workspace.status_text_set(None)


@dataclass
class ImportReport:
    """What importing one file made: datablocks per kind, warnings, and where it went (notes)."""

    path: str
    counts: dict[str, int]
    warnings: list[str]
    notes: list[str]

    @property
    def summary(self) -> str:
        return f"{os.path.basename(self.path)}: {counts_text(self.counts)}"

    def __str__(self) -> str:
        return self.summary + "".join(f"\n  warning: {w}" for w in self.warnings)


@dataclass
class ExportReport:
    """What an export wrote: every path, the warnings, and what the files hold per kind of datablock."""

    paths: list[str]
    warnings: list[str]
    counts: dict[str, int] = dataclasses.field(default_factory=dict)

    @property
    def summary(self) -> str:
        written = "Wrote " + ", ".join(os.path.basename(p) for p in self.paths)
        held = counts_text(self.counts) if any(self.counts.values()) else ""
        return f"{written}: {held}" if held else written

    def __str__(self) -> str:
        return self.summary + "".join(f"\n  warning: {w}" for w in self.warnings)


def blender_side(family: registry.Family):
    """The family's Blender-side module, operators/<family name>.py."""
    return importlib.import_module(f"{__package__}.{family.name}")


def import_path(
    context,
    family: registry.Family,
    path: str,
    options,
    progress: Progress | None = None,
    part: Part | None = None,
):
    """Import one file with the family's importer; nothing is left of it when it fails. ``part``: one part
    of an import split for the batch's workers (formats/parts.py): the models whole, only that part's
    animations."""
    from .blender.build import build_scene
    from .blender.objects import scale_top_level

    importer = family.importer
    counts: dict[str, int] = {}
    warnings: list[str] = []
    notes: list[str] = []
    with rollback_on_error():
        if progress:
            progress.status(f"Importing {os.path.basename(path)}")
        try:
            loaded = importer.load(path, options, **({"part": part} if importer.shared_animations else {}))
        except FormatError as e:  # in the file itself: maybe another family's (not in a file loaded with it)
            raise (_wrong_kind(family, path, e) if e.filename == path else None) or e from e
        if progress:
            progress.step()
        # A file holding several models (an archive) loads as a list: one collection each, by its name.
        scenes = loaded if isinstance(loaded, list) else [loaded]
        for scene in scenes:
            scene.source = path
            applies = importer.applies_to_selection and importer.applies_to_selection(scene)
            if not getattr(options, "import_animations", True):
                scene.animations = []
            if applies:
                result, done = blender_side(family).apply_to_selection(context, scene, path, options)
                notes += done
            else:
                name = scene.name if isinstance(loaded, list) else os.path.splitext(os.path.basename(path))[0]
                result = build_scene(
                    scene, context, collection_name=name, progress=progress and progress.fraction, part=part
                )
                finish = getattr(blender_side(family), "after_build", None)
                if finish:
                    notes += finish(scene, result) or []
                scale_top_level([*result.armatures, *result.objects], getattr(options, "global_scale", 1.0))
            for kind, n in result.counts().items():
                counts[kind] = counts.get(kind, 0) + n
            warnings += scene.warnings
        if progress:
            progress.step()
    return ImportReport(path, counts, warnings, notes)


def _wrong_kind(family: registry.Family, path: str, error: FormatError) -> FormatError | None:
    """The error for a file another family recognises: which importer takes it (None: no other does),
    at the offset where the family's reader stopped."""
    try:
        header = registry.read_header(path)
    except OSError:
        return None
    found = next((f for f in registry.FAMILIES if f is not family and f.detect(header, path)), None)
    if found is None:
        return None
    name = os.path.basename(path)
    if found.importer is None:
        return FormatError(
            path,
            error.offset,
            f"{name} is a {found.label}: the add-on imports these with the models using them",
        )
    return FormatError(
        path, error.offset, f"{name} is a {found.label} file: use File > Import > {found.importer.menu}"
    )


def export_path(context, family: registry.Family, path: str, options, progress: Progress | None = None):
    """Export the selection with the family's exporter: every file or none. Returns an ExportReport."""
    if progress:
        progress.status(f"Exporting {os.path.basename(path)}: reading the selection")
    scene = blender_side(family).export_scene(context, path, options)
    counts = {
        "armatures": len(scene.skeletons),
        "meshes": len(scene.meshes),
        "materials": len(scene.materials),
        "images": len(scene.images),
        "actions": len(scene.animations),
    }
    if progress:
        progress.step()
        progress.status(f"Exporting {os.path.basename(path)}: writing")
    paths = family.exporter.save(scene, path, options)
    if progress:
        progress.step()
    return ExportReport(paths, scene.warnings, counts)


def included(context, meshes: list, options) -> list:
    """The meshes an export keeps under its Selected Only / Visible Only / Active Collection options
    (formats/options.py ``Included``); ExportError when they leave none of several."""
    kept = list(meshes)
    if getattr(options, "use_selection", False):
        kept = [o for o in kept if o.select_get()]
    if getattr(options, "use_visible", False):
        kept = [o for o in kept if o.visible_get()]
    if getattr(options, "use_active_collection", False):
        active = set(context.view_layer.active_layer_collection.collection.all_objects)
        kept = [o for o in kept if o in active]
    if meshes and not kept:
        raise ExportError("Selected Only, Visible Only or Active Collection leaves no mesh to export")
    return kept


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
        limits = dict(zip(("min", "max"), shown.limits, strict=True)) if shown.limits else {}
        return FloatProperty(default=field.default, **limits, **common)
    subtype = "DIR_PATH" if shown.folder else "FILE_PATH" if shown.path else "NONE"
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
        from ..ui.preferences import preferred

        values = {}
        for field in dataclasses.fields(self.options_class):
            value = getattr(self, field.name)
            if value == "":  # a path left empty: the one set once in the add-on's preferences
                value = preferred(field.name)
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
        transform = panels.pop(TRANSFORM, [])
        if transform:
            panels[TRANSFORM] = transform  # the last panel, as in Blender's importers
        for panel, fields in panels.items():
            slug = panel.label.lower().replace(" ", "_")
            header, body = layout.panel(
                f"RETRO_{self.family.name}_{self.direction}_{slug}", default_closed=panel.closed
            )
            header.label(text=panel.label)
            if body:
                for field in fields:
                    self._draw_option(body, field)
                if panel is TRANSFORM:
                    body.prop(self, "axis_forward")
                    body.prop(self, "axis_up")

    def _draw_option(self, layout, field) -> None:
        shown_if = describe(field).shown_if
        if shown_if is None or getattr(self, shown_if[0]) == shown_if[1]:
            layout.prop(self, field.name)


class _Importer(_Options, ImportHelper):
    """Multi-file selection, drag-and-drop, reports and progress of every import operator."""

    files: CollectionProperty(
        type=bpy.types.OperatorFileListElement,
        description="The files to import, in the folder below",
        options={"HIDDEN", "SKIP_SAVE"},
    )
    directory: StringProperty(
        subtype="DIR_PATH", description="The folder of the files to import", options={"HIDDEN", "SKIP_SAVE"}
    )
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
        progress = Progress(context, 2)
        try:
            report = export_path(context, self.family, self.filepath, self.family_options(), progress)
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
            "filter_glob": StringProperty(
                default=_glob(extensions), description="The files the browser shows", options={"HIDDEN"}
            ),
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
    axes = [f for f in dataclasses.fields(operation.options) if f.name in AXIS_FIELDS]
    if not axes:
        return cls
    cls = orientation_helper(*(f.default for f in axes))(cls)
    for f in axes:  # Blender's helper (which keeps Forward and Up apart) gives them no tooltip
        made = cls.__annotations__[f.name]
        cls.__annotations__[f.name] = made.function(
            **{**made.keywords, "description": describe(f).description}
        )
    return cls


def _classes() -> list[type]:
    made = []
    for family in registry.FAMILIES:
        if family.importer:
            made.append(_operator(family, family.importer, _Importer, family.extensions))
        if family.exporter:
            made.append(_operator(family, family.exporter, _Exporter, family.exporter.extensions))
    return made


classes = _classes()
