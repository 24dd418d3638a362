"""Fixtures for the gpu_triage_info tests: the simulated operator, the module run as the least-privilege identity,
throw-away namespaces, taints and CRDs that are always cleaned up.

``gpu_operator`` comes from tests/integration/conftest.py: it installs the stand-in chart and, on a test bed
without the simulated operator, runs one.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from tests.integration.helpers import collection_env, module_runner
from tests.integration.simop_helpers import wait_for

REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def ansible_env(tmp_path_factory):
    """``(env, base)``: a collection path holding this checkout, for ansible-playbook."""
    base = tmp_path_factory.mktemp("triage")
    return collection_env(base), base


@pytest.fixture(scope="module")
def triage(testbed, ansible_env):
    """``triage(**module_args)`` -> the module's result, run by ansible-playbook as the least-privilege identity."""
    run_module = module_runner(testbed, ansible_env[1], "gpu_triage_info")

    def run(check=False, **module_args):
        result = run_module(check=check, **module_args)
        assert not result.get("failed"), result.get("msg")
        return result

    return run


class Kube:
    """Admin-side writes for the tests, each undone by :meth:`cleanup` (in reverse order)."""

    def __init__(self, api):
        from kubernetes import client

        self.api = api
        self.core = client.CoreV1Api(api)
        self.batch = client.BatchV1Api(api)
        self.sched = client.SchedulingV1Api(api)
        self.ext = client.ApiextensionsV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.undo = []

    # namespaces and pods --------------------------------------------------------------------------
    def namespace(self, prefix="triage"):
        name = "%s-%s" % (prefix, uuid.uuid4().hex[:6])
        self.core.create_namespace({"metadata": {"name": name, "labels": {"gpuops.io/test": "triage"}}})
        self.undo.append(lambda: self._delete_namespace(name))
        return name

    def _delete_namespace(self, name):
        from kubernetes.client.rest import ApiException

        for pod in self.core.list_namespaced_pod(name).items:
            try:
                self.core.delete_namespaced_pod(pod.metadata.name, name, grace_period_seconds=0)
            except ApiException:
                pass
        wait_for(lambda: not self.core.list_namespaced_pod(name).items, 60, what="pods of %s deleted" % name)
        try:
            self.core.delete_namespace(name)
        except ApiException:
            pass

    def pod(self, ns, name, gpus=1, resource="nvidia.com/gpu", **spec):
        meta = {"name": name, "namespace": ns}
        for key in ("labels", "annotations"):
            if key in spec:
                meta[key] = spec.pop(key)
        body = {
            "metadata": meta,
            "spec": {
                "containers": [
                    {
                        "name": "cuda",
                        "image": "registry.invalid/cuda-sample:vectoradd",
                        "resources": {"limits": {resource: str(gpus)}},
                    }
                ],
                "terminationGracePeriodSeconds": 0,
                **spec,
            },
        }
        return self.core.create_namespaced_pod(ns, body)

    def bound(self, ns, name, timeout=30):
        """Wait until the real scheduler bound the pod and kwok runs it."""

        def running():
            pod = self.core.read_namespaced_pod(name, ns)
            return pod.spec.node_name and pod.status.phase == "Running"

        wait_for(running, timeout, what="pod %s/%s Running" % (ns, name))

    def failed_scheduling(self, ns, name, contains="", timeout=30):
        """The kube-scheduler's newest FailedScheduling message for the pod (waits for one containing ``contains``)."""

        def latest():
            events = [
                e
                for e in self.core.list_namespaced_event(ns, field_selector="involvedObject.name=%s" % name).items
                if e.reason == "FailedScheduling" and contains in (e.message or "")
            ]
            return events[-1].message if events else None

        return wait_for(latest, timeout, what="FailedScheduling for %s/%s containing %r" % (ns, name, contains))

    def job(self, ns, name, gpus, **pod_spec):
        body = {
            "metadata": {"name": name, "namespace": ns},
            "spec": {
                "backoffLimit": 0,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "cuda",
                                "image": "registry.invalid/cuda-sample:vectoradd",
                                "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                            }
                        ],
                        **pod_spec,
                    }
                },
            },
        }
        return self.batch.create_namespaced_job(ns, body)

    def failed_create(self, ns, owner, contains, timeout=30):
        def latest():
            events = [
                e
                for e in self.core.list_namespaced_event(ns).items
                if e.reason == "FailedCreate" and e.involved_object.name == owner and contains in (e.message or "")
            ]
            return events[-1].message if events else None

        return wait_for(latest, timeout, what="FailedCreate of %s containing %r" % (owner, contains))

    # cluster-scoped things ------------------------------------------------------------------------
    def taint(self, node, key, value, effect="NoSchedule"):
        current = self.core.read_node(node).spec.taints or []
        taints = [t.to_dict() for t in current if t.key != key] + [{"key": key, "value": value, "effect": effect}]
        self.core.patch_node(node, {"spec": {"taints": taints}})
        self.undo.append(lambda: self._untaint(node, key))

    def _untaint(self, node, key):
        current = self.core.read_node(node).spec.taints or []
        self.core.patch_node(node, {"spec": {"taints": [t.to_dict() for t in current if t.key != key] or None}})

    def cordon(self, node):
        self.core.patch_node(node, {"spec": {"unschedulable": True}})
        self.undo.append(lambda: self.core.patch_node(node, {"spec": {"unschedulable": None}}))

    def priority_class(self, name, value, preemption_policy="PreemptLowerPriority"):
        self.sched.create_priority_class(
            {"metadata": {"name": name}, "value": value, "preemptionPolicy": preemption_policy, "globalDefault": False}
        )
        self.undo.append(lambda: self.sched.delete_priority_class(name))

    def crd(self, group, plural, kind, scope, version="v1beta1"):
        """A minimal CRD of our own (any fields kept, status subresource), removed with its objects at the end."""
        name = "%s.%s" % (plural, group)
        self.ext.create_custom_resource_definition(
            {
                "metadata": {"name": name},
                "spec": {
                    "group": group,
                    "scope": scope,
                    "names": {"plural": plural, "singular": plural[:-1], "kind": kind},
                    "versions": [
                        {
                            "name": version,
                            "served": True,
                            "storage": True,
                            "subresources": {"status": {}},
                            "schema": {
                                "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                            },
                        }
                    ],
                },
            }
        )

        def established():
            crd = self.ext.read_custom_resource_definition(name)
            return any(c.type == "Established" and c.status == "True" for c in crd.status.conditions or [])

        wait_for(established, 30, what="CRD %s established" % name)
        self.undo.append(lambda: self._delete_crd(name))

    def _delete_crd(self, name):
        from kubernetes.client.rest import ApiException

        self.ext.delete_custom_resource_definition(name)

        def gone():
            try:
                self.ext.read_custom_resource_definition(name)
            except ApiException as exc:
                return exc.status == 404
            return False

        wait_for(gone, 60, what="CRD %s deleted" % name)

    def custom_object(self, group, version, plural, body, status=None, namespace=None):
        """Create a custom object and set its status through the status subresource, as its controller would."""
        name = body["metadata"]["name"]
        if namespace:
            self.custom.create_namespaced_custom_object(group, version, namespace, plural, body)
            if status:
                self.custom.patch_namespaced_custom_object_status(
                    group, version, namespace, plural, name, {"status": status}
                )
        else:
            self.custom.create_cluster_custom_object(group, version, plural, body)
            if status:
                self.custom.patch_cluster_custom_object_status(group, version, plural, name, {"status": status})

    def cleanup(self):
        errors = []
        while self.undo:
            action = self.undo.pop()
            try:
                action()
            except Exception as exc:  # keep undoing the rest, then report
                errors.append(repr(exc))
        assert not errors, errors


@pytest.fixture
def kube(testbed):
    """Admin writes for one test, all undone afterwards (pods, namespaces, taints, PriorityClasses, CRDs)."""
    k = Kube(testbed.api_client())
    try:
        yield k
    finally:
        k.cleanup()


@pytest.fixture
def settle():
    """Give the simulated operator and the scheduler a moment to observe a change."""

    def _settle(seconds=1.0):
        time.sleep(seconds)

    return _settle
