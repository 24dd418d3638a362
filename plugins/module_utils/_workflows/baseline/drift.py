# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change incompatibly at any
# time, including in a patch release. Do not use it elsewhere.

"""Fleet drift: within a pool, hosts that differ in driver, kernel, OS, GPU model, runtime or toolkit."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.facts import fact, host_driver
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.model import bad, check, ok


def _os(h):
    return " ".join(str(x) for x in (fact(h, "gpu_host", "os", "id"), fact(h, "gpu_host", "os", "version_id")))


def _gpu_model(h):
    return ", ".join(sorted({g.get("name") or "?" for g in fact(h, "nvidia_gpu", "gpus", default=[])}))


def _runtime(h):
    rt = fact(h, "gpu_host", "container_runtime", default={})
    return "%s default=%s nvidia=%s cgroup_systemd=%s" % (
        rt.get("name"),
        fact(rt, "config", "default_runtime"),
        fact(rt, "config", "nvidia_runtime"),
        fact(rt, "config", "systemd_cgroup"),
    )


def _toolkit(h):
    tk = fact(h, "gpu_host", "container_toolkit", default={})
    return "installed=%s mode=%s" % (tk.get("installed"), tk.get("mode"))


#: Drift dimensions: name -> function(host) giving the value compared within a pool.
DRIFT = (
    ("driver", lambda h: host_driver(h)[0]),
    ("kernel", lambda h: fact(h, "gpu_host", "kernel", "release")),
    ("os", _os),
    ("gpu_model", _gpu_model),
    ("runtime", _runtime),
    ("toolkit", _toolkit),
)


def drift(hosts):
    """Per pool, each dimension with more than one value: ``[{pool, dimension, values: {value: [hosts]}}]``."""
    pools = {}
    for name, h in hosts.items():
        if h.get("gpu_host"):  # a host without facts is reported by hosts.gathered, not as drift
            pools.setdefault(h.get("pool") or "(no pool)", []).append(name)
    out = []
    for pool in sorted(pools):
        for dim, fn in DRIFT:
            values = {}
            for name in sorted(pools[pool]):
                values.setdefault(str(fn(hosts[name]) or "unknown"), []).append(name)
            if len(values) > 1:
                out.append({"pool": pool, "dimension": dim, "values": values})
    return out


@check("fleet.drift", "cluster", "warn", "Hosts of a pool agree on driver, kernel, OS, GPU, runtime and toolkit")
def _drift(cluster, hosts, opts):
    found = drift(hosts)
    subjects = sorted({h for d in found for hs in d["values"].values() for h in hs})
    if not found:
        return ok("no drift within %d pool(s)" % len({h.get("pool") for h in hosts.values()}))
    return bad(
        "; ".join(
            "pool %s %s: %s"
            % (
                d["pool"],
                d["dimension"],
                " vs ".join("%s (%s)" % (v, ", ".join(hs)) for v, hs in sorted(d["values"].items())),
            )
            for d in found
        ),
        "Bring every host of a pool to the same driver, kernel, OS, runtime and toolkit configuration, or split "
        "the pool.",
        subjects=subjects,
    )
