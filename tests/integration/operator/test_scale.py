"""At scale (profile scale-1000, GPUOPS_TESTBED_PROFILE=scale-1000): the controller labels every GPU node and
advertises every GPU as soon as the real DaemonSet controller and kwok have made the device-plugin pods Ready."""

from __future__ import annotations

import time

import pytest
from simop_helpers import wait_for


def test_thousand_nodes_become_ready(gpu_operator):
    op = gpu_operator
    if len(op.gpu_nodes) < 500:
        pytest.skip("needs a profile with >= 500 GPU nodes (scale-1000)")
    t0 = time.monotonic()

    def labelled():
        nodes = op.core.list_node(label_selector="nvidia.com/gpu.present=true").items
        return len(nodes) >= len(op.gpu_nodes)

    wait_for(labelled, 120, interval=2, what="every GPU node labelled")
    t_label = time.monotonic() - t0

    def advertised():
        n = 0
        for node in op.core.list_node(label_selector="nvidia.com/gpu.present=true").items:
            if (node.status.allocatable or {}).get("nvidia.com/gpu") == str(op.gpu_nodes[node.metadata.name].count):
                n += 1
        return n == len(op.gpu_nodes)

    wait_for(advertised, 1500, interval=5, what="every GPU advertised")
    wait_for(lambda: op.cp_state() == "ready", 300, interval=5, what="ClusterPolicy ready")
    print(
        f"\n[scale] {len(op.gpu_nodes)} GPU nodes: labelled in {t_label:.1f}s, "
        f"all GPUs advertised and ClusterPolicy ready in {time.monotonic() - t0:.1f}s"
    )
