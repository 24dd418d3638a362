"""Fixtures for the collection's DRA specs on the ci-dra bed (the session fixture ``dra`` of
tests/integration/conftest.py): the modules run through ansible-playbook as the least-privilege identity. The
simulated driver's faults are in dra_faults.py."""

from __future__ import annotations

import pytest

from tests.integration.helpers import module_runner


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
