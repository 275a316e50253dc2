"""Retro Game Models: import and export models and animations of classic games.

The package root is a Blender extension. Importing it has no side effects;
Blender calls ``register()`` when the extension is enabled.
"""

# Blender reloads the add-on by re-importing this module: keep imports lazy.


def register():
    from . import operators, ui

    operators.register()
    ui.register()


def unregister():
    from . import operators, ui

    ui.unregister()
    operators.unregister()
