"""Helpers for the gpu_operator and gpu_operator_install tests on the session test bed and its chart repository.

Everything the automation does runs through ansible-playbook as the least-privilege identity (testbed.sa_kubeconfig,
bound to docs/rbac.yml). The admin identity only prepares and inspects: a clean slate before each test module,
node faults, reading the stored ClusterPolicy. The simulated GPU Operator (tests/sim/operator) plays the operator,
so the ClusterPolicy really moves to ready; it is started here when the test bed does not run it.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import time
import uuid
from pathlib import Path

from tests.integration.helpers import wait_for  # noqa: F401 (the tests import it from here)

REPO_ROOT = Path(__file__).resolve().parents[3]
NS = "gpu-operator"
RELEASE = "gpu-operator"
#: API groups of the CRDs the chart installs: the operator's, the DRA driver's ComputeDomains, NFD's.
CHART_CRD_GROUPS = ("nvidia.com", "resource.nvidia.com", "nfd.k8s-sigs.io")
DRA_DEPLOY_LABEL = "nvidia.com/gpu.deploy.dra-driver"

PLAYBOOK = """
- name: Run gpu_operator
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Run the module
      gpuops.gpu_operator.gpu_operator: "{{ module_args }}"
      register: result
      ignore_errors: true
    - name: Save the result
      ansible.builtin.copy:
        content: "{{ result | to_json }}"
        dest: "{{ out }}"
        mode: "0600"
      check_mode: false
      diff: false
"""


def module_bed(testbed, work: Path) -> "Bed":
    """A Bed whose ansible-playbook runs see this checkout as gpuops.gpu_operator and the virtualenv's kubernetes.core
    (the role uses it), with the playbook in ``work``."""
    link = work / "collections" / "ansible_collections" / "gpuops" / "gpu_operator"
    link.parent.mkdir(parents=True)
    link.symlink_to(REPO_ROOT)
    core = [Path(p) / "ansible_collections" / "kubernetes" / "core" for p in site.getsitepackages()][0]
    (link.parent.parent / "kubernetes").mkdir()
    (link.parent.parent / "kubernetes" / "core").symlink_to(core)
    (work / "play.yml").write_text(PLAYBOOK)
    return Bed(testbed, work)


class Bed:
    """The session test bed plus admin helpers for preparing and inspecting (never for the automation itself)."""

    def __init__(self, testbed, work: Path):
        from kubernetes import client

        self.t = testbed
        self.work = work
        api = testbed.api_client()
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.ext = client.ApiextensionsV1Api(api)
        self.helm_env = {
            **os.environ,
            "HELM_CACHE_HOME": str(work / "helm-cache"),
            "HELM_CONFIG_HOME": str(work / "helm-config"),
            "HELM_DATA_HOME": str(work / "helm-data"),
        }

    # the automation ----------------------------------------------------------------------------------
    def module(self, check=False, diff=False, helm=None, **module_args):
        """Run gpu_operator through ansible-playbook as the least-privilege identity; return its result."""
        module_args.setdefault("kubeconfig", self.t.sa_kubeconfig)
        module_args.setdefault("helm_binary", helm or self.t.helm)
        module_args.setdefault("chart_ref", "gpu-operator")
        module_args.setdefault("chart_repo_url", self.t.chart_repo_url)
        module_args.setdefault("timeout", 120)
        # the readiness wait stops as soon as the operator is ready: a bound that holds on a busy machine costs a
        # healthy run nothing (a GPUCluster install took 131 s under load, 43 s idle)
        module_args.setdefault("ready_timeout", 300)
        out = self.work / ("result-%s.json" % uuid.uuid4().hex[:8])
        extra = {"module_args": module_args, "out": str(out), "ansible_python_interpreter": sys.executable}
        cmd = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local"]
        cmd += [str(self.work / "play.yml"), "-e", json.dumps(extra)]
        cmd += ["--check"] if check else []
        cmd += ["--diff"] if diff else []
        proc = subprocess.run(cmd, capture_output=True, text=True, env=self.ansible_env(), timeout=600, check=False)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        result = json.loads(out.read_text())
        result["_stdout"] = proc.stdout
        return result

    def ansible_env(self):
        env = dict(
            os.environ,
            ANSIBLE_COLLECTIONS_PATH=str(self.work / "collections"),
            ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
            ANSIBLE_NOCOLOR="1",
            ANSIBLE_HOME=str(self.work / "ansible-home"),
            ANSIBLE_LOCALHOST_WARNING="0",
        )
        for name in ("K8S_AUTH_KUBECONFIG", "KUBECONFIG"):
            env.pop(name, None)
        return env

    def install(self, version, helm=None, **module_args):
        result = self.module(chart_version=version, helm=helm, **module_args)
        assert not result.get("failed"), result.get("msg")
        return result

    # audit -------------------------------------------------------------------------------------------
    def mark(self):
        return self.t.audit_mark()

    def writes_since(self, mark):
        time.sleep(1.5)  # the audit backend flushes asynchronously
        return [
            "%s %s/%s" % (e["verb"], e.get("objectRef", {}).get("resource"), e.get("objectRef", {}).get("name"))
            for e in self.t.audit_writes(mark)
        ]

    def persisted_writes_since(self, mark):
        """Writes that changed something: server-side dry runs (``dryRun=All``, check mode) left out."""
        time.sleep(1.5)
        return [
            "%s %s" % (e["verb"], e.get("requestURI"))
            for e in self.t.audit_writes(mark)
            if "dryRun=All" not in (e.get("requestURI") or "")
        ]

    # admin reads and preparation ----------------------------------------------------------------------
    def helm_admin(self, *args, check=True):
        r = subprocess.run(
            [self.t.helm, *args, "--kubeconfig", self.t.kubeconfig],
            capture_output=True,
            text=True,
            env=self.helm_env,
            timeout=300,
            check=False,
        )
        if check and r.returncode != 0:
            raise AssertionError(f"helm {' '.join(args)}: {r.stderr[-1500:]}")
        return r

    def release(self):
        r = self.helm_admin("get", "metadata", RELEASE, "-n", NS, "-o", "json", check=False)
        return json.loads(r.stdout) if r.returncode == 0 else None

    def release_values(self):
        return json.loads(self.helm_admin("get", "values", RELEASE, "-n", NS, "-o", "json").stdout) or {}

    def cluster_policy(self):
        return self.custom.get_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", "cluster-policy")

    def crd(self, name):
        from kubernetes.client.rest import ApiException

        try:
            return self.ext.read_custom_resource_definition(name)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def clean_slate(self):
        """No release, none of the chart's CRDs (the operator's, the DRA driver's, NFD's), and no node labelled for the
        DRA driver: helm uninstall leaves both CRDs and node labels, and a GPUCluster install labels the nodes
        ``nvidia.com/gpu.deploy.dra-driver=true``. The next install - here or in the next test module - starts from
        nothing, and the CRDs are gone (not terminating) before it begins."""
        self.helm_admin("uninstall", RELEASE, "-n", NS, "--wait", check=False)
        for name in self.chart_crds():
            try:
                self.ext.delete_custom_resource_definition(name)
            except Exception as exc:  # noqa: BLE001 - deleted meanwhile (404) is the outcome wanted
                if getattr(exc, "status", None) != 404:
                    raise
        try:  # the API server deletes each CRD's objects first: minutes on a busy machine, stops once they are gone
            wait_for(lambda: not self.chart_crds(), 240, what="the chart's CRDs deleted")
        except AssertionError as exc:
            raise AssertionError("%s; still there: %s" % (exc, self.crd_states())) from None
        for node in self.core.list_node(label_selector=DRA_DEPLOY_LABEL).items:
            self.core.patch_node(node.metadata.name, {"metadata": {"labels": {DRA_DEPLOY_LABEL: None}}})

    def crd_states(self):
        """``{name: (deleting since, finalizers, the Terminating condition's message)}`` of the chart's CRDs."""
        states = {}
        for crd in self.ext.list_custom_resource_definition().items:
            if crd.spec.group in CHART_CRD_GROUPS:
                terminating = [c.message for c in (crd.status.conditions or []) if c.type == "Terminating"]
                states[crd.metadata.name] = (crd.metadata.deletion_timestamp, crd.metadata.finalizers, terminating)
        return states

    def chart_crds(self):
        """Names of the CRDs the stand-in chart and its NFD subchart install that exist."""
        return [
            c.metadata.name
            for c in self.ext.list_custom_resource_definition().items
            if c.spec.group in CHART_CRD_GROUPS
        ]
