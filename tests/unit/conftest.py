"""Make ``ansible_collections.gpuops.gpu_operator`` importable from this checkout for every unit test.

The collection root is build/collections (``make collection-root`` creates it; this creates the one link
the unit tests need when it does not exist yet).
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COLLECTIONS = ROOT / "build" / "collections"
LINK = COLLECTIONS / "ansible_collections" / "gpuops" / "gpu_operator"

if not LINK.exists():
    LINK.parent.mkdir(parents=True, exist_ok=True)
    LINK.symlink_to(ROOT)
if str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))
