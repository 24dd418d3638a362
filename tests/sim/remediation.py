"""A stand-in fault-remediation system for the test bed: it takes a node out of service the way NVSentinel's fault
quarantine does (cordon, a taint, its quarantine annotations and a fatal node condition) and gives it back.

The names are the ones NVSentinel documents (docs/INTEGRATIONS.md: the example taint key and the syslog XID
condition; fault-quarantine: the annotations); what the collection recognises is in
plugins/module_utils/_view/quarantine.py. kwok keeps custom node conditions (they merge by type).
"""

from __future__ import annotations

import json
import time

TAINT = {"key": "nvidia.com/gpu-xid-error", "value": "true", "effect": "NoSchedule"}
CONDITION = "SysLogsXIDError"
EVENT_ANNOTATION = "quarantineHealthEvent"
CORDONED_ANNOTATION = "quarantineHealthEventIsCordoned"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _condition(status: str, reason: str, message: str) -> dict:
    now = _now()
    return {
        "type": CONDITION,
        "status": status,
        "reason": reason,
        "message": message,
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }


def _taints(core, name: str) -> list[dict]:
    return [{"key": t.key, "value": t.value, "effect": t.effect} for t in core.read_node(name).spec.taints or []]


def quarantine(core, name: str, xid: int = 79) -> None:
    """Take node ``name`` out of service (``core``: a kubernetes ``CoreV1Api`` with admin rights)."""
    event = {"checkName": CONDITION, "isFatal": True, "errorCode": [str(xid)], "nodeName": name}
    taints = [t for t in _taints(core, name) if t["key"] != TAINT["key"]] + [dict(TAINT)]
    core.patch_node(
        name,
        {
            "metadata": {"annotations": {EVENT_ANNOTATION: json.dumps([event]), CORDONED_ANNOTATION: "True"}},
            "spec": {"unschedulable": True, "taints": taints},
        },
    )
    message = "[%d] GPU has fallen off the bus (simulated) - RecommendedAction: RESTART_BM" % xid
    core.patch_node_status(name, {"status": {"conditions": [_condition("True", CONDITION + "IsNotHealthy", message)]}})


def release(core, name: str) -> None:
    """Give node ``name`` back: uncordon, untaint, drop the annotations, the condition healthy again."""
    taints = [t for t in _taints(core, name) if t["key"] != TAINT["key"]]
    core.patch_node(
        name,
        {
            "metadata": {"annotations": {EVENT_ANNOTATION: None, CORDONED_ANNOTATION: None}},
            "spec": {"unschedulable": None, "taints": taints or None},
        },
    )
    core.patch_node_status(
        name, {"status": {"conditions": [_condition("False", CONDITION + "IsHealthy", "No Health Failures")]}}
    )
