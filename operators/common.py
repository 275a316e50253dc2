"""What every import and export operator shares: file lists, reports, progress, rollback.

A family's operator only says how to turn a file into a ``Scene`` (importers)
or a ``Scene`` into files (exporters); reading, error reporting, progress and
leaving Blender untouched on failure are done here once.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import bpy
from bpy.props import CollectionProperty, StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper, axis_conversion

from ..formats.errors import RetroError
from ..formats.scene import Scene
from .blender.objects import target_armature  # noqa: F401  (operators import it from here)

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


def axis_matrix_from(op) -> list:
    """The operator's forward/up choice as the 4×4 matrix the converters take (file → Blender)."""
    import numpy as np

    return np.array(axis_conversion(from_forward=op.axis_forward, from_up=op.axis_up).to_4x4())


def write_files(files: dict[str, bytes]) -> None:
    """Write every file or none.

    Each file goes to a temporary name first; then the old files are moved
    aside and the new ones renamed into place. If any step fails, the old
    files are put back and the temporary ones removed.
    """
    suffix = f".{os.getpid()}.tmp"
    for path in files:
        if os.path.isdir(path):
            raise IsADirectoryError(errno.EISDIR, "a folder has the name of a file to write", path)
    temporary: list[str] = []
    moved: list[str] = []  # old files moved aside, restored on failure
    placed: list[str] = []
    try:
        for path, data in files.items():
            temporary.append(path + suffix)
            with open(path + suffix, "wb") as f:
                f.write(data)
        for path in files:
            if os.path.exists(path):
                os.replace(path, path + ".old" + suffix)
                moved.append(path)
            os.replace(path + suffix, path)
            placed.append(path)
    except BaseException:
        for path in placed:
            os.remove(path)
        for path in moved:
            os.replace(path + ".old" + suffix, path)
        raise
    finally:
        for temp in temporary:
            if os.path.exists(temp):
                os.remove(temp)
    for path in moved:
        os.remove(path + ".old" + suffix)


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


def summary_line(path: str, counts: dict[str, int]) -> str:
    parts = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
    return f"{os.path.basename(path)}: {parts or 'nothing imported'}"


class FileImporter(ImportHelper):
    """Mix-in for import operators: multi-file selection, drag-and-drop, reports.

    Subclasses define ``filename_ext``, ``filter_glob`` and
    ``load(context, path) -> Scene`` (and may override ``build``).
    """

    files: CollectionProperty(type=bpy.types.OperatorFileListElement, options={"HIDDEN", "SKIP_SAVE"})
    directory: StringProperty(subtype="DIR_PATH", options={"HIDDEN", "SKIP_SAVE"})

    def invoke(self, context, event):
        # Drag-and-drop sets filepath: show the options in a popup instead of the browser.
        return self.invoke_popup(context)

    def paths(self) -> list[str]:
        if self.files and self.directory:
            return [os.path.join(self.directory, f.name) for f in self.files if f.name]
        return [self.filepath]

    def load(self, context, path: str) -> Scene:
        raise NotImplementedError

    def build(self, context, scene: Scene, path: str, progress: Callable[[float], None]):
        from .blender.build import build_scene

        return build_scene(
            scene, context, collection_name=os.path.splitext(os.path.basename(path))[0], progress=progress
        )

    def execute(self, context):
        paths = self.paths()
        progress = Progress(context, 2 * len(paths))
        failed = 0
        try:
            for path in paths:
                try:
                    with rollback_on_error():
                        scene = self.load(context, path)
                        progress.step()
                        result = self.build(context, scene, path, progress.fraction)
                        progress.step()
                except (RetroError, OSError) as e:
                    failed += 1
                    self.report({"ERROR"}, str(e))
                    continue
                for warning in scene.warnings:
                    self.report({"WARNING"}, f"{os.path.basename(path)}: {warning}")
                self.report({"INFO"}, summary_line(path, result.counts()))
        finally:
            progress.end()
        return {"CANCELLED"} if failed == len(paths) else {"FINISHED"}


def draw_transform(layout, operator, panel_id: str) -> None:
    """The collapsed "Transform" section (axis conversion) every import and export operator shows."""
    header, body = layout.panel(panel_id, default_closed=True)
    header.label(text="Transform")
    if body:
        body.prop(operator, "axis_forward")
        body.prop(operator, "axis_up")


class FileExporter(ExportHelper):
    """Mix-in for export operators: object mode, error and warning reports, the written files.

    Subclasses define ``filename_ext``, ``filter_glob`` and
    ``save(context) -> (written paths, warnings)``, raising ExportError (the
    message names the object), FormatError or OSError when nothing could be written.
    """

    @classmethod
    def poll(cls, context):
        return context.mode == "OBJECT"

    def save(self, context) -> tuple[list[str], list[str]]:
        raise NotImplementedError

    def execute(self, context):
        progress = Progress(context, 1)  # the busy cursor while the files are made
        try:
            written, warnings = self.save(context)
        except (RetroError, OSError) as e:
            self.report({"ERROR"}, str(e))
            return {"CANCELLED"}
        finally:
            progress.end()
        for warning in warnings:
            self.report({"WARNING"}, warning)
        self.report({"INFO"}, "Wrote " + ", ".join(os.path.basename(p) for p in written))
        return {"FINISHED"}
