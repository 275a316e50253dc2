"""Make the source checkout importable as the package ``retro_models``.

Installed, the add-on is ``bl_ext.<repo>.retro_models``; from a checkout (tests,
tools, benchmarks, batch runs with the bpy module) it is loaded under the fixed
name ``retro_models`` whatever the checkout folder is called.
"""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load():
    if "retro_models" in sys.modules:
        return sys.modules["retro_models"]
    spec = importlib.util.spec_from_file_location(
        "retro_models", ROOT / "__init__.py", submodule_search_locations=[str(ROOT)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["retro_models"] = module
    spec.loader.exec_module(module)
    return module
