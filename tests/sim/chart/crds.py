"""Structural CRD schemas for the stand-in chart's ClusterPolicy and NVIDIADriver, per chart version.

Project-written from the facts in shared/reference/gpu-operator.md §4 (kinds, groups, scope, status enums,
short names, print columns) and §2/§6 (the spec fields the collection drives). Only those fields are in the
schema; anything else is pruned by the API server, exactly what happens with a stale CRD after a chart
upgrade (reference §8, §14 item 9). Fields added between versions, so CRD-upgrade handling is testable:

- v26.3.3: ClusterPolicy `spec.sandboxWorkloads.mode` (kubevirt|kata).
- v26.7.0: NVIDIADriver `spec.default` and `spec.upgradePolicy`; the `Default` print column; the `GPUCluster` CRD
  (nvidia.com/v1alpha1, short name `gc`), the DRA resource-management model.

What the operator reports having observed, per version (the module's readiness wait reads whichever is there):
v25.10.1 carries no observedGeneration at all, v26.3.3 the conditions' `observedGeneration`, the 26.7 line also
`status.observedGeneration`.

The 26.7 line also ships the DRA driver's `ComputeDomain` and `ComputeDomainClique` CRDs (resource.nvidia.com,
namespaced), applied with the chart "including when ComputeDomain support is disabled" (reference §8).
`nfd_crds()`: the NFD subchart's CRDs (nfd.k8s-sigs.io), one multi-document file as NFD ships them.
"""

from __future__ import annotations

import copy

VERSIONS = ("v25.10.1", "v26.3.3", "v26.7.0", "v26.7.1")


def _vkey(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.lstrip("v").split("."))


S = {"type": "string"}
B = {"type": "boolean"}
INT = {"type": "integer"}
INT_OR_STR = {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]}
STR_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
FREE = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def obj(props: dict, **extra) -> dict:
    return {"type": "object", "properties": props, **extra}


def arr(items: dict) -> dict:
    return {"type": "array", "items": items}


ENV = arr(obj({"name": S, "value": S}, required=["name"]))
TOLERATION = obj(
    {"key": S, "operator": S, "value": S, "effect": S, "tolerationSeconds": {"type": "integer", "format": "int64"}}
)


def component(**more) -> dict:
    props = {
        "enabled": B,
        "repository": S,
        "image": S,
        "version": S,
        "imagePullPolicy": S,
        "imagePullSecrets": arr(S),
        "env": ENV,
        "args": arr(S),
        "resources": FREE,
    }
    props.update(more)
    return obj(props)


UPGRADE_POLICY = obj(
    {
        "autoUpgrade": B,
        "maxParallelUpgrades": {"type": "integer", "minimum": 0},
        "maxUnavailable": INT_OR_STR,
        "waitForCompletion": obj({"podSelector": S, "timeoutSeconds": {"type": "integer", "minimum": 0}}),
        "podDeletion": obj({"force": B, "timeoutSeconds": INT, "deleteEmptyDir": B}),
        "drain": obj({"enable": B, "force": B, "podSelector": S, "timeoutSeconds": INT, "deleteEmptyDir": B}),
    }
)

PROBE = obj(
    {
        "initialDelaySeconds": INT,
        "periodSeconds": INT,
        "timeoutSeconds": INT,
        "failureThreshold": INT,
        "successThreshold": INT,
    }
)

CONDITIONS = arr(
    obj(
        {
            "type": S,
            "status": S,
            "reason": S,
            "message": S,
            "lastTransitionTime": S,
            "observedGeneration": {"type": "integer", "format": "int64"},
        },
        required=["type", "status"],
    )
)


def status_schema(version: str, states: list[str]) -> dict:
    """The status of ClusterPolicy and NVIDIADriver: `state`, `namespace`, `conditions` (with `observedGeneration`
    from v26.3.3) and, from v26.7.0, `observedGeneration`."""
    conditions = copy.deepcopy(CONDITIONS)
    if _vkey(version) < (26, 3, 3):
        del conditions["items"]["properties"]["observedGeneration"]
    props = {"state": {"type": "string", "enum": states}, "namespace": S, "conditions": conditions}
    if _vkey(version) >= (26, 7, 0):
        props["observedGeneration"] = {"type": "integer", "format": "int64"}
    return obj(props)


def clusterpolicy_schema(version: str) -> dict:
    sandbox = {"enabled": B, "defaultWorkload": {"type": "string", "enum": ["container", "vm-passthrough", "vm-vgpu"]}}
    if _vkey(version) >= (26, 3, 3):
        sandbox["mode"] = {"type": "string", "enum": ["kubevirt", "kata"]}
    spec = obj(
        {
            "operator": obj(
                {"defaultRuntime": S, "runtimeClass": S, "initContainer": component(), "use_ocp_driver_toolkit": B}
            ),
            "daemonsets": obj(
                {
                    "labels": STR_MAP,
                    "annotations": STR_MAP,
                    "priorityClassName": S,
                    "tolerations": arr(TOLERATION),
                    "updateStrategy": {"type": "string", "enum": ["RollingUpdate", "OnDelete"]},
                    "rollingUpdate": obj({"maxUnavailable": S}),
                }
            ),
            "driver": component(
                useNvidiaDriverCRD=B,
                kernelModuleType={"type": "string", "enum": ["auto", "open", "proprietary"]},
                usePrecompiled=B,
                useOpenKernelModules=B,
                startupProbe=PROBE,
                livenessProbe=PROBE,
                readinessProbe=PROBE,
                upgradePolicy=UPGRADE_POLICY,
                manager=component(),
                repoConfig=obj({"configMapName": S}),
                certConfig=obj({"name": S}),
                licensingConfig=obj({"configMapName": S, "nlsEnabled": B}),
                kernelModuleConfig=obj({"name": S}),
            ),
            "toolkit": component(installDir=S),
            "devicePlugin": component(config=obj({"name": S, "default": S})),
            "dcgm": component(hostPort=INT),
            "dcgmExporter": component(
                serviceMonitor=obj(
                    {
                        "enabled": B,
                        "interval": S,
                        "honorLabels": B,
                        "additionalLabels": STR_MAP,
                        "relabelings": arr(FREE),
                    }
                ),
                config=obj({"name": S}),
            ),
            "gfd": component(),
            "migManager": component(config=obj({"name": S, "default": S}), gpuClientsConfig=obj({"name": S})),
            "mig": obj({"strategy": {"type": "string", "enum": ["none", "single", "mixed"]}}),
            "nodeStatusExporter": component(),
            "validator": component(
                plugin=obj({"env": ENV}), driver=obj({"env": ENV}), toolkit=obj({"env": ENV}), cuda=obj({"env": ENV})
            ),
            "cdi": obj({"enabled": B, "default": B, "nriPluginEnabled": B}),
            "sandboxWorkloads": obj(sandbox),
            "psa": obj({"enabled": B}),
            "psp": obj({"enabled": B}),
            "hostPaths": obj({"rootFS": S, "driverInstallDir": S}),
            "gds": component(),
            "vgpuManager": component(),
            "vgpuDeviceManager": component(),
            "vfioManager": component(),
            "sandboxDevicePlugin": component(),
            "kataManager": component(),
            "ccManager": component(defaultMode=S),
        }
    )
    status = status_schema(version, ["ignored", "ready", "notReady"])
    return obj({"apiVersion": S, "kind": S, "metadata": {"type": "object"}, "spec": spec, "status": status})


def nvidiadriver_schema(version: str) -> dict:
    props = {
        "driverType": {
            "type": "string",
            "enum": ["gpu", "vgpu", "vgpu-host-manager"],
            "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "driverType is an immutable field"}],
        },
        "version": S,
        "repository": S,
        "image": S,
        "imagePullPolicy": S,
        "imagePullSecrets": arr(S),
        "kernelModuleType": {"type": "string", "enum": ["auto", "open", "proprietary"]},
        "usePrecompiled": B,
        "nodeSelector": STR_MAP,
        "nodeAffinity": FREE,
        "tolerations": arr(TOLERATION),
        "labels": STR_MAP,
        "annotations": STR_MAP,
        "priorityClassName": S,
        "manager": component(),
        "startupProbe": PROBE,
        "livenessProbe": PROBE,
        "readinessProbe": PROBE,
        "env": ENV,
        "rdma": obj({"enabled": B, "useHostMofed": B}),
        "gds": component(),
        "gdrcopy": component(),
        "repoConfig": obj({"name": S}),
        "certConfig": obj({"name": S}),
        "licensingConfig": obj({"name": S}),
        "kernelModuleConfig": obj({"name": S}),
        "secretEnv": S,
        "hostNetwork": B,
    }
    validations = []
    if _vkey(version) >= (26, 7, 0):
        props["default"] = B
        props["upgradePolicy"] = UPGRADE_POLICY
        validations = [
            {
                "rule": "!has(self.default) || !self.default || !has(self.nodeSelector) || "
                "size(self.nodeSelector) == 0",
                "message": "the default NVIDIADriver must not have a nodeSelector",
            }
        ]
    spec = obj(props, required=["driverType"])
    if validations:
        spec["x-kubernetes-validations"] = validations
    status = status_schema(version, ["ignored", "ready", "notReady", "disabled"])
    return obj({"apiVersion": S, "kind": S, "metadata": {"type": "object"}, "spec": spec, "status": status})


def crd(
    group: str,
    version: str,
    kind: str,
    plural: str,
    singular: str,
    short: list[str],
    schema: dict,
    columns: list[dict],
    chart_version: str,
    scope: str = "Cluster",
) -> dict:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}", "annotations": {"gpuops.io/stand-in-chart-version": chart_version}},
        "spec": {
            "group": group,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": singular,
                **({"shortNames": short} if short else {}),
            },
            "scope": scope,
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": copy.deepcopy(schema)},
                    "subresources": {"status": {}},
                    # the API server drops an empty list, so a CRD without columns leaves the key out
                    **({"additionalPrinterColumns": columns} if columns else {}),
                }
            ],
        },
    }


def clusterpolicy_crd(chart_version: str) -> dict:
    cols = [
        {"name": "Status", "type": "string", "jsonPath": ".status.state"},
        {"name": "Age", "type": "string", "jsonPath": ".metadata.creationTimestamp"},
    ]
    return crd(
        "nvidia.com",
        "v1",
        "ClusterPolicy",
        "clusterpolicies",
        "clusterpolicy",
        [],
        clusterpolicy_schema(chart_version),
        cols,
        chart_version,
    )


def nvidiadriver_crd(chart_version: str) -> dict:
    cols = [{"name": "Status", "type": "string", "jsonPath": ".status.state"}]
    if _vkey(chart_version) >= (26, 7, 0):
        cols.append({"name": "Default", "type": "boolean", "jsonPath": ".spec.default"})
    cols.append({"name": "Age", "type": "string", "jsonPath": ".metadata.creationTimestamp"})
    return crd(
        "nvidia.com",
        "v1alpha1",
        "NVIDIADriver",
        "nvidiadrivers",
        "nvidiadriver",
        ["nvd", "nvdriver", "nvdrivers"],
        nvidiadriver_schema(chart_version),
        cols,
        chart_version,
    )


def gpucluster_schema() -> dict:
    """GPUCluster: the DRA driver (gpus always, computeDomains switchable), DCGM, the DCGM exporter, host paths and
    the common DaemonSet settings; status as ClusterPolicy's plus the `disabled` state."""
    kubelet_plugin = obj(
        {"env": ENV, "resources": FREE, "healthcheck": obj({"enabled": B, "port": {"type": "integer", "minimum": 1}})}
    )
    dra_driver = obj(
        {
            "repository": S,
            "image": {"type": "string", "pattern": "^[a-zA-Z0-9\\-]+$"},
            "version": S,
            "imagePullPolicy": S,
            "imagePullSecrets": arr(S),
            "featureGates": {"type": "object", "additionalProperties": B},
            "gpus": obj({"kubeletPlugin": kubelet_plugin}),
            "computeDomains": obj(
                {"enabled": B, "controller": obj({"env": ENV, "resources": FREE}), "kubeletPlugin": kubelet_plugin}
            ),
        }
    )
    daemonsets = obj(
        {
            "labels": STR_MAP,
            "annotations": STR_MAP,
            "priorityClassName": S,
            "tolerations": arr(TOLERATION),
            "updateStrategy": {"type": "string", "enum": ["RollingUpdate", "OnDelete"]},
            "rollingUpdate": obj({"maxUnavailable": S}),
        }
    )
    spec = obj(
        {
            "draDriver": dra_driver,
            "dcgm": component(hostPort=INT),
            "dcgmExporter": component(config=obj({"name": S})),
            "hostPaths": obj({"rootFS": S, "driverInstallDir": S, "kubeletRootDir": S}),
            "daemonsets": daemonsets,
        },
        required=["draDriver"],
    )
    status = obj(
        {
            "state": {"type": "string", "enum": ["ignored", "ready", "notReady", "disabled"]},
            "namespace": S,
            "conditions": CONDITIONS,
        }
    )
    return obj({"apiVersion": S, "kind": S, "metadata": {"type": "object"}, "spec": spec, "status": status})


def gpucluster_crd(chart_version: str) -> dict:
    cols = [
        {"name": "Status", "type": "string", "jsonPath": ".status.state"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    return crd(
        "nvidia.com",
        "v1alpha1",
        "GPUCluster",
        "gpuclusters",
        "gpucluster",
        ["gc"],
        gpucluster_schema(),
        cols,
        chart_version,
    )


def computedomain_crds(chart_version: str) -> dict[str, dict]:
    """The DRA driver's ComputeDomain (a set of nodes sharing an IMEX domain) and ComputeDomainClique (the daemons of
    one NVLink clique), namespaced, resource.nvidia.com/v1beta1; file name → CRD."""
    daemon = obj({"nodeName": S, "ipAddress": S, "cliqueID": S, "index": INT, "status": S})
    domain = obj(
        {
            "apiVersion": S,
            "kind": S,
            "metadata": {"type": "object"},
            "spec": obj(
                {
                    "numNodes": {"type": "integer", "minimum": 0},
                    "channel": obj(
                        {
                            "resourceClaimTemplate": obj({"name": S}, required=["name"]),
                            "allocationMode": {"type": "string", "enum": ["Single", "All"]},
                        }
                    ),
                },
                required=["numNodes"],
            ),
            "status": obj({"status": {"type": "string", "enum": ["Ready", "NotReady"]}, "nodes": arr(daemon)}),
        }
    )
    clique = obj({"apiVersion": S, "kind": S, "metadata": {"type": "object"}, "daemons": arr(daemon)})
    status_col = [{"name": "Status", "type": "string", "jsonPath": ".status.status"}]
    out = {}
    for kind, sch, cols in (("ComputeDomain", domain, status_col), ("ComputeDomainClique", clique, [])):
        plural = kind.lower() + "s"
        doc = crd(
            "resource.nvidia.com", "v1beta1", kind, plural, kind.lower(), [], sch, cols, chart_version, "Namespaced"
        )
        out["resource.nvidia.com_%s.yaml" % plural] = _status_only_if_in_schema(doc)
    return out


def _status_only_if_in_schema(doc: dict) -> dict:
    """Drop the status subresource of a CRD whose schema has no `status` (crd() always adds one)."""
    version = doc["spec"]["versions"][0]
    if "status" not in version["schema"]["openAPIV3Schema"]["properties"]:
        del version["subresources"]
    return doc


def nfd_crds(nfd_version: str) -> list[dict]:
    """NodeFeature (features one node reports), NodeFeatureRule (cluster-wide labelling rules) and NodeFeatureGroup
    (nodes matching rules), nfd.k8s-sigs.io/v1alpha1: the NFD subchart's CRDs, the same schemas for every NFD version
    the stand-in ships. Not operator CRDs: with nfd.enabled=false they belong to the cluster's own NFD."""
    features = obj({"features": FREE, "labels": STR_MAP})
    rules = obj({"rules": arr(obj({"name": S, "labels": STR_MAP, "matchFeatures": arr(FREE)}, required=["name"]))})
    group_spec = obj({"featureGroupRules": arr(obj({"name": S, "matchFeatures": arr(FREE)}, required=["name"]))})
    group_status = obj({"nodes": arr(obj({"name": S}))})

    def schema(spec, status=None):
        props = {"apiVersion": S, "kind": S, "metadata": {"type": "object"}, "spec": spec}
        return obj(dict(props, **({"status": status} if status else {})))

    def one(kind, plural, short, sch, scope):
        doc = crd("nfd.k8s-sigs.io", "v1alpha1", kind, plural, kind.lower(), short, sch, [], nfd_version, scope)
        return _status_only_if_in_schema(doc)

    return [
        one("NodeFeature", "nodefeatures", [], schema(features), "Namespaced"),
        one("NodeFeatureGroup", "nodefeaturegroups", ["nfg"], schema(group_spec, group_status), "Namespaced"),
        one("NodeFeatureRule", "nodefeaturerules", ["nfr"], schema(rules), "Cluster"),
    ]


def all_crds(chart_version: str) -> dict[str, dict]:
    """File name under crds/ → CRD object."""
    out = {
        "nvidia.com_clusterpolicies.yaml": clusterpolicy_crd(chart_version),
        "nvidia.com_nvidiadrivers.yaml": nvidiadriver_crd(chart_version),
    }
    if _vkey(chart_version) >= (26, 7, 0):
        out["nvidia.com_gpuclusters.yaml"] = gpucluster_crd(chart_version)
        out.update(computedomain_crds(chart_version))
    return out
