"""Fixtures for gpu_operator and gpu_operator_install: the simulated GPU Operator and a clean slate per test module.

See operator_install_helpers.py for how the automation runs (ansible-playbook, least-privilege identity).
"""

from __future__ import annotations

import pytest
from operator_install_helpers import module_bed

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
    b = module_bed(testbed, tmp_path_factory.mktemp("operator-install"))
    b.clean_slate()
    try:
        yield b
    finally:
        b.clean_slate()
