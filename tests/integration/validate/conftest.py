"""Fixtures for the gpu_validate specs: the simulated GPU Operator on the session test bed (the operator
specs' module fixture, shared from tests/integration/operator/conftest.py) and a runner for the tests' site play."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

OPERATOR_DIR = Path(__file__).resolve().parents[1] / "operator"
if str(OPERATOR_DIR) not in sys.path:
    sys.path.insert(0, str(OPERATOR_DIR))

_spec = importlib.util.spec_from_file_location("gpuops_operator_fixtures", OPERATOR_DIR / "conftest.py")
_operator_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_operator_fixtures)

gpu_operator = _operator_fixtures.gpu_operator

from validate_helpers import Validate  # noqa: E402


@pytest.fixture(scope="module")
def validate(gpu_operator, testbed, tmp_path_factory):
    gpu_operator.wait_healthy(timeout=120)
    return Validate(testbed, tmp_path_factory.mktemp("validate"))
