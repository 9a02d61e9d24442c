"""Fixtures shared by the core tests."""

from __future__ import annotations

import sys
from pathlib import Path

# the core tests' helper modules (``plugin_site``) are importable from here
_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
