"""Fixtures for tests that run Blender (the bpy module or a real Blender)."""

import pytest

bpy = pytest.importorskip("bpy")


@pytest.fixture(scope="session")
def addon():
    """The add-on registered once for the session (as Blender does when enabling it)."""
    import retro_models

    retro_models.register()
    yield retro_models
    retro_models.unregister()


@pytest.fixture
def empty_scene(addon):
    """A factory-empty scene with the add-on registered."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    yield bpy.context.scene


@pytest.fixture
def built(empty_scene):
    """The builder support's whole scene, built into an empty Blender scene: (scene, BuildResult)."""
    from builder_support import make_scene
    from retro_models.operators.blender.build import build_scene

    scene = make_scene()
    return scene, build_scene(scene, bpy.context, collection_name="Imported")
