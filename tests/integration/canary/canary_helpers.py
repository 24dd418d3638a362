"""Helpers for the canary-upgrade tests: a 20-node, two-pool test bed (profile canary) of their own.

The automation (playbooks/upgrade.yml) runs through ansible-playbook as the least-privilege identity. The admin
identity only prepares and inspects: installing the stand-in chart, faults, snapshots of nodes, and the reset
between tests (which puts every node back on the ClusterPolicy's driver with no canary leftovers).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import sysconfig
from contextlib import contextmanager
from pathlib import Path

from tests.integration.helpers import rolled_out, wait_for
from tests.sim import testbed as tb

REPO_ROOT = Path(__file__).resolve().parents[3]
NS = "gpu-operator"
RECORD = "gpuops-canary-upgrade"
STATE = "nvidia.com/gpu-driver-upgrade-state"
SKIP = "nvidia.com/gpu-driver-upgrade.skip"
DRIVER = "nvidia.com/cuda.driver-version.full"
FAILED = "gpuops.io/canary-upgrade-failed"
FAULT = "sim.gpuops.io/fault"
TAINT = "gpuops.io/canary-upgrade"
JSON_PATCH = "application/json-patch+json"
CANARY = ["a100-0", "h100-0"]
FAST = {
    "gpu_canary_upgrade_baseline": False,
    "gpu_canary_upgrade_upgrade_policy": {"autoUpgrade": True, "maxParallelUpgrades": 0, "maxUnavailable": "100%"},
    "gpu_canary_upgrade_poll_interval": 0.5,
    "gpu_canary_upgrade_smoke_expected_output": "",
    "gpu_canary_upgrade_wave_timeout": 120,
    "gpu_canary_upgrade_proof_timeout": 60,
}


def collection_root(work: Path) -> Path:
    """``work/collections``: this checkout as gpuops.gpu_operator and kubernetes.core from the venv's ansible
    package (the install role and playbooks/site.yml use it), as `make collection-root` links them."""
    root = work / "collections" / "ansible_collections"
    (root / "gpuops").mkdir(parents=True)
    (root / "gpuops" / "gpu_operator").symlink_to(REPO_ROOT)
    (root / "kubernetes").mkdir()
    (root / "kubernetes" / "core").symlink_to(
        Path(sysconfig.get_paths()["purelib"]) / "ansible_collections" / "kubernetes" / "core"
    )
    return work / "collections"


class CanaryBed:
    def __init__(self, bed, work: Path):
        from kubernetes import client

        self.t = bed
        self.work = work
        self.api = bed.api_client()
        self.core = client.CoreV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        self.apps = client.AppsV1Api(self.api)
        self.ext = client.ApiextensionsV1Api(self.api)
        self.inventory = work / "inventory.yml"
        self.canary_inventory = work / "canary.yml"
        self.canary_inventory.write_text("gpu_canary:\n  hosts:\n" + "".join(f"    {n}:\n" for n in CANARY))

    # --- running the playbook ---------------------------------------------------------------
    def env(self):
        env = dict(
            os.environ,
            ANSIBLE_COLLECTIONS_PATH=str(self.work / "collections"),
            ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
            ANSIBLE_NOCOLOR="1",
            ANSIBLE_HOME=str(self.work / "ansible-home"),
            ANSIBLE_LOCALHOST_WARNING="0",
            ANSIBLE_FORKS="20",
        )
        for name in ("K8S_AUTH_KUBECONFIG", "KUBECONFIG"):
            env.pop(name, None)
        return env

    def argv(self, extra, check=False):
        cmd = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(self.inventory)]
        cmd += ["-i", str(self.canary_inventory), str(REPO_ROOT / "playbooks" / "upgrade.yml")]
        cmd += ["-e", json.dumps({**FAST, **extra})]
        return cmd + (["--check"] if check else [])

    def playbook(self, check=False, **extra):
        proc = subprocess.run(
            self.argv(extra, check), capture_output=True, text=True, env=self.env(), timeout=600, check=False
        )
        proc.output = proc.stdout + proc.stderr
        return proc

    def status(self):
        """playbooks/upgrade.yml with gpu_canary_upgrade_action=status (no target): its output."""
        r = self.playbook(gpu_canary_upgrade_action="status")
        assert r.returncode == 0, r.output[-3000:]
        return r.output

    def install_role(self):
        """The gpu_operator_install role on this bed (as playbooks/site.yml runs it), as the automation identity."""
        play = self.work / "install.yml"
        play.write_text(
            "- hosts: k8s_cluster\n  gather_facts: false\n  roles:\n"
            "    - role: gpuops.gpu_operator.gpu_operator_install\n      vars:\n"
            "        gpu_operator_install_kubeconfig: '{{ gpuops_kubeconfig }}'\n"
            "        gpu_operator_install_chart_repo_url: '{{ gpuops_chart_repo_url }}'\n"
        )
        cmd = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(self.inventory), str(play)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=self.env(), timeout=600, check=False)
        proc.output = proc.stdout + proc.stderr
        return proc

    @contextmanager
    def operator_stopped(self):
        """The simulated GPU Operator and its upgrade controller paused (SIGSTOP), as if the operator did not run;
        resumed after."""
        comps = tb.State(self.t.state_dir).load().components
        pids = [comps[name]["pid"] for name in ("upgrade-controller", "gpu-operator-sim")]
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        try:
            yield
        finally:
            for pid in pids:
                os.kill(pid, signal.SIGCONT)

    def start_playbook(self, **extra):
        log = open(self.work / "interrupted.log", "w")  # noqa: SIM115 (handed to the child process)
        return subprocess.Popen(
            self.argv(extra), stdout=log, stderr=subprocess.STDOUT, env=self.env(), start_new_session=True
        )

    @staticmethod
    def kill(proc):
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)

    # --- reads ------------------------------------------------------------------------------
    def nodes(self):
        return {n.metadata.name: n for n in self.core.list_node().items if (n.metadata.labels or {}).get(STATE)}

    def gpu_node_names(self):
        return sorted(
            n.metadata.name
            for n in self.core.list_node().items
            if (n.metadata.labels or {}).get("feature.node.kubernetes.io/pci-10de.present") == "true"
        )

    def snapshot(self):
        """Per GPU node: driver version, labels, taints, cordon."""
        out = {}
        for n in self.core.list_node().items:
            lab = n.metadata.labels or {}
            if lab.get("feature.node.kubernetes.io/pci-10de.present") != "true":
                continue
            out[n.metadata.name] = {
                "driver": lab.get(DRIVER),
                "labels": dict(lab),
                "taints": [(t.key, t.value, t.effect) for t in n.spec.taints or []],
                "unschedulable": bool(n.spec.unschedulable),
                "annotations": dict(n.metadata.annotations or {}),
            }
        return out

    def record(self):
        try:
            cm = self.core.read_namespaced_config_map(RECORD, NS)
        except Exception:
            return None
        return json.loads((cm.data or {}).get("record") or "null")

    def cp(self):
        return self.custom.get_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", "cluster-policy")

    def daemonsets_rolled_out(self):
        """True when every rolling DaemonSet of the operator namespace runs its current template on every node,
        ready (an OnDelete one, the driver's, moves only when its pods are deleted)."""
        return all(
            rolled_out(ds)
            for ds in self.apps.list_namespaced_daemon_set(NS).items
            if ds.spec.update_strategy.type != "OnDelete"
        )

    def prepared_objects(self):
        """The specs a canary preparation changes: the ClusterPolicy's and the NFD worker DaemonSet's."""
        worker = self.api.sanitize_for_serialization(self.nfd_worker())
        return {"cluster_policy": self.cp()["spec"], "nfd_worker": worker["spec"]}

    def nfd_worker(self):
        return self.apps.list_namespaced_daemon_set(
            NS, label_selector="app.kubernetes.io/name=node-feature-discovery,role=worker"
        ).items[0]

    def operand_images(self):
        """Per GPU node, the sorted images of its non-driver operand pods."""
        out = {n: [] for n in self.gpu_node_names()}
        for p in self.core.list_namespaced_pod(NS).items:
            lab = p.metadata.labels or {}
            if (
                p.spec.node_name in out
                and lab.get("app.kubernetes.io/component") != "nvidia-driver"
                and not p.metadata.deletion_timestamp
            ) and "node-feature-discovery" not in (lab.get("app.kubernetes.io/name") or ""):
                out[p.spec.node_name].extend(c.image for c in p.spec.containers)
        return {n: sorted(v) for n, v in out.items()}

    def gpu_pod(self, name, node, labels, image="cuda:sample"):
        self.core.create_namespaced_pod(
            "default",
            {
                "metadata": {"name": name, "labels": {**labels, "gpuops.io/canary-test": "true"}},
                "spec": {
                    "nodeName": node,
                    "containers": [{"name": "c", "image": image, "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
                },
            },
        )
        wait_for(lambda: self.core.read_namespaced_pod(name, "default").status.phase == "Running", 30, what=name)

    def pdb(self, name, match):
        from kubernetes import client

        client.PolicyV1Api(self.api).create_namespaced_pod_disruption_budget(
            "default",
            {
                "metadata": {"name": name, "labels": {"gpuops.io/canary-test": "true"}},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": match}},
            },
        )

    def pdb_allowed(self, name):
        from kubernetes import client

        st = client.PolicyV1Api(self.api).read_namespaced_pod_disruption_budget(name, "default").status
        return None if st is None or st.observed_generation is None else st.disruptions_allowed

    def pod_alive(self, name):
        try:
            pod = self.core.read_namespaced_pod(name, "default")
        except Exception:
            return False
        return pod.metadata.deletion_timestamp is None

    def delete_gpu_workloads(self):
        from kubernetes import client

        sel = "gpuops.io/canary-test=true"
        client.PolicyV1Api(self.api).delete_collection_namespaced_pod_disruption_budget("default", label_selector=sel)
        self.core.delete_collection_namespaced_pod("default", label_selector=sel, grace_period_seconds=0)

    def cp_driver(self):
        return self.cp()["spec"]["driver"].get("version")

    # --- admin preparation --------------------------------------------------------------------
    def fault(self, node, value):
        self.core.patch_node(node, {"metadata": {"annotations": {FAULT: value}}})

    def driver_pod_version(self, node):
        pods = self.core.list_namespaced_pod(NS, label_selector="app.kubernetes.io/component=nvidia-driver").items
        for p in pods:
            if p.spec.node_name == node and not p.metadata.deletion_timestamp:
                return p.spec.containers[0].image.rsplit(":", 1)[-1].split("-")[0]
        return None

    def reset(self, timeout=120):
        """Every GPU node back on the ClusterPolicy's driver: no record, faults, skip labels, canary taints or
        failure annotations; failed upgrades retried; the ClusterPolicy's operand settings and upgrade policy and
        the NFD worker's tolerations as the first reset found them (a test's abort leaves its preparation)."""
        try:
            self.core.delete_namespaced_config_map(RECORD, NS)
        except Exception:
            pass
        objects = self.prepared_objects()
        if not hasattr(self, "baseline"):
            self.baseline = objects
        base, now = self.baseline["cluster_policy"], objects["cluster_policy"]
        ops = []
        if now["daemonsets"] != base["daemonsets"]:
            ops.append({"op": "replace", "path": "/spec/daemonsets", "value": base["daemonsets"]})
        if now["driver"].get("upgradePolicy") != base["driver"].get("upgradePolicy"):
            ops.append(
                {"op": "replace", "path": "/spec/driver/upgradePolicy", "value": base["driver"]["upgradePolicy"]}
            )
        if ops:
            self.custom.patch_cluster_custom_object(
                "nvidia.com", "v1", "clusterpolicies", "cluster-policy", ops, _content_type=JSON_PATCH
            )
        worker = self.baseline["nfd_worker"]["template"]["spec"].get("tolerations")
        if objects["nfd_worker"]["template"]["spec"].get("tolerations") != worker:
            ops.append({"op": "replace", "path": "/spec/template/spec/tolerations", "value": worker})
            self.apps.patch_namespaced_daemon_set(
                self.nfd_worker().metadata.name, NS, ops[-1:], _content_type=JSON_PATCH
            )
        if ops:  # the operands roll out their restored templates before the next test looks at them
            wait_for(self.daemonsets_rolled_out, timeout, what="every DaemonSet in %s rolled out" % NS)
        for name, snap in self.snapshot().items():
            labels = {SKIP: None}
            if snap["labels"].get(STATE) == "upgrade-failed":
                labels[STATE] = "upgrade-required"
            taints = [
                {"key": k, "value": v, "effect": e}
                for k, v, e in snap["taints"]
                if k not in (TAINT, "example.com/gpu-canary")
            ]
            self.core.patch_node(
                name,
                {
                    "metadata": {"labels": labels, "annotations": {FAULT: None, FAILED: None}},
                    "spec": {"taints": taints or None},
                },
            )
        target = self.cp_driver()

        def settled():
            return all(
                s["driver"] == target and s["labels"].get(STATE) == "upgrade-done" for s in self.snapshot().values()
            )

        if settled():
            return
        # the nodes a test left on another driver catch up all at once, not one at a time as the chart's
        # maxParallelUpgrades=1 would have NVIDIA's upgrade controller take them; then the policy is as it was
        policy = self.baseline["cluster_policy"]["driver"]["upgradePolicy"]
        self._replace_upgrade_policy(dict(policy, maxParallelUpgrades=0, maxUnavailable="100%"))
        try:
            wait_for(settled, timeout, what=f"every GPU node on driver {target}")
        finally:
            self._replace_upgrade_policy(policy)

    def _replace_upgrade_policy(self, policy):
        op = {"op": "replace", "path": "/spec/driver/upgradePolicy", "value": policy}
        self.custom.patch_cluster_custom_object(
            "nvidia.com", "v1", "clusterpolicies", "cluster-policy", [op], _content_type=JSON_PATCH
        )
