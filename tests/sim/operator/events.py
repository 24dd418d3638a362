"""Events as the operator's recorder (client-go's) writes them: one that repeats an Event already written for the
same object - same type, reason and message - increments that Event's ``count`` and ``lastTimestamp`` instead of
creating another, so a node upgraded ten times carries one Event per distinct state message, not ten."""

from __future__ import annotations

import logging
import threading

from kubernetes import client
from kubernetes.client.rest import ApiException

from . import logic as L

log = logging.getLogger("sim-operator")


class EventRecorder:
    def __init__(self, core: client.CoreV1Api):
        self.core = core
        self.written: dict[tuple, list] = {}  # (namespace, kind, name, uid, type, reason, message) → [name, count]
        self.lock = threading.Lock()

    def record(self, obj: dict, kind: str, ns: str, reason: str, msg: str, typ: str) -> None:
        md = obj["metadata"]
        evns = ns or "default"
        key = (evns, kind, md["name"], md.get("uid"), typ, reason, msg)
        with self.lock:
            seen = self.written.get(key)
            if seen:
                seen[1] += 1
            name, count = seen or (None, 1)
        t = L.now_iso()
        if name:
            try:
                self.core.patch_namespaced_event(name, evns, {"count": count, "lastTimestamp": t})
                return
            except ApiException as exc:
                if exc.status != 404:  # deleted meanwhile: written anew below
                    log.debug("event: %s", exc.reason)
                    return
        body = {
            "metadata": {"generateName": f"{md['name']}.", "namespace": evns},
            "involvedObject": {
                "kind": kind,
                "name": md["name"],
                "namespace": ns or None,
                "uid": md.get("uid"),
                "apiVersion": "v1",
            },
            "reason": reason,
            "message": msg,
            "type": typ,
            "count": 1,
            "firstTimestamp": t,
            "lastTimestamp": t,
            "source": {
                "component": "gpu-operator" if kind == "Node" else "kubelet",
                **({"host": (obj.get("spec") or {}).get("nodeName")} if kind == "Pod" else {}),
            },
        }
        try:
            created = self.core.create_namespaced_event(evns, body)
        except ApiException as exc:
            log.debug("event: %s", exc.reason)
            return
        with self.lock:
            self.written[key] = [created.metadata.name, 1]
