"""The real sample files: byte-exact round trips, scene round trips, inspection."""

import importlib

import numpy as np
import pytest
import support
from retro_models.formats.errors import FormatError
from retro_models.formats.j3d import bck, convert, evaluate, inspect

ANIMATIONS = [
    p for p in support.corpus_files("j3d/*") if p.suffix in (".bck", ".btk", ".brk", ".btp", ".bpk")
]
pytestmark = pytest.mark.corpus


def module_of(path):
    return importlib.import_module(f"retro_models.formats.j3d.{path.suffix[1:]}")


def joint_names(model):
    return [f"joint{i}" for i in range(model.joint_count)] if isinstance(model, bck.BCK) else None


@pytest.mark.parametrize("path", ANIMATIONS, ids=lambda p: p.name)
def test_round_trip(path):
    data = path.read_bytes()
    module = module_of(path)
    assert module.write(module.read(data, path.name)) == data


@pytest.mark.parametrize("path", ANIMATIONS, ids=lambda p: p.name)
def test_scene_round_trip_is_exact_with_or_without_origins(path):
    """Unedited channels keep their stored tracks; re-encoded from their keys alone they find runs
    the banks already hold (nothing appended) and play the same."""
    data = path.read_bytes()
    module = module_of(path)
    model = module.read(data, path.name)
    names = joint_names(model)
    scene = convert.to_scene(model, names, path.stem)
    assert module.write(convert.from_scene(scene, joint_names=names)) == data
    for channel in scene.animations[0].channels:
        channel.origin = None
    rebuilt = module.read(module.write(convert.from_scene(scene, joint_names=names)))
    assert len(module.write(rebuilt)) == len(data)
    frames = np.linspace(-1, model.length + 1, 301)
    expected, found = evaluate.evaluate(model, frames), evaluate.evaluate(rebuilt, frames)
    for key in expected if isinstance(expected, dict) else [None]:
        assert np.array_equal(expected[key] if key else expected, found[key] if key else found)


@pytest.mark.parametrize("path", ANIMATIONS, ids=lambda p: p.name)
def test_rebuilt_files_play_the_same(path):
    model = module_of(path).read(path.read_bytes(), path.name)
    names = joint_names(model)
    scene = convert.to_scene(model, names)
    scene.animations[0].extras = {}
    for channel in scene.animations[0].channels:
        channel.extras = {k: v for k, v in channel.extras.items() if k in ("empty", "center")}
    rebuilt = module_of(path).read(module_of(path).write(convert.from_scene(scene, joint_names=names)))
    frames = np.linspace(-1, model.length + 1, 301)
    expected, found = evaluate.evaluate(model, frames), evaluate.evaluate(rebuilt, frames)
    for key in expected if isinstance(expected, dict) else [None]:
        assert np.allclose(expected[key] if key else expected, found[key] if key else found, atol=1e-4)


def test_rebuilt_banks_are_shared_like_the_originals():
    """Scale and translation banks (f32, nothing lost to rounding) come out identical."""
    model = bck.read(support.corpus_file("j3d/monl_a_clap1.bck").read_bytes())
    scene = convert.to_scene(model, joint_names(model))
    scene.animations[0].extras = {}
    for channel in scene.animations[0].channels:
        channel.extras = {}
    rebuilt = convert.from_scene(scene, joint_names=joint_names(model))
    assert rebuilt.scale_bank.tobytes() == model.scale_bank.astype(np.float32).tobytes()
    assert rebuilt.translation_bank.tobytes() == model.translation_bank.astype(np.float32).tobytes()
    assert rebuilt.rotation_frac == model.rotation_frac


def test_known_contents():
    angry = bck.read(support.corpus_file("j3d/angrydemo.bck").read_bytes())
    assert (angry.joint_count, angry.length, angry.rotation_frac) == (46, 315, 2)
    assert set(np.unique(angry.tracks["mode"]).tolist()) == {0, 1}  # both tangent modes in one file
    from retro_models.formats.j3d import btk

    daisy = btk.read(support.corpus_file("j3d/daisy_sky.btk").read_bytes())
    assert daisy.gaps is not None and daisy.gaps[-1] == b"\0\0\xff\xff"  # an unusual section end
    assert len(daisy.framing.trailer) == 8


@pytest.mark.parametrize("path", support.corpus_files("j3d/*"), ids=lambda p: p.name)
def test_inspect(path):
    data = path.read_bytes()
    assert inspect.detect(data, path.name)
    text = inspect.summarize(data, path.name)
    assert path.name in text and "sections:" in text


def test_inspect_texts():
    text = inspect.summarize(support.corpus_file("j3d/driver.bmd").read_bytes(), "driver.bmd")
    assert "materials: mario_all_tx, mario_eye_tx" in text and "CMPR 256×128" in text
    text = inspect.summarize(support.corpus_file("j3d/angrydemo.bck").read_bytes(), "angrydemo.bck")
    assert "joints: 46" in text and "length 315 frames" in text
    assert not inspect.detect(b"RIFF", "x.wav")
    with pytest.raises(FormatError):
        inspect.summarize(b"J3D1" + bytes(4), "short.bck")
