# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The Dynamic Resource Allocation (DRA) view of GPU nodes, from raw ``resource.k8s.io/v1`` JSON (pure).

Input is what three LISTs return: the DRA driver's ResourceSlices, the DeviceClasses and the ResourceClaims.
:class:`DraIndex` groups slices into pools per node (the scheduler only uses a pool's newest generation, and
only once all of its ``resourceSliceCount`` slices exist), and maps every allocated device to the claims that
hold it; :meth:`DraIndex.node` is one node's devices, allocation and problems.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import key_of, name_of, namespace_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.text import natural_key
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.dra_cel import (
    Unsupported,
    matches,
    plain_value,
)

RESOURCE_GROUP, RESOURCE_VERSION = "resource.k8s.io", "v1"
#: The DRA driver of NVIDIA GPUs (kubernetes-sigs/dra-driver-nvidia-gpu) and its DeviceClass per device type.
DRIVER = "gpu.nvidia.com"
CLASS_FOR_TYPE = {"gpu": "gpu.nvidia.com", "mig": "mig.nvidia.com"}
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
#: The operand component of the DRA kubelet plugin (``nvidia.com/gpu.deploy.dra-driver``).
PLUGIN_COMPONENT = "dra-driver"
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


def device_value(device, name):
    """The published value of attribute ``name`` of a raw device (any domain), None when absent."""
    attrs = device.get("attributes") or {}
    raw = attrs.get(name)
    if raw is None:
        raw = next((v for k, v in attrs.items() if k.rpartition("/")[2] == name), None)
    return plain_value(raw)


def taints_of(device):
    return [
        {"key": t.get("key"), "value": t.get("value"), "effect": t.get("effect"), "time_added": t.get("timeAdded")}
        for t in device.get("taints") or []
    ]


def blocking(taints):
    """The taints (as :func:`taints_of` gives them) that keep the scheduler from allocating a device to a claim
    that does not tolerate them."""
    return [t for t in taints if t["effect"] in BLOCKING_EFFECTS]


def class_selects(device_class, device, driver):
    """True/False: the DeviceClass's selectors all pick ``device``; None when one is CEL we cannot evaluate."""
    return selectors_select((device_class.get("spec") or {}).get("selectors"), device, driver)


def selectors_select(selectors, device, driver):
    """True/False: every CEL selector picks ``device`` (None: a selector we cannot evaluate)."""
    try:
        return all(matches((s.get("cel") or {}).get("expression"), device, driver) for s in selectors or [])
    except Unsupported:
        return None


def allocations(claims, driver=DRIVER):
    """``{(driver, pool, device): [holder, ...]}`` of the claims' allocated devices of ``driver`` (None: of every
    driver); a holder is ``{"claim": "ns/name", "admin_access": bool, "pods": ["ns/pod", ...]}``."""
    out = {}
    for claim in claims or []:
        status = claim.get("status") or {}
        results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
        pods = sorted("%s/%s" % (namespace_of(claim), r.get("name")) for r in status.get("reservedFor") or [])
        for res in results:
            if driver in (None, res.get("driver")):
                holder = {"claim": key_of(claim), "admin_access": bool(res.get("adminAccess")), "pods": pods}
                out.setdefault((res.get("driver"), res.get("pool"), res.get("device")), []).append(holder)
    return out


def pool_of(slices):
    """One pool's state from its slices: the newest generation is current; older slices are stale."""
    generation = max(int((s["spec"].get("pool") or {}).get("generation") or 0) for s in slices)
    current = [s for s in slices if int((s["spec"].get("pool") or {}).get("generation") or 0) == generation]
    wanted = max(int((s["spec"].get("pool") or {}).get("resourceSliceCount") or 1) for s in current)
    return {
        "name": (slices[0]["spec"].get("pool") or {}).get("name"),
        "generation": generation,
        "resource_slice_count": wanted,
        "slices": sorted(name_of(s) for s in current),
        "stale_slices": sorted(name_of(s) for s in slices if s not in current),
        "complete": len(current) >= wanted,
    }


def device_view(device, holders):
    """One device as the module returns it (``holders``: its entries of :func:`allocations`)."""
    exclusive = [h for h in holders if not h["admin_access"]]
    taints = taints_of(device)
    attributes = {k: plain_value(v) for k, v in sorted((device.get("attributes") or {}).items())}
    short = {k.rpartition("/")[2]: v for k, v in attributes.items()}
    return {
        "name": device.get("name"),
        "type": short.get("type"),
        "uuid": short.get("uuid"),
        "product": short.get("productName"),
        "profile": short.get("profile"),
        "parent_uuid": short.get("parentUUID"),
        "driver_version": short.get("driverVersion"),
        "attributes": attributes,
        "capacity": {k: (v or {}).get("value") for k, v in sorted((device.get("capacity") or {}).items())},
        "taints": taints,
        "allocated": bool(exclusive),
        "claims": sorted(h["claim"] for h in exclusive),
        "admin_claims": sorted(h["claim"] for h in holders if h["admin_access"]),
        "pods": sorted({p for h in holders for p in h["pods"]}),
        "free": not exclusive and not blocking(taints),
    }


class DraIndex:
    """The slices of ``driver`` (None: of every driver) grouped by node and pool, and the devices' holders from
    ``claims``.

    ``slices``/``claims``/``classes`` are lists of raw dicts, or None when the cluster does not serve
    ``resource.k8s.io/v1`` (then :attr:`served` is False and every node has no DRA devices).
    """

    def __init__(self, slices, claims=None, classes=None, driver=DRIVER):
        self.served = slices is not None
        self.claims_listed = claims is not None
        self.driver = driver
        self.classes = None if classes is None else {name_of(c): c for c in classes}
        self.holders = allocations(claims, driver)
        self.by_node = {}
        for item in slices or []:
            spec = item.get("spec") or {}
            if driver in (None, spec.get("driver")) and spec.get("nodeName"):
                pool = (spec.get("driver"), (spec.get("pool") or {}).get("name"))
                self.by_node.setdefault(spec["nodeName"], {}).setdefault(pool, []).append(item)

    def raw_devices(self, node_name):
        """``[((driver, pool), raw device)]`` the scheduler can allocate from on the node: current generations of
        complete pools only."""
        out = []
        for key, slices in sorted(self.by_node.get(node_name, {}).items()):
            pool = pool_of(slices)
            if pool["complete"]:
                current = [s for s in slices if name_of(s) in pool["slices"]]
                out.extend((key, d) for s in current for d in (s["spec"].get("devices") or []))
        return sorted(out, key=lambda kd: natural_key(kd[1].get("name")))

    def holders_of(self, key, device):
        """The holders of ``device`` (raw) of pool ``key`` (``(driver, pool)``)."""
        return self.holders.get(key + (device.get("name"),), [])

    def node(self, node_name, expected=False, plugin=None):
        """The node's DRA view; ``expected``: the node is meant to run the DRA driver (its deploy label);
        ``plugin``: the summary of its kubelet-plugin pod (``cluster_view.pod_summary``) or None."""
        pools = [pool_of(s) for _p, s in sorted(self.by_node.get(node_name, {}).items())]
        devices = [device_view(d, self.holders_of(k, d)) for k, d in self.raw_devices(node_name)]
        versions = sorted({d["driver_version"] for d in devices if d["driver_version"]})
        view = {
            "driver": self.driver,
            "expected": bool(expected or plugin),
            "plugin_pod": plugin["name"] if plugin else None,
            "plugin_ready": bool(plugin and (plugin["ready"] or plugin["phase"] == "Succeeded")),
            "pools": pools,
            "slices": sorted(n for p in pools for n in p["slices"] + p["stale_slices"]),
            "devices": devices,
            "device_types": _count(d["type"] for d in devices),
            "products": _count(d["product"] for d in devices),
            "driver_version": versions[0] if len(versions) == 1 else None,
            "devices_total": len(devices),
            "devices_allocated": sum(d["allocated"] for d in devices),
            "devices_tainted": sum(bool(blocking(d["taints"])) for d in devices),
            "devices_free": sum(d["free"] for d in devices),
        }
        view["problems"] = node_problems(node_name, view, plugin)
        return view


def _count(values):
    out = {}
    for value in values:
        if value is not None:
            out[value] = out.get(value, 0) + 1
    return out


def node_problems(name, view, plugin):
    """Sentences on what keeps the node's GPUs from claims: plugin, slices, pool generation, device taints."""
    out = []
    if plugin and not view["plugin_ready"]:
        out.append(
            "DRA kubelet plugin pod %s is not ready (%s): claims allocated on %s cannot be prepared"
            % (plugin["name"], plugin["waiting_reason"] or plugin["phase"], name)
        )
    if view["expected"] and not view["pools"]:
        out.append("no ResourceSlice of driver %s: the node offers no device to claims" % view["driver"])
    for pool in view["pools"]:
        if not pool["complete"]:
            out.append(
                "pool %s is incomplete: generation %d announces %d slice(s), %d exist (%s); the scheduler "
                "allocates nothing from it"
                % (
                    pool["name"],
                    pool["generation"],
                    pool["resource_slice_count"],
                    len(pool["slices"]),
                    ", ".join(pool["slices"]),
                )
            )
        if pool["stale_slices"]:
            out.append(
                "pool %s has slice(s) of an older generation than %d, ignored by the scheduler: %s"
                % (pool["name"], pool["generation"], ", ".join(pool["stale_slices"]))
            )
    for device in view["devices"]:
        for taint in blocking(device["taints"]):
            out.append(
                "device %s is tainted %s=%s:%s: only claims that tolerate it get it"
                % (device["name"], taint["key"], taint["value"] or "", taint["effect"])
            )
    return out


def missing_classes(index, nodes):
    """DeviceClasses the published device types need (``gpu.nvidia.com``, ``mig.nvidia.com``) that do not exist;
    ``nodes``: node views with ``dra``. Empty when the classes were not listed."""
    if index.classes is None:
        return []
    types = {t for n in nodes for t in n["dra"]["device_types"]}
    return sorted(CLASS_FOR_TYPE[t] for t in types if t in CLASS_FOR_TYPE and CLASS_FOR_TYPE[t] not in index.classes)


def peer_shortfalls(nodes):
    """Add a problem to each node that publishes fewer devices than the most its peers with the same product
    and device types publish (one fewer GPU is how a lost GPU shows); ``nodes``: node views with ``dra``."""
    groups = {}
    for node in nodes:
        dra = node["dra"]
        if dra["devices_total"]:
            key = (tuple(sorted(dra["products"])), tuple(sorted(dra["device_types"])))
            groups.setdefault(key, []).append(node)
    for (products, _types), members in groups.items():
        most = max(n["dra"]["devices_total"] for n in members)
        for node in members:
            dra = node["dra"]
            if dra["devices_total"] < most:
                dra["problems"].append(
                    "publishes %d device(s), %d fewer than other nodes with %s (%d)"
                    % (dra["devices_total"], most - dra["devices_total"], ", ".join(products), most)
                )


def class_view(device_class):
    spec = device_class.get("spec") or {}
    return {
        "name": name_of(device_class),
        "selectors": [(s.get("cel") or {}).get("expression") for s in spec.get("selectors") or []],
        "extended_resource_name": spec.get("extendedResourceName"),
    }


def cluster_dra(index, nodes):
    """The cluster-wide ``dra`` summary; ``nodes``: node views with ``dra``."""
    missing = missing_classes(index, nodes)
    problems = ["DeviceClass %s does not exist: claims for it stay Pending" % c for c in missing]
    return {
        "served": index.served,
        "driver": index.driver,
        "device_classes": None
        if index.classes is None
        else {n: class_view(c) for n, c in sorted(index.classes.items())},
        "device_classes_missing": missing,
        "claims_listed": index.claims_listed,
        "allocated_claims": sorted({h["claim"] for hs in index.holders.values() for h in hs}),
        "problems": problems,
    }
