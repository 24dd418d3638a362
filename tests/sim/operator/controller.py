"""The simulated GPU Operator controller: caches + one reconcile loop that issues only the patches it needs."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from kubernetes import client
from kubernetes.client.rest import ApiException

from . import device_plugin
from . import logic as L
from .dra import GpuClusterReconciler
from .events import EventRecorder
from .informer import Informer

log = logging.getLogger("sim.operator")
GROUP = "nvidia.com"
MANAGED = "sim.gpuops.io/managed"
HASH = "sim.gpuops.io/spec-hash"
# kwok stages that (re)mark nodes Ready must skip nodes carrying this label (tests/sim/kwok_stages)
NNR_LABEL = "sim.gpuops.io/node-not-ready"
# A fault on the ClusterPolicy (sim.gpuops.io/fault): the operator lags, leaving a new generation unobserved (no pass
# runs for it, so status and operands stay as they were) until the annotation goes.
LAG_FAULT = "observed-generation-lag"


def retry(fn, *a, tries: int = 4, **kw):
    for i in range(tries):
        try:
            return fn(*a, **kw)
        except ApiException as exc:
            if exc.status in (404, 409, 422) or i == tries - 1:
                raise
            time.sleep(0.2 * (i + 1))
        except Exception:
            if i == tries - 1:
                raise
            time.sleep(0.2 * (i + 1))


class Controller:
    def __init__(self, api: client.ApiClient, namespace: str = "gpu-operator", period: float = 1.0):
        self.api = api
        self.core = client.CoreV1Api(api)
        self.apps = client.AppsV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.ext = client.ApiextensionsV1Api(api)
        self.default_ns = namespace
        self.period = period
        self.wake = threading.Event()
        self.stop = threading.Event()
        self.stuck_logged: set = set()
        self.pod_faulted: dict[str, str] = {}  # pod key → fault applied
        self.driver_pods: dict[str, str] = {}  # node → uid of the driver pod last seen there
        self.events_sent: set = set()
        self.recorder = EventRecorder(self.core)
        self.mig_pending_since: dict[str, float] = {}
        self.last_node_not_ready: dict[str, float] = {}
        self.observed: dict[tuple, int] = {}  # (plural, uid) → generation last written as observedGeneration
        self.passes = 0
        self.pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="patch")
        self.lock = threading.Lock()

        def on(_node):
            self.wake.set()

        self.nodes = Informer("nodes", self.core.list_node, on)
        self.pods = Informer("pods", self.core.list_pod_for_all_namespaces, on, namespaced=True)
        self.dss = Informer(
            "daemonsets",
            self.apps.list_daemon_set_for_all_namespaces,
            on,
            namespaced=True,
            label_selector=MANAGED + "=true",
        )
        self.cps = Informer(
            "clusterpolicies",
            lambda **kw: self.custom.list_cluster_custom_object(GROUP, "v1", "clusterpolicies", **kw),
            on,
        )
        self.nvds = Informer(
            "nvidiadrivers",
            lambda **kw: self.custom.list_cluster_custom_object(GROUP, "v1alpha1", "nvidiadrivers", **kw),
            on,
        )
        # GPUCluster mode (DRA): its own informers and pass, in tests/sim/operator/dra.py
        self.dra = GpuClusterReconciler(self)
        self.informers = [self.nodes, self.pods, self.dss, self.cps, self.nvds, *self.dra.informers]

    # ------------------------------------------------------------------------------------------ loop
    def run(self) -> None:
        for inf in self.informers:
            inf.start()
        for inf in self.informers:
            inf.synced.wait(60)
        log.info("caches synced: %d nodes, %d pods", len(self.nodes.items), len(self.pods.items))
        while not self.stop.is_set():
            self.wake.wait(self.period)
            time.sleep(0.05)  # debounce bursts of watch events
            self.wake.clear()
            try:
                self.reconcile()
            except Exception:
                log.exception("reconcile failed; retrying")
                time.sleep(0.5)

    # ------------------------------------------------------------------------------------------ reconcile
    def reconcile(self) -> None:
        self.passes += 1
        cps = sorted(self.cps.snapshot(), key=lambda o: o["metadata"].get("creationTimestamp", ""))
        self.dra.reconcile(cps)
        if not cps:
            return
        cp = cps[0]
        if LAG_FAULT in L.faults(cp) and self._observed_generation("clusterpolicies", cp) != generation(cp):
            return
        for extra in cps[1:]:
            self._set_status(
                "clusterpolicies",
                "v1",
                extra,
                "ignored",
                "Reconciled",
                "another ClusterPolicy is already in use",
                ready_override=False,
            )
        spec = cp.get("spec") or {}
        ns = L.annotations(cp).get("meta.helm.sh/release-namespace") or self.default_ns
        nodes = self.nodes.snapshot()
        gpu_nodes = [n for n in nodes if L.is_gpu_node(n)]
        pods_by_node = self._pods_by_node(ns)
        use_nvd = bool((spec.get("driver") or {}).get("useNvidiaDriverCRD"))
        nvds = self.nvds.snapshot() if use_nvd else []
        owners, conflicts = self._driver_owners(gpu_nodes, nvds) if use_nvd else ({}, set())

        # node labels (NFD / operator / GFD / device plugin / driver owner)
        def label_one(node):
            ops = pods_by_node.get(L.name(node), {})
            drv = ops.get("driver")
            version = L.image_version(drv["image"]) if drv else None
            want = L.desired_node_labels(node, spec, version)
            if L.restarts_in_place(cp) and L.is_gpu_node(node) and L.CLIENT_LABEL not in L.labels(node):
                want[L.CLIENT_LABEL] = "true"  # 26.7.0+: what third-party GPU-client DaemonSets select on
            if use_nvd and L.is_gpu_node(node):
                owner = owners.get(L.name(node))
                if L.labels(node).get(L.DRIVER_OWNER) != owner:
                    want[L.DRIVER_OWNER] = owner
            if want:
                self._patch_node(node, {"metadata": {"labels": want}})

        self._each(label_one, nodes)

        # operand DaemonSets
        os_tags = sorted({L.os_tag(n) for n in gpu_nodes}) or ["ubuntu22.04"]
        desired = self._desired_daemonsets(cp, spec, ns, os_tags, nvds if use_nvd else None)
        self._ensure_runtime_class(cp, spec)  # before the DaemonSets: the device plugin's pods name it
        self._sync_daemonsets(ns, desired)
        if L.spec_enabled(spec, "dcgmExporter"):
            self._ensure_dcgm_service(cp, ns)

        # faults on operand pods, capacity, MIG
        def gpu_one(node):
            nname = L.name(node)
            if L.labels(node).get(L.REAL_NODE) == "true":
                return  # its kubelet reports the GPUs its device plugin advertises; its pods really run
            ops = pods_by_node.get(nname, {})
            self._apply_pod_faults(node, ops)
            self._node_faults(node)
            self._mig(node, spec)
            node = self.nodes.get(nname) or node
            ready = {k: (v["ready"] if v else None) for k, v in ops.items() if not k.startswith("_")}
            want = L.desired_gpu_resources(node, ready, spec)
            patch = L.resource_patch(node, want)
            if patch:
                self._patch_node_status(node, patch)
            if "xid79" in L.faults(node):
                self._event_once(
                    node,
                    "Node",
                    "",
                    "XidCriticalError",
                    "XidCriticalError: Xid=79 on Device=" + L.gpu_uuid(nname, 0) + "; marking device as unhealthy.",
                    "Warning",
                )
            else:
                self.events_sent.discard(("Node", nname, "XidCriticalError"))

        self._each(gpu_one, gpu_nodes)

        # driver restarts (the upgrade controller's deletions): what the new driver pod does on its node
        self._driver_restarts(cp, gpu_nodes, pods_by_node)

        # status
        ds_status = {}
        for ds in self.dss.snapshot():
            if ds["metadata"].get("namespace") != ns:
                continue
            st = ds.get("status") or {}
            ds_status[L.name(ds)] = (
                st.get("desiredNumberScheduled", 0),
                st.get("numberReady", 0),
                st.get("updatedNumberScheduled", 0),
            )
        # DaemonSets not yet observed by KCM count as not ready
        for d in desired:
            ds_status.setdefault(d["metadata"]["name"], (1, 0, 0))
        err = self._servicemonitor_error(cp, spec)
        state, reason, msg = L.upgrade_aware_state(cp, L.policy_state(len(gpu_nodes), ds_status, err), gpu_nodes)
        self._set_status("clusterpolicies", "v1", cp, state, reason, msg, namespace=ns)
        for nvd in nvds:
            nname = L.name(nvd)
            mine = {k: v for k, v in ds_status.items() if k.endswith("-" + nname) and "gpu-driver" in k}
            if nname in conflicts:
                self._set_status(
                    "nvidiadrivers",
                    "v1alpha1",
                    nvd,
                    "notReady",
                    "ConflictingNodeSelector",
                    "node selector of this NVIDIADriver overlaps another one",
                    namespace=ns,
                )
            elif any(r < d for d, r, _u in mine.values()):
                self._set_status(
                    "nvidiadrivers",
                    "v1alpha1",
                    nvd,
                    "notReady",
                    "DriverNotReady",
                    "driver daemonset(s) not ready: " + ", ".join(sorted(mine)),
                    namespace=ns,
                )
            else:
                self._set_status(
                    "nvidiadrivers", "v1alpha1", nvd, "ready", "Reconciled", "all driver pods are ready", namespace=ns
                )

    def _each(self, fn, items) -> None:
        """Run fn over items on the patch pool (independent per-node API calls); log failures."""
        for fut in [self.pool.submit(fn, it) for it in items]:
            try:
                fut.result()
            except Exception:
                log.exception("per-node reconcile failed")

    # ------------------------------------------------------------------------------------------ pods
    def _pods_by_node(self, ns: str) -> dict:
        """{node: {operand key: {pod, ready, image, key}}, plus '_gpu' list and '_all' list}."""
        apps = {ds: key for key, ds, _c, _s in L.OPERANDS}
        out: dict = {}
        for pod in self.pods.snapshot():
            node = (pod.get("spec") or {}).get("nodeName")
            if not node:
                continue
            slot = out.setdefault(node, {"_gpu": [], "_all": []})
            slot["_all"].append(pod)
            md = pod["metadata"]
            lab = md.get("labels") or {}
            if md.get("namespace") == ns:
                key = None
                if lab.get("app.kubernetes.io/component") == "nvidia-driver":
                    key = "driver"
                elif lab.get("app") in apps:
                    key = apps[lab["app"]]
                if key:
                    if md.get("deletionTimestamp") and slot.get(key):
                        continue
                    cs = (pod["spec"].get("containers") or [{}])[0]
                    slot[key] = {
                        "pod": pod,
                        "ready": L.pod_ready(pod),
                        "image": cs.get("image", ""),
                        "key": f"{md['namespace']}/{md['name']}",
                    }
                    continue
            if requests_gpu(pod) and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                slot["_gpu"].append(pod)
        return out

    def _apply_pod_faults(self, node: dict, ops: dict) -> None:
        f = L.faults(node)
        kernel = L.labels(node).get("feature.node.kubernetes.io/kernel-version.full", "")
        plan = {}
        drv = [x for x in f if x in L.DRIVER_FAULTS]
        if "upgrade-failed" in f and L.labels(node).get(L.UPGRADE_STATE) in L.RESTARTING_STATES:
            drv.append("upgrade-failed")  # the driver the upgrade restarts fails to load
        if drv:
            plan["driver"] = ("crash", drv[0])
        if "validator-failing" in f:
            plan["validator"] = ("crash", "validator-failing")
        if "toolkit-no-runtime" in f:
            plan["device-plugin"] = ("sandbox", "toolkit-no-runtime")
            plan["validator"] = plan.get("validator") or ("sandbox", "toolkit-no-runtime")
        for key, info in ops.items():
            if key.startswith("_") or not info:
                continue
            pkey = info["key"]
            pod = info["pod"]
            if pod["metadata"].get("deletionTimestamp"):
                continue
            want = plan.get(key)
            had = self.pod_faulted.get(pkey) or L.annotations(pod).get("sim.gpuops.io/faulted")
            if key == "driver" and L.driver_gated(pod):
                # kwok starts a driver pod only once the simulator "loaded" it: a faulted one is never ready
                if want:
                    self._break_pod(pod, want[0], want[1], kernel)
                    self.pod_faulted[pkey] = want[1]
                else:
                    self._load_driver(pod)
                continue
            if want:
                mode, fault = want
                if pod.get("status", {}).get("phase") != "Running":
                    continue  # let kwok start it first, then break it
                if info["ready"] or had != fault:
                    self._break_pod(pod, mode, fault, kernel)
                    self.pod_faulted[pkey] = fault
            elif had:
                # fault cleared: recreate the pod (the DaemonSet controller makes a fresh one, kwok starts it)
                self.pod_faulted.pop(pkey, None)
                try:
                    self.core.delete_namespaced_pod(
                        pod["metadata"]["name"], pod["metadata"]["namespace"], grace_period_seconds=0
                    )
                except ApiException as exc:
                    if exc.status != 404:
                        log.warning("delete pod %s: %s", pkey, exc.reason)

    def _load_driver(self, pod: dict) -> None:
        """Open kwok's pod-ready gate of a healthy driver pod (tests/sim/kwok_stages/pod-ready.yaml)."""
        md = pod["metadata"]
        cond = {"type": L.DRIVER_GATE, "status": "True", "lastTransitionTime": L.now_iso()}
        try:
            self.core.patch_namespaced_pod_status(md["name"], md["namespace"], {"status": {"conditions": [cond]}})
        except ApiException as exc:
            if exc.status != 404:
                log.warning("load driver pod %s: %s", md["name"], exc.reason)

    def _break_pod(self, pod: dict, mode: str, fault: str, kernel: str) -> None:
        md = pod["metadata"]
        t = L.now_iso()
        containers = pod["spec"].get("containers") or []
        statuses = []
        for c in containers:
            st = {"name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": False, "started": False}
            if mode == "crash":
                msg = "validation failed" if fault == "validator-failing" else L.CRASHES[fault][1].format(kernel=kernel)
                if fault == "validator-failing":
                    msg = (
                        "driver-validation: failed to validate the driver, exit status 1: "
                        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"
                    )
                st.update(
                    {
                        # more than 10: NVIDIA's upgrade controller fails an upgrade on "repeated restarts"
                        "restartCount": 11,
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
                                "message": msg,
                                "startedAt": t,
                                "finishedAt": t,
                            }
                        },
                    }
                )
            else:
                st.update({"restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}})
            statuses.append(st)
        conds = [
            {
                "type": "Ready",
                "status": "False",
                "reason": "ContainersNotReady",
                "lastTransitionTime": t,
                "message": "containers with unready status: [" + " ".join(c["name"] for c in containers) + "]",
            },
            {"type": "ContainersReady", "status": "False", "reason": "ContainersNotReady", "lastTransitionTime": t},
        ]
        body = {"status": {"phase": "Running", "conditions": conds, "containerStatuses": statuses}}
        try:
            self.core.patch_namespaced_pod_status(md["name"], md["namespace"], body)
            self.core.patch_namespaced_pod(
                md["name"], md["namespace"], {"metadata": {"annotations": {"sim.gpuops.io/faulted": fault}}}
            )
        except ApiException as exc:
            log.warning("fault %s on pod %s: %s", fault, md["name"], exc.reason)
            return
        if mode == "crash":
            last = L.CRASHES[fault][0] if fault in L.CRASHES else "validation failed"
            self._event(
                pod,
                "Pod",
                md["namespace"],
                "BackOff",
                f"Back-off restarting failed container {containers[0]['name']} in pod {md['name']}; "
                f"last log line: {last}",
                "Warning",
            )
        else:
            self._event(pod, "Pod", md["namespace"], "FailedCreatePodSandBox", L.NO_RUNTIME_MSG, "Warning")

    def _node_faults(self, node: dict) -> None:
        f = L.faults(node)
        nname = L.name(node)
        conds = (node.get("status") or {}).get("conditions") or []
        ready = next((c for c in conds if c.get("type") == "Ready"), None)
        lab = L.labels(node)
        if "node-not-ready" in f and lab.get(NNR_LABEL) != "true":
            self._patch_node(node, {"metadata": {"labels": {NNR_LABEL: "true"}}})
        elif "node-not-ready" not in f and NNR_LABEL in lab:
            self._patch_node(node, {"metadata": {"labels": {NNR_LABEL: None}}})
        if (
            "node-not-ready" in f
            and ready
            and ready.get("status") == "True"
            and time.monotonic() - self.last_node_not_ready.get(nname, 0) > 1
        ):
            self.last_node_not_ready[nname] = time.monotonic()
            t = L.now_iso()
            self._patch_node_status(
                node,
                {
                    "status": {
                        "conditions": [
                            {
                                "type": "Ready",
                                "status": "False",
                                "reason": "KubeletNotReady",
                                "message": "container runtime network not ready: simulated by "
                                "sim.gpuops.io/fault=node-not-ready",
                                "lastHeartbeatTime": t,
                                "lastTransitionTime": t,
                            }
                        ]
                    }
                },
            )

    # ------------------------------------------------------------------------------------------ MIG
    def _mig(self, node: dict, spec: dict) -> None:
        gpu = L.gpu_info(node)
        if not gpu["mig_capable"] or not L.spec_enabled(spec, "migManager"):
            return
        lab = L.labels(node)
        nname = L.name(node)
        cfg = lab.get("nvidia.com/mig.config")
        if cfg is None:
            return
        applied = L.annotations(node).get(L.ANN_MIG_APPLIED)
        state = lab.get("nvidia.com/mig.config.state")
        if cfg == applied and state in ("success", "failed"):
            return
        if state != "pending" or nname not in self.mig_pending_since:
            self.mig_pending_since[nname] = time.monotonic()
            if state != "pending":
                self._patch_node(node, {"metadata": {"labels": {"nvidia.com/mig.config.state": "pending"}}})
            return
        if time.monotonic() - self.mig_pending_since[nname] < 1.0:
            self.wake.set()
            return
        self.mig_pending_since.pop(nname, None)
        strategy = (spec.get("mig") or {}).get("strategy", "single")
        ok = "mig-failed" not in L.faults(node) and L.mig_layout(cfg, gpu, strategy) is not None
        if ok:
            self._patch_node(
                node,
                {
                    "metadata": {
                        "labels": {"nvidia.com/mig.config.state": "success"},
                        "annotations": {L.ANN_MIG_APPLIED: cfg},
                    }
                },
            )
        else:
            self._patch_node(node, {"metadata": {"labels": {"nvidia.com/mig.config.state": "failed"}}})

    # ------------------------------------------------------------------------------------------ driver restarts
    # The upgrade states are not decided here: the bed's upgrade controller (tests/sim/upgrade-controller, NVIDIA's
    # pkg/upgrade) moves them and deletes the driver pods; the DaemonSet controller brings the new pod, kwok runs it.
    def _driver_restarts(self, cp, gpu_nodes, pods_by_node) -> None:
        """26.7.0 and later: a driver pod that starts where another ran before evicts the pods of GPU-client
        DaemonSets (those selecting nvidia.com/gpu.deploy.client) that started before it, which come back after."""
        in_place = L.restarts_in_place(cp)
        for node in gpu_nodes:
            nname = L.name(node)
            ops = pods_by_node.get(nname, {})
            drv = (ops.get("driver") or {}).get("pod")
            if drv is None or drv["metadata"].get("deletionTimestamp"):
                continue
            uid, before = drv["metadata"]["uid"], self.driver_pods.get(nname)
            self.driver_pods[nname] = uid
            if not in_place or before in (None, uid):
                continue
            started = drv["metadata"].get("creationTimestamp") or ""
            for p in ops.get("_all", []):
                md = p["metadata"]
                if L.gpu_client(p) and not md.get("deletionTimestamp") and md.get("creationTimestamp", "") < started:
                    self._delete_pod(p, "GPU client pod")

    def _delete_pod(self, pod: dict, what: str) -> None:
        md = pod["metadata"]
        try:
            self.core.delete_namespaced_pod(md["name"], md["namespace"], grace_period_seconds=0)
        except ApiException as exc:
            if exc.status != 404:
                log.warning("delete %s %s: %s", what, md["name"], exc.reason)

    # ------------------------------------------------------------------------------------------ NVIDIADriver
    def _driver_owners(self, gpu_nodes, nvds) -> tuple[dict, set]:
        owners, conflicts = {}, set()
        specific = [
            d for d in nvds if (d.get("spec") or {}).get("nodeSelector") and not (d.get("spec") or {}).get("default")
        ]
        fallback = [d for d in nvds if d not in specific]
        for node in gpu_nodes:
            lab = L.labels(node)
            hits = [L.name(d) for d in specific if all(lab.get(k) == v for k, v in d["spec"]["nodeSelector"].items())]
            if len(hits) > 1:
                conflicts.update(hits)
            if hits:
                owners[L.name(node)] = sorted(hits)[0]
            elif fallback:
                owners[L.name(node)] = sorted(L.name(d) for d in fallback)[0]
            else:
                owners[L.name(node)] = None
        return owners, conflicts

    # ------------------------------------------------------------------------------------------ DaemonSets
    def _desired_daemonsets(self, cp, spec, ns, os_tags, nvds) -> list[dict]:
        return desired_daemonsets(cp, spec, ns, os_tags, nvds)

    def _sync_daemonsets(self, ns: str, desired: list[dict]) -> None:
        have = {L.name(d): d for d in self.dss.snapshot() if d["metadata"].get("namespace") == ns}
        want = {d["metadata"]["name"]: d for d in desired}
        for nm, d in want.items():
            cur = have.get(nm)
            if cur is None:
                try:
                    retry(self.apps.create_namespaced_daemon_set, ns, d)
                    log.info("created DaemonSet %s/%s", ns, nm)
                except ApiException as exc:
                    if exc.status != 409:
                        log.warning("create DaemonSet %s: %s %s", nm, exc.status, exc.body)
            elif L.annotations(cur).get(HASH) != d["metadata"]["annotations"][HASH]:
                try:
                    retry(
                        self.apps.patch_namespaced_daemon_set,
                        nm,
                        ns,
                        {
                            "metadata": {
                                "annotations": d["metadata"]["annotations"],
                                "labels": d["metadata"]["labels"],
                            },
                            "spec": {"template": d["spec"]["template"], "updateStrategy": d["spec"]["updateStrategy"]},
                        },
                    )
                    log.info("updated DaemonSet %s/%s", ns, nm)
                except ApiException as exc:
                    log.warning("update DaemonSet %s: %s", nm, exc.reason)
        for nm in have:
            if nm not in want:
                try:
                    self.apps.delete_namespaced_daemon_set(nm, ns, propagation_policy="Background")
                    log.info("deleted DaemonSet %s/%s (component disabled)", ns, nm)
                except ApiException as exc:
                    if exc.status != 404:
                        log.warning("delete DaemonSet %s: %s", nm, exc.reason)

    def _ensure_runtime_class(self, cp, spec) -> None:
        """The RuntimeClass the toolkit registers (spec.operator.runtimeClass, default nvidia), owned by the policy;
        none in NRI plugin mode (cdi.nriPluginEnabled: the toolkit's NRI plugin injects the GPUs), where the one
        this policy owns is deleted."""
        name = (spec.get("operator") or {}).get("runtimeClass") or "nvidia"
        key = ("runtimeclass", name, cp["metadata"].get("uid"))
        dropped = ("runtimeclass-dropped",) + key[1:]
        if (spec.get("cdi") or {}).get("nriPluginEnabled") is True:
            if dropped not in self.events_sent:
                self.events_sent.discard(key)
                self._drop_runtime_class(cp, name, dropped)
            return
        self.events_sent.discard(dropped)
        if key in self.events_sent:
            return
        body = {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": name, "labels": {MANAGED: "true"}, "ownerReferences": [owner_ref(cp)]},
            "handler": name,
        }
        node_api = client.NodeV1Api(self.api)
        self._create_owned(
            key,
            cp,
            "RuntimeClass %s" % name,
            lambda: node_api.create_runtime_class(body),
            lambda: node_api.read_runtime_class(name),
        )

    def _drop_runtime_class(self, cp, name, done) -> None:
        """Delete RuntimeClass ``name`` when this policy owns it (never one someone else made); ``done`` is recorded
        once it is gone or not ours, so later passes send no request."""
        node_api = client.NodeV1Api(self.api)
        try:
            owners = node_api.read_runtime_class(name).metadata.owner_references or []
            if any(o.uid == cp["metadata"].get("uid") for o in owners):
                node_api.delete_runtime_class(name)
                log.info("deleted RuntimeClass %s (NRI plugin mode)", name)
        except ApiException as exc:
            if exc.status != 404:
                log.warning("delete RuntimeClass %s: %s", name, exc.reason)
                return
        self.events_sent.add(done)

    def _ensure_dcgm_service(self, cp, ns) -> None:
        # Keyed by the policy's uid: a reinstalled policy (its old Service garbage-collected) gets a new one.
        key = ("svc", ns, cp["metadata"].get("uid"))
        if key in self.events_sent:
            return
        body = {
            "metadata": {
                "name": "nvidia-dcgm-exporter",
                "namespace": ns,
                "labels": {"app": "nvidia-dcgm-exporter", MANAGED: "true"},
                "annotations": {"prometheus.io/scrape": "true"},
                "ownerReferences": [owner_ref(cp)],
            },
            "spec": {
                "selector": {"app": "nvidia-dcgm-exporter"},
                "type": "ClusterIP",
                "ports": [{"name": "gpu-metrics", "port": 9400, "targetPort": 9400, "protocol": "TCP"}],
            },
        }
        self._create_owned(
            key,
            cp,
            "Service nvidia-dcgm-exporter",
            lambda: self.core.create_namespaced_service(ns, body),
            lambda: self.core.read_namespaced_service("nvidia-dcgm-exporter", ns),
        )

    def _create_owned(self, key, cp, what, create, read) -> None:
        """Create an object the policy owns, once per policy uid. One that already exists counts only if this policy
        owns it: after a reinstall the old policy's copy awaits garbage collection, and the next pass creates anew."""
        try:
            create()
        except ApiException as exc:
            if exc.status != 409:
                log.warning("create %s: %s", what, exc.reason)
                return
            try:
                owners = read().metadata.owner_references or []
            except ApiException:
                return  # collected in between: the next pass creates it
            if not any(o.uid == cp["metadata"].get("uid") for o in owners):
                return
        self.events_sent.add(key)

    def _servicemonitor_error(self, cp, spec) -> str | None:
        sm = ((spec.get("dcgmExporter") or {}).get("serviceMonitor") or {}).get("enabled")
        if not sm or not L.spec_enabled(spec, "dcgmExporter"):
            return None
        chart = L.labels(cp).get("helm.sh/chart", "")
        ver = chart.rsplit("-v", 1)[-1] if "-v" in chart else ""
        try:
            newer = tuple(int(x) for x in ver.split(".")[:2]) >= (26, 7)
        except ValueError:
            newer = True
        if newer:
            return None
        try:
            self.ext.read_custom_resource_definition("servicemonitors.monitoring.coreos.com")
            return None
        except ApiException as exc:
            if exc.status == 404:
                return (
                    "couldn't find ServiceMonitor CRD; install the Prometheus Operator "
                    "or disable dcgmExporter.serviceMonitor"
                )
            return None

    # ------------------------------------------------------------------------------------------ API helpers
    def _patch_node(self, node: dict, body: dict) -> None:
        try:
            retry(self.core.patch_node, L.name(node), body)
        except ApiException as exc:
            log.warning("patch node %s: %s", L.name(node), exc.reason)

    def _patch_node_status(self, node: dict, body: dict) -> None:
        try:
            retry(self.core.patch_node_status, L.name(node), body)
        except ApiException as exc:
            log.warning("patch node status %s: %s", L.name(node), exc.reason)

    def _observed_generation(self, plural, obj) -> int | None:
        """The generation this operator last reported observing (kept here too: a CRD without the field prunes it)."""
        status = obj.get("status") or {}
        ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
        return (
            self.observed.get((plural, obj["metadata"].get("uid")))
            or status.get("observedGeneration")
            or (ready[0].get("observedGeneration") if ready else None)
        )

    def _set_status(self, plural, version, obj, state, reason, msg, namespace=None, ready_override=None) -> None:
        """Write state, conditions and the generation they are for (status.observedGeneration and each condition's;
        the API server prunes whichever the object's CRD does not carry)."""
        old = obj.get("status") or {}
        gen = generation(obj)
        conds = L.condition_set(state, reason, msg, L.now_iso(), old.get("conditions"))
        if ready_override is False:
            conds = old.get("conditions") or []
        conds = [dict(c, observedGeneration=gen) for c in conds]
        new = {"state": state, "conditions": conds, "observedGeneration": gen}
        if namespace:
            new["namespace"] = namespace
        if (
            old.get("state") == state
            and strip_times(old.get("conditions")) == strip_times(conds)
            and (not namespace or old.get("namespace") == namespace)
            and self._observed_generation(plural, obj) == gen
        ):
            return
        try:
            retry(self.custom.patch_cluster_custom_object_status, GROUP, version, plural, L.name(obj), {"status": new})
            self.observed[(plural, obj["metadata"].get("uid"))] = gen
            log.info("%s/%s status: %s (%s), generation %s", plural, L.name(obj), state, reason, gen)
        except ApiException as exc:
            log.warning("status %s/%s: %s", plural, L.name(obj), exc.reason)

    def _event_once(self, obj, kind, ns, reason, msg, typ) -> None:
        key = (kind, L.name(obj), reason)
        if key in self.events_sent:
            return
        self.events_sent.add(key)
        self._event(obj, kind, ns, reason, msg, typ)

    def _event(self, obj, kind, ns, reason, msg, typ) -> None:
        self.recorder.record(obj, kind, ns, reason, msg, typ)


# ---------------------------------------------------------------------------------------------- builders


def strip_times(conds):
    """Conditions without what says when (lastTransitionTime) and for which generation (observedGeneration)."""
    return [{k: v for k, v in c.items() if k not in ("lastTransitionTime", "observedGeneration")} for c in conds or []]


def generation(obj: dict) -> int | None:
    return obj["metadata"].get("generation")


def owner_ref(cp: dict) -> dict:
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "name": L.name(cp),
        "uid": cp["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": False,
    }


def requests_gpu(pod: dict) -> bool:
    for c in (pod.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        for k in list((res.get("limits") or {})) + list((res.get("requests") or {})):
            if k.startswith("nvidia.com/gpu") or k.startswith("nvidia.com/mig-"):
                return True
    return False


def _image(spec: dict, key: str, default_repo: str, default_image: str, default_version: str, suffix="") -> str:
    c = spec.get(key) or {}
    return (
        f"{c.get('repository') or default_repo}/{c.get('image') or default_image}:"
        f"{c.get('version') or default_version}{suffix}"
    )


def desired_daemonsets(cp: dict, spec: dict, ns: str, os_tags: list[str], nvds: list | None) -> list[dict]:
    dsspec = spec.get("daemonsets") or {}
    tolerations = dsspec.get("tolerations") or []
    prio = dsspec.get("priorityClassName") or "system-node-critical"
    extra_labels = dsspec.get("labels") or {}
    extra_ann = dsspec.get("annotations") or {}
    mu = str((dsspec.get("rollingUpdate") or {}).get("maxUnavailable", "1"))
    rolling = (
        {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": int(mu) if mu.isdigit() else mu}}
        if (dsspec.get("updateStrategy") or "RollingUpdate") == "RollingUpdate"
        else {"type": "OnDelete"}
    )
    auto = bool(((spec.get("driver") or {}).get("upgradePolicy") or {}).get("autoUpgrade"))
    out = []

    def ds(
        name,
        app,
        component,
        image,
        container,
        node_selector,
        strategy=None,
        extra_pod_labels=None,
        tol=None,
        ann=None,
        driver=None,
    ):
        pod_labels = {"app": app, **extra_labels, **(extra_pod_labels or {})}
        tmpl = {
            "metadata": {"labels": pod_labels, "annotations": dict(extra_ann)},
            "spec": {
                "priorityClassName": prio,
                "tolerations": tol if tol is not None else tolerations,
                "nodeSelector": node_selector,
                "serviceAccountName": "default",
                "containers": [{"name": container, "image": image}],
            },
        }
        if driver is not None and L.restarts_in_place(cp):
            # 26.7.0+: the digest of the install-relevant settings on the driver container, the chart on the pod
            # template (a chart upgrade alone makes the driver pod out of date, with the same digest)
            first = tmpl["spec"]["containers"][0]
            first["env"] = [{"name": L.DIGEST_ENV, "value": L.driver_digest(image, driver)}]
            pod_labels["helm.sh/chart"] = L.labels(cp).get("helm.sh/chart", "")
        body = {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": {
                    "app": app,
                    MANAGED: "true",
                    "app.kubernetes.io/managed-by": "gpu-operator",
                    "helm.sh/chart": L.labels(cp).get("helm.sh/chart", "gpu-operator"),
                },
                "annotations": dict(ann or {}),
                "ownerReferences": [owner_ref(cp)],
            },
            "spec": {
                "selector": {"matchLabels": {"app": app}},
                "template": tmpl,
                "updateStrategy": strategy or rolling,
            },
        }
        if driver is not None:
            # the upgrade controller finds the driver DaemonSets (and their pods) by these labels
            body["metadata"]["labels"].update(extra_pod_labels or {})
        _rehash(body)
        out.append(body)

    drv = spec.get("driver") or {}
    if L.spec_enabled(spec, "driver"):
        if nvds is None:
            os_tag = os_tags[0]
            ds(
                "nvidia-driver-daemonset",
                "nvidia-driver-daemonset",
                "driver",
                f"{drv.get('repository') or 'nvcr.io/nvidia'}/{drv.get('image') or 'driver'}:"
                f"{drv.get('version', '')}-{os_tag}",
                "nvidia-driver-ctr",
                {L.DEPLOY + "driver": "true"},
                strategy={"type": "OnDelete"},
                extra_pod_labels={"app.kubernetes.io/component": "nvidia-driver"},
                ann={"nvidia.com/gpu-driver-upgrade-enabled": "true" if auto else "false"},
                driver=drv,
            )
        else:
            for cr in nvds:
                crs = cr.get("spec") or {}
                for os_tag in os_tags:
                    nm = f"nvidia-gpu-driver-{os_tag}-{L.name(cr)}"
                    osid = os_tag.rstrip("0123456789.")
                    sel = {
                        L.DEPLOY + "driver": "true",
                        L.DRIVER_OWNER: L.name(cr),
                        "feature.node.kubernetes.io/system-os_release.ID": osid,
                    }
                    ds(
                        nm,
                        nm,
                        "driver",
                        f"{crs.get('repository') or 'nvcr.io/nvidia'}/{crs.get('image') or 'driver'}:"
                        f"{crs.get('version', '')}-{os_tag}",
                        "nvidia-driver-ctr",
                        sel,
                        strategy={"type": "OnDelete"},
                        extra_pod_labels={
                            "app.kubernetes.io/component": "nvidia-driver",
                            "nvidia.com/nvidiadriver": L.name(cr),
                        },
                        tol=crs.get("tolerations") or tolerations,
                        ann={"nvidia.com/gpu-driver-upgrade-enabled": "true" if auto else "false"},
                        driver=crs,
                    )
    for key, dsname, comp, skey in L.OPERANDS:
        if key == "driver" or not L.spec_enabled(spec, skey):
            continue
        images = {
            "toolkit": ("nvcr.io/nvidia/k8s", "container-toolkit", "v1.20.0", "nvidia-container-toolkit-ctr"),
            "device-plugin": ("nvcr.io/nvidia", "k8s-device-plugin", "v0.20.0", "nvidia-device-plugin"),
            "gfd": ("nvcr.io/nvidia", "k8s-device-plugin", "v0.20.0", "gpu-feature-discovery"),
            "dcgm": ("nvcr.io/nvidia/cloud-native", "dcgm", "4.4.1-1-ubuntu22.04", "nvidia-dcgm-ctr"),
            "dcgm-exporter": ("nvcr.io/nvidia/k8s", "dcgm-exporter", "4.6.0-4.8.3-distroless", "nvidia-dcgm-exporter"),
            "validator": (
                "nvcr.io/nvidia/cloud-native",
                "gpu-operator-validator",
                "v26.7.0",
                "nvidia-operator-validator",
            ),
            "mig-manager": ("nvcr.io/nvidia/cloud-native", "k8s-mig-manager", "v0.15.0", "nvidia-mig-manager"),
            "node-status-exporter": (
                "nvcr.io/nvidia/cloud-native",
                "gpu-operator-validator",
                "v26.7.0",
                "nvidia-node-status-exporter",
            ),
        }[key]
        repo, img, ver, container = images
        skey2 = skey or "validator"
        ds(dsname, dsname, comp, _image(spec, skey2, repo, img, ver), container, {L.DEPLOY + comp: "true"})
        if key == "device-plugin":
            device_plugin.complete(out[-1]["spec"]["template"]["spec"], spec)
            _rehash(out[-1])
    return out


def _rehash(body: dict) -> None:
    """Set a DaemonSet's template hash (what ``_sync_daemonsets`` compares)."""
    h = hashlib.sha256(json.dumps([body["spec"]["template"], body["spec"]["updateStrategy"]], sort_keys=True).encode())
    body["metadata"]["annotations"][HASH] = h.hexdigest()[:16]
