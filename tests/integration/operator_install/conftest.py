"""Fixtures for gpu_operator and gpu_operator_install: the simulated GPU Operator and a clean slate per test module.

See operator_install_helpers.py for how the automation runs (ansible-playbook, least-privilege identity).
"""

from __future__ import annotations

import site
from pathlib import Path

import pytest
from operator_install_helpers import PLAYBOOK, REPO_ROOT, Bed

from tests.integration import simop_helpers
from tests.sim import testbed as tb


@pytest.fixture(scope="module")
def simulated_operator(testbed, tmp_path_factory):
    """The simulated GPU Operator: the bed's own when it runs one, else one started for this module (a longer-lived
    one would run beside the controllers other test directories start)."""
    st = tb.State(testbed.state_dir).load()
    with simop_helpers.simulated_operator(st, testbed.kubeconfig, tmp_path_factory.mktemp("operator-install-simop")):
        yield


@pytest.fixture(scope="module")
def bed(testbed, simulated_operator, tmp_path_factory):
    """A clean slate (no release, no operator CRDs) at the start and the end of each test module."""
    work = tmp_path_factory.mktemp("operator-install")
    link = work / "collections" / "ansible_collections" / "gpuops" / "gpu_operator"
    link.parent.mkdir(parents=True)
    link.symlink_to(REPO_ROOT)
    # the role uses kubernetes.core (from the `ansible` package in this virtualenv)
    core = [Path(p) / "ansible_collections" / "kubernetes" / "core" for p in site.getsitepackages()][0]
    (link.parent.parent / "kubernetes").mkdir()
    (link.parent.parent / "kubernetes" / "core").symlink_to(core)
    (work / "play.yml").write_text(PLAYBOOK)
    b = Bed(testbed, work)
    b.clean_slate()
    try:
        yield b
    finally:
        b.clean_slate()
