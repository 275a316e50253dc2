"""The batch import from a source checkout, with the bpy module (the installed extension has it as
``blender -b -c retro_import``; see operators/batch.py):

    python tools/batch_import.py [options] INPUT...
    blender -b --factory-startup --python tools/batch_import.py -- [options] INPUT...
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import addon_package  # noqa: E402

if __name__ == "__main__":
    argv = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:]
    addon_package.load()
    from retro_models.operators import batch

    sys.exit(batch.main(argv))
