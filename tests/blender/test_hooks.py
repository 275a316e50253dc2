"""Family hooks: a material-channel hook is called for the channels whose path it names, and no others."""

import bpy
import numpy as np
from retro_models.formats import scene as sc
from retro_models.operators.blender import hooks
from retro_models.operators.blender.build import build_scene


def test_material_channel_hook_sees_its_channels_with_their_property(empty_scene, monkeypatch):
    monkeypatch.setattr(hooks, "_material_channel_hooks", dict(hooks._material_channel_hooks))
    seen = []

    @hooks.material_channel(r"glow\.(\d+)")
    def glow(material, channel, match):
        seen.append((material.name, channel.path, match[1], list(material.node_tree[channel.path])))

    times = np.array([0.0, 5.0])
    channels = [
        sc.Channel("material", "Lamp", path, times, np.array([[0.0, 1.0], [1.0, 0.5]]))
        for path in ("glow.2", "glow.x", "texture.0.translate")
    ]
    scene = sc.Scene(
        materials=[sc.Material("Lamp")], animations=[sc.Animation("pulse", channels, frame_end=5.0)]
    )
    build_scene(scene, bpy.context)
    # Called once the F-curves exist (the property is there), before the keys are written.
    assert seen == [("Lamp", "glow.2", "2", [0.0, 0.0])]


def test_registering_again_replaces_the_hook(monkeypatch):
    monkeypatch.setattr(hooks, "_material_channel_hooks", {})

    def shade(material, channel, match):
        pass

    hooks.material_channel("a")(shade)
    hooks.material_channel("b")(shade)
    assert [p.pattern for p, _ in hooks._material_channel_hooks.values()] == ["b"]
