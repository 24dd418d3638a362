"""Fixtures for the collection's DRA specs on the ci-dra bed (the session fixture ``dra`` of
tests/integration/conftest.py): the modules run through ansible-playbook as the least-privilege identity. The
simulated driver's faults are in dra_faults.py."""

from __future__ import annotations

import pytest

from tests.integration.dra.dra_faults import NODE_FAULTS, node_faults
from tests.integration.helpers import module_runner
from tests.integration.validate.validate_helpers import Validate
from tests.integration.workflows import Workflows


@pytest.fixture(scope="module")
def run(dra, tmp_path_factory):
    """``run(module, check=False, **args)`` -> the module's registered result (least-privilege identity)."""
    base = tmp_path_factory.mktemp("dra-modules")
    runners = {}

    def _run(module, check=False, **args):
        if module not in runners:
            runners[module] = module_runner(dra.bed, base, module)
        return runners[module](check=check, **args)

    return _run


@pytest.fixture(scope="session")
def node_fault_runs(dra, tmp_path_factory):
    """Every node fault of :data:`NODE_FAULTS` at once, and in that one window the three workflows that judge a
    node: ``validate`` (rc, report, output of the tests' site play), ``audit`` (snapshot text, Markdown, HTML) and
    ``triage`` (``{node: gpu_triage_info result}``, each given its host's NVML facts). The bed is healed after."""
    dra.wait_healthy(timeout=120)
    work = tmp_path_factory.mktemp("dra-node-faults")
    (work / "validate").mkdir()
    validate = Validate(dra.bed, work / "validate")
    workflows = Workflows(dra.bed, work)
    with node_faults(dra, NODE_FAULTS):
        return {
            "validate": validate.run(),
            "audit": workflows.audit("audit"),
            "triage": workflows.triage_nodes("triage"),
        }
