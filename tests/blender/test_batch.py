"""The batch import (operators/batch.py): from a source checkout (tools/batch_import.py) and as the
command the installed extension registers, on a mixed folder with two worker processes."""

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import bpy
import pytest
import tmrf_fixtures
import ttyd_fixtures
from demo_creature import demo_files
from retro_models.formats.tmrf import convert, media
from retro_models.operators import batch
from retro_models.operators.blender import props
from support import ROOT
from tamsoft_fixtures import tmd0_bytes
from ttyd_support import tpl_bytes

TOOL = ROOT / "tools" / "batch_import.py"


def mixed_folder(root: Path) -> Path:
    """Models of four families, companions and textures that are not models, two models named
    ``demo`` in different folders, and an animation-only TMRF file next to its skeleton."""
    folder = root / "mixed"
    for sub in ("jpog", "tamsoft", "tertius", "ttyd"):
        (folder / sub).mkdir(parents=True)
    for name, data in demo_files().items():  # demo.tmd with its demo.tkl and demo.tml
        (folder / "jpog" / name).write_bytes(data)
    (folder / "tamsoft" / "demo.tmd").write_bytes(tmd0_bytes())
    (folder / "tertius" / "a_skeleton.tskl").write_bytes(tmrf_fixtures.full_file())
    scene = convert.to_scene(media.read(tmrf_fixtures.full_file()))
    (folder / "tertius" / "b_moves.tapk").write_bytes(
        media.write(convert.from_scene(scene, content="animations"))
    )
    (folder / "ttyd" / "c_test").write_bytes(ttyd_fixtures.build())
    (folder / "ttyd" / "c_test_tex-").write_bytes(tpl_bytes())
    return folder


def run(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True, timeout=600, env=env
    )


def blend_contents(path: Path) -> dict[str, list[str]]:
    with bpy.data.libraries.load(str(path)) as (source, _):
        return {kind: sorted(getattr(source, kind)) for kind in ("armatures", "meshes", "actions")}


def check_mixed_run(folder: Path, out: Path, output: str, summary: dict) -> None:
    lines = output.splitlines()
    skipped = {Path(f["path"]).name for f in summary["files"] if f["status"] == "skipped"}
    assert skipped == {"demo.tkl", "demo.tml", "c_test_tex-"}
    assert all(
        any(line.startswith(f"skipped {folder}") and name in line for line in lines) for name in skipped
    )
    counters = [line.split("]")[0] + "]" for line in lines if line.startswith("[")]
    assert counters == [f"[{n}/5]" for n in range(1, 6)]
    assert summary["imported"] == 5 and summary["failed"] == 0 and summary["jobs"] == 2
    by_name = {Path(f["path"]).name: f for f in summary["files"] if f["status"] == "ok"}
    # The animation-only file went onto the skeleton imported before it: actions only.
    assert by_name["b_moves.tapk"]["counts"] == {
        "armatures": 0,
        "meshes": 0,
        "materials": 0,
        "images": 0,
        "actions": 2,
    }
    assert by_name["b_moves.tapk"]["blend"] == by_name["a_skeleton.tskl"]["blend"]
    assert any("a_skeleton.tskl: 1 armature, 1 mesh" in line for line in lines)  # not "1 armatures"
    assert any(line.startswith("5 imported, 0 failed, 3 skipped") for line in lines)


def test_mixed_folder_from_the_checkout(addon, tmp_path):
    folder = mixed_folder(tmp_path)
    out = tmp_path / "out"
    done = run(folder, "--out-dir", out, "-j", "2", "--json", tmp_path / "summary.json")
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    check_mixed_run(folder, out, done.stdout, summary)
    # Two models named demo: two files, neither overwritten; one per model, the TMRF pair together.
    assert sorted(p.name for p in out.iterdir()) == [
        "a_skeleton.blend",
        "c_test.blend",
        "demo-2.blend",
        "demo.blend",
    ]
    jpog, tamsoft = (blend_contents(out / n) for n in ("demo.blend", "demo-2.blend"))
    assert len(jpog["meshes"]) == 4 and len(tamsoft["meshes"]) == 1  # JPOG: both LODs by default
    tertius = blend_contents(out / "a_skeleton.blend")
    assert len(tertius["armatures"]) == 1 and len(tertius["actions"]) == 4  # its own two and the file's two


def test_one_blend_holds_every_model(addon, tmp_path):
    folder = mixed_folder(tmp_path)
    summary = tmp_path / "summary.json"
    done = run(folder / "*" / "*", "--out", tmp_path / "all.blend", "-j", "2", "--json", summary)  # a glob
    assert done.returncode == 0, done.stdout + done.stderr
    files = json.loads(summary.read_text())["files"]
    assert {f["blend"] for f in files if f["status"] == "ok"} == {str(tmp_path / "all.blend")}
    contents = blend_contents(tmp_path / "all.blend")
    assert len(contents["armatures"]) == 4 and len(contents["meshes"]) == 7  # JPOG: both LODs
    # Every action of every part, the unused ones (other animations of a model) too.
    assert len(contents["actions"]) == sum(f["counts"].get("actions", 0) for f in files)


def test_failures_and_usage(addon, tmp_path):
    bad = tmp_path / "bad.tmd"
    bad.write_bytes(b"TMDL" + bytes(12))
    done = run(bad, "--out", tmp_path / "none.blend", "-j", "1", "--json", tmp_path / "s.json")
    assert done.returncode == 1 and "[1/1] FAILED" in done.stdout and "no .blend written" in done.stdout
    assert not (tmp_path / "none.blend").exists()
    assert json.loads((tmp_path / "s.json").read_text())["failed"] == 1
    for wrong in (
        ["--option", "no_such=1"],
        ["--option", "lods=SOME"],
        ["--option", "lods"],
        ["-j", "0"],
        [],
    ):
        done = run(*([] if not wrong else [bad]), *wrong, "--out", tmp_path / "x.blend")
        assert done.returncode == 2, (wrong, done.stdout, done.stderr)
    assert not (tmp_path / "x.blend").exists()


def test_every_import_option_is_listed_and_reachable(addon):
    import dataclasses

    from retro_models.formats import registry

    text = batch.parser().format_help()
    for family in registry.FAMILIES:
        if family.importer:
            for f in dataclasses.fields(family.importer.options):
                assert f"    {f.name}=" in text, (family.name, f.name)
    options = batch.family_options(["lods=ALL", "import_animations=no", "axis_up=Y"])
    assert options["toshi"]["lods"] == "ALL" and options["toshi"]["import_animations"] is False
    assert options["tamsoft"] == {"axis_up": "Y"} and "lods" not in options["ttyd"]


def test_plurals():
    assert batch.counts_text({"armatures": 1, "meshes": 2, "actions": 0}) == "1 armature, 2 meshes"
    assert batch.counts_text({"meshes": 1, "images": 1}) == "1 mesh, 1 image"


def test_installed_extension_registers_the_command(addon, tmp_path):
    """The built zip installed into a fresh user folder: Blender's -c handling is not part of the bpy
    module, so the test shows the command is registered (a second registration is refused with a
    warning) and calls the function registered for it, as ``blender -c retro_import`` would."""
    build = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "extension.py"),
            "build",
            "--output-dir",
            str(tmp_path / "zip"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    (package,) = (tmp_path / "zip").glob("*.zip")
    folder = mixed_folder(tmp_path)
    user = tmp_path / "user"
    env = {
        **os.environ,
        **{
            f"BLENDER_USER_{k}": str(user / k.lower())
            for k in ("RESOURCES", "SCRIPTS", "CONFIG", "EXTENSIONS")
        },
    }
    script = f"""
import sys, bpy
bpy.ops.extensions.package_install_files(filepath={str(package)!r}, repo="user_default", enable_on_install=True)
addon = sys.modules["bl_ext.user_default.retro_models"]
assert addon._cli_command is not None
probe = bpy.utils.register_cli_command("retro_import", lambda argv: 0)
bpy.utils.unregister_cli_command(probe)  # left registered, it crashes the bpy 4.2 module on exit
status = addon.operators.batch.cli({[str(folder), "--out-dir", str(tmp_path / "out"), "-j", "2", "--json", str(tmp_path / "s.json")]!r})
print("batch module:", addon.operators.batch.__name__)
sys.exit(status)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600, env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'duplicate command "retro_import"' in done.stdout + done.stderr
    assert "batch module: bl_ext.user_default.retro_models.operators.batch" in done.stdout
    check_mixed_run(folder, tmp_path / "out", done.stdout, json.loads((tmp_path / "s.json").read_text()))


def test_import_file_applies_animation_only_files_as_the_operator_does(empty_scene, tmp_path):
    import retro_models
    from retro_models.formats.errors import SelectionError

    folder = mixed_folder(tmp_path) / "tertius"
    with pytest.raises(SelectionError, match="select the armature"):
        retro_models.import_file(bpy.context, str(folder / "b_moves.tapk"))
    assert (
        not bpy.data.actions and not bpy.data.collections
    )  # nothing imported is an error, not an empty success
    retro_models.import_file(bpy.context, str(folder / "a_skeleton.tskl"))  # leaves its armature active
    before = len(bpy.data.actions)
    report = retro_models.import_file(bpy.context, str(folder / "b_moves.tapk"))
    assert report.counts["actions"] == 2 and report.counts["armatures"] == 0
    assert len(bpy.data.actions) == before + 2


def test_j3d_animations_beside_a_model_are_loaded_with_it_once(addon, tmp_path):
    """The J3D model import pairs the animations beside it that fit; the batch leaves those files to it
    instead of applying each to a model a second time (or to one it does not fit)."""
    import shutil

    from support import corpus_file

    folder = tmp_path / "models"
    folder.mkdir()
    for name in ("ba.bdl", "wait01.bck", "dead.bck"):  # wait01 fits ba; dead is another model's
        shutil.copyfile(corpus_file(f"j3d-models/{name}"), folder / name)
    summary = tmp_path / "summary.json"
    done = run(folder, "--out-dir", tmp_path / "out", "-j", "1", "--json", summary)
    assert done.returncode == 0, done.stdout + done.stderr
    files = {Path(f["path"]).name: f for f in json.loads(summary.read_text())["files"]}
    assert {n: f["status"] for n, f in files.items()} == {
        "ba.bdl": "ok",
        "wait01.bck": "skipped",
        "dead.bck": "skipped",
    }
    assert blend_contents(tmp_path / "out" / "ba.blend")["actions"] == ["wait01"]


def archive_folder(root: Path) -> Path:
    """Two archives: one of three models, one of one (all the same model: the names of their materials
    and images collide), an archive of no model, and a texture."""
    from j3d_model_fixtures import generated_bytes
    from retro_models.formats.archives import u8

    folder = root / "archives"
    folder.mkdir()
    model = generated_bytes()
    (folder / "models.arc").write_bytes(
        u8.build({"bmd/one.bmd": model, "bmd/two.bmd": model, "x/three.bmd": model})
    )
    (folder / "a_single.arc").write_bytes(u8.build({"bmd/four.bmd": model}))
    (folder / "nomodel.arc").write_bytes(u8.build({"btk/notes.txt": b"not a model"}))
    (folder / "icon.tpl").write_bytes(tpl_bytes())
    return folder


def blend_summary(path: Path) -> dict:
    """What a .blend holds, by name: its scene's collections in order with their import records (the
    names of their materials and images) and objects (type, parent, data, materials, action, vertices),
    and every action, material and image."""
    bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=False)
    try:
        return {
            "collections": [
                (
                    c.name,
                    {k: v for k, v in props.to_python(c["imported_scene"]).items() if k != "animations"},
                    sorted(
                        (
                            o.name,
                            o.type,
                            o.parent.name if o.parent else "",
                            o.data.name if o.data else "",
                            [m.name for m in getattr(o.data, "materials", [])],
                            o.animation_data.action.name
                            if o.animation_data and o.animation_data.action
                            else "",
                            len(o.data.vertices) if o.type == "MESH" else 0,
                        )
                        for o in c.all_objects
                    ),
                )
                for c in bpy.context.scene.collection.children
            ],
            **{
                kind: sorted(getattr(bpy.data, kind).keys())
                for kind in ("actions", "materials", "images", "meshes")
            },
        }
    finally:
        bpy.ops.wm.read_factory_settings(use_empty=True)


def test_archives_give_one_blend_each_the_same_with_one_worker_or_two(addon, tmp_path):
    """An archive's models import in one job (a collection each, as File > Import makes them), the job
    estimated the longest (the most bytes) first; an archive of no model found in a folder is skipped."""
    folder = archive_folder(tmp_path)
    outputs, printed = {}, {}
    for jobs in ("1", "2"):
        summary = tmp_path / f"summary{jobs}.json"
        done = run(folder, "--out-dir", tmp_path / jobs, "-j", jobs, "--json", summary)
        printed[jobs] = done.stdout
        assert done.returncode == 0, done.stdout + done.stderr
        report = json.loads(summary.read_text())
        files = {Path(f["path"]).name: f for f in report["files"]}
        assert {n: f["status"] for n, f in files.items()} == {
            "icon.tpl": "skipped",
            "models.arc": "ok",
            "a_single.arc": "ok",
            "nomodel.arc": "skipped",
        }
        assert files["nomodel.arc"]["error"] == "an archive that holds no model"
        assert files["models.arc"]["counts"]["armatures"] == 3
        assert len(report["worker_cpu_seconds"]) == int(jobs) and min(report["worker_cpu_seconds"]) > 0
        assert "2 imported, 0 failed, 2 skipped" in done.stdout
        assert sorted(p.name for p in (tmp_path / jobs).iterdir()) == ["a_single.blend", "models.blend"]
        outputs[jobs] = blend_summary(tmp_path / jobs / "models.blend")
    first = next(line for line in printed["1"].splitlines() if line.startswith("[1/2]"))
    assert "models.arc" in first  # more bytes than a_single.arc (found before it): imported first
    assert [c[0] for c in outputs["1"]["collections"]] == ["one", "two", "three"]
    assert outputs["2"] == outputs["1"]


def test_joined_imports_keep_their_records_right(addon, tmp_path):
    """--out appends each file's .blend to the first's: a material or image renamed for a name taken
    is renamed in its import's record too (the J3D export finds the model's materials by it)."""
    folder = archive_folder(tmp_path)
    done = run(folder / "models.arc", folder / "a_single.arc", "--out", tmp_path / "all.blend", "-j", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    collections = blend_summary(tmp_path / "all.blend")["collections"]
    assert [name for name, _, _ in collections] == ["one", "two", "three", "four"]
    for _, record, objects in collections:
        used = {m for *_, materials, _, _ in objects for m in materials}
        assert set(record["materials"]) == used, record
    assert collections[3][1]["materials"] != collections[0][1]["materials"]  # renamed in the join


def test_an_archive_named_on_the_command_line_with_no_model_fails(addon, tmp_path):
    folder = archive_folder(tmp_path)
    done = run(folder / "nomodel.arc", "--out-dir", tmp_path / "out", "-j", "2")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"FAILED {folder / 'nomodel.arc'}: an archive that holds no model" in done.stdout
    assert "0 imported, 1 failed, 0 skipped" in done.stdout and "no .blend written" in done.stdout
    assert not (tmp_path / "out").exists()


# -- an import split into parts -------------------------------------------------------------------

JOINTS = ["root", "arm", "hand"]  # the generated model's


def _bck(name: str, seed: int) -> bytes:
    """A BCK for the generated model, written by the project's writer: every component keyed."""
    import numpy as np
    from retro_models.formats.j3d import bck
    from retro_models.formats.j3d import convert as j3d_convert
    from retro_models.formats.scene import Animation, Channel, Scene

    rng = np.random.default_rng(seed)
    channels = [
        Channel(
            "bone", joint, path, np.array([0.0, 5.0, 10.0]), rng.normal(0.0, 0.3, (3, 1)) + (path == "scale")
        )
        for joint in JOINTS
        for path in ("scale", "rotation_euler", "location")
        for _ in range(3)
    ]
    for i, channel in enumerate(channels):
        channel.index = i % 3
    animation = Animation(name, channels, frame_end=10.0, extras={"j3d_type": "bck"})
    return bck.write(j3d_convert.from_scene(Scene(animations=[animation]), joint_names=JOINTS))


def _bpk(material: str) -> bytes:
    """A BPK keying the material colour of ``material``."""
    import numpy as np
    from retro_models.formats.j3d import bpk
    from retro_models.formats.j3d import convert as j3d_convert
    from retro_models.formats.scene import Animation, Channel, Scene

    channels = [
        Channel(
            "material", material, "color.material", np.array([0.0, 8.0]), np.array([[0.2], [0.9]]), index=i
        )
        for i in range(4)
    ]
    animation = Animation("glow", channels, frame_end=8.0, extras={"j3d_type": "bpk"})
    return bpk.write(j3d_convert.from_scene(Scene(animations=[animation])))


def model_with_animations(folder: Path) -> Path:
    """The generated model with eleven BCKs beside it and a BPK (a material animation, built by part 0
    only) named ``walk`` as the last BCK is, so that a join numbers the two names as the import does."""
    from j3d_model_fixtures import generated_bytes

    folder.mkdir()
    path = folder / "generated.bmd"
    path.write_bytes(generated_bytes())
    for n in range(10):
        (folder / f"b{n:02}.bck").write_bytes(_bck(f"b{n:02}", n))
    (folder / "walk.bck").write_bytes(_bck("walk", 10))
    (folder / "walk.bpk").write_bytes(_bpk("skin"))
    return path


def _same(a, b) -> bool:
    """Deep equality of records (dataclasses, lists, dicts, numpy arrays bit for bit)."""
    import numpy as np

    if dataclasses.is_dataclass(a):
        return type(a) is type(b) and all(
            _same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
        )
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def imported(export) -> dict:
    """What an import left in the open file, its random action groups named by their first action: every
    action (name, record, fake user), the lists tying them to the model, what each armature and material
    plays, the pose bones' rotation modes; and ``export(armature, actions)``'s bytes of each armature
    (``actions``: the names of its animations' first actions)."""
    from retro_models.operators.blender.records import read_record

    records = {a.name: read_record(a) for a in bpy.data.actions}
    named = {r.group: name for name, r in records.items() if r.primary}
    for record in records.values():
        record.group = named[record.group]
    armatures = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    return {
        "actions": [(name, records[name], bpy.data.actions[name].use_fake_user) for name in sorted(records)],
        "lists": sorted(
            (kind, owner.name, [named[g] for g in props.to_python(owner[props.ANIMATIONS])])
            for kind in ("armatures", "materials", "objects")
            for owner in getattr(bpy.data, kind)
            if props.ANIMATIONS in owner
        ),
        "scenes": sorted(
            (c.name, [named[g] for g in props.to_python(c[props.SCENE])["animations"]])
            for c in bpy.data.collections
            if props.SCENE in c
        ),
        "playing": sorted(
            (owner.name, owner.animation_data.action.name)
            for owner in [*armatures, *(m.node_tree for m in bpy.data.materials)]
            if owner.animation_data and owner.animation_data.action
        ),
        "rotation modes": sorted((o.name, [b.rotation_mode for b in o.pose.bones]) for o in armatures),
        "exports": {
            armature.name: export(
                armature, [named[g] for g in props.to_python(armature.data.get(props.ANIMATIONS, []))]
            )
            for armature in armatures
        },
    }


def assert_same_import(split: dict, whole: dict) -> None:
    assert [a[0] for a in split["actions"]] == [a[0] for a in whole["actions"]]
    for (name, record, fake), (_, expected, expected_fake) in zip(
        split["actions"], whole["actions"], strict=True
    ):
        assert fake and expected_fake, name
        assert _same(record, expected), name
    for key in ("lists", "scenes", "playing", "rotation modes", "exports"):
        assert split[key] == whole[key], key


def j3d_exports(folder: Path, pick=lambda actions: actions):
    """``imported``'s export for J3D models: the model, and each joint animation (of those ``pick`` keeps)
    as a BCK."""
    import retro_models
    from j3d_model_support import select
    from retro_models.operators.blender import compat

    def export(armature, actions) -> dict[str, bytes]:
        select(armature)
        folder.mkdir(exist_ok=True)
        retro_models.export_file(bpy.context, str(folder / "model.bmd"), family="j3d_model")
        written = {"model": (folder / "model.bmd").read_bytes()}
        for name in pick(actions):
            action = bpy.data.actions[name]
            compat.assign_action(armature, action, compat.action_slot(action))
            retro_models.export_file(bpy.context, str(folder / "animation.bck"))
            written[name] = (folder / "animation.bck").read_bytes()
        return written

    return export


def split_and_join(path: Path, family: str, count: int, folder: Path) -> list[int]:
    """The import of ``path`` in ``count`` parts, each as a batch worker builds it (part 0 last: its import
    still open at the join), joined (left open); the actions each part made."""
    from retro_models.formats.parts import Part

    folder.mkdir()
    parts = [str(folder / f"{k}.blend") for k in range(count)]
    attached, made = [None] * count, [0] * count
    for k in [*range(1, count), 0]:
        (result,) = batch.run_job(
            bpy, [str(path)], [family], batch.family_options([]), parts[k], Part(k, count)
        )
        assert result["status"] == "ok", result
        attached[k], made[k] = batch.attached(), result["counts"]["actions"]
    assert not os.path.exists(parts[0])  # saved once, joined
    with bpy.data.libraries.load(parts[1]) as (source, _):  # a later part's file: its actions alone
        assert source.actions and not (source.objects or source.meshes or source.materials)
    batch.join_parts(parts[1:], str(folder / "joined.blend"), attached)
    return made


def test_a_split_import_joined_is_the_unsplit_import(addon, tmp_path):
    """Parts of a model's import (formats/parts.py: the BCKs shared out, the BPK in part 0), each built as
    a worker builds it and joined: the same actions, records, lists, playing actions and exported bytes
    as the import in one piece; ``walk`` numbered as the import numbers it."""
    import retro_models

    path = model_with_animations(tmp_path / "model")
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    retro_models.import_file(bpy.context, str(path))
    whole = imported(j3d_exports(tmp_path / "whole"))
    assert [n for n, *_ in whole["actions"]][-2:] == ["walk", "walk.001"]  # the BCK, then the BPK
    assert len(whole["exports"]["generated"]) == 12 and "walk" in whole["exports"]["generated"]
    for count, made in ((2, [6 + 1, 5]), (3, [4 + 1, 4, 3])):
        assert split_and_join(path, "j3d_model", count, tmp_path / f"parts{count}") == made
        assert_same_import(imported(j3d_exports(tmp_path / f"split{count}")), whole)


def test_the_builder_splits_any_familys_animations(addon, tmp_path):
    """``build_scene`` with a part (a family that loads its animations whole: JPOG's demo, two bone
    animations) builds that part's share at its place; joined, the import in one piece, and its export
    the files imported."""
    import retro_models

    for name, data in demo_files().items():
        (tmp_path / name).write_bytes(data)

    exports = iter(range(9))

    def export(armature, actions) -> dict[str, bytes]:
        from j3d_model_support import select

        select(armature)
        out = tmp_path / f"out{next(exports)}"
        out.mkdir()
        report = retro_models.export_file(bpy.context, str(out / "demo.tmd"), family="toshi")
        return {os.path.basename(p): Path(p).read_bytes() for p in report.paths}

    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    retro_models.import_file(bpy.context, str(tmp_path / "demo.tmd"))
    whole = imported(export)
    assert len(whole["scenes"][0][1]) == 2
    assert whole["exports"]["demo"] == {n: (tmp_path / n).read_bytes() for n in whole["exports"]["demo"]}
    assert split_and_join(tmp_path / "demo.tmd", "toshi", 2, tmp_path / "parts") == [1, 1]
    assert_same_import(imported(export), whole)


@pytest.mark.corpus
def test_sunshine_mario_split_between_two_workers_is_the_unsplit_import(addon, tmp_path):
    """SunshineMario.arc (26 models, ma_mdl1 with 223 BCKs) with -j 2: split in two parts, joined into the
    file the import in one piece makes (every model exported, with its first and last animation)."""
    import retro_models
    from support import corpus_file

    path = corpus_file("j3d-models/SunshineMario.arc")
    summary = tmp_path / "summary.json"
    done = run(path, "--out-dir", tmp_path / "out", "-j", "2", "--json", summary)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [line.split(" ok ")[0] for line in done.stdout.splitlines() if line.startswith("[")] == ["[1/1]"]
    report = json.loads(summary.read_text())
    assert report["files"][0]["counts"]["actions"] == 296
    assert min(report["worker_cpu_seconds"]) > 5  # both workers built animations
    pick = lambda actions: actions[:1] + actions[-1:]  # noqa: E731
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "out" / "SunshineMario.blend"), load_ui=False)
    split = imported(j3d_exports(tmp_path / "split", pick))
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    retro_models.import_file(bpy.context, str(path))
    assert_same_import(split, imported(j3d_exports(tmp_path / "whole", pick)))


@pytest.mark.parametrize("damaged", ["b00.bck", "b39.bck"])
def test_a_split_import_with_a_damaged_part_fails_whole(addon, tmp_path, damaged):
    """A model with 40 BCKs is split in two with -j 2; a damaged BCK in part 0's share or part 1's fails
    the file with its error, and the worker of part 0, which waits for part 1 to join it, goes on."""
    from j3d_model_fixtures import generated_bytes

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "generated.bmd").write_bytes(generated_bytes())
    for n in range(40):
        (folder / f"b{n:02}.bck").write_bytes(_bck(f"b{n:02}", n))
    data = (folder / damaged).read_bytes()
    (folder / damaged).write_bytes(data[: len(data) // 2])  # its header whole: paired, then failing
    summary = tmp_path / "summary.json"
    done = run(folder / "generated.bmd", "--out-dir", tmp_path / "out", "-j", "2", "--json", summary)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"[1/1] FAILED {folder / 'generated.bmd'}" in done.stdout and damaged in done.stdout
    assert min(json.loads(summary.read_text())["worker_cpu_seconds"]) > 0  # both workers took a part
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_a_join_sent_to_a_worker_without_its_part_0_fails_and_writes_nothing(tmp_path):
    """A worker started anew (its predecessor died after part 0) has no part 0 open: it ends rather than
    save the later parts' actions alone as the joined file; the pool reports the job's worker gone."""
    out = tmp_path / "joined.blend"
    join = {"join": [], "first": str(tmp_path / "0.blend"), "attached": [], "blend": str(out)}
    replies = []
    batch.Pool(1).run([join], lambda job, reply: replies.append(reply))
    assert replies == [None] and not out.exists()


def test_a_job_far_longer_than_the_others_is_split_between_the_workers():
    """``split_counts``: a job above the batch's total over the workers is split into as many parts as bring
    each under it (one per worker at most, MIN_SHARED animations each); the others stay whole."""
    assert batch.split_counts([40.0, 3.0, 2.0], [237, 2, 0], 2) == [2, 1, 1]
    assert batch.split_counts([40.0, 3.0, 2.0], [237, 2, 0], 1) == [1, 1, 1]  # one worker: nothing to gain
    assert batch.split_counts([40.0, 3.0, 2.0], [237, 2, 0], 8) == [8, 1, 1]  # 40 / 8 under 45 / 8
    assert batch.split_counts([40.0, 3.0], [20, 0], 4) == [1, 1]  # too few animations for two parts
    assert batch.split_counts([20.0, 20.0], [200, 200], 2) == [1, 1]  # balanced already


def test_part_0_takes_a_workers_share_of_the_batch_and_the_join_less_the_join():
    """``first_share``: the worker of part 0 joins the parts while the others' workers take the other jobs,
    so that every worker has about the batch's total and the join over the workers to do."""
    assert batch.first_share(40.0, 45.0, 2, 2, 1.5) == (46.5 / 2 - 1.5) / 40.0
    assert batch.first_share(40.0, 40.0, 2, 2, 0.0) == 0.5  # nothing else to do: an even share
    assert batch.first_share(40.0, 41.0, 2, 2, 1.5) == 0.5  # the join longer than the others: even
    assert batch.first_share(40.0, 50.0, 4, 3, 0.0) == 1 / 3  # 12.5 s of 40 is less than an even share
    assert batch.first_share(10.0, 100.0, 2, 2, 1.0) == 1.0


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads a process's environment in /proc")
def test_workers_run_numpy_with_one_blas_thread():
    """More BLAS threads per worker only take CPU from the other workers (22 s of system time on
    SunshineMario.arc)."""
    import time

    pool = batch.Pool(1)
    proc = Path(f"/proc/{pool.processes[0].pid}")
    try:
        deadline = time.monotonic() + 30
        while b"retro_models_worker" not in (proc / "cmdline").read_bytes():  # until the worker is started
            assert time.monotonic() < deadline
            time.sleep(0.01)
        environment = (proc / "environ").read_bytes().split(b"\0")
    finally:
        pool.run([], lambda job, reply: None)  # no jobs: the worker is told to stop, and waited for
    assert b"OPENBLAS_NUM_THREADS=1" in environment and b"OMP_NUM_THREADS=1" in environment


def test_the_batchs_own_process_plans_without_bpy():
    """tools/batch_import.py loads the batch without the operators package, which imports bpy (a second
    and a half before the workers could start): the workers import, this process only plans."""
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.path.insert(0, sys.argv[1]); import addon_package, batch_import; "
            "addon_package.load(); batch = batch_import.load_batch(); batch.parser(); "
            "print(batch.__name__, 'bpy' in sys.modules)",
            str(TOOL.parent),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert loaded.stdout.split() == ["retro_models.operators.batch", "False"], loaded.stderr
