"""Makes the hand-built fixtures (ttyd_fixtures.py) importable by the tests of this folder."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
