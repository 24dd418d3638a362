# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The role's raw query results as per-node inputs of the checks: Prometheus samples, EndpointSlices, Events."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def prometheus_by_node(series_result=None, xid_result=None, node_label="Hostname"):
    """Per node ``{"source": "prometheus", "series": n, "xid": {gpu: code}}`` from two instant-query results.

    ``series_result`` is the ``data.result`` of ``count by (<node_label>) (DCGM_FI_DEV_GPU_UTIL)``;
    ``xid_result`` that of ``DCGM_FI_DEV_XID_ERRORS`` (one sample per GPU, label ``gpu``).
    """
    out = {}
    for sample in series_result or []:
        node = (sample.get("metric") or {}).get(node_label)
        if node:
            entry = out.setdefault(node, {"source": "prometheus", "series": 0, "xid": {}})
            entry["series"] += int(float(sample["value"][1]))
    for sample in xid_result or []:
        metric = sample.get("metric") or {}
        node = metric.get(node_label)
        if node:
            entry = out.setdefault(node, {"source": "prometheus", "series": 0, "xid": {}})
            code = int(float(sample["value"][1]))
            entry["xid"][str(metric.get("gpu"))] = max(code, entry["xid"].get(str(metric.get("gpu")), 0))
    return out


def endpoints_by_node(endpoint_slices):
    """Per node ``{"source": "endpoints", "endpoint": ready}`` for each node with a listed exporter endpoint
    (``ready`` False when it is listed as not ready)."""
    out = {}
    for eps in endpoint_slices or []:
        for ep in eps.get("endpoints") or []:
            node = ep.get("nodeName")
            if node:
                ready = (ep.get("conditions") or {}).get("ready") is not False
                out[node] = {"source": "endpoints", "endpoint": ready or out.get(node, {}).get("endpoint", False)}
    return out
