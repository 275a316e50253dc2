"""Shared test set-up: the add-on is importable as ``retro_models`` everywhere.

Format-layer tests never import bpy. Blender-side tests (tests/blender) use the
pinned bpy module, or a real Blender through pytest-blender; the same tests run
both ways.
"""

import os
import tempfile

import addon_package
from hypothesis import settings

# Keep Blender away from the user's own configuration (must precede `import bpy`).
os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="retro_models_user_"))

addon_package.load()

# The same code gets the same verdict: property tests use fixed examples unless
# HYPOTHESIS_PROFILE=random asks for a fresh search.
settings.register_profile("fixed", derandomize=True)
settings.register_profile("random")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fixed"))
