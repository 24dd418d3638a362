"""Helpers for the gpu_smoke_test specs: run the module through Ansible as the least-privilege identity."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
COLLECTIONS = REPO_ROOT / "build" / "collections"
SMOKE = "gpuops.io/smoke-test=true"


def ansible_env(extra=None):
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS),
        ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
        ANSIBLE_LOCALHOST_WARNING="0",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
        ANSIBLE_PYTHON_INTERPRETER=sys.executable,
        ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
        ANSIBLE_CALLBACKS_ENABLED="ansible.builtin.tree",
    )
    env.update(extra or {})
    return env


class Smoke:
    def __init__(self, bed):
        from kubernetes import client

        self.bed = bed
        self.core = client.CoreV1Api(bed.api_client())

    def run(self, check=False, **args):
        """Run gpu_smoke_test once as the least-privilege identity; returns the module's result dict."""
        args.setdefault("kubeconfig", self.bed.sa_kubeconfig)
        cmd = [
            str(Path(sys.executable).parent / "ansible"),
            "localhost",
            "-c",
            "local",
            "-i",
            "localhost,",
            "-m",
            "gpuops.gpu_operator.gpu_smoke_test",
            "-a",
            json.dumps(args),
        ]
        if check:
            cmd.append("--check")
        with tempfile.TemporaryDirectory() as tree:
            env = ansible_env({"ANSIBLE_CALLBACK_TREE_DIR": tree})
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)
            try:
                return json.loads(Path(tree, "localhost").read_text())
            except (OSError, ValueError) as exc:
                raise AssertionError("no module result: %s %s" % (proc.stdout[-2000:], proc.stderr[-2000:])) from exc

    def smoke_pods(self, namespace="default"):
        return self.core.list_namespaced_pod(namespace, label_selector=SMOKE).items

    def gpu_nodes(self):
        nodes = self.core.list_node(label_selector="feature.node.kubernetes.io/pci-10de.present=true").items
        return {n.metadata.name: int(n.status.allocatable.get("nvidia.com/gpu", "0")) for n in nodes}

    def wait_gone(self, timeout=30):
        deadline = time.monotonic() + timeout
        while self.smoke_pods() and time.monotonic() < deadline:
            time.sleep(0.5)
        return self.smoke_pods()
