# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""GPU smoke tests through Dynamic Resource Allocation: the pods get their GPUs from ResourceClaims.

* :func:`claim_template` builds the run's one ResourceClaimTemplate (device class, count or all, CEL selectors,
  admin access); :func:`use_claim` turns a smoke pod into one that references it through ``spec.resourceClaims``
  and its container's ``resources.claims`` (pure).
* :class:`ClaimSetup` writes what a claim-mode run needs besides its pods and removes it afterwards: the template,
  and with admin access the namespace label ``resource.kubernetes.io/admin-access=true`` (set for the run, removed
  after it when the run set it). The resource-claim controller makes each pod's claim from the template, labelled
  like the run, and deletes it with the pod; cleanup waits until the run's claims are gone.
* :func:`sweep` removes what an interrupted run left: its templates, and the namespace label it set.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

try:
    from urllib.parse import quote
except ImportError:  # pragma: no cover - Python 2 is not supported, this only keeps sanity's compile test quiet
    from urllib import quote  # type: ignore

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import ArgumentError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import (
    annotations_of,
    labels_of,
    meta_of,
    name_of,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.dra_lists import list_dra
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.dra_view import (
    ADMIN_ACCESS_LABEL,
    CLASS_FOR_TYPE,
    DRIVER,
    RESOURCE_GROUP,
    RESOURCE_VERSION,
)

#: gpu_smoke_test's options that only apply to claim mode.
CLAIM_OPTIONS = ("device_class", "product", "mig_profile", "selectors", "admin_access")
CLAIM = "gpu"  # the pod's resourceClaims entry, the container's claim and the template's request
#: Set on a namespace whose admin-access label a run added, so that it (or the next run's sweep) removes it again.
LABELLED_BY = "gpuops.io/smoke-test-admin-access"


def cel_string(text):
    """``text`` as a CEL string literal."""
    return "'%s'" % str(text).replace("\\", "\\\\").replace("'", "\\'")


def selectors(driver=DRIVER, product=None, mig_profile=None, cel=()):
    """The CEL selectors of a claim: the device's ``productName`` and MIG ``profile`` attributes, then ``cel``."""
    out = []
    if product:
        out.append("device.attributes[%s].productName == %s" % (cel_string(driver), cel_string(product)))
    if mig_profile:
        out.append("device.attributes[%s].profile == %s" % (cel_string(driver), cel_string(mig_profile)))
    return out + list(cel or ())


def template_name(run_id):
    return "gpuops-smoke-%s" % run_id


def claim_template(run_id, labels, device_class, count=1, cel=(), admin_access=False):
    """The run's ResourceClaimTemplate; ``count`` an int or ``all`` (every matching device on the node)."""
    exactly = {"deviceClassName": device_class}
    if str(count).lower() == "all":
        exactly["allocationMode"] = "All"
    else:
        exactly["count"] = int(count)
    if cel:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in cel]
    if admin_access:
        exactly["adminAccess"] = True
    return {
        "apiVersion": "%s/%s" % (RESOURCE_GROUP, RESOURCE_VERSION),
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": template_name(run_id), "labels": dict(labels)},
        "spec": {
            "metadata": {"labels": dict(labels)},  # copied onto every claim made from the template
            "spec": {"devices": {"requests": [{"name": CLAIM, "exactly": exactly}]}},
        },
    }


def claim_resources(template):
    """What a pod of the run asks for, as ``{device class: count}`` (``all`` for allocation mode All)."""
    exactly = template["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    return {exactly["deviceClassName"]: "all" if exactly.get("allocationMode") == "All" else str(exactly["count"])}


def use_claim(pod, template):
    """``pod`` (a smoke pod) requesting its GPUs through a claim made from ``template`` instead of a resource."""
    spec = pod["spec"]
    spec["resourceClaims"] = [{"name": CLAIM, "resourceClaimTemplateName": name_of(template)}]
    spec["containers"][0]["resources"] = {"claims": [{"name": CLAIM}]}
    return pod


def allocated_devices(claims):
    """``{pod name: ["pool/device", ...]}`` from the run's claims (each owned by its pod)."""
    out = {}
    for claim in claims:
        owner = next(
            (r.get("name") for r in meta_of(claim).get("ownerReferences") or [] if r.get("kind") == "Pod"), None
        )
        results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
        if owner and results:
            out[owner] = ["%s/%s" % (r.get("pool"), r.get("device")) for r in results]
    return out


def _namespace_path(namespace):
    return "/api/v1/namespaces/%s" % quote(namespace, safe="")


def _templates_path(namespace, name=""):
    base = "/apis/%s/%s/namespaces/%s/resourceclaimtemplates" % (
        RESOURCE_GROUP,
        RESOURCE_VERSION,
        quote(namespace, safe=""),
    )
    return base + ("/" + quote(name, safe="") if name else "")


def _unlabel(client, namespace):
    body = {"metadata": {"labels": {ADMIN_ACCESS_LABEL: None}, "annotations": {LABELLED_BY: None}}}
    client.send_typed(
        "PATCH",
        _namespace_path(namespace),
        body,
        content_type="application/merge-patch+json",
        what="remove label %s from namespace %s" % (ADMIN_ACCESS_LABEL, namespace),
    )


def sweep(client, namespace, selector, page_size=500):
    """Delete the templates of earlier runs (by label) and remove the admin-access label an interrupted run set;
    returns what was removed (``resourceclaimtemplate/NAME``, ``namespace/NAME label ...``). Nothing when the
    cluster does not serve ``resource.k8s.io/v1``."""
    templates = list_dra(
        client, "resourceclaimtemplates", namespace=namespace, page_size=page_size, label_selector=selector
    )
    if templates is None:
        return []
    out = []
    for template in templates:
        if client.delete_path(
            _templates_path(namespace, name_of(template)), what="delete claim template %s" % name_of(template)
        ):
            out.append("resourceclaimtemplate/%s" % name_of(template))
    ns = client.get(_namespace_path(namespace), what="read namespace %s" % namespace)
    if annotations_of(ns).get(LABELLED_BY):
        _unlabel(client, namespace)
        out.append("namespace/%s label %s" % (namespace, ADMIN_ACCESS_LABEL))
    return out


def claim_setup(client, params, run_id, labels, run_selector, page_size=500):
    """The :class:`ClaimSetup` of a run from gpu_smoke_test's ``params`` (None unless ``allocation=claim``);
    ``params["gpus"]`` is already validated (a positive integer or ``all``)."""
    if params["allocation"] != "claim":
        given = [o for o in CLAIM_OPTIONS if params[o]]
        if given:
            raise ArgumentError("%s only apply to allocation=claim; set allocation: claim" % ", ".join(given))
        return None
    driver = params["dra_driver"]
    cel = selectors(driver, params["product"], params["mig_profile"], params["selectors"] or ())
    device_class = params["device_class"] or CLASS_FOR_TYPE["mig" if params["mig_profile"] else "gpu"]
    count = "all" if str(params["gpus"]).lower() == "all" else int(params["gpus"])
    template = claim_template(run_id, labels, device_class, count, cel, params["admin_access"])
    return ClaimSetup(client, params["namespace"], template, run_selector, page_size)


class ClaimSetup:
    """The template of one claim-mode run (and, with admin access, its namespace label): :meth:`prepare` writes
    them before the first pod, :meth:`observe` reads the devices the run's claims got, :meth:`cleanup` removes
    them after the last pod and waits (bounded) until the run's claims are gone."""

    def __init__(self, client, namespace, template, run_selector, page_size=500):
        self.client, self.namespace, self.template = client, namespace, template
        self.selector, self.page_size = run_selector, page_size
        self.admin_access = bool(template["spec"]["spec"]["devices"]["requests"][0]["exactly"].get("adminAccess"))
        self.resources = claim_resources(template)
        self.labelled = False

    def needs_label(self):
        """True when the namespace lacks the admin-access label the run's claims need (one GET)."""
        if not self.admin_access:
            return False
        ns = self.client.get(_namespace_path(self.namespace), what="read namespace %s" % self.namespace)
        return labels_of(ns).get(ADMIN_ACCESS_LABEL) != "true"

    def prepare(self):
        if self.needs_label():
            body = {
                "metadata": {
                    "labels": {ADMIN_ACCESS_LABEL: "true"},
                    "annotations": {LABELLED_BY: name_of(self.template)},
                }
            }
            self.client.send_typed(
                "PATCH",
                _namespace_path(self.namespace),
                body,
                content_type="application/merge-patch+json",
                what="label namespace %s %s=true" % (self.namespace, ADMIN_ACCESS_LABEL),
            )
            self.labelled = True
        self.client.send(
            "POST",
            _templates_path(self.namespace),
            body=self.template,
            what="create claim template %s in namespace %s" % (name_of(self.template), self.namespace),
            accept_statuses=(409,),  # a retried request had made it
        )

    def claims(self):
        return (
            list_dra(
                self.client,
                "resourceclaims",
                namespace=self.namespace,
                page_size=self.page_size,
                label_selector=self.selector,
            )
            or []
        )

    def observe(self):
        """``{pod name: ["pool/device", ...]}`` of the run's allocated claims (one LIST)."""
        return allocated_devices(self.claims())

    def cleanup(self, clock, sleep, timeout):
        """Remove the template (and the label the run set); wait until the run's claims are gone; returns what is
        left (``resourceclaim/NAME``)."""
        self.client.delete_path(_templates_path(self.namespace, name_of(self.template)), what="delete claim template")
        if self.labelled:
            _unlabel(self.client, self.namespace)
        deadline = clock() + timeout
        left = self.claims()
        while left and clock() < deadline:
            sleep(0.5)
            left = self.claims()
        return sorted("resourceclaim/%s" % name_of(c) for c in left)
