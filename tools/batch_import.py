"""The batch import from a source checkout, with the bpy module (the installed extension has it as
``blender -b -c retro_import``; see operators/batch.py):

    python tools/batch_import.py [options] INPUT...
    blender -b --factory-startup --python tools/batch_import.py -- [options] INPUT...
"""

import os
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import addon_package  # noqa: E402


def load_batch():
    """operators/batch.py without running the operators package's __init__: its modules import bpy (a
    second and a half), and this process only plans; the workers, which import, start meanwhile."""
    if "bpy" not in sys.modules and "retro_models.operators" not in sys.modules:
        operators = types.ModuleType("retro_models.operators")
        operators.__path__ = [str(addon_package.ROOT / "operators")]
        sys.modules[operators.__name__] = operators
    from retro_models.operators import batch

    return batch


if __name__ == "__main__":
    argv = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:]
    addon_package.load()
    sys.exit(load_batch().main(argv))
