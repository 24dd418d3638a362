"""The node side of DRA under kwok: what the kubelet and the gpu.nvidia.com kubelet plugin do for a pod with claims.

A real kubelet calls the DRA driver's NodePrepareResources for every allocated claim of a scheduled pod before it
creates the pod's sandbox; once that succeeds the sandbox exists (condition PodReadyToStartContainers=True) and the
containers start. Here, once every claim of a pod bound to a node is allocated and reserved for it and the driver's
plugin on that node is registered (its pod Ready and not crash-looping), the claims are recorded as prepared in the
node's checkpoint and the pod gets PodReadyToStartContainers=True, which is what kwok's pod-ready stage waits for
(tests/sim/kwok_stages/pod-ready.yaml). Otherwise the pod stays Pending, its containers ContainerCreating, with one
FailedPrepareDynamicResources event worded as the kubelet words it.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from kubernetes.client.rest import ApiException

from . import dra_devices as D
from . import logic as L

log = logging.getLogger("sim.operator.dra")
STARTED = "PodReadyToStartContainers"


def key(obj: dict) -> str:
    return f"{obj['metadata'].get('namespace')}/{obj['metadata']['name']}"


def started(pod: dict) -> bool:
    conds = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == STARTED and c.get("status") == "True" for c in conds)


def results(claim: dict) -> list[dict]:
    return ((((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")) or []


def pod_claims(pod: dict, claims: dict) -> list[dict] | None:
    """The pod's ResourceClaims once each exists, is allocated and is reserved for the pod; None while the kubelet
    would still wait (a claim from a template not created yet, not allocated, or reserved for someone else)."""
    ns, uid = pod["metadata"]["namespace"], pod["metadata"].get("uid")
    generated = {
        s["name"]: s.get("resourceClaimName") for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
    }
    out = []
    for pc in pod["spec"].get("resourceClaims") or []:
        name = pc.get("resourceClaimName")
        if not name:
            if pc["name"] not in generated:
                return None  # the resource claim controller has not created it yet
            name = generated[pc["name"]]
            if not name:
                continue  # the template asked for nothing: no claim for this pod
        claim = claims.get(f"{ns}/{name}")
        status = (claim or {}).get("status") or {}
        if claim is None or not status.get("allocation"):
            return None
        if not any(r.get("uid") == uid for r in status.get("reservedFor") or []):
            return None
        out.append(claim)
    return out


def record(claim: dict, pod: dict) -> dict:
    return {
        "namespace": claim["metadata"]["namespace"],
        "name": claim["metadata"]["name"],
        "pod": key(pod),
        "devices": [
            {k: r[k] for k in ("request", "driver", "pool", "device", "adminAccess") if k in r} for r in results(claim)
        ],
    }


class DraKubeletPlugin:
    def __init__(self, ctl, claims_informer):
        self.ctl = ctl
        self.claims = claims_informer
        self.checkpoint_dir: Path | None = None  # <state-dir>/dra-plugin when run by tests.sim.operator
        self.written: dict[str, dict] = {}  # node → prepared claims last written
        self.failed: set = set()  # pod uids with a FailedPrepareDynamicResources reported

    def sync(self, pods: list[dict], plugin_ready: dict) -> None:
        """plugin_ready: {node name: True when the gpu.nvidia.com plugin there is registered with the kubelet}."""
        claims = {key(c): c for c in self.claims.snapshot()}
        prepared: dict[str, dict] = {}
        for pod in pods:
            spec, status = pod.get("spec") or {}, pod.get("status") or {}
            node = spec.get("nodeName")
            if not (node and spec.get("resourceClaims")) or pod["metadata"].get("deletionTimestamp"):
                continue
            if status.get("phase") in ("Succeeded", "Failed"):
                continue
            mine = pod_claims(pod, claims)
            if mine is None:
                continue
            if not started(pod):
                drivers = sorted({r["driver"] for c in mine for r in results(c)})
                unregistered = [d for d in drivers if d != D.DRIVER or not plugin_ready.get(node)]
                if unregistered:
                    self._failed(pod, f"DRA driver {unregistered[0]} is not registered")
                    continue
                self._start(pod)
            prepared.setdefault(node, {}).update({c["metadata"]["uid"]: record(c, pod) for c in mine})
        self._checkpoint(prepared)

    def _start(self, pod: dict) -> None:
        md = pod["metadata"]
        body = {"status": {"conditions": [{"type": STARTED, "status": "True", "lastTransitionTime": L.now_iso()}]}}
        try:
            self.ctl.core.patch_namespaced_pod_status(md["name"], md["namespace"], body)
            self.failed.discard(md.get("uid"))
            log.info("prepared the claims of pod %s on %s", key(pod), pod["spec"]["nodeName"])
        except ApiException as exc:
            log.warning("start pod %s: %s", key(pod), exc.reason)

    def _failed(self, pod: dict, why: str) -> None:
        md = pod["metadata"]
        if md.get("uid") in self.failed:
            return
        t = L.now_iso()
        waiting = [
            {
                "name": c["name"],
                "image": c.get("image", ""),
                "imageID": "",
                "ready": False,
                "started": False,
                "restartCount": 0,
                "state": {"waiting": {"reason": "ContainerCreating"}},
            }
            for c in pod["spec"].get("containers") or []
        ]
        body = {
            "status": {
                "conditions": [{"type": STARTED, "status": "False", "lastTransitionTime": t}],
                "containerStatuses": waiting,
            }
        }
        try:
            self.ctl.core.patch_namespaced_pod_status(md["name"], md["namespace"], body)
        except ApiException as exc:
            log.warning("pod %s: %s", key(pod), exc.reason)
            return
        self.failed.add(md.get("uid"))
        msg = f"Failed to prepare dynamic resources: prepare dynamic resources: {why}"
        self.ctl._event(pod, "Pod", md["namespace"], "FailedPrepareDynamicResources", msg, "Warning")
        log.info("pod %s on %s: %s", key(pod), pod["spec"]["nodeName"], msg)

    def _checkpoint(self, prepared: dict) -> None:
        """<checkpoint_dir>/<node>/checkpoint.json: the claims prepared on the node (as the plugin's own checkpoint
        keeps them), rewritten only when they change; a node whose pods are gone is left with an empty one."""
        if self.checkpoint_dir is None:
            return
        for node in set(prepared) | set(self.written):
            claims = prepared.get(node, {})
            if self.written.get(node) == claims:
                continue
            path = self.checkpoint_dir / node / "checkpoint.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"driver": D.DRIVER, "node": node, "preparedClaims": claims}, indent=2))
            tmp.replace(path)
            self.written[node] = claims
