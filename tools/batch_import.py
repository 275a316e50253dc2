"""Import game model files headless, into one .blend or one .blend per file.

    python tools/batch_import.py [options] FILE_OR_GLOB [...]
    blender -b --python tools/batch_import.py -- [options] FILE_OR_GLOB [...]

Prints one summary line per file and exits non-zero when any file failed. Each file goes
through the add-on's ``import_file``, as File > Import would import it; --all-lods and
--no-animations apply to the files whose family has those options.
The first form needs the bpy module (`make test` installs it in .venv).
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import addon_package  # noqa: E402


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Import game model files into .blend files.")
    parser.add_argument("inputs", nargs="+", help="files or glob patterns (quote globs)")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--out", help="one .blend holding every imported file")
    target.add_argument("--out-dir", help="one .blend per file, named after it, in this folder")
    parser.add_argument("--no-animations", action="store_true", help="skip animations")
    parser.add_argument("--all-lods", action="store_true", help="import every level of detail")
    return parser.parse_args(argv)


def expand(patterns: list[str]) -> list[str]:
    paths: list[str] = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        paths.extend(matches or [pattern])
    return paths


def main(argv: list[str]) -> int:
    args = parse_args(argv)

    addon = addon_package.load()
    addon.register()
    try:
        return import_all(args, addon)
    finally:
        addon.unregister()  # the bpy 4.2 module crashes on exit while the add-on is registered


def options_for(path: str, args: argparse.Namespace) -> dict:
    """The command line's options that the file's family takes (only JPOG models have both)."""
    from retro_models.formats.registry import family_for

    wanted = {"import_animations": not args.no_animations, "lods": "ALL" if args.all_lods else "FIRST"}
    family = family_for(path)
    names = {f.name for f in dataclasses.fields(family.importer.options)} if family.importer else set()
    return {name: value for name, value in wanted.items() if name in names}


def import_all(args: argparse.Namespace, addon) -> int:
    import bpy

    failures = 0
    if args.out:
        bpy.ops.wm.read_factory_settings(use_empty=True)
    for path in expand(args.inputs):
        if args.out_dir:
            bpy.ops.wm.read_factory_settings(use_empty=True)
        try:
            report = addon.import_file(bpy.context, path, **options_for(path, args))
        except Exception as e:  # one bad file must not stop the batch
            failures += 1
            print(f"FAILED {path}: {e}")
            continue
        print(f"ok {report}")
        if args.out_dir:
            os.makedirs(args.out_dir, exist_ok=True)
            name = os.path.splitext(os.path.basename(path))[0] + ".blend"
            bpy.ops.wm.save_as_mainfile(filepath=os.path.abspath(os.path.join(args.out_dir, name)))
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        bpy.ops.wm.save_as_mainfile(filepath=os.path.abspath(args.out))
    print(f"{len(expand(args.inputs)) - failures} imported, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    argv = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:]
    sys.exit(main(argv))
