"""The least-privilege identity has exactly docs/rbac.yml's rights, and its writes show in the audit log."""

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException


def test_sa_can_read_nodes_but_not_write_secrets(testbed):
    core = client.CoreV1Api(testbed.api_client(least_privilege=True))
    assert core.list_node().items
    with pytest.raises(ApiException) as exc:
        core.list_namespaced_secret("default")
    assert exc.value.status == 403
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_secret("default", {"metadata": {"name": "not-allowed"}})
    assert exc.value.status == 403
    with pytest.raises(ApiException) as exc:
        core.delete_node("not-allowed")
    assert exc.value.status == 403


def test_sa_reads_are_not_writes_in_audit_log(testbed):
    mark = testbed.audit_mark()
    core = client.CoreV1Api(testbed.api_client(least_privilege=True))
    core.list_node()
    core.list_pod_for_all_namespaces()
    assert testbed.audit_writes(mark) == []
    reads = testbed.audit_events(mark, user=testbed.sa_username)
    assert {e["verb"] for e in reads} >= {"list"}


def test_sa_write_is_recorded(testbed):
    mark = testbed.audit_mark()
    core = client.CoreV1Api(testbed.api_client(least_privilege=True))
    node = core.list_node().items[0].metadata.name
    core.patch_node(node, {"metadata": {"labels": {"gpuops.io/audit-probe": "1"}}})
    writes = testbed.audit_writes(mark)
    assert [(w["verb"], w["objectRef"]["resource"], w["objectRef"]["name"]) for w in writes] == [
        ("patch", "nodes", node)
    ]
    core.patch_node(node, {"metadata": {"labels": {"gpuops.io/audit-probe": None}}})
