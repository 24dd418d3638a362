"""Set-up shared by the benchmarks (bench/*.py import it as ``_common``; it is not a benchmark itself).

Importing it makes ``ansible_collections.gpuops.gpu_operator`` importable from this checkout (through the
build/collections link, created when missing) and the repository root importable (``tests.sim``,
``tests.integration``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLLECTIONS = ROOT / "build" / "collections"
LINK = COLLECTIONS / "ansible_collections" / "gpuops" / "gpu_operator"
if not LINK.exists():
    LINK.parent.mkdir(parents=True, exist_ok=True)
    LINK.symlink_to(ROOT)
for _path in (str(ROOT), str(COLLECTIONS)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import (  # noqa: E402
    K8sClient,
    load_configuration,
)


def parser(doc):
    """An argument parser described by the first line of ``doc``, with ``--state-dir``."""
    ap = argparse.ArgumentParser(description=doc.split("\n", 1)[0])
    ap.add_argument("--state-dir", help="a running test bed (python -m tests.sim up --profile scale-1000)")
    return ap


@contextlib.contextmanager
def scale_testbed(state_dir=None, profile="scale-1000"):
    """The state directory of a running test bed: ``state_dir`` when given (left running), else a ``profile``
    test bed started in a temporary directory and stopped when the block ends."""
    if state_dir:
        yield state_dir
        return
    owned = tempfile.mkdtemp(prefix="gpuops-bench-")
    state_dir = os.path.join(owned, "bed")
    print("starting %s test bed in %s ..." % (profile, state_dir), flush=True)
    subprocess.run(
        [sys.executable, "-m", "tests.sim", "up", "--profile", profile, "--state-dir", state_dir],
        cwd=ROOT,
        check=True,
        timeout=1800,
    )
    try:
        yield state_dir
    finally:
        subprocess.run(
            [sys.executable, "-m", "tests.sim", "down", "--state-dir", state_dir],
            cwd=ROOT,
            check=False,
            timeout=300,
        )


def new_client(kubeconfig):
    """The collection's K8sClient for ``kubeconfig``, with a timeout long enough for 1,000-node LISTs."""
    return K8sClient(load_configuration(kubeconfig=kubeconfig), timeout=120)
