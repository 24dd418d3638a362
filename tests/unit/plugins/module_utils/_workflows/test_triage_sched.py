"""Specification of module_utils/_workflows/triage/sched.py: the scheduler's filters and messages, from plain dicts."""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.sched import (
    first_failing_filter,
    node_requested,
    parse_failed_scheduling,
    pod_requests,
    selector_mismatches,
    tolerates,
    untolerated_taints,
)


def pod(gpus=1, resource="nvidia.com/gpu", tolerations=(), node_selector=None, affinity=None, init=None, node=None):
    spec = {
        "containers": [{"name": "c", "resources": {"limits": {resource: str(gpus), "cpu": "1"}}}],
        "tolerations": list(tolerations),
    }
    if node_selector:
        spec["nodeSelector"] = node_selector
    if affinity:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": affinity}}
    if init:
        spec["initContainers"] = [{"name": "i", "resources": {"limits": {resource: str(init)}}}]
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": spec, "status": {"phase": "Pending"}}


def node(name, gpus=8, taints=(), labels=None, unschedulable=False):
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": list(taints), "unschedulable": unschedulable},
        "status": {"allocatable": {"nvidia.com/gpu": str(gpus)}, "capacity": {"nvidia.com/gpu": str(gpus)}},
    }


TAINT = {"key": "gpuops.io/reserved", "value": "team-a", "effect": "NoSchedule"}


class TestRequests:
    def test_limits_count_as_requests_for_extended_resources(self):
        assert pod_requests(pod(gpus=2)) == {"nvidia.com/gpu": 2}

    def test_an_init_container_counts_when_it_asks_for_more_than_the_containers(self):
        assert pod_requests(pod(gpus=1, init=3)) == {"nvidia.com/gpu": 3}

    def test_mig_resources_are_gpu_requests(self):
        assert pod_requests(pod(resource="nvidia.com/mig-1g.10gb")) == {"nvidia.com/mig-1g.10gb": 1}

    def test_requested_per_node_skips_terminal_and_unbound_pods(self):
        done = pod(gpus=4, node="g0")
        done["status"]["phase"] = "Succeeded"
        assert node_requested([pod(gpus=2, node="g0"), pod(gpus=1, node="g0"), done, pod(gpus=5)]) == {
            "g0": {"nvidia.com/gpu": 3}
        }


class TestTolerations:
    @pytest.mark.parametrize(
        "toleration, expected",
        [
            ({"key": "gpuops.io/reserved", "operator": "Exists"}, True),
            ({"key": "gpuops.io/reserved", "value": "team-a"}, True),
            ({"key": "gpuops.io/reserved", "value": "team-b"}, False),
            ({"key": "gpuops.io/reserved", "operator": "Exists", "effect": "NoExecute"}, False),
            ({"operator": "Exists"}, True),
            ({"key": "other", "operator": "Exists"}, False),
        ],
    )
    def test_kubernetes_matching_rules(self, toleration, expected):
        assert tolerates(toleration, TAINT) is expected

    def test_prefer_no_schedule_never_blocks(self):
        soft = dict(TAINT, effect="PreferNoSchedule")
        assert untolerated_taints(pod(), node("g0", taints=[soft])) == []


class TestSelectors:
    def test_node_selector_mismatch_names_key_wanted_and_actual(self):
        assert selector_mismatches(
            pod(node_selector={"gpuops.io/pool": "a100"}), node("g0", labels={"gpuops.io/pool": "h100"})
        ) == [{"source": "nodeSelector", "key": "gpuops.io/pool", "wanted": "a100", "node_value": "h100"}]

    def test_affinity_terms_are_ored(self):
        terms = {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "gpuops.io/pool", "operator": "In", "values": ["a100"]}]},
                {"matchExpressions": [{"key": "gpuops.io/pool", "operator": "In", "values": ["h100"]}]},
            ]
        }
        assert selector_mismatches(pod(affinity=terms), node("g0", labels={"gpuops.io/pool": "h100"})) == []
        miss = selector_mismatches(pod(affinity=terms), node("g1", labels={"gpuops.io/pool": "t4"}))
        assert [m["source"] for m in miss] == ["nodeAffinity", "nodeAffinity"]


class TestFirstFailingFilter:
    """The node is counted under the first filter it fails, in the default scheduler's order."""

    def test_cordon_before_taint_before_selector_before_resources(self):
        p = pod(gpus=9, node_selector={"gpuops.io/pool": "x"})
        assert first_failing_filter(p, node("g", taints=[TAINT], unschedulable=True), {})[0] == "unschedulable"
        assert first_failing_filter(p, node("g", taints=[TAINT]), {})[0] == "taint"
        assert first_failing_filter(p, node("g"), {})[0] == "affinity"
        assert first_failing_filter(pod(gpus=9), node("g"), {}) == (
            "resources",
            {"insufficient": {"nvidia.com/gpu": {"requested": 9, "free": 8}}},
        )

    def test_used_gpus_reduce_what_is_free(self):
        assert first_failing_filter(pod(gpus=2), node("g"), {"nvidia.com/gpu": 7})[0] == "resources"
        assert first_failing_filter(pod(gpus=1), node("g"), {"nvidia.com/gpu": 7}) == (None, None)

    def test_the_taint_detail_carries_its_key(self):
        kind, detail = first_failing_filter(pod(), node("g", taints=[TAINT]), {})
        assert kind == "taint" and detail["taint"]["key"] == "gpuops.io/reserved"


class TestFailedSchedulingMessage:
    MESSAGE = (
        "0/5 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
        "1 node(s) had untolerated taint {gpuops.io/reserved: team-a}, 3 Insufficient nvidia.com/gpu. "
        "preemption: 0/5 nodes are available: 2 No preemption victims found for incoming pod, "
        "3 Preemption is not helpful for scheduling."
    )

    def test_counts_per_reason_with_taint_key_and_resource(self):
        parsed = parse_failed_scheduling(self.MESSAGE)
        assert parsed["nodes"] == 5
        assert [(r["count"], r["filter"], r.get("key") or r.get("resource")) for r in parsed["reasons"]] == [
            (1, "taint", "node-role.kubernetes.io/control-plane"),
            (1, "taint", "gpuops.io/reserved"),
            (3, "resources", "nvidia.com/gpu"),
        ]
        assert parsed["preemption"] == [
            {"count": 2, "reason": "No preemption victims found for incoming pod"},
            {"count": 3, "reason": "Preemption is not helpful for scheduling"},
        ]

    def test_taint_without_key_and_selector_and_cordon(self):
        parsed = parse_failed_scheduling(
            "0/3 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) didn't match Pod's node "
            "affinity/selector, 1 node(s) were unschedulable. preemption: not eligible due to preemptionPolicy=Never."
        )
        assert [r["filter"] for r in parsed["reasons"]] == ["taint", "affinity", "unschedulable"]
        assert parsed["preemption"] == [{"count": None, "reason": "not eligible due to preemptionPolicy=Never"}]

    def test_kube_scheduler_1_36_wording(self):
        """As the test bed's kube-scheduler v1.36 writes it: no taint key, a DRA note before preemption."""
        parsed = parse_failed_scheduling(
            "0/5 nodes are available: 2 node(s) had untolerated taint(s), 3 Insufficient nvidia.com/gpu. no new "
            "claims to deallocate, preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling."
        )
        assert [(r["count"], r["filter"], r.get("resource")) for r in parsed["reasons"]] == [
            (2, "taint", None),
            (3, "resources", "nvidia.com/gpu"),
        ]
        assert parsed["preemption"] == [{"count": 5, "reason": "Preemption is not helpful for scheduling"}]

    def test_other_shapes_keep_the_message(self):
        parsed = parse_failed_scheduling("skip schedule deleting pod: ns/p")
        assert parsed["nodes"] is None and parsed["reasons"] == [] and parsed["message"].startswith("skip")
