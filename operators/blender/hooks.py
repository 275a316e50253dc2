"""Family looks the builder does not know: small functions a family registers, called while it builds.

The builder makes what every format shares; a family whose files mean more (a colour register
the shading should show, a blend mode) registers a hook in its own module, which registers
itself when imported, the way Blender's glTF importer keeps each extension in its own module.
The builder never learns a family name.

Material-channel hooks: ``@material_channel(pattern)`` registers ``hook(material, channel,
match)``, called for every material channel whose ``Channel.path`` matches ``pattern`` in full
(``match``: the ``re.Match``), once the channel's F-curves exist (a custom property the channel
keys is on the node tree) and before its keys are written. Hooks run in the order they were
registered; registering a function again (a reloaded module) replaces it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ...formats.scene import Channel

MaterialChannelHook = Callable[[object, Channel, re.Match], None]

# "module.function" → (compiled pattern, hook)
_material_channel_hooks: dict[str, tuple[re.Pattern, MaterialChannelHook]] = {}


def material_channel(pattern: str) -> Callable[[MaterialChannelHook], MaterialChannelHook]:
    """Decorator: call the function for the material channels whose path matches ``pattern`` in full."""
    compiled = re.compile(pattern)

    def register(hook: MaterialChannelHook) -> MaterialChannelHook:
        _material_channel_hooks[f"{hook.__module__}.{hook.__qualname__}"] = (compiled, hook)
        return hook

    return register


def run_material_channel_hooks(material, channel: Channel) -> None:
    """Call the hooks registered for ``channel``'s path (``material``: the Blender material it animates)."""
    for pattern, hook in _material_channel_hooks.values():
        match = pattern.fullmatch(channel.path)
        if match is not None:
            hook(material, channel, match)
