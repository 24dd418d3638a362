"""Helpers for the DRA specs (test_dra*.py): the ci-dra bed with the stand-in chart in GPUCluster mode, claims and
pods written as a user writes them, and the simulated DRA driver's faults (healed, and waited for, on exit).

Everything is done as the admin identity: these specs prove the test bed itself (the real kube-apiserver,
kube-scheduler and kube-controller-manager allocating claims), not the collection.
"""

from __future__ import annotations

import contextlib
import uuid

from tests.integration.helpers import wait_for
from tests.sim import profiles
from tests.sim.operator import dra_devices as D
from tests.sim.operator import logic as L

NS = "gpu-operator"
CHART = "v26.7.1"
# driver.enabled=false: host-installed drivers (the operator's driver needs driver.nvidiaDriverCRD.enabled here)
GPUCLUSTER_MODE = ("clusterPolicy.deployCR=false", "gpuCluster.deployCR=true", "driver.enabled=false")
RESOURCE = ("resource.k8s.io", "v1")
ADMIN_ACCESS = "resource.kubernetes.io/admin-access"
FAULT = L.ANN_FAULT


def _one_gpu(device_class="gpu.nvidia.com", count=1, selector=None, admin=False):
    exactly = {"deviceClassName": device_class, "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    if admin:
        exactly["adminAccess"] = True
    return {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}


class DraBed:
    def __init__(self, bed):
        from kubernetes import client

        self.bed = bed
        self.api = bed.api_client()
        self.core = client.CoreV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        self.prof = profiles.load("ci-dra")
        self.gpu_nodes = [n for p in self.prof.gpu_pools() for n in p.node_names()]

    # --- the operator's side ------------------------------------------------------------------
    def gpucluster(self) -> dict:
        return self.custom.get_cluster_custom_object("nvidia.com", "v1alpha1", "gpuclusters", "gpu-cluster")

    def gpucluster_status(self) -> dict:
        return self.gpucluster().get("status") or {}

    def slices(self, node: str) -> list[dict]:
        items = self.custom.list_cluster_custom_object(
            *RESOURCE, "resourceslices", field_selector=f"spec.nodeName={node}"
        )["items"]
        return sorted(items, key=lambda s: s["metadata"]["name"])

    def device_classes(self) -> dict:
        return {
            c["metadata"]["name"]: c
            for c in self.custom.list_cluster_custom_object(*RESOURCE, "deviceclasses")["items"]
        }

    def nvml_devices(self, node: str) -> list[dict]:
        """The devices the node's NVML fixture holds, as the driver publishes them."""
        md = self.core.read_node(node).metadata
        return D.node_devices({"metadata": {"name": md.name, "annotations": md.annotations or {}}})

    def plugin_pod(self, node: str):
        pods = self.core.list_namespaced_pod(NS, label_selector="app=nvidia-dra-driver-kubelet-plugin").items
        return next((p for p in pods if p.spec.node_name == node and not p.metadata.deletion_timestamp), None)

    def healthy(self) -> bool:
        """GPUCluster ready, every GPU node with one slice listing all its NVML devices and a ready plugin pod."""
        if self.gpucluster_status().get("state") != "ready" or "gpu.nvidia.com" not in self.device_classes():
            return False
        for node in self.gpu_nodes:
            slices = self.slices(node)
            if len(slices) != 1 or len(slices[0]["spec"]["devices"]) != len(self.nvml_devices(node)):
                return False
            if any(d.get("taints") for d in slices[0]["spec"]["devices"]):
                return False
            pod = self.plugin_pod(node)
            if pod is None or not any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or []):
                return False
        return True

    def wait_healthy(self, timeout=90):
        wait_for(self.healthy, timeout, 0.5, what="GPUCluster ready with every GPU node's slice and plugin pod")

    @contextlib.contextmanager
    def fault(self, fault: str, node: str | None = None):
        """A DRA fault on a node (or, without node, on the GPUCluster); healed, and the bed healthy again, on exit."""

        def annotate(value):
            body = {"metadata": {"annotations": {FAULT: value}}}
            if node:
                self.core.patch_node(node, body)
            else:
                self.custom.patch_cluster_custom_object("nvidia.com", "v1alpha1", "gpuclusters", "gpu-cluster", body)

        annotate(fault)
        try:
            yield
        finally:
            annotate(None)
            self.wait_healthy()

    # --- a user's side --------------------------------------------------------------------------
    @contextlib.contextmanager
    def namespace(self, admin_access=False):
        """A throw-away namespace; its pods and claims are gone (devices free again) before the block returns."""
        name = f"dra-{uuid.uuid4().hex[:6]}"
        labels = {ADMIN_ACCESS: "true"} if admin_access else {}
        self.core.create_namespace({"metadata": {"name": name, "labels": labels}})
        wait_for(
            lambda: any(sa.metadata.name == "default" for sa in self.core.list_namespaced_service_account(name).items),
            60,
            0.2,
            what=f"service account default in {name}",
        )
        try:
            yield name
        finally:
            self.core.delete_collection_namespaced_pod(name, grace_period_seconds=0)
            wait_for(lambda: not self.claims(name), 60, 0.2, what=f"the claims in {name} to be released")
            self.core.delete_namespace(name)

    def claims(self, ns: str) -> list[dict]:
        return self.custom.list_namespaced_custom_object(*RESOURCE, ns, "resourceclaims")["items"]

    def claim_template(self, ns: str, name: str, **request) -> None:
        body = {"metadata": {"name": name}, "spec": {"spec": _one_gpu(**request)}}
        self.custom.create_namespaced_custom_object(*RESOURCE, ns, "resourceclaimtemplates", body)

    def pod(self, ns: str, name: str, template: str, node: str | None = None) -> None:
        """A pod whose container uses one claim made from ``template``; pinned to ``node`` when given."""
        spec = {
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}],
            "containers": [
                {"name": "cuda", "image": "registry.invalid/cuda:12", "resources": {"claims": [{"name": "gpu"}]}}
            ],
            "tolerations": [{"operator": "Exists"}],
        }
        if node:
            spec["nodeSelector"] = {"kubernetes.io/hostname": node}
        self.core.create_namespaced_pod(ns, {"metadata": {"name": name}, "spec": spec})

    def claim_of(self, ns: str, pod: str) -> dict | None:
        """The ResourceClaim the resource-claim controller made for the pod, once it exists."""
        statuses = self.core.read_namespaced_pod(pod, ns).status.resource_claim_statuses or []
        name = next((s.resource_claim_name for s in statuses if s.name == "gpu"), None)
        return self.custom.get_namespaced_custom_object(*RESOURCE, ns, "resourceclaims", name) if name else None

    def allocation(self, ns: str, pod: str) -> list[dict]:
        """The allocated devices of the pod's claim (empty while it is not allocated)."""
        claim = self.claim_of(ns, pod) or {}
        return (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []

    def running(self, ns: str, pod: str, timeout=60):
        return wait_for(
            lambda: (p := self.core.read_namespaced_pod(pod, ns)).status.phase == "Running" and p,
            timeout,
            0.2,
            what=f"pod {ns}/{pod} Running",
        )

    def event(self, ns: str, pod: str, reason: str, timeout=60) -> str:
        """The message of the pod's first event with ``reason`` (waited for)."""

        def find():
            evs = self.core.list_namespaced_event(ns, field_selector=f"involvedObject.name={pod}").items
            return next((e.message for e in evs if e.reason == reason), None)

        return wait_for(find, timeout, 0.2, what=f"a {reason} event for {ns}/{pod}")

    def uuid_of(self, node: str, device: str) -> str:
        dev = next(d for d in self.nvml_devices(node) if d["name"] == device)
        return dev["attributes"]["uuid"]["string"]

    @staticmethod
    def uuid_selector(device_uuid: str) -> str:
        return f"device.attributes['gpu.nvidia.com'].uuid == '{device_uuid}'"
