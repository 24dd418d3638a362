"""The audit_clusters filter: each cluster's audited hosts and its connection, from the inventory."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu_operator.plugins.filter.audit_clusters import FilterModule

GROUPS = {
    "gpu_hosts": ["e-0", "e-1", "w-0"],
    "east": ["e-0", "e-1", "cpu-0"],
    "west": ["w-0"],
    "both": ["e-1", "w-0"],
}
HOSTVARS = {
    "e-0": {"gpu_audit_kubeconfig": "east.kc", "gpuops_kubeconfig": "testbed.kc", "gpu_audit_context": "east"},
    "e-1": {},
    "w-0": {"gpuops_kubeconfig": "testbed.kc", "gpu_audit_operator_namespace": "nvidia"},
}


def audit_clusters(**kw):
    return FilterModule().filters()["audit_clusters"](HOSTVARS, GROUPS, **kw)


def test_without_cluster_groups_every_audited_host_is_in_the_default_cluster():
    assert audit_clusters() == {
        "default": {
            "hosts": ["e-0", "e-1", "w-0"],
            "kubeconfig": "east.kc",
            "context": "east",
            "operator_namespace": None,  # discovered by gpu_cluster_info
        }
    }
    assert list(audit_clusters(default_cluster="prod")) == ["prod"]


def test_a_cluster_holds_the_members_of_its_group_that_are_audited():
    out = audit_clusters(cluster_groups=["west", "east"])
    assert list(out) == ["west", "east"]
    assert out["east"]["hosts"] == ["e-0", "e-1"] and out["west"]["hosts"] == ["w-0"]


def test_the_connection_comes_from_the_first_hosts_variables_then_the_fallbacks():
    out = audit_clusters(cluster_groups=["east", "west"], kubeconfig="role.kc", context="ctx", operator_namespace="ns")
    assert (out["east"]["kubeconfig"], out["east"]["context"], out["east"]["operator_namespace"]) == (
        "east.kc",
        "east",
        "ns",
    )
    assert (out["west"]["kubeconfig"], out["west"]["context"], out["west"]["operator_namespace"]) == (
        "testbed.kc",
        "ctx",
        "nvidia",
    )


def test_a_cluster_without_audited_hosts_takes_every_fallback():
    out = audit_clusters(host_group="none", kubeconfig={"clusters": []})
    assert out == {
        "default": {"hosts": [], "kubeconfig": {"clusters": []}, "context": None, "operator_namespace": None}
    }


def test_an_unknown_group_and_a_host_in_two_clusters_fail_naming_them():
    with pytest.raises(
        AnsibleFilterError, match=r"Not inventory groups: \['nope'\]\. In more than one cluster group: \[\]"
    ):
        audit_clusters(cluster_groups=["east", "nope"])
    with pytest.raises(
        AnsibleFilterError, match=r"Not inventory groups: \[\]\. In more than one cluster group: \['e-1', 'w-0'\]"
    ):
        audit_clusters(cluster_groups=["east", "west", "both"])
