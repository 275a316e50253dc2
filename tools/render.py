"""Pictures of imported models, made headless with the add-on through the bpy module.

    python tools/render.py demo [--out build/demo]           # `make demo`
    python tools/render.py j3d --out docs MODEL [MODEL …]     # the README's J3D pictures
    python tools/render.py tamsoft-pair [--out build/tamsoft] # the README's Tamsoft picture

- demo: writes the demo creature (demo.tmd / .tkl / .tml, by the project's own writers), imports
  it, saves demo.blend and renders demo.png in the middle of its first animation.
- j3d: each MODEL is a .bmd/.bdl (compressed or not) or ``ARCHIVE:NAME`` for a model inside an
  archive (``SunshineMario.arc:ma_mdl1``), imported alone without its animations (the bind pose)
  and rendered with back faces culled (a face wound the wrong way shows as a hole) into
  ``j3d_<name>.png``.
- tamsoft-pair: writes the model + texture CAT pair of tests/formats/tamsoft/texture_pair.py
  (laid out as the measured real pair), imports the model CAT and renders tamsoft_pair.png.

Every picture: Workbench in texture colours, a camera framing the visible meshes.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import addon_package  # noqa: E402


def frame_camera(scene, objects) -> None:
    """Point a new camera at the bounding box of ``objects`` from the front-left, slightly above,
    clipping near and far enough for map-sized models too."""
    import bpy
    from mathutils import Vector

    corners = [o.matrix_world @ Vector(c) for o in objects for c in o.bound_box]
    lo = Vector(min(c[i] for c in corners) for i in range(3))
    hi = Vector(max(c[i] for c in corners) for i in range(3))
    centre, radius = (lo + hi) / 2, max((hi - lo).length / 2, 1e-3)
    cam = bpy.data.objects.new("Preview camera", bpy.data.cameras.new("Preview camera"))
    scene.collection.objects.link(cam)
    direction = Vector((math.cos(math.radians(-60)), math.sin(math.radians(-60)), 0.45)).normalized()
    cam.location = centre + direction * radius * 3.2
    cam.rotation_euler = (centre - cam.location).to_track_quat("-Z", "Y").to_euler()
    reach = max((cam.location - c).length for c in corners)
    cam.data.clip_start, cam.data.clip_end = reach / 1000, reach * 2
    scene.camera = cam


def render(path: Path, size: tuple[int, int], light: str = "STUDIO", cull: bool = False) -> Path:
    """Render the current scene's visible meshes into ``path``."""
    import bpy

    scene = bpy.context.scene
    bpy.context.view_layer.update()  # meshes follow their armature object's axis conversion
    frame_camera(scene, [o for o in scene.objects if o.type == "MESH" and o.visible_get()])
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.display.shading.color_type = "TEXTURE"
    scene.display.shading.light = light
    scene.display.shading.show_backface_culling = cull
    scene.render.resolution_x, scene.render.resolution_y = size
    scene.render.resolution_percentage = 100
    scene.render.filepath = str(path)
    bpy.ops.render.render(write_still=True)
    return path


def demo(args, addon) -> list[Path]:
    import bpy
    import demo_creature

    paths = {}
    for name, data in demo_creature.demo_files().items():
        paths[name] = args.out / name
        paths[name].write_bytes(data)
    print(addon.import_file(bpy.context, str(paths["demo.tmd"]), lods="FIRST"))
    scene = bpy.context.scene
    armature = next(o for o in scene.objects if o.type == "ARMATURE")
    start, end = armature.animation_data.action.frame_range
    scene.frame_set(int((start + end) / 2))
    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", "SUN"))
    sun.rotation_euler = (math.radians(40), 0, math.radians(30))
    scene.collection.objects.link(sun)
    picture = render(args.out / "demo.png", args.size)
    blend = args.out / "demo.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    return [blend, picture]


def j3d(args, addon) -> list[Path]:
    import bpy

    written = []
    for spec in args.models:
        path, _, model = spec.partition(":") if not os.path.exists(spec) else (spec, "", "")
        bpy.ops.wm.read_factory_settings(use_empty=True)
        print(addon.import_file(bpy.context, os.path.abspath(path), model=model, import_animations=False))
        name = model or Path(path).stem
        written.append(render(args.out / f"j3d_{name}.png", args.size, cull=True))
    return written


def tamsoft_pair(args, addon) -> list[Path]:
    import bpy

    sys.path.insert(0, os.path.join(HERE, "..", "tests", "formats", "tamsoft"))
    import texture_pair

    texture_pair.write_pair(args.out)
    print(addon.import_file(bpy.context, str(args.out / "pl00_head_mdl_hi.cat")))
    return [render(args.out / "tamsoft_pair.png", args.size, light="FLAT")]


# Each picture: what makes it, its default folder and size.
PICTURES = {
    "demo": (demo, "build/demo", "640x480"),
    "j3d": (j3d, "build/j3d", "480x480"),
    "tamsoft-pair": (tamsoft_pair, "build/tamsoft", "480x360"),
}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="picture", required=True)
    for name, (_, out, size) in PICTURES.items():
        command = commands.add_parser(name)
        command.add_argument("--out", default=out, help="output folder")
        command.add_argument("--size", default=size, help="picture size WxH")
        if name == "j3d":
            command.add_argument("models", nargs="+", help="model files, or ARCHIVE:NAME")
    args = parser.parse_args(argv)
    args.out = Path(args.out).resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    args.size = tuple(int(v) for v in args.size.split("x"))
    addon = addon_package.load()
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    addon.register()
    try:
        for path in PICTURES[args.picture][0](args, addon):
            print("wrote", path)
    finally:
        addon.unregister()  # the bpy 4.2 module crashes on exit while the add-on is registered
    return 0


if __name__ == "__main__":
    argv = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:]
    sys.exit(main(argv))
