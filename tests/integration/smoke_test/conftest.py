"""Fixture for the gpu_smoke_test specs (helpers in smoke_helpers.py)."""

from __future__ import annotations

import pytest
from smoke_helpers import Smoke


@pytest.fixture(scope="module")
def smoke(testbed):
    s = Smoke(testbed)
    assert s.gpu_nodes(), "the test bed has GPU nodes"
    yield s
    for pod in s.smoke_pods():
        s.core.delete_namespaced_pod(pod.metadata.name, "default", grace_period_seconds=0)
