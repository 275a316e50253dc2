"""The add-on as Blender sees it: manifest, built zip, install, register cycles."""

import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import bpy
import pytest
from demo_creature import demo_files

ROOT = Path(__file__).resolve().parents[2]

# Every operator the add-on registers, by its Python type name.
OPERATOR_TYPES = (
    "IMPORT_SCENE_OT_toshi_tmd",
    "EXPORT_SCENE_OT_toshi_tmd",
    "RETRO_MODELS_OT_toshi_load_tkl",
    "IMPORT_SCENE_OT_tamsoft_tmd0",
    "EXPORT_SCENE_OT_tamsoft_tmd0",
    "IMPORT_SCENE_OT_j3d_animation",
    "IMPORT_SCENE_OT_tertius_tmrf",
    "EXPORT_SCENE_OT_tertius_tmrf",
    "IMPORT_SCENE_OT_ttyd_model",
    "EXPORT_SCENE_OT_ttyd_model",
    "RETRO_MODELS_OT_use_animation",
)


def _run_blender_script(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh Blender: the bpy module's Python, or the real Blender binary."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(code))
    if bpy.app.binary_path and Path(bpy.app.binary_path).name.startswith("blender"):
        cmd = [
            bpy.app.binary_path,
            "-b",
            "--factory-startup",
            "--python-exit-code",
            "1",
            "--python",
            str(script),
        ]
    else:
        cmd = [sys.executable, str(script)]
    env = {"BLENDER_USER_RESOURCES": str(tmp_path / "user"), "PATH": "/usr/bin:/bin"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def built_zip(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("build")
    tool = ROOT / "tools" / "extension.py"
    done = subprocess.run(
        [sys.executable, str(tool), "build", "--output-dir", str(out)], capture_output=True, text=True
    )
    if "bl_pkg" in done.stderr and "not installed" in done.stderr:
        pytest.skip("the extension tool of the bpy wheel is not available in this Python")
    assert done.returncode == 0, done.stdout + done.stderr
    (zip_path,) = out.glob("retro_models-*.zip")
    return zip_path


def test_zip_leaves_out_development_files(built_zip):
    names = zipfile.ZipFile(built_zip).namelist()
    assert "blender_manifest.toml" in names and "__init__.py" in names
    assert any(n.startswith("formats/") for n in names)
    assert not [
        n for n in names if n.startswith(("tests/", "bench/", "tools/", ".ci/")) or "__pycache__" in n
    ]


def test_install_zip_enables_operators_and_the_python_entry(built_zip, tmp_path):
    for name, data in demo_files().items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "out").mkdir()
    done = _run_blender_script(
        f"""
        import bpy
        bpy.ops.extensions.package_install_files(
            filepath={str(built_zip)!r}, repo="user_default", enable_on_install=True)
        import addon_utils
        enabled = [m.__name__ for m in addon_utils.modules() if addon_utils.check(m.__name__)[1]]
        assert "bl_ext.user_default.retro_models" in enabled, enabled
        missing = [t for t in {OPERATOR_TYPES!r} if not hasattr(bpy.types, t)]
        assert not missing, missing
        print("INSTALLED-OK")

        from bl_ext.user_default import retro_models
        report = retro_models.import_file(bpy.context, {str(tmp_path / "demo.tmd")!r}, lods="ALL")
        print("IMPORTED", report.summary)
        armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
        bpy.context.view_layer.objects.active = armature
        report = retro_models.export_file(bpy.context, {str(tmp_path / "out" / "demo.tmd")!r}, family="toshi")
        print("EXPORTED", len(report.paths))
        try:
            retro_models.import_file(bpy.context, {str(tmp_path / "demo.tkl")!r})
        except retro_models.formats.errors.FormatError as e:
            print("REFUSED", e.filename)
        """,
        tmp_path,
    )
    assert "INSTALLED-OK" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    assert "IMPORTED demo.tmd: 1 armature," in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    assert "EXPORTED 3" in done.stdout and f"REFUSED {tmp_path / 'demo.tkl'}" in done.stdout, done.stdout[
        -2000:
    ]
    for name in ("demo.tmd", "demo.tkl", "demo.tml"):
        assert (tmp_path / "out" / name).read_bytes() == (tmp_path / name).read_bytes(), name


def test_register_unregister_register_leaves_nothing_behind(addon):
    def registered():
        import_menu = [f.__module__ for f in bpy.types.TOPBAR_MT_file_import._dyn_ui_initialize()]
        return (
            {t for t in OPERATOR_TYPES if hasattr(bpy.types, t)},
            sum(m.startswith("retro_models") for m in import_menu),
        )

    assert registered()[0] == set(OPERATOR_TYPES)
    first = registered()
    addon.unregister()
    try:
        assert registered() == (set(), 0)
    finally:
        addon.register()
    assert registered() == first
