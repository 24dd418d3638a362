"""Fixtures for the gpu_validate specs: a runner for the tests' site play on the simulated GPU Operator
(the ``gpu_operator`` fixture of tests/integration/conftest.py)."""

from __future__ import annotations

import pytest
from validate_helpers import Validate


@pytest.fixture(scope="module")
def validate(gpu_operator, testbed, tmp_path_factory):
    gpu_operator.wait_healthy(timeout=120)
    return Validate(testbed, tmp_path_factory.mktemp("validate"))
