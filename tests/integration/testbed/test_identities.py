"""The two identities of docs/rbac.yml on the real API server: the day-2 identity cannot make itself more (asked
through SelfSubjectAccessReview and tried for real, the two-call escalation included), yet runs every day-2 module;
the installer is what the documentation says it is, cluster-admin-equivalent."""

from __future__ import annotations

import pytest
from helpers import module_runner
from kubernetes import client, config
from kubernetes.client.rest import ApiException

ESCALATION_PATHS = [
    # (verb, group, resource, namespace, name): every way an identity could grant itself more
    ("create", "rbac.authorization.k8s.io", "clusterroles", None, None),
    ("escalate", "rbac.authorization.k8s.io", "clusterroles", None, "gpu-operator-upgrade-crd-hook-role"),
    ("bind", "rbac.authorization.k8s.io", "clusterroles", None, "gpu-operator-upgrade-crd-hook-role"),
    ("bind", "rbac.authorization.k8s.io", "clusterroles", None, "cluster-admin"),
    ("update", "rbac.authorization.k8s.io", "clusterroles", None, "gpu-operator"),
    ("create", "rbac.authorization.k8s.io", "clusterrolebindings", None, None),
    ("create", "rbac.authorization.k8s.io", "roles", "kube-system", None),
    ("create", "rbac.authorization.k8s.io", "rolebindings", "default", None),
    ("list", "", "secrets", "kube-system", None),
    ("get", "", "secrets", "default", None),
    ("impersonate", "", "users", None, "admin"),
    ("impersonate", "", "serviceaccounts", "kube-system", None),
    ("create", "", "serviceaccounts/token", "gpuops-system", "gpuops-automation"),
    ("create", "", "pods", "kube-system", None),
    ("create", "certificates.k8s.io", "certificatesigningrequests", None, None),
    ("patch", "", "namespaces", None, "default"),
    ("create", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", None, None),
    ("update", "apiextensions.k8s.io", "customresourcedefinitions", None, "clusterpolicies.nvidia.com"),
    ("create", "coordination.k8s.io", "leases", "gpu-operator", None),
    ("create", "", "configmaps", "gpu-operator", None),
]


def api_for(kubeconfig):
    return config.new_client_from_config(config_file=kubeconfig)


def allowed(api, verb, group, resource, namespace=None, name=None):
    resource, _sep, sub = resource.partition("/")
    review = client.V1SelfSubjectAccessReview(
        spec=client.V1SelfSubjectAccessReviewSpec(
            resource_attributes=client.V1ResourceAttributes(
                verb=verb, group=group, resource=resource, subresource=sub or None, namespace=namespace, name=name
            )
        )
    )
    return client.AuthorizationV1Api(api).create_self_subject_access_review(review).status.allowed


@pytest.fixture(scope="module")
def day2(testbed):
    return api_for(testbed.day2_kubeconfig)


@pytest.mark.parametrize(("verb", "group", "resource", "namespace", "name"), ESCALATION_PATHS)
def test_the_day2_identity_is_refused_every_escalation_path(day2, verb, group, resource, namespace, name):
    assert not allowed(day2, verb, group, resource, namespace, name)


def test_the_two_call_escalation_fails_as_the_day2_identity_and_changes_nothing(day2, testbed):
    mark = testbed.audit_mark()
    rbac = client.RbacAuthorizationV1Api(day2)
    everything = client.V1ClusterRole(
        metadata=client.V1ObjectMeta(name="gpu-operator-upgrade-crd-hook-role"),
        rules=[client.V1PolicyRule(api_groups=["*"], resources=["*"], verbs=["*"])],
    )
    binding = client.V1ClusterRoleBinding(
        metadata=client.V1ObjectMeta(name="gpuops-day2-escalation"),
        role_ref=client.V1RoleRef(
            api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="gpu-operator-upgrade-crd-hook-role"
        ),
        subjects=[client.RbacV1Subject(kind="ServiceAccount", name="gpuops-day2", namespace="gpuops-system")],
    )
    for attempt in (lambda: rbac.create_cluster_role(everything), lambda: rbac.create_cluster_role_binding(binding)):
        with pytest.raises(ApiException) as refused:
            attempt()
        assert refused.value.status == 403
    with pytest.raises(ApiException) as refused:
        client.CoreV1Api(day2).list_namespaced_secret("kube-system")
    assert refused.value.status == 403
    admin = client.RbacAuthorizationV1Api(testbed.api_client())
    assert "gpuops-day2-escalation" not in {b.metadata.name for b in admin.list_cluster_role_binding().items}
    assert testbed.audit_writes(mark) == []


@pytest.mark.parametrize(
    ("verb", "group", "resource", "namespace", "name"),
    [
        ("list", "", "nodes", None, None),
        ("patch", "", "nodes", None, "any-node"),
        ("get", "", "pods/log", "gpu-operator", None),
        ("create", "", "pods", "default", None),
        ("create", "resource.k8s.io", "resourceclaimtemplates", "default", None),
        ("get", "", "configmaps", "gpu-operator", "gpuops-canary-upgrade"),
        ("list", "resource.k8s.io", "resourceslices", None, None),
    ],
)
def test_the_day2_identity_holds_what_its_modules_need(day2, verb, group, resource, namespace, name):
    assert allowed(day2, verb, group, resource, namespace, name)


def test_the_installer_is_cluster_admin_equivalent_as_documented(testbed):
    installer = testbed.api_client(least_privilege=True)
    assert allowed(installer, "escalate", "rbac.authorization.k8s.io", "clusterroles")
    assert allowed(installer, "create", "rbac.authorization.k8s.io", "clusterrolebindings")


@pytest.fixture(scope="module")
def as_day2(testbed, tmp_path_factory):
    base = tmp_path_factory.mktemp("day2")

    def run(module, **args):
        return module_runner(testbed, base, module)(kubeconfig=testbed.day2_kubeconfig, **args)

    return run


@pytest.mark.parametrize(
    ("module", "args"),
    [
        ("gpu_cluster_info", {}),
        ("gpu_preflight_info", {"sections": ["version", "nodes", "access"]}),
        ("gpu_triage_info", {"namespace": "default"}),
        ("gpu_canary_upgrade", {"step": "status", "operator_namespace": "gpu-operator"}),
        ("gpu_smoke_test", {"sample": 1, "expected_output": "ran under kwok"}),  # kwok runs the pods
    ],
)
def test_every_day2_module_runs_as_the_day2_identity(as_day2, module, args):
    result = as_day2(module, **args)
    assert not result.get("failed"), result.get("msg")
    if module == "gpu_smoke_test":
        assert result["summary"]["all_passed"] and result["leftovers"] == [], result["summary"]
