"""Render the README's pictures of J3D models, imported headless with the add-on.

    python tools/render_j3d.py --out docs MODEL [MODEL …]

Each MODEL is a .bmd/.bdl (compressed or not) or ``ARCHIVE:NAME`` for a model inside an archive
(``SunshineMario.arc:ma_mdl1``). Each is imported alone (File > Import > J3D model, without its
animations: the bind pose) and rendered with Workbench in texture colours, back faces culled (a
face wound the wrong way shows as a hole), into ``<out>/j3d_<name>.png``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import addon_package  # noqa: E402
from demo import frame_camera  # noqa: E402


def render(bpy, addon, spec: str, out: Path, size: tuple[int, int]) -> Path:
    from mathutils import Vector

    path, _, model = spec.partition(":") if not os.path.exists(spec) else (spec, "", "")
    name = model or Path(path).stem
    bpy.ops.wm.read_factory_settings(use_empty=True)
    report = addon.import_file(bpy.context, os.path.abspath(path), model=model, animations=False)
    print(report)
    scene = bpy.context.scene
    bpy.context.view_layer.update()  # the meshes follow the armature object's axis conversion
    meshes = [o for o in scene.objects if o.type == "MESH" and not o.hide_render]
    frame_camera(scene, meshes)
    camera = scene.camera.location
    reach = max((camera - o.matrix_world @ Vector(c)).length for o in meshes for c in o.bound_box)
    scene.camera.data.clip_start, scene.camera.data.clip_end = reach / 1000, reach * 2  # map-sized models too
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.display.shading.color_type = "TEXTURE"
    scene.display.shading.light = "STUDIO"
    scene.display.shading.show_backface_culling = True
    scene.render.film_transparent = False
    scene.render.resolution_x, scene.render.resolution_y = size
    scene.render.resolution_percentage = 100
    scene.render.filepath = str(out / f"j3d_{name}.png")
    bpy.ops.render.render(write_still=True)
    return Path(scene.render.filepath)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", help="model files, or ARCHIVE:NAME")
    parser.add_argument("--out", default="build/j3d", help="output folder")
    parser.add_argument("--size", default="480x480", help="picture size WxH")
    args = parser.parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    size = tuple(int(v) for v in args.size.split("x"))
    addon = addon_package.load()
    import bpy

    addon.register()
    try:
        for spec in args.models:
            print("wrote", render(bpy, addon, spec, out, size))
    finally:
        addon.unregister()
    return 0


if __name__ == "__main__":
    argv = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:]
    sys.exit(main(argv))
