"""The README's screenshots of the add-on in a real Blender: the import dialog and the Retro sidebar.

    blender --window-geometry 0 0 1280 800 --python tools/screenshot.py -- MODEL \
        [--option NAME=VALUE …] [--out docs/images]

It needs Blender with a window (the bpy module has none), ImageMagick's ``import`` and the
extension installed and enabled (``python tools/extension.py build``, then ``blender --command
extension install-file -r user_default -e build/retro_models-<version>.zip``). Without a display
or a GPU, Xvfb and Mesa's software OpenGL do: ``xvfb-run -s "-screen 0 1280x800x24" env
LIBGL_ALWAYS_SOFTWARE=1 blender …``. docs/screenshots.md tells how the README's were made
(Blender 4.3 from Debian in a chroot; MODEL ``SunshineMario.arc`` of the corpus with
``--option model=ma_mdl1``).

MODEL is a file any of the add-on's importers reads; each ``--option`` is an option of its import
(a Python literal, or text). The script imports MODEL with its family's import operator, then,
from timers once the window is drawn, writes into the ``--out`` folder:
- sidebar.png: the window, the model's largest mesh active and selected, the 3D view in texture
  colours and its sidebar (N) on the Retro tab;
- import_dialog.png: the file browser window of File > Import for the family (opened with
  INVOKE_DEFAULT, as the menu does) in MODEL's folder, the options in its side panel.
Then Blender quits, keeping the preferences it had (the script changes some for the pictures).
"""

from __future__ import annotations

import argparse
import ast
import importlib
import math
import os
import subprocess
import sys

import bpy
from mathutils import Euler

SETTLE = 1.5  # seconds for the window to redraw (software OpenGL is slow) before a screenshot


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="blender --python tools/screenshot.py --")
    parser.add_argument("model", help="a model file the add-on imports")
    parser.add_argument("--out", default="docs/images", help="the folder of the pictures")
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an import option, set for the import and shown in the dialog (e.g. model=ma_mdl1)",
    )
    argv = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else []
    return parser.parse_args(argv)


def _value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def addon():
    """The installed extension's package (bl_ext.<repository>.retro_models)."""
    name = next(n for n in bpy.context.preferences.addons.keys() if n.rpartition(".")[2] == "retro_models")
    return importlib.import_module(name)


def area_of(kind: str) -> dict:
    """A context override for the first area of ``kind`` in any window (the file browser opens its own)."""
    for window in bpy.context.window_manager.windows:
        for area in window.screen.areas:
            if area.type == kind:
                region = next(r for r in area.regions if r.type == "WINDOW")
                return {"window": window, "area": area, "region": region}
    raise LookupError(f"no {kind} area is open")


def screenshot(path: str, window=None) -> None:
    """The X screen, or one window of Blender's, by ImageMagick's ``import``: Blender's own
    screen.screenshot reads back a black picture under Mesa's software OpenGL."""
    crop = []
    if window is not None:  # Blender counts y from the screen's bottom, X from its top
        top = bpy.context.window_manager.windows[0].height - window.y - window.height
        crop = ["-crop", f"{window.width}x{window.height}+{window.x}+{top}", "+repage"]
    subprocess.run(["import", "-window", "root", *crop, path], check=True)
    print(f"wrote {path}")


def steps(args):
    """The work, a step per timer call; each yield is the seconds to wait before the next."""
    bpy.context.preferences.use_preferences_save = False  # what it changes below stays in this run
    bpy.context.preferences.view.show_splash = False
    bpy.context.preferences.system.use_region_overlap = False  # View All frames beside the sidebar
    path = os.path.abspath(args.model)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    importer = addon().formats.registry.family_for(path).importer
    category, name = importer.idname.split(".")
    operator = getattr(getattr(bpy.ops, category), name)
    options = {k: _value(v) for k, v in (o.split("=", 1) for o in args.option)}
    view = area_of("VIEW_3D")
    space = view["area"].spaces.active

    with bpy.context.temp_override(**view):
        for obj in list(bpy.data.objects):  # the startup file's cube, camera and light
            bpy.data.objects.remove(obj)
        operator(filepath=path, **options)
    space.show_region_ui = True
    yield SETTLE

    # The largest mesh of the model active and selected (the sidebar follows the selection), its
    # textures shown, the sidebar on the Retro tab.
    mesh = max((o for o in bpy.data.objects if o.type == "MESH"), key=lambda o: len(o.data.vertices))
    bpy.context.view_layer.objects.active = mesh
    mesh.select_set(True)
    space.shading.type = "SOLID"
    space.shading.color_type = "TEXTURE"
    space.overlay.show_floor = space.overlay.show_axis_x = space.overlay.show_axis_y = False
    space.overlay.show_outline_selected = False
    size = max(max(o.dimensions) for o in bpy.data.objects if o.type == "MESH")
    space.clip_start, space.clip_end = size / 1000, size * 100  # games measure in cm, or in m…
    space.region_3d.view_perspective = "PERSP"
    space.region_3d.view_rotation = Euler((math.radians(75), 0, math.radians(35))).to_quaternion()
    with bpy.context.temp_override(**view):
        bpy.ops.view3d.view_all()
    sidebar = next(r for r in view["area"].regions if r.type == "UI")
    sidebar.active_panel_category = "Retro"
    sidebar.tag_redraw()
    yield SETTLE * 2
    screenshot(os.path.join(out, "sidebar.png"))

    # File > Import for the family, in the model's folder, as the menu opens it.
    with bpy.context.temp_override(**view):
        operator("INVOKE_DEFAULT", directory=os.path.dirname(path) + os.sep, **options)
    yield SETTLE
    browser = area_of("FILE_BROWSER")
    browser["area"].spaces.active.params.filename = os.path.basename(path)
    yield SETTLE * 2
    screenshot(os.path.join(out, "import_dialog.png"), browser["window"])
    with bpy.context.temp_override(**browser):
        bpy.ops.file.cancel()
    yield SETTLE
    with bpy.context.temp_override(window=view["window"]):
        bpy.ops.wm.quit_blender()


def main() -> None:
    work = steps(arguments())

    def step():
        try:
            return next(work)
        except StopIteration:
            return None
        except Exception:
            import traceback

            traceback.print_exc()
            os._exit(1)

    bpy.app.timers.register(step, first_interval=SETTLE)


main()
