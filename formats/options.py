"""The options of a family's import and export, described once for the operators and for scripts.

A family's options are a dataclass: the field names are the option names (the operators'
property names and the keyword names of ``import_file`` / ``export_file``), the defaults are
the operators' defaults, and ``option()`` adds what the operators show (label, one-line
description, choices, panel). Families with an axis conversion derive their options from
``oriented(convert.AXES)``: Forward / Up, defaulting to the converter's own constant.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from .scene import axis_matrix

AXIS_FIELDS = ("axis_forward", "axis_up")
_AXES = tuple(sign + axis for sign in ("", "-") for axis in "XYZ")


@dataclass(frozen=True)
class Panel:
    """A collapsible group of options in the file browser's side panel."""

    label: str
    closed: bool = False


@dataclass(frozen=True)
class Option:
    """How the operators show one option."""

    label: str
    description: str
    # (identifier, label, description) items; a str names the function of the family's
    # Blender-side module (operators/<family>.py) that lists them at run time.
    choices: tuple | str = ()
    panel: Panel | None = None  # None: above the panels
    path: bool = False  # a file path: the operators resolve Blender's relative ("//") paths
    folder: bool = False  # a path to a folder (the file browser picks folders)
    shown_if: tuple[str, str] | None = None  # (option, value): drawn only while that option has that value
    maxlen: int = 0  # for text: the longest text the field takes (0: no limit)
    limits: tuple[float, float] | None = None  # for numbers: the smallest and largest value taken


def option(default, label: str, description: str, **shown) -> dataclasses.Field:
    """A dataclass field with its default and how the operators show it (see ``Option``)."""
    return field(default=default, metadata={"option": Option(label, description, **shown)})


INCLUDE = Panel("Include")
TRANSFORM = Panel(
    "Transform", closed=True
)  # Scale, then Forward / Up (drawn by Blender's orientation helper)


@dataclass
class Included:
    """A base for the options of exports that take objects: which of them to export (as glTF's and FBX's
    exports say it). The family chooses the armature and meshes; these narrow down the meshes."""

    use_selection: bool = option(
        False, "Selected Only", "Export only the meshes that are selected", panel=INCLUDE
    )
    use_visible: bool = option(
        False, "Visible Only", "Export only the meshes that are visible", panel=INCLUDE
    )
    use_active_collection: bool = option(
        False, "Active Collection", "Export only the meshes in the active collection", panel=INCLUDE
    )
    use_mesh_modifiers: bool = option(
        False,
        "Apply Modifiers",
        "Export each mesh as its modifiers leave it (Armature modifiers aside: the skin carries the pose)",
        panel=INCLUDE,
    )


def animations_option(**shown) -> dataclasses.Field:
    """The Animations toggle, the same in every family whose files hold animations."""
    return option(True, "Animations", "Import the file's animations as actions", **shown)


def texture_folder_option(**shown) -> dataclasses.Field:
    """The Texture Folder, the same in every family that looks for texture files by name; left empty,
    the operators fill it from the add-on's preferences (ui/preferences.py)."""
    return option(
        "",
        "Texture Folder",
        "A folder searched for texture files not found next to the model (empty: the add-on's preference)",
        path=True,
        folder=True,
        **shown,
    )


def describe(f: dataclasses.Field) -> Option:
    return f.metadata["option"]


def _choices(role: str) -> tuple:
    return tuple((axis, f"{axis} {role}", "") for axis in _AXES)


def oriented(axes: tuple[str, str]) -> type:
    """A base for options with the axis conversion (file → Blender); ``axes``: the default (forward, up)."""

    @dataclass
    class Orientation:
        # The import puts it in the matrices of the objects it creates at the top (armatures, meshes
        # without one), so the data keep the file's values; the export divides the world matrices it
        # reads by it (operators/blender/extract.py).
        global_scale: float = option(
            1.0,
            "Scale",
            "The size of one file unit in Blender: the import scales its objects by it, the export divides by it",
            panel=TRANSFORM,
            limits=(0.001, 1000.0),
        )
        axis_forward: str = option(
            axes[0], "Forward", "The file's axis that points forward in Blender", choices=_choices("Forward")
        )
        axis_up: str = option(
            axes[1], "Up", "The file's axis that points up in Blender", choices=_choices("Up")
        )

        def axis(self) -> np.ndarray:
            """The 4×4 matrix the converters take (file → Blender)."""
            return axis_matrix(self.axis_forward, self.axis_up)

    return Orientation


def make(options_class: type, values: dict):
    """``options_class(**values)``, naming every unknown option and every value not among the choices."""
    fields = {f.name: f for f in dataclasses.fields(options_class)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise TypeError(
            f"unknown option(s) {', '.join(unknown)}; the options are {', '.join(sorted(fields))}"
        )
    for name, value in values.items():
        choices = describe(fields[name]).choices
        if isinstance(choices, tuple) and choices and value not in [c[0] for c in choices]:
            raise ValueError(f"option {name} is {value!r}: choose one of {', '.join(c[0] for c in choices)}")
        limits = describe(fields[name]).limits
        if limits and not limits[0] <= value <= limits[1]:
            raise ValueError(f"option {name} is {value!r}: choose a value from {limits[0]} to {limits[1]}")
    return options_class(**values)
