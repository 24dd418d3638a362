"""Specs for the pure canary-upgrade logic: waves, the progress record, tolerations and taints, the gate, the proof."""

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.cuda import (
    cuda_image_rules,
    image_cuda,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.errors import PlanError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.gate import Cluster, gate
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.names import (
    DRIVER_VERSION_LABEL,
    FAILED_ANNOTATION,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.options import CanaryOptions
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.pods import (
    parse_selector,
    selector_matches,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.progress import (
    DONE,
    FAILED,
    MOVING,
    NOT_STARTED,
    node_progress,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.proof import (
    dcgm_xid_by_node,
    prove_node,
    xid_events_by_node,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.record import (
    RECORD_KEY,
    WAVE_PROVEN,
    decode_record,
    encode_record,
    new_record,
    next_wave,
    same_target,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.taints import (
    taints_with,
    taints_without,
    tolerates,
    with_toleration,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.waves import (
    interleave_pools,
    plan_waves,
    wave_targets,
)

STATE = "nvidia.com/gpu-driver-upgrade-state"
SKIP = "nvidia.com/gpu-driver-upgrade.skip"


def node(name, state=None, unschedulable=False, labels=None, annotations=None):
    lab = {"feature.node.kubernetes.io/pci-10de.present": "true"}
    if state:
        lab[STATE] = state
    lab.update(labels or {})
    return {
        "metadata": {"name": name, "labels": lab, "annotations": dict(annotations or {})},
        "spec": {"unschedulable": unschedulable},
    }


def gpu_pod(name, node_name, labels=None, ns="default", phase="Running"):
    return {
        "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
        "spec": {"nodeName": node_name, "containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
        "status": {"phase": phase, "startTime": "2026-12-01T00:00:00Z"},
    }


# ---------------------------------------------------------------------------------------------- waves


def test_wave_entries_are_cumulative_counts_or_percentages_rounded_up():
    assert wave_targets([1, "10%", "25%", "100%"], 40) == [1, 4, 10, 40]
    assert wave_targets(["34%", "100%"], 3) == [2, 3]
    assert wave_targets(["5", "100%"], 8) == [5, 8]


def test_a_wave_that_adds_no_node_is_dropped_and_counts_are_capped_at_the_total():
    assert wave_targets([1, "10%", "100%"], 5) == [1, 5]
    assert wave_targets([50], 3) == [3]


@pytest.mark.parametrize(
    ("waves", "message"),
    [
        ([0], "at least 1"),
        (["0%"], "above 0%"),
        (["150%"], "at most 100%"),
        (["lots"], "use a node count"),
        ([True], "use a node count"),
        (["50%", "10%"], "waves are cumulative"),
    ],
)
def test_bad_wave_entries_name_the_entry_and_the_fix(waves, message):
    with pytest.raises(PlanError, match=message):
        wave_targets(waves, 10)


def test_the_plan_puts_the_canary_first_then_splits_the_rest_and_reports_what_no_wave_covers():
    plan, unplanned = plan_waves(["c0"], ["n1", "n2", "n3", "n4"], [1, "50%"])
    assert [(w["index"], w["name"], w["nodes"]) for w in plan] == [
        (0, "canary", ["c0"]),
        (1, "wave-1", ["n1"]),
        (2, "wave-2", ["n2"]),
    ]
    assert unplanned == ["n3", "n4"]


def test_the_rest_alternates_pools_in_natural_name_order():
    pool = {"h-1": "h", "h-2": "h", "h-10": "h", "a-1": "a", "a-2": "a"}
    assert interleave_pools(list(pool), pool.get) == ["a-1", "h-1", "a-2", "h-2", "h-10"]


# ---------------------------------------------------------------------------------------------- record


def test_the_record_round_trips_through_a_configmap_and_knows_the_next_wave():
    plan, _unplanned = plan_waves(["c0"], ["n1"], ["100%"])
    rec = new_record({"driver_version": "2"}, {"driver_version": "1"}, {"key": "k"}, plan, {}, "t0")
    cm = {"data": {RECORD_KEY: encode_record(rec)}}
    back = decode_record(cm)
    assert back == rec and next_wave(back) == 0
    back["waves"][0]["status"] = WAVE_PROVEN
    assert next_wave(back) == 1
    back["waves"][1]["status"] = WAVE_PROVEN
    assert next_wave(back) is None
    assert same_target(back, {"driver_version": "2"}) and not same_target(back, {"driver_version": "3"})


@pytest.mark.parametrize(
    "cm", [None, {}, {"data": {}}, {"data": {"record": "{"}}, {"data": {"record": '{"version": 9}'}}]
)
def test_a_missing_or_unreadable_record_is_none(cm):
    assert decode_record(cm) is None


# ---------------------------------------------------------------------------------------------- tolerations, taints


def test_a_toleration_is_added_only_when_nothing_tolerates_the_taint():
    key, eff = "gpuops.io/canary-upgrade", "NoSchedule"
    tols, changed = with_toleration([{"key": "nvidia.com/gpu", "operator": "Exists"}], key, eff)
    assert changed and tols[-1] == {"key": key, "operator": "Exists", "effect": eff}
    for tolerating in (
        [{"operator": "Exists"}],
        [{"key": key, "operator": "Exists"}],
        [{"key": key, "value": "x", "operator": "Exists", "effect": eff}],
    ):
        assert with_toleration(tolerating, key, eff) == (tolerating, False)
    assert tolerates([{"key": key, "operator": "Exists", "effect": "NoExecute"}], key, eff) is False


def test_taints_are_added_once_and_removed_by_key_and_effect():
    taints, changed = taints_with([{"key": "other", "effect": "NoSchedule"}], "k", "NoSchedule", "canary")
    assert changed and taints[-1] == {"key": "k", "value": "canary", "effect": "NoSchedule"}
    assert taints_with(taints, "k", "NoSchedule", "wave-1") == (taints, False)
    assert taints_without(taints, "k", "NoSchedule") == ([{"key": "other", "effect": "NoSchedule"}], True)
    assert taints_without([], "k", "NoSchedule") == ([], False)


@pytest.mark.parametrize(
    ("selector", "labels", "match"),
    [
        ("a=1", {"a": "1"}, True),
        ("a==1,b!=2", {"a": "1", "b": "3"}, True),
        ("a in (1, 2)", {"a": "2"}, True),
        ("a notin (1,2)", {"a": "2"}, False),
        ("a", {}, False),
        ("!a", {}, True),
        ("a=1,b", {"a": "1"}, False),
    ],
)
def test_label_selectors(selector, labels, match):
    assert selector_matches(labels, parse_selector(selector)) is match


# ---------------------------------------------------------------------------------------------- gate


def test_the_gate_fails_on_a_foreign_upgrade_failure_but_not_on_its_own_and_adds_the_quarantine_refusals():
    nodes = [
        node("old-failure", "upgrade-failed"),
        node("ours", "upgrade-failed", unschedulable=True, annotations={FAILED_ANNOTATION: "earlier canary"}),
        node("upgrading", "wait-for-jobs-required", unschedulable=True),
        node("not-planned", "upgrade-failed", unschedulable=True),
    ]
    g = gate(
        Cluster(nodes, [], []), ["old-failure", "ours", "upgrading"], None, CanaryOptions(), ["node x is quarantined"]
    )
    assert not g["passed"]
    assert len(g["failures"]) == 2
    assert "old-failure is in upgrade-failed" in g["failures"][0] and "relabel" in g["failures"][0]
    assert g["failures"][1] == "node x is quarantined"


def test_the_gate_lists_gpu_jobs_their_pdbs_and_which_are_waited_for():
    pods = [
        gpu_pod("train", "n1", labels={"app": "train", "ckpt": "yes"}),
        gpu_pod("infer", "n1", labels={"app": "infer"}),
        gpu_pod("done", "n1", phase="Succeeded"),
        gpu_pod("elsewhere", "other"),
    ]
    pdb = {
        "metadata": {"name": "infer-pdb", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "infer"}}, "minAvailable": 1},
        "status": {"disruptionsAllowed": 0},
    }
    g = gate(Cluster([node("n1")], pods, [pdb]), ["n1"], None, CanaryOptions(wait_for_completion_selector="ckpt=yes"))
    assert g["passed"]
    assert [(j["pod"], j["wait_for_completion"], j["pdbs"]) for j in g["gpu_jobs"]] == [
        ("default/infer", False, ["default/infer-pdb"]),
        ("default/train", True, []),
    ]
    assert g["pdbs"] == [
        {"name": "default/infer-pdb", "disruptions_allowed": 0, "min_available": 1, "max_unavailable": None}
    ]


# ---------------------------------------------------------------------------------------------- gate: CUDA


def cuda_pod(name, node_name, image, resource="nvidia.com/gpu", phase="Running"):
    pod = gpu_pod(name, node_name, phase=phase)
    pod["spec"]["containers"] = [
        {"name": "sidecar", "image": "busybox:1.36"},
        {"name": "main", "image": image, "resources": {"limits": {resource: "1"}}},
    ]
    return pod


@pytest.mark.parametrize(
    "image,cuda",
    [
        ("nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", "12.4"),
        ("nvidia/cuda:13.0.0-runtime-ubuntu24.04", "13.0"),
        ("docker.io/nvidia/cuda:11.8.0-cudnn8-devel-ubuntu22.04", "11.8"),
        ("registry.local:5000/nvidia/cuda:12.8-base", "12.8"),
        ("nvcr.io/nvidia/cuda:12.2.2-base-ubuntu22.04@sha256:" + "a" * 64, "12.2"),
        ("nvcr.io/nvidia/cuda:12.10.0-base", "12.10"),
    ],
)
def test_the_cuda_version_is_read_from_nvidia_cuda_image_tags(image, cuda):
    assert image_cuda(image) == (cuda, "NVIDIA CUDA image tag")


@pytest.mark.parametrize(
    "image",
    [
        "nvcr.io/nvidia/cuda",  # no tag
        "nvcr.io/nvidia/cuda:latest",
        "nvcr.io/nvidia/cuda@sha256:" + "b" * 64,
        "registry.local:5000/nvidia/cuda",  # a port is not a tag
        "nvcr.io/nvidia/pytorch:24.05-py3",  # a date tag, not a CUDA version
        "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0",
        "example.com/notnvidia/cuda:12.4.1-base",
        "cuda:sample",
        "",
    ],
)
def test_no_cuda_version_is_guessed_for_other_images(image):
    cuda, why = image_cuda(image)
    assert cuda is None and why


def test_user_rules_give_the_cuda_version_of_other_images_and_come_first():
    rules = cuda_image_rules(
        [
            {"image": r"^registry\.example\.com/ml/trainer:", "cuda": "12.6"},
            {"image": r"cuda(?P<cuda>\d+\.\d+)"},
            {"image": r"^nvcr\.io/nvidia/pytorch:24\.05", "cuda": "12.4.1"},
        ]
    )
    assert image_cuda("registry.example.com/ml/trainer:v3", rules) == ("12.6", "cuda_images rule %r" % rules[0][2])
    assert image_cuda("nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0", rules)[0] == "12.5"
    assert image_cuda("nvcr.io/nvidia/pytorch:24.05-py3", rules)[0] == "12.4"
    assert image_cuda("nvcr.io/nvidia/cuda:13.0.0-base", rules) == ("13.0", "NVIDIA CUDA image tag")
    # a rule that matches before the tag rule wins
    first = cuda_image_rules([{"image": "nvidia/cuda", "cuda": "11.0"}])
    assert image_cuda("nvidia/cuda:13.0.0-base", first)[0] == "11.0"
    # a capture that is not a version is unknown, not guessed
    bad = cuda_image_rules([{"image": r"trainer:(\w+)"}])
    cuda, why = image_cuda("registry.example.com/ml/trainer:latest", bad)
    assert cuda is None and "not a CUDA version" in why


@pytest.mark.parametrize(
    "entries,match",
    [
        ([{"cuda": "12.4"}], "needs an image regex"),
        (["^x"], "needs an image regex"),
        ([{"image": "("}], "not a regular expression"),
        ([{"image": "^x", "cuda": "twelve"}], "not a CUDA version"),
        ([{"image": "^x"}], "captures nothing"),
    ],
)
def test_bad_cuda_image_rules_are_refused_with_the_entry_named(entries, match):
    with pytest.raises(PlanError, match=match):
        cuda_image_rules(entries)


def test_the_gate_fails_when_the_target_driver_is_older_than_a_running_workloads_cuda_needs():
    pods = [
        cuda_pod("train", "n1", "nvcr.io/nvidia/cuda:13.0.0-base-ubuntu22.04"),
        cuda_pod("mig", "n1", "nvidia/cuda:12.4.1-runtime-ubuntu22.04", resource="nvidia.com/mig-1g.10gb"),
        cuda_pod("old", "n1", "nvcr.io/nvidia/cuda:12.0.1-base"),
    ]
    g = gate(Cluster([node("n1")], pods, []), ["n1"], None, CanaryOptions(driver_version="570.86.10"))
    assert not g["passed"]
    assert len(g["failures"]) == 1
    msg = g["failures"][0]
    for part in ("default/train", "nvcr.io/nvidia/cuda:13.0.0-base-ubuntu22.04", "CUDA 13.0", "580.65.06", "570.86.10"):
        assert part in msg, (part, msg)
    by_pod = {w["pod"]: w for w in g["cuda"]["workloads"]}
    assert by_pod["default/train"]["required_driver"] == "580.65.06" and by_pod["default/train"]["ok"] is False
    # CUDA 12.4 needs the 12.x floor (525) under minor-version compatibility; 12.0 its GA driver
    assert by_pod["default/mig"]["required_driver"] == "525" and by_pod["default/mig"]["ok"] is True
    assert by_pod["default/old"]["required_driver"] == "525.60.13" and by_pod["default/old"]["ok"] is True
    assert [w["container"] for w in g["cuda"]["workloads"]] == ["main"] * 3  # the sidecar requests no GPU
    assert g["cuda"]["unknown"] == []


def test_the_gate_passes_when_the_target_driver_meets_every_workloads_minimum():
    pods = [
        cuda_pod("train", "n1", "nvcr.io/nvidia/cuda:13.0.0-base-ubuntu22.04"),
        cuda_pod("elsewhere", "other", "nvcr.io/nvidia/cuda:13.0.0-base-ubuntu22.04"),  # not a planned node
        cuda_pod("done", "n1", "nvcr.io/nvidia/cuda:13.0.0-base-ubuntu22.04", phase="Succeeded"),
    ]
    g = gate(Cluster([node("n1"), node("other")], pods, []), ["n1"], None, CanaryOptions(driver_version="580.65.06"))
    assert g["passed"], g["failures"]
    assert [(w["pod"], w["ok"]) for w in g["cuda"]["workloads"]] == [("default/train", True)]
    # with a lower target only the planned, running one fails
    g = gate(Cluster([node("n1"), node("other")], pods, []), ["n1"], None, CanaryOptions(driver_version="575.1"))
    assert [f.split(" (")[0] for f in g["failures"]] == ["pod default/train"]
    # a chart-only upgrade (no target driver) lists the versions and compares nothing
    g = gate(Cluster([node("n1")], pods, []), ["n1"], None, CanaryOptions(driver_version=None))
    assert g["passed"] and g["cuda"]["target_driver"] is None and g["cuda"]["workloads"][0]["ok"] is None


def test_unknown_cuda_versions_are_listed_as_info_and_fail_nothing():
    pods = [
        cuda_pod("custom", "n1", "registry.example.com/ml/trainer:v3"),
        cuda_pod("future", "n1", "nvcr.io/nvidia/cuda:14.0.0-base"),  # not in the compatibility matrix
        gpu_pod("noimage", "n1"),
    ]
    g = gate(Cluster([node("n1")], pods, []), ["n1"], None, CanaryOptions(driver_version="470.1"))
    assert g["passed"], g["failures"]
    assert g["cuda"]["workloads"] == []
    unknown = {u["pod"]: u for u in g["cuda"]["unknown"]}
    assert sorted(unknown) == ["default/custom", "default/future", "default/noimage"]
    assert all(u["severity"] == "info" and u["reason"].startswith("unknown CUDA") for u in unknown.values())
    assert unknown["default/future"]["cuda"] == "14.0"
    assert "not in the compatibility matrix" in unknown["default/future"]["reason"]
    # a user rule makes the custom image known, and then it is compared
    rules = [{"image": "^registry\\.example\\.com/ml/trainer:", "cuda": "12.6"}]
    g = gate(Cluster([node("n1")], pods, []), ["n1"], None, CanaryOptions(driver_version="470.1", cuda_images=rules))
    assert not g["passed"] and "pod default/custom" in g["failures"][0] and "CUDA 12.6" in g["failures"][0]


# ---------------------------------------------------------------------------------------------- proof


def test_a_node_is_upgraded_when_its_driver_label_is_the_target_and_the_controller_is_done():
    done = node("n", "upgrade-done", labels={DRIVER_VERSION_LABEL: "610.1"})
    assert node_progress(done, "610.1") == (DONE, "upgrade-done 610.1", "upgrade-done, driver 610.1")
    assert node_progress(done, "610.2")[0] == NOT_STARTED
    held = node("n", "upgrade-required", labels={SKIP: "true", DRIVER_VERSION_LABEL: "580.1"})
    assert node_progress(held, "610.1")[::2] == (
        NOT_STARTED,
        "upgrade-required, driver 580.1, still held by the skip label",
    )
    failed = node_progress(node("n", "upgrade-failed"), "610.1")
    assert failed[0] == FAILED and failed[2].endswith("set nvidia.com/gpu-driver-upgrade-state=upgrade-failed")
    assert node_progress(None, "610.1")[::2] == (FAILED, "the node disappeared")


def test_each_upgrade_state_says_what_the_node_waits_for():
    restarting = node("n", "pod-restart-required", labels={DRIVER_VERSION_LABEL: "580.1"})
    assert node_progress(restarting, "610.1")[::2] == (
        MOVING,
        "pod-restart-required, driver 580.1, waiting for the new driver pod to run and be ready",
    )
    queued = node("n", "upgrade-required", labels={DRIVER_VERSION_LABEL: "580.1"})
    assert node_progress(queued, "610.1")[2].endswith("waiting for the upgrade controller to start it")
    unmanaged = node("n", None)
    assert node_progress(unmanaged, "610.1")[::2] == (
        NOT_STARTED,
        "no upgrade state, driver unknown, waiting for the operator's upgrade controller to give it an upgrade state",
    )
    # a chart-only upgrade (no target driver) is done on a node the upgrade controller does not touch
    assert node_progress(unmanaged, None)[0] == DONE


def view(**kw):
    base = {
        "labels": {DRIVER_VERSION_LABEL: "610.1"},
        "ready": True,
        "capacity": {"nvidia.com/gpu": 8},
        "allocatable": {"nvidia.com/gpu": 8},
        "operands": {"operator-validator": {"ready": True}, "driver": {"ready": True}},
    }
    base.update(kw)
    return base


def test_the_proof_passes_a_healthy_upgraded_node():
    assert prove_node(view(), "610.1", []) == []


@pytest.mark.parametrize(
    ("kw", "xids", "dcgm", "expect"),
    [
        ({"labels": {DRIVER_VERSION_LABEL: "580.1"}}, [], None, "not the target 610.1"),
        ({"ready": False}, [], None, "not Ready"),
        ({"allocatable": {"nvidia.com/gpu": 7}}, [], None, "allocatable GPUs 7 below capacity 8"),
        ({"capacity": {}, "allocatable": {}}, [], None, "no GPU capacity"),
        ({"operands": {"driver": {"ready": True}}}, [], None, "no nvidia-operator-validator pod"),
        (
            {"operands": {"operator-validator": {"ready": False, "reason": "CrashLoopBackOff"}}},
            [],
            None,
            "CrashLoopBackOff",
        ),
        ({}, [{"message": "Xid=79 on Device"}], None, "new Xid event"),
        ({}, [], [79], "DCGM reports XID errors [79]"),
    ],
)
def test_each_proof_failure_names_what_is_wrong(kw, xids, dcgm, expect):
    problems = prove_node(view(**kw), "610.1", xids, dcgm)
    assert len(problems) == 1 and expect in problems[0], problems


def test_only_xid_events_since_the_wave_started_count_each_for_its_node():
    events = [
        {
            "involvedObject": {"kind": "Node", "name": "n"},
            "reason": "XidCriticalError",
            "lastTimestamp": "2026-12-03T10:00:05Z",
        },
        {
            "involvedObject": {"kind": "Node", "name": "n"},
            "reason": "XidCriticalError",
            "lastTimestamp": "2026-12-03T09:00:00Z",
        },
        {
            "involvedObject": {"kind": "Node", "name": "m"},
            "reason": "XidCriticalError",
            "lastTimestamp": "2026-12-03T10:00:05Z",
        },
        {
            "involvedObject": {"kind": "Node", "name": "n"},
            "reason": "GPUDriverUpgrade",
            "lastTimestamp": "2026-12-03T10:00:05Z",
        },
    ]
    assert xid_events_by_node(events, "2026-12-03T10:00:00Z") == {"n": [events[0]], "m": [events[2]]}


def test_dcgm_xid_errors_are_read_per_hostname():
    text = "\n".join(
        [
            "# HELP DCGM_FI_DEV_XID_ERRORS last xid",
            'DCGM_FI_DEV_XID_ERRORS{gpu="0",Hostname="n1",UUID="a"} 79',
            'DCGM_FI_DEV_XID_ERRORS{gpu="1",Hostname="n1",UUID="b"} 0',
            'DCGM_FI_DEV_XID_ERRORS{gpu="0",Hostname="n2",UUID="c"} 0',
            'DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="n2"} 40',
        ]
    )
    assert dcgm_xid_by_node(text) == {"n1": [79]}
