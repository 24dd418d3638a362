# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Make ``ansible_collections.gpuops.gpu_operator`` importable here: the tests evaluate the baseline's cluster
checks in-process over what gpu_preflight_info read from the test bed."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
COLLECTIONS = ROOT / "build" / "collections"
LINK = COLLECTIONS / "ansible_collections" / "gpuops" / "gpu_operator"

if not LINK.exists():
    LINK.parent.mkdir(parents=True, exist_ok=True)
    LINK.symlink_to(ROOT)
if str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))
