"""Unit specs of the simulated DRA driver (tests/sim/operator/dra_devices.py, dra_kubelet.py), the GPUCluster CRD
and the stand-in chart's GPUCluster mode (no cluster)."""

from __future__ import annotations

import subprocess
from types import SimpleNamespace

import pytest
import yaml
from kubernetes.client.rest import ApiException

from tests.sim import chart, profiles
from tests.sim.chart import crds
from tests.sim.operator import dra_devices as D
from tests.sim.operator import dra_kubelet as K
from tests.sim.operator import logic as L
from tests.sim.operator.dra import OWNED, GpuClusterReconciler


def node(name="h100-0", profile="h100-sxm-8", faults=""):
    ann = {D.ANN_NVML_PROFILE: profile} if profile else {}
    ann.update({"sim.gpuops.io/gpu-product": "NVIDIA-H100-80GB-HBM3", "sim.gpuops.io/gpu-count": "2"})
    if faults:
        ann["sim.gpuops.io/fault"] = faults
    return {"metadata": {"name": name, "uid": "u-" + name, "annotations": ann}}


# ------------------------------------------------------------------------------------- devices from NVML


def test_every_gpu_of_the_fixture_is_a_device_with_the_drivers_attributes():
    fixture = D.load_fixture("h100-sxm-8")
    devs = D.devices(fixture)
    assert [d["name"] for d in devs] == [f"gpu-{i}" for i in range(8)]
    attrs = devs[3]["attributes"]
    assert attrs["type"] == {"string": "gpu"}
    assert attrs["uuid"] == {"string": fixture["gpu.3.uuid"]}
    assert attrs["productName"] == {"string": "NVIDIA H100 80GB HBM3"}
    assert attrs["architecture"] == {"string": "Hopper"}
    assert attrs["cudaComputeCapability"] == {"version": "9.0.0"}
    assert attrs["driverVersion"] == {"version": "570.124.6"}  # NVML's 570.124.06 as semver
    assert attrs["cudaDriverVersion"] == {"version": "12.8.0"}
    assert attrs["index"] == {"int": 3} and attrs["minor"] == {"int": 3}
    assert attrs["resource.kubernetes.io/pciBusID"] == {"string": "0000:5d:00.0"}
    assert devs[3]["capacity"] == {"memory": {"value": "85520809984"}}


def test_a_mig_enabled_gpu_publishes_its_mig_devices_instead_of_itself():
    fixture = D.load_fixture("a100-mig-8")
    devs = D.devices(fixture)
    migs = [d for d in devs if d["attributes"]["type"]["string"] == "mig"]
    gpus = [d["name"] for d in devs if d["attributes"]["type"]["string"] == "gpu"]
    assert len(migs) == 6 * 7 and gpus == ["gpu-6", "gpu-7"]  # GPU 6 has MIG only pending, GPU 7 off
    assert len(devs) == D.nvml_device_count(fixture) == 44
    first = migs[0]
    assert first["name"] == "gpu-0-mig-0-0-1"
    assert first["attributes"]["profile"] == {"string": "1g.10gb"}
    assert first["attributes"]["parentUUID"] == {"string": fixture["gpu.0.uuid"]}
    assert first["attributes"]["uuid"] == {"string": "MIG-0a100000-0000-4000-8000-000000000000-0"}
    assert first["capacity"]["memorySlice0"] == {"value": "1"} and "memorySlice1" not in first["capacity"]
    assert migs[6]["name"] == "gpu-0-mig-0-6-1"


def test_a_node_without_nvml_fixture_gets_devices_from_its_gpu_annotations():
    devs = D.node_devices(node(profile=None))
    assert [d["name"] for d in devs] == ["gpu-0", "gpu-1"]
    assert devs[1]["attributes"]["uuid"]["string"].startswith("GPU-")


@pytest.mark.parametrize(
    "raw, want", [("570.124.06", "570.124.6"), ("550.127.05", "550.127.5"), ("595.91", "595.91.0"), (580, "580.0.0")]
)
def test_versions_are_published_as_semver(raw, want):
    assert D.semver(raw) == want


# ------------------------------------------------------------------------------------- slices and faults


def slices(faults="", current=None):
    n = node(faults=faults)
    return D.desired_slices("h100-0", D.node_devices(n), L.faults(n), current)


def test_a_healthy_node_has_one_slice_in_a_pool_named_after_it():
    (name, spec), *rest = slices().items()
    assert not rest and name == "h100-0-gpu.nvidia.com"
    assert spec["driver"] == "gpu.nvidia.com" and spec["nodeName"] == "h100-0"
    assert spec["pool"] == {"name": "h100-0", "resourceSliceCount": 1, "generation": 1}
    assert len(spec["devices"]) == 8


def test_the_generation_is_kept_while_the_content_is_unchanged_and_bumped_when_it_changes():
    spec = slices()["h100-0-gpu.nvidia.com"]
    published = D.slice_body("h100-0-gpu.nvidia.com", {**spec, "pool": {**spec["pool"], "generation": 4}}, node())
    assert slices(current=published)["h100-0-gpu.nvidia.com"]["pool"]["generation"] == 4
    assert slices("dra-fewer-devices", current=published)["h100-0-gpu.nvidia.com"]["pool"]["generation"] == 5


def test_dra_faults_change_what_the_node_publishes():
    assert slices("dra-slice-missing") == {}
    assert len(slices("dra-fewer-devices")["h100-0-gpu.nvidia.com"]["devices"]) == 7
    tainted = slices("dra-device-taint")["h100-0-gpu.nvidia.com"]["devices"]
    assert tainted[0]["taints"] == [D.TAINT] and "taints" not in tainted[1]
    stale = slices("dra-stale-generation")
    current, old = stale["h100-0-gpu.nvidia.com"]["pool"], stale["h100-0-gpu.nvidia.com-stale"]["pool"]
    assert current["resourceSliceCount"] == 2 and old["generation"] == current["generation"] - 1


def test_a_slice_is_owned_by_its_node():
    body = D.slice_body("h100-0-gpu.nvidia.com", slices()["h100-0-gpu.nvidia.com"], node())
    assert body["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "h100-0", "uid": "u-h100-0"}
    ]


def test_device_classes_select_the_drivers_gpu_and_mig_devices():
    gpu = D.device_class("gpu.nvidia.com", "gpu")["spec"]["selectors"][0]["cel"]["expression"]
    assert gpu == "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
    assert "type == 'mig'" in D.device_class("mig.nvidia.com", "mig")["spec"]["selectors"][0]["cel"]["expression"]


# ------------------------------------------------------------------------------------- GPUCluster status


def test_gpucluster_status_as_the_operator_writes_it():
    assert D.gpucluster_state("cluster-policy", {})[:2] == ("notReady", "PrerequisiteNotMet")
    assert '"cluster-policy" exists' in D.gpucluster_state("cluster-policy", {})[2]
    state, reason, msg = D.gpucluster_state(None, {"state-dra-driver": (3, 2), "state-dcgm-exporter": (3, 3)})
    assert (state, reason) == ("notReady", "OperandNotReady")
    assert msg == "Waiting for operand pods to be ready; states not ready: [state-dra-driver]"
    assert D.gpucluster_state(None, {"state-dra-driver": (3, 3)}) == (
        "ready",
        "Reconciled",
        "All resources have been successfully reconciled",
    )


# ------------------------------------------------------------------------------------- the node side


def pod(claims, statuses=None, uid="p1"):
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": uid},
        "spec": {"nodeName": "h100-0", "resourceClaims": claims, "containers": [{"name": "c"}]},
        "status": {"phase": "Pending", "resourceClaimStatuses": statuses or []},
    }


def claim(name, allocated=True, reserved_for="p1"):
    status = {"reservedFor": [{"resource": "pods", "name": "p", "uid": reserved_for}]} if reserved_for else {}
    if allocated:
        status["allocation"] = {
            "devices": {"results": [{"driver": "gpu.nvidia.com", "pool": "h100-0", "device": "gpu-0"}]}
        }
    return {"metadata": {"name": name, "namespace": "ns", "uid": "c-" + name}, "status": status}


def test_the_kubelet_waits_until_every_claim_is_created_allocated_and_reserved_for_the_pod():
    from_template = [{"name": "gpu", "resourceClaimTemplateName": "t"}]
    assert K.pod_claims(pod(from_template), {}) is None  # claim not created yet
    created = [{"name": "gpu", "resourceClaimName": "p-gpu-x"}]
    assert K.pod_claims(pod(from_template, created), {"ns/p-gpu-x": claim("p-gpu-x", allocated=False)}) is None
    assert K.pod_claims(pod(from_template, created), {"ns/p-gpu-x": claim("p-gpu-x", reserved_for="other")}) is None
    ready = K.pod_claims(pod(from_template, created), {"ns/p-gpu-x": claim("p-gpu-x")})
    assert [c["metadata"]["name"] for c in ready] == ["p-gpu-x"]


def test_a_claim_named_in_the_pod_spec_is_used_directly():
    mine = K.pod_claims(pod([{"name": "gpu", "resourceClaimName": "shared"}]), {"ns/shared": claim("shared")})
    assert [c["metadata"]["name"] for c in mine] == ["shared"]


# ------------------------------------------------------------------------------------- CRD, chart, profiles


def test_the_gpucluster_crd_ships_from_v26_7_0_on():
    assert "nvidia.com_gpuclusters.yaml" not in crds.all_crds("v26.3.3")
    assert "nvidia.com_gpuclusters.yaml" in crds.all_crds("v26.7.1")
    doc = crds.all_crds("v26.7.0")["nvidia.com_gpuclusters.yaml"]
    assert doc["metadata"]["name"] == "gpuclusters.nvidia.com" and doc["spec"]["scope"] == "Cluster"
    version = doc["spec"]["versions"][0]
    assert version["name"] == "v1alpha1" and doc["spec"]["names"]["shortNames"] == ["gc"]
    status = version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    assert status["state"]["enum"] == ["ignored", "ready", "notReady", "disabled"]


#: What GPUCluster mode needs of the chart's values, and of .Capabilities (a served DeviceClass API).
GPUCLUSTER = ("clusterPolicy.deployCR=false", "gpuCluster.deployCR=true", "driver.nvidiaDriverCRD.enabled=true")
DRA_API = "--api-versions=resource.k8s.io/v1/DeviceClass"


def template(version, tmp_path, *args):
    """``(rc, stdout, stderr)`` of ``helm template`` of the stand-in chart ``version``; ``args``: ``--set`` values
    (``a.b=c``) and flags (``--...``)."""
    helm = chart.helm_binary()
    src = chart.assemble(version, tmp_path)
    argv = [helm, "template", "gpu-operator", str(src), "-n", "gpu-operator"]
    argv += [x for a in args for x in ((a,) if a.startswith("--") else ("--set", a))]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return done.returncode, done.stdout, done.stderr


def render(version, tmp_path, *args):
    rc, out, err = template(version, tmp_path, *args)
    assert rc == 0, err
    return [d for d in yaml.safe_load_all(out) if d]


def test_gpucluster_mode_renders_the_gpucluster_and_no_cluster_policy(tmp_path):
    docs = render("v26.7.0", tmp_path, *GPUCLUSTER, DRA_API)
    kinds = {d["kind"] for d in docs}
    assert "ClusterPolicy" not in kinds
    (gc,) = [d for d in docs if d["kind"] == "GPUCluster"]
    assert gc["metadata"]["name"] == "gpu-cluster"
    assert gc["spec"]["draDriver"]["version"] == "v0.5.0"
    assert gc["spec"]["draDriver"]["repository"] == "registry.k8s.io/dra-driver-nvidia"
    assert gc["spec"]["dcgmExporter"]["enabled"] is True


def test_the_default_install_of_v26_7_x_and_older_versions_render_no_gpucluster(tmp_path):
    assert "GPUCluster" not in {d["kind"] for d in render("v26.7.1", tmp_path / "a")}
    assert "GPUCluster" not in {d["kind"] for d in render("v26.3.3", tmp_path / "b", "gpuCluster.deployCR=true")}


@pytest.mark.parametrize(
    "args, named",
    [
        (("gpuCluster.deployCR=true", "driver.nvidiaDriverCRD.enabled=true", DRA_API), "set clusterPolicy.deployCR"),
        (GPUCLUSTER[:2] + (DRA_API,), "set driver.nvidiaDriverCRD.enabled=true"),
        (("cdi.enabled=false", "cdi.nriPluginEnabled=true"), "cdi.nriPluginEnabled=true needs cdi.enabled=true"),
        (("toolkit.enabled=false", "cdi.nriPluginEnabled=true"), "needs toolkit.enabled=true"),
        (("devicePlugin.config.create=true", "devicePlugin.config.name=dp"), "needs devicePlugin.config.data"),
        (("devicePlugin.config.create=true", "devicePlugin.config.data.a=b"), "needs devicePlugin.config.name"),
        (GPUCLUSTER, "--api-versions resource.k8s.io/v1/DeviceClass"),
    ],
    ids=[
        "both CRs",
        "no NVIDIADriver",
        "NRI without CDI",
        "NRI without toolkit",
        "no config data",
        "no config name",
        "no DRA API",
    ],
)
def test_v26_7_0_refuses_at_render_time_each_combination_the_real_chart_refuses(tmp_path, args, named):
    rc, _out, err = template("v26.7.0", tmp_path, *args)
    assert rc != 0 and named in err


def test_the_dra_check_reads_capabilities_and_accepts_each_served_device_class_version(tmp_path):
    for version in ("v1", "v1beta2", "v1beta1"):
        docs = render(
            "v26.7.0", tmp_path / version, *GPUCLUSTER, "--api-versions=resource.k8s.io/%s/DeviceClass" % version
        )
        assert "GPUCluster" in {d["kind"] for d in docs}


def test_with_nfd_on_the_chart_renders_nfds_cluster_roles_bindings_and_its_post_delete_prune_hook(tmp_path):
    rc, out, err = template("v26.7.0", tmp_path, "--show-only=charts/node-feature-discovery/templates/rbac.yaml")
    assert rc == 0, err
    cluster_wide = {(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(out) if d}
    assert cluster_wide >= {
        ("ClusterRole", "gpu-operator-node-feature-discovery"),
        ("ClusterRoleBinding", "gpu-operator-node-feature-discovery"),
        ("ClusterRole", "gpu-operator-node-feature-discovery-gc"),
        ("ClusterRoleBinding", "gpu-operator-node-feature-discovery-gc"),
    }
    rc, out, err = template(
        "v26.7.0", tmp_path / "h", "--show-only=charts/node-feature-discovery/templates/prune-hook.yaml"
    )
    hooks = [d for d in yaml.safe_load_all(out) if d]
    assert {d["kind"] for d in hooks} == {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Job"}
    assert {d["metadata"]["annotations"]["helm.sh/hook"] for d in hooks} == {"post-delete"}


def test_dra_profiles_run_the_operator_in_gpucluster_mode():
    for name in ("ci-dra", "demo-dra"):
        prof = profiles.load(name)
        assert prof.operator == "simulated" and prof.operator_mode == "gpucluster"
        fixtures = {p.nvml_profile for p in prof.gpu_pools()}
        # demo-dra's hosts run the R580 variants of the same fixtures (GPUCluster mode needs a driver >= 580)
        suffix = "-r580" if name == "demo-dra" else ""
        assert fixtures == {"a100-mig-8" + suffix, "h100-sxm-8" + suffix}
    assert profiles.load("demo").operator_mode == "clusterpolicy"
    with pytest.raises(profiles.ProfileError, match="operator_mode"):
        profiles.parse({"name": "x", "operator_mode": "dra", "pools": [{"name": "g", "count": 1}]})


def test_a_fixture_variant_includes_its_base_and_overrides_what_differs():
    variant, base = D.load_fixture("h100-sxm-8-r580"), D.load_fixture("h100-sxm-8")
    assert variant["driver_version"] == "580.95.05" and base["driver_version"] != "580.95.05"
    assert {k: v for k, v in variant.items() if "version" not in k} == {
        k: v for k, v in base.items() if "version" not in k
    }
    assert D.devices(variant)[0]["attributes"]["driverVersion"] == {"version": "580.95.5"}


def test_gpu_nodes_name_their_nvml_fixture():
    pool = next(p for p in profiles.load("ci-dra").gpu_pools() if p.name == "a100")
    ann = profiles.node_manifest(pool, "a100-0", set_gpu_capacity=False)["metadata"]["annotations"]
    assert ann[D.ANN_NVML_PROFILE] == "a100-mig-8"


def test_every_dra_node_fault_is_a_known_fault():
    assert set(D.NODE_FAULTS) <= set(L.FAULTS)


def test_a_crash_looping_plugin_pod_is_not_ready_and_says_why():
    from tests.sim.operator.dra import CRASH_MESSAGE, crash_loop_status

    pod = {"metadata": {"name": "plugin-x", "namespace": "gpu-operator"}, "spec": {"containers": [{"name": "gpus"}]}}
    status = crash_loop_status(pod, "2026-12-04T00:00:00Z")["status"]
    (gpus,) = status["containerStatuses"]
    assert gpus["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert gpus["lastState"]["terminated"]["message"] == CRASH_MESSAGE
    assert {c["type"]: c["status"] for c in status["conditions"]} == {"Ready": "False", "ContainersReady": "False"}


class _Apps:
    """The DaemonSet calls of the apps API, with a DaemonSet of one name already there (not the GPUCluster's)."""

    def __init__(self, existing):
        self.existing, self.calls = dict(existing), []  # name: labels

    def create_namespaced_daemon_set(self, ns, body):
        self.calls.append(("create", body["metadata"]["name"]))
        if body["metadata"]["name"] in self.existing:
            raise ApiException(status=409, reason="AlreadyExists")

    def read_namespaced_daemon_set(self, name, ns):
        self.calls.append(("read", name))
        return SimpleNamespace(metadata=SimpleNamespace(labels=self.existing[name]))

    def delete_namespaced_daemon_set(self, name, ns, propagation_policy):
        self.calls.append(("delete", name, propagation_policy))
        del self.existing[name]


THEIRS = {"app": "nvidia-dcgm-exporter"}  # the ClusterPolicy mode's labels
OURS = {"app": "nvidia-dcgm-exporter", OWNED: "true"}


@pytest.mark.parametrize(
    ("existing", "calls"),
    [
        ({}, [("create", "nvidia-dcgm-exporter")]),
        (
            {"nvidia-dcgm-exporter": THEIRS},
            [
                ("create", "nvidia-dcgm-exporter"),
                ("read", "nvidia-dcgm-exporter"),
                ("delete", "nvidia-dcgm-exporter", "Background"),
                ("create", "nvidia-dcgm-exporter"),
            ],
        ),
        # its own DaemonSet, created a pass ago and not yet in the informer's cache, is left alone
        ({"nvidia-dcgm-exporter": OURS}, [("create", "nvidia-dcgm-exporter"), ("read", "nvidia-dcgm-exporter")]),
    ],
)
def test_the_gpucluster_replaces_a_daemonset_of_its_name_that_the_clusterpolicy_mode_left(existing, calls):
    apps = _Apps(existing)
    reconciler = SimpleNamespace(ctl=SimpleNamespace(apps=apps))
    body = {"metadata": {"name": "nvidia-dcgm-exporter", "labels": OURS}, "spec": {}}
    GpuClusterReconciler._create_or_replace(reconciler, "gpu-operator", "nvidia-dcgm-exporter", body)
    assert apps.calls == calls
