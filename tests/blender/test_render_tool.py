"""`make demo` and the README's pictures (tools/render.py) run end to end: files written, imported
with the add-on, rendered."""

import subprocess
import sys

import bpy
from support import ROOT, corpus_file

TOOL = ROOT / "tools" / "render.py"
PNG = b"\x89PNG\r\n\x1a\n"


def render(picture: str, out, size: str, *models) -> None:
    done = subprocess.run(
        [sys.executable, str(TOOL), picture, "--out", str(out), "--size", size, *map(str, models)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_demo_writes_the_creature_a_blend_and_a_picture(tmp_path):
    render("demo", tmp_path, "48x32")
    assert {"demo.tmd", "demo.tkl", "demo.tml", "demo.blend", "demo.png"} <= {
        p.name for p in tmp_path.iterdir()
    }
    assert (tmp_path / "demo.png").read_bytes().startswith(PNG)
    with bpy.data.libraries.load(str(tmp_path / "demo.blend")) as (source, _):
        assert source.armatures and source.meshes and source.actions


def test_tamsoft_pair_picture(tmp_path):
    render("tamsoft-pair", tmp_path, "48x32")
    assert (tmp_path / "tamsoft_pair.png").read_bytes().startswith(PNG)


def test_j3d_picture(tmp_path):
    render("j3d", tmp_path, "32x32", corpus_file("j3d-models/ba.bdl"))
    assert (tmp_path / "j3d_ba.png").read_bytes().startswith(PNG)
