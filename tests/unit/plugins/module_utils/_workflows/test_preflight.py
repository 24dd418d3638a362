# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Specification of gpu_preflight_info's reads (plugins/module_utils/_workflows/preflight.py) over a stub client.

The stub answers the paths the API server would; the real API server is exercised in
tests/integration/baseline/.
"""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import K8sClient, K8sError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows import preflight as p


def k8s_node(name, labels=None, taints=None, unschedulable=False, runtime="containerd://1.7.27"):
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {"nodeInfo": {"kubeletVersion": "v1.36.3", "containerRuntimeVersion": runtime, "osImage": "Ubuntu"}},
    }


class StubClient:
    def __init__(self, paths=None, lists=None):
        self.paths = paths or {}
        self.lists = lists or {}
        self.requests = 0
        self.calls = []

    def version(self):
        self.requests += 1
        return {"git_version": "v1.36.3", "major": "1", "minor": "36", "platform": "linux/amd64"}

    def get(self, path, query=None, what=None):
        self.requests += 1
        self.calls.append(("GET", path))
        if path not in self.paths:
            raise K8sError("%s failed: HTTP 404" % what, 404)
        return self.paths[path]

    get_or_none = K8sClient.get_or_none  # the real 404 -> None over the stub's get

    def list_all(self, path, label_selector=None, page_size=500, **kw):
        self.requests += 1
        self.calls.append(("LIST", path, label_selector))
        return self.lists.get(path, []), {}

    def list_core(self, resource, namespace=None, **kw):
        return self.list_all("/api/v1/" + resource, **kw)[0]

    def list_custom(self, group, version, plural, namespace=None, **kw):
        path = "/apis/%s/%s/%s" % (group, version, plural)
        return self.list_all(path, **kw)[0] if path in self.lists else None


NODES = [
    k8s_node(
        "h100-0",
        {
            "feature.node.kubernetes.io/pci-10de.present": "true",
            "nvidia.com/gpu-driver-upgrade-state": "upgrade-failed",
        },
    ),
    k8s_node("cpu-0", {"kubernetes.io/os": "linux"}, taints=[{"key": "a", "effect": "NoSchedule"}], unschedulable=True),
]


def test_gather_reads_each_section_with_one_request_whatever_the_node_count():
    client = StubClient(
        paths={
            "/apis/monitoring.coreos.com/v1": {"resources": [{"name": "servicemonitors"}]},
            "/apis/resource.k8s.io/v1": {"resources": [{"name": "deviceclasses"}, {"name": "resourceslices"}]},
            "/apis/node.k8s.io/v1/runtimeclasses/nvidia": {"handler": "nvidia"},
            "/api/v1/namespaces/gpu-operator": {
                "metadata": {"labels": {"pod-security.kubernetes.io/enforce": "privileged"}}
            },
        },
        lists={
            "/api/v1/nodes": NODES,
            "/apis/apps/v1/daemonsets": [{"metadata": {"namespace": "nfd", "name": "nfd-worker"}}],
            "/apis/nvidia.com/v1/clusterpolicies": [
                {
                    "metadata": {"name": "cluster-policy"},
                    "spec": {"dcgmExporter": {"enabled": False}},
                    "status": {"namespace": "gpu-operator"},
                }
            ],
        },
    )
    out = p.gather(
        client,
        p.PreflightOptions(permissions=[{"verb": "list", "resource": "nodes"}]),
        review=lambda body: {"allowed": True},
    )
    assert out["nodes"]["h100-0"]["gpu"] is True and out["nodes"]["h100-0"]["upgrade_state"] == "upgrade-failed"
    assert out["nodes"]["cpu-0"] == {
        "name": "cpu-0",
        "gpu": False,
        "all_labels": {"kubernetes.io/os": "linux"},
        "taints": [{"key": "a", "value": None, "effect": "NoSchedule"}],
        "unschedulable": True,
        "upgrade_state": None,
        "kubelet_version": "v1.36.3",
        "container_runtime_version": "containerd://1.7.27",
        "os_image": "Ubuntu",
    }
    assert out["nfd"] == {"daemonsets": [{"namespace": "nfd", "name": "nfd-worker"}], "labelled_nodes": 1}
    assert out["crds"] == {
        "clusterpolicies.nvidia.com": False,
        "nodefeaturerules.nfd.k8s-sigs.io": False,
        "resourceslices.resource.k8s.io": True,
        "servicemonitors.monitoring.coreos.com": True,
    }
    assert out["runtime_class"] == {"name": "nvidia", "exists": True, "handler": "nvidia"}
    assert (
        out["namespace"]["exists"] and out["namespace"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    )
    assert out["cluster_policy"] == {"exists": True, "name": "cluster-policy", "dcgm_exporter_enabled": False}
    assert out["operator"]["namespace_source"] == "cluster_policy"
    assert out["access"] == [{"identity": "automation", "checked": 1, "missing": []}]
    assert ("LIST", "/apis/apps/v1/daemonsets", p.NFD_SELECTOR) in client.calls
    assert out["api_requests"] == client.requests == 10


def test_absent_objects_read_as_absent_and_other_errors_propagate():
    out = p.gather(StubClient(), p.PreflightOptions(sections=["runtime_class", "namespace", "crds", "cluster_policy"]))
    assert out["runtime_class"]["exists"] is False and out["namespace"]["exists"] is False
    assert not any(out["crds"].values()) and out["cluster_policy"]["exists"] is False

    class Forbidden(StubClient):
        def get(self, path, query=None, what=None):
            raise K8sError("read namespace failed: HTTP 403", 403)

    with pytest.raises(K8sError, match="403"):
        p.gather(Forbidden(), p.PreflightOptions(sections=["namespace"]))


def test_access_lists_each_denied_permission_with_the_reason():
    bodies = []

    def review(body):
        bodies.append(body)
        attrs = body["spec"]["resourceAttributes"]
        return {"allowed": attrs["verb"] == "list", "reason": "" if attrs["verb"] == "list" else "no rule"}

    perms = [
        {"verb": "list", "resource": "nodes"},
        {"verb": "get", "resource": "pods", "subresource": "log", "namespace": "gpu-operator"},
    ]
    out = p.gather(
        StubClient(), p.PreflightOptions(sections=["access"], permissions=perms, identity="weak"), review=review
    )
    assert out["access"] == [
        {
            "identity": "weak",
            "checked": 2,
            "missing": [
                {
                    "verb": "get",
                    "group": None,
                    "resource": "pods",
                    "subresource": "log",
                    "namespace": "gpu-operator",
                    "name": None,
                    "reason": "no rule",
                }
            ],
        }
    ]
    assert bodies[1] == {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {
            "resourceAttributes": {
                "verb": "get",
                "resource": "pods",
                "group": "",
                "namespace": "gpu-operator",
                "subresource": "log",
            }
        },
    }
