"""Validate or build the extension with the tool that ships inside the bpy wheel.

Usage: python tools/extension.py validate
       python tools/extension.py build [--output-dir build]

No Blender executable is needed: the extension CLI (blender_ext.py) runs in
plain Python next to the bpy module.
"""

import argparse
import glob
import os
import subprocess
import sys
import sysconfig

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def bpy_scripts() -> str:
    found = glob.glob(os.path.join(sysconfig.get_paths()["platlib"], "bpy", "*", "scripts"))
    if not found:
        sys.exit("the bpy module is not installed in this Python")
    return found[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["validate", "build"])
    parser.add_argument("--output-dir", default=os.path.join(ROOT, "build"))
    args = parser.parse_args()
    scripts = bpy_scripts()
    cli = os.path.join(scripts, "addons_core", "bl_pkg", "cli", "blender_ext.py")
    tags = os.path.join(scripts, "modules", "_bpy_internal", "extensions", "tags.py")
    if args.command == "validate":
        cmd = [sys.executable, cli, "validate", "--valid-tags", tags, ROOT]
    else:
        os.makedirs(args.output_dir, exist_ok=True)
        cmd = [
            sys.executable,
            cli,
            "build",
            "--valid-tags",
            tags,
            "--source-dir",
            ROOT,
            "--output-dir",
            args.output_dir,
        ]
    return subprocess.call(cmd)


if __name__ == "__main__":
    sys.exit(main())
