"""GPUCluster mode of the simulated GPU Operator: the DRA driver for NVIDIA GPUs, reconciled like the operator does.

Per pass, for the oldest GPUCluster (others are `ignored`): `PrerequisiteNotMet` while a ClusterPolicy exists;
otherwise the operand namespace gets `resource.kubernetes.io/admin-access=true`, GPU nodes get
`nvidia.com/gpu.present` and `nvidia.com/gpu.deploy.{dra-driver,dcgm-exporter}=true`, the kubelet-plugin and DCGM
exporter DaemonSets and the DeviceClasses exist (owned by the GPUCluster), every node whose kubelet-plugin pod runs
has its ResourceSlice (devices from its NVML fixture, DRA faults applied), and the GPUCluster status follows the
DaemonSets. The node side (claims prepared for pods) is tests/sim/operator/dra_kubelet.py.
"""

from __future__ import annotations

import hashlib
import json
import logging

from kubernetes.client.rest import ApiException

from . import dra_devices as D
from . import logic as L
from .dra_kubelet import DraKubeletPlugin
from .informer import Informer

log = logging.getLogger("sim.operator.dra")
GROUP, VERSION, PLURAL = "nvidia.com", "v1alpha1", "gpuclusters"
RESOURCE = ("resource.k8s.io", "v1")
OWNED = L.SIM + "gpucluster"  # label on the DaemonSets this mode manages (the ClusterPolicy path never sees them)
ADMIN_ACCESS = "resource.kubernetes.io/admin-access"
PLUGIN_DS, PLUGIN_APP = "nvidia-dra-driver-kubelet-plugin", "nvidia-dra-driver-kubelet-plugin"
EXPORTER_DS = "nvidia-dcgm-exporter"
STATES = {PLUGIN_DS: "state-dra-driver", EXPORTER_DS: "state-dcgm-exporter"}
DEPLOY_LABELS = (L.DEPLOY + "dra-driver", L.DEPLOY + "dcgm-exporter")
CRASH_MESSAGE = (
    "error creating driver: failed to enumerate devices: error initializing NVML: "
    "ERROR_DRIVER_NOT_LOADED (simulated by sim.gpuops.io/fault=dra-plugin-crashloop)"
)


class GpuClusterReconciler:
    def __init__(self, ctl):
        self.ctl = ctl
        custom = ctl.custom

        def on(_name):
            ctl.wake.set()

        def cluster_list(group, version, plural, **fixed):
            return lambda **kw: custom.list_cluster_custom_object(group, version, plural, **fixed, **kw)

        self.gcs = Informer("gpuclusters", cluster_list(GROUP, VERSION, PLURAL), on)
        self.slices = Informer(
            "resourceslices", cluster_list(*RESOURCE, "resourceslices"), on, field_selector=f"spec.driver={D.DRIVER}"
        )
        self.classes = Informer("deviceclasses", cluster_list(*RESOURCE, "deviceclasses"), on)
        self.claims = Informer("resourceclaims", cluster_list(*RESOURCE, "resourceclaims"), on, namespaced=True)
        self.dss = Informer(
            "gpucluster-daemonsets",
            ctl.apps.list_daemon_set_for_all_namespaces,
            on,
            namespaced=True,
            label_selector=OWNED + "=true",
        )
        self.informers = [self.gcs, self.slices, self.classes, self.claims, self.dss]
        self.kubelet = DraKubeletPlugin(ctl, self.claims)
        self.done: set = set()  # (what, uid) of objects created once per GPUCluster
        self.faulted: set = set()  # plugin pods this mode broke

    # ------------------------------------------------------------------------------------------ pass
    def reconcile(self, cps: list[dict]) -> None:
        try:
            self._reconcile(cps)
        except Exception:
            log.exception("GPUCluster pass failed; retrying")

    def _reconcile(self, cps: list[dict]) -> None:
        gcs = sorted(self.gcs.snapshot(), key=lambda o: o["metadata"].get("creationTimestamp", ""))
        plugin_pods = self._plugin_pods()
        if not gcs:
            self._sync_slices([], plugin_pods)
            return
        gc = gcs[0]
        for extra in gcs[1:]:
            self._status(extra, "ignored", "Reconciled", "another GPUCluster is already in use", keep=True)
        ns = L.annotations(gc).get("meta.helm.sh/release-namespace") or self.ctl.default_ns
        if cps:
            state, reason, msg = D.gpucluster_state(L.name(cps[0]), {})
            self._status(gc, state, reason, msg, ns)
            return
        spec = gc.get("spec") or {}
        gpu_nodes = [n for n in self.ctl.nodes.snapshot() if L.is_gpu_node(n)]
        self._label_namespace(ns)
        self.ctl._each(self._label_node, gpu_nodes)
        self._sync_daemonsets(gc, spec, ns)
        if (spec.get("dcgmExporter") or {}).get("enabled", True):
            self._ensure_exporter_service(gc, ns)
        self._break_or_heal_plugin_pods(gpu_nodes, plugin_pods)
        published = self._sync_slices(gpu_nodes, plugin_pods)
        self._sync_device_classes(gc, published)
        self.kubelet.sync(self.ctl.pods.snapshot(), self._plugin_ready(plugin_pods))
        ds_status = {STATES[name]: status for name, status in self._ds_status(gc, spec, ns).items()}
        state, reason, msg = D.gpucluster_state(None, ds_status)
        self._status(gc, state, reason, msg, ns)

    # ------------------------------------------------------------------------------------------ status
    def _status(self, gc, state, reason, msg, ns=None, keep=False) -> None:
        self.ctl._set_status(
            PLURAL, VERSION, gc, state, reason, msg, namespace=ns, ready_override=False if keep else None
        )

    def _ds_status(self, gc, spec, ns) -> dict:
        wanted = [PLUGIN_DS] + ([EXPORTER_DS] if (spec.get("dcgmExporter") or {}).get("enabled", True) else [])
        out = dict.fromkeys(wanted, (1, 0))  # not yet observed by the DaemonSet controller: not ready
        for ds in self.dss.snapshot():
            st = ds.get("status") or {}
            if ds["metadata"].get("namespace") == ns and L.name(ds) in out and st.get("observedGeneration"):
                out[L.name(ds)] = (st.get("desiredNumberScheduled", 0), st.get("numberReady", 0))
        return out

    # ------------------------------------------------------------------------------------------ labels
    def _label_namespace(self, ns: str) -> None:
        if ("ns-label", ns) in self.done:
            return
        try:
            self.ctl.core.patch_namespace(ns, {"metadata": {"labels": {ADMIN_ACCESS: "true"}}})
            self.done.add(("ns-label", ns))
        except ApiException as exc:
            log.warning("label namespace %s: %s", ns, exc.reason)

    def _label_node(self, node: dict) -> None:
        lab = L.labels(node)
        want = {"nvidia.com/gpu.present": "true"} if lab.get("nvidia.com/gpu.present") != "true" else {}
        want.update({k: "true" for k in DEPLOY_LABELS if k not in lab})
        if want:
            self.ctl._patch_node(node, {"metadata": {"labels": want}})

    # ------------------------------------------------------------------------------------------ DaemonSets
    def _create_or_replace(self, ns, name, body) -> None:
        """Create the DaemonSet, replacing one of that name that this mode does not own - the ClusterPolicy mode's
        DaemonSet that the garbage collector has not removed yet (its ClusterPolicy's CRD deleted with it, the
        collector may take minutes to resolve the owner). Its selector differs, which no update may change: it is
        deleted and this DaemonSet created (on the next pass if the name is not free yet)."""
        try:
            self.ctl.apps.create_namespaced_daemon_set(ns, body)
            log.info("created DaemonSet %s/%s", ns, name)
        except ApiException as exc:
            if exc.status != 409:
                raise
            found = self.ctl.apps.read_namespaced_daemon_set(name, ns)
            if (found.metadata.labels or {}).get(OWNED) == "true":
                return  # this mode's own, not yet in the informer's cache
            self.ctl.apps.delete_namespaced_daemon_set(name, ns, propagation_policy="Background")
            log.info("deleted DaemonSet %s/%s that another mode left; creating this mode's", ns, name)
            self.ctl.apps.create_namespaced_daemon_set(ns, body)
            log.info("created DaemonSet %s/%s", ns, name)

    def _sync_daemonsets(self, gc, spec, ns) -> None:
        want = {PLUGIN_DS: plugin_daemonset(gc, spec, ns)}
        if (spec.get("dcgmExporter") or {}).get("enabled", True):
            want[EXPORTER_DS] = exporter_daemonset(gc, spec, ns)
        have = {L.name(d): d for d in self.dss.snapshot() if d["metadata"].get("namespace") == ns}
        for name, body in want.items():
            cur = have.get(name)
            try:
                if cur is None:
                    self._create_or_replace(ns, name, body)
                elif L.annotations(cur).get(D.HASH) != body["metadata"]["annotations"][D.HASH]:
                    self.ctl.apps.patch_namespaced_daemon_set(
                        name, ns, {"metadata": body["metadata"], "spec": body["spec"]}
                    )
                    log.info("updated DaemonSet %s/%s", ns, name)
            except ApiException as exc:
                if exc.status != 409:
                    log.warning("DaemonSet %s/%s: %s", ns, name, exc.reason)
        for name in set(have) - set(want):
            try:
                self.ctl.apps.delete_namespaced_daemon_set(name, ns, propagation_policy="Background")
            except ApiException as exc:
                if exc.status != 404:
                    log.warning("delete DaemonSet %s/%s: %s", ns, name, exc.reason)

    def _ensure_exporter_service(self, gc, ns) -> None:
        key = ("svc", ns, gc["metadata"].get("uid"))
        if key in self.done:
            return
        body = {
            "metadata": {
                "name": EXPORTER_DS,
                "namespace": ns,
                "labels": {"app": EXPORTER_DS, OWNED: "true"},
                "ownerReferences": [owner_ref(gc)],
            },
            "spec": {
                "selector": {"app": EXPORTER_DS},
                "ports": [{"name": "gpu-metrics", "port": 9400, "targetPort": 9400, "protocol": "TCP"}],
            },
        }
        try:
            self.ctl.core.create_namespaced_service(ns, body)
        except ApiException as exc:
            if exc.status != 409:
                log.warning("create Service %s/%s: %s", ns, EXPORTER_DS, exc.reason)
                return
        self.done.add(key)

    # ------------------------------------------------------------------------------------------ plugin pods
    def _plugin_pods(self) -> dict:
        """{node name: the kubelet-plugin pod on it} (the newest one not being deleted)."""
        out = {}
        for pod in self.ctl.pods.snapshot():
            md, node = pod["metadata"], (pod.get("spec") or {}).get("nodeName")
            if node and (md.get("labels") or {}).get("app") == PLUGIN_APP and not md.get("deletionTimestamp"):
                out[node] = pod
        return out

    def _plugin_ready(self, plugin_pods: dict) -> dict:
        """{node name: True when the plugin is registered with the kubelet (its pod Ready and not crash-looping)}."""
        return {n: L.pod_ready(p) and not L.annotations(p).get(L.SIM + "faulted") for n, p in plugin_pods.items()}

    def _break_or_heal_plugin_pods(self, gpu_nodes, plugin_pods) -> None:
        for node in gpu_nodes:
            pod = plugin_pods.get(L.name(node))
            if pod is None:
                continue
            broken = bool(L.annotations(pod).get(L.SIM + "faulted"))
            if "dra-plugin-crashloop" in L.faults(node):
                if not broken and (pod.get("status") or {}).get("phase") == "Running":
                    self._crash(pod)
            elif broken:
                # fault cleared: the DaemonSet controller recreates the pod and kwok starts it
                try:
                    self.ctl.core.delete_namespaced_pod(
                        pod["metadata"]["name"], pod["metadata"]["namespace"], grace_period_seconds=0
                    )
                except ApiException as exc:
                    if exc.status != 404:
                        log.warning("delete plugin pod %s: %s", pod["metadata"]["name"], exc.reason)

    def _crash(self, pod: dict) -> None:
        md = pod["metadata"]
        try:
            self.ctl.core.patch_namespaced_pod_status(md["name"], md["namespace"], crash_loop_status(pod, L.now_iso()))
            self.ctl.core.patch_namespaced_pod(
                md["name"], md["namespace"], {"metadata": {"annotations": {L.SIM + "faulted": "dra-plugin-crashloop"}}}
            )
        except ApiException as exc:
            log.warning("crash plugin pod %s: %s", md["name"], exc.reason)
            return
        msg = f"Back-off restarting failed container gpus in pod {md['name']}; last log line: {CRASH_MESSAGE}"
        self.ctl._event(pod, "Pod", md["namespace"], "BackOff", msg, "Warning")

    # ------------------------------------------------------------------------------------------ slices
    def _sync_slices(self, gpu_nodes, plugin_pods) -> set:
        """Publish every running plugin's slices, delete the rest; returns the device types published."""
        have = {L.name(s): s for s in self.slices.snapshot() if L.labels(s).get(L.SIM + "managed") == "true"}
        want: dict = {}
        types: set = set()
        for node in gpu_nodes:
            nname = L.name(node)
            pod = plugin_pods.get(nname)
            crashing = pod is not None and bool(L.annotations(pod).get(L.SIM + "faulted"))
            if pod is None or not (L.pod_ready(pod) or crashing):
                continue  # no plugin has registered on this node (yet)
            devs = D.node_devices(node)
            types.update(d["attributes"]["type"]["string"] for d in devs)
            current = have.get(D.slice_name(nname))
            for name, spec in D.desired_slices(nname, devs, L.faults(node), current).items():
                want[name] = D.slice_body(name, spec, node)
        custom = self.ctl.custom
        for name, body in want.items():
            cur = have.get(name)
            try:
                if cur is None:
                    custom.create_cluster_custom_object(*RESOURCE, "resourceslices", body)
                    log.info("published ResourceSlice %s (generation %s)", name, body["spec"]["pool"]["generation"])
                elif _slice_key(cur) != _slice_key(body):
                    body["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
                    custom.replace_cluster_custom_object(*RESOURCE, "resourceslices", name, body)
                    log.info("republished ResourceSlice %s (generation %s)", name, body["spec"]["pool"]["generation"])
            except ApiException as exc:
                if exc.status != 409:
                    log.warning("ResourceSlice %s: %s %s", name, exc.status, exc.reason)
        for name in set(have) - set(want):
            try:
                custom.delete_cluster_custom_object(*RESOURCE, "resourceslices", name)
                log.info("deleted ResourceSlice %s", name)
            except ApiException as exc:
                if exc.status != 404:
                    log.warning("delete ResourceSlice %s: %s", name, exc.reason)
        return types

    # ------------------------------------------------------------------------------------------ DeviceClasses
    def _sync_device_classes(self, gc, published_types: set) -> None:
        missing = "dra-deviceclass-missing" in L.faults(gc)
        want = {"gpu.nvidia.com": "gpu"} if not missing else {}
        if "mig" in published_types:
            want["mig.nvidia.com"] = "mig"
        have = {L.name(c) for c in self.classes.snapshot()}
        for name, typ in want.items():
            if name in have:
                continue
            body = D.device_class(name, typ)
            body["metadata"]["ownerReferences"] = [owner_ref(gc)]
            try:
                self.ctl.custom.create_cluster_custom_object(*RESOURCE, "deviceclasses", body)
                log.info("created DeviceClass %s", name)
            except ApiException as exc:
                if exc.status != 409:
                    log.warning("DeviceClass %s: %s", name, exc.reason)
        if missing and "gpu.nvidia.com" in have:
            try:
                self.ctl.custom.delete_cluster_custom_object(*RESOURCE, "deviceclasses", "gpu.nvidia.com")
                log.info("deleted DeviceClass gpu.nvidia.com (fault dra-deviceclass-missing)")
            except ApiException as exc:
                if exc.status != 404:
                    log.warning("delete DeviceClass gpu.nvidia.com: %s", exc.reason)


# ---------------------------------------------------------------------------------------------- builders


def crash_loop_status(pod: dict, t: str) -> dict:
    """The status patch of a kubelet-plugin pod whose containers keep crashing (CrashLoopBackOff, not Ready)."""
    md = pod["metadata"]
    statuses = [
        {
            "name": c["name"],
            "image": c.get("image", ""),
            "imageID": "",
            "ready": False,
            "started": False,
            "restartCount": 5,
            "state": {
                "waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": f"back-off 5m0s restarting failed container={c['name']} "
                    f"pod={md['name']}_{md['namespace']}",
                }
            },
            "lastState": {
                "terminated": {
                    "exitCode": 1,
                    "reason": "Error",
                    "message": CRASH_MESSAGE,
                    "startedAt": t,
                    "finishedAt": t,
                }
            },
        }
        for c in pod["spec"].get("containers") or []
    ]
    conds = [
        {"type": kind, "status": "False", "reason": "ContainersNotReady", "lastTransitionTime": t}
        for kind in ("Ready", "ContainersReady")
    ]
    return {"status": {"conditions": conds, "containerStatuses": statuses}}


def _slice_key(obj: dict) -> tuple:
    return (L.annotations(obj).get(D.HASH), ((obj.get("spec") or {}).get("pool") or {}).get("generation"))


def owner_ref(gc: dict) -> dict:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "GPUCluster",
        "name": L.name(gc),
        "uid": gc["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": False,
    }


def _daemonset(gc, spec, ns, name, app, containers, node_selector, init=None) -> dict:
    ds = spec.get("daemonsets") or {}
    pod_spec = {
        "priorityClassName": ds.get("priorityClassName") or "system-node-critical",
        "tolerations": ds.get("tolerations") or [],
        "nodeSelector": node_selector,
        "serviceAccountName": "default",
        "containers": containers,
    }
    if init:
        pod_spec["initContainers"] = init
    labels = {"app": app, **(ds.get("labels") or {})}
    template = {"metadata": {"labels": labels, "annotations": dict(ds.get("annotations") or {})}, "spec": pod_spec}
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:16]
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {"app": app, OWNED: "true", "app.kubernetes.io/managed-by": "gpu-operator"},
            "annotations": {D.HASH: digest},
            "ownerReferences": [owner_ref(gc)],
        },
        "spec": {
            "selector": {"matchLabels": {"app": app}},
            "template": template,
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%"}},
        },
    }


def plugin_daemonset(gc: dict, spec: dict, ns: str) -> dict:
    dra = spec.get("draDriver") or {}
    image = (
        f"{dra.get('repository') or 'registry.k8s.io/dra-driver-nvidia'}/"
        f"{dra.get('image') or 'dra-driver-nvidia-gpu'}:{dra.get('version') or 'v0.5.0'}"
    )
    containers = [{"name": "gpus", "image": image}]
    if (dra.get("computeDomains") or {}).get("enabled"):
        containers.append({"name": "compute-domains", "image": image})
    init = [{"name": "driver-validation", "image": "nvcr.io/nvidia/gpu-operator:v26.7.1"}]
    return _daemonset(gc, spec, ns, PLUGIN_DS, PLUGIN_APP, containers, {DEPLOY_LABELS[0]: "true"}, init)


def exporter_daemonset(gc: dict, spec: dict, ns: str) -> dict:
    ex = spec.get("dcgmExporter") or {}
    image = (
        f"{ex.get('repository') or 'nvcr.io/nvidia/k8s'}/{ex.get('image') or 'dcgm-exporter'}:"
        f"{ex.get('version') or '4.6.0-4.8.3-distroless'}"
    )
    containers = [{"name": "nvidia-dcgm-exporter", "image": image}]
    return _daemonset(gc, spec, ns, EXPORTER_DS, EXPORTER_DS, containers, {DEPLOY_LABELS[1]: "true"})
