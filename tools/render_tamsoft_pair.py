"""Render the README's picture of a Tamsoft model + texture CAT pair, imported headless.

    python tools/render_tamsoft_pair.py --out build/tamsoft

Writes the pair of tests/formats/tamsoft/texture_pair.py (laid out as the measured real pair,
written by the project's writers), imports the model CAT with the add-on through the bpy module and
renders tamsoft_pair.png (Workbench, texture colours): the face texture over the grid's UVs.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "formats", "tamsoft"))
import addon_package  # noqa: E402
from demo import frame_camera  # noqa: E402


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="build/tamsoft", help="output folder")
    parser.add_argument("--size", default="480x360", help="picture size WxH")
    args = parser.parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    addon = addon_package.load()
    import bpy
    import texture_pair

    texture_pair.write_pair(out)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    addon.register()
    try:
        assert bpy.ops.import_scene.tamsoft_tmd0(filepath=str(out / "pl00_head_mdl_hi.cat")) == {"FINISHED"}
        scene = bpy.context.scene
        frame_camera(scene, [o for o in scene.objects if o.type == "MESH"])
        scene.render.engine = "BLENDER_WORKBENCH"
        scene.display.shading.color_type = "TEXTURE"
        scene.display.shading.light = "FLAT"
        width, height = (int(v) for v in args.size.split("x"))
        scene.render.resolution_x, scene.render.resolution_y = width, height
        scene.render.resolution_percentage = 100
        scene.render.filepath = str(out / "tamsoft_pair.png")
        bpy.ops.render.render(write_still=True)
        print(f"wrote {scene.render.filepath} ({math.prod((width, height))} pixels)")
    finally:
        addon.unregister()
    return 0


if __name__ == "__main__":
    argv = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:]
    sys.exit(main(argv))
