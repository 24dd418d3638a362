"""Every module's EXAMPLES (what ansible-doc shows) runs against the `ci` test bed with the simulated GPU Operator
(ClusterPolicy mode) and does what its task names say.

Each EXAMPLES block is read with `ast` from plugins/modules/*.py (a module without an entry in BED fails the first
spec) and run as written but for the names of a real cluster that the bed lacks: BED maps them, module by module, to
the bed's (every left side must still occur in the examples, so a changed example forces the table to change with
it). The bed's inventory (`python -m tests.sim inventory`) gets group `gpu_canary` (h100-0) and cpu-0, a host without
a usable GPU (NVML: driver not loaded; group `gpu_less`); namespace `ml` holds the pod `train-7f9c` the triage examples
ask about, Pending for good (9 GPUs asked, 8 the most a node has). The kubeconfig the examples leave out is the
least-privilege identity's (K8S_AUTH_KUBECONFIG); the hosts find the fake libnvidia-ml.so.1 on the library path and
each its own NVML fixture (GPUOPS_FAKE_NVML_FIXTURE).

Two ansible-playbook runs: the examples of the modules that write to the cluster (gpu_operator, gpu_canary_upgrade,
gpu_smoke_test) under --check, the others for real (facts and info modules read; the report writers write into a
temporary directory). Proven:

- no task fails but those an example says fail (require_gpus on cpu-0; GPUCluster mode over a ClusterPolicy, refused),
  nothing prints a traceback, and the examples' own assertions hold;
- the examples change nothing on the cluster: the least-privilege identity sends no write but access reviews, the Helm
  release keeps its revision, no node's labels, taints or cordon change;
- per module, the registered results hold what each task's name promises (the specs below).

The DRA examples (gpu_smoke_test allocation claim, gpu_cluster_info's DRA assertion) are check-mode plans or hold
trivially on this ClusterPolicy bed; their real runs are the DRA specs' (tests/integration/dra/), on a bed of its own.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from tests.integration.helpers import wait_for
from tests.integration.simop_helpers import NS
from tests.sim.operator import logic as L

ROOT = Path(__file__).resolve().parents[3]
MODULES = sorted(p.stem for p in (ROOT / "plugins" / "modules").glob("*.py") if p.stem != "__init__")
NVML = ROOT / "tests" / "sim" / "nvml"
PROFILES = NVML / "profiles"
ACTION = "gpuops.gpu_operator."


@dataclass(frozen=True)
class OnTheBed:
    """How one module's examples run on the bed. ``rewrites``: example text -> bed text (every occurrence; ``{tmp}``
    is a temporary directory, ``{context}`` the bed's kubeconfig context). ``hosts``: the play's hosts, by task name
    for the tasks an example runs elsewhere (a play per run of consecutive tasks on the same hosts). ``check``: the
    module writes to the cluster, so its examples run under --check. ``fails_on``: task name -> the hosts where the
    example says it fails."""

    rewrites: dict[str, str] = field(default_factory=dict)
    hosts: str = "k8s_cluster"
    hosts_of: dict[str, str] = field(default_factory=dict)
    check: bool = False
    fails_on: dict[str, list[str]] = field(default_factory=dict)


def nvml_fixture_of(host: str) -> str:
    """A task's environment line with the NVML fixture of ``host`` (a Jinja expression): a delegated task's keywords
    are templated with the variables of the host the play runs on, not of the host it delegates to."""
    return '  environment: {GPUOPS_FAKE_NVML_FIXTURE: "{{ hostvars[%s].gpu_nvml_fixture }}"}\n' % host


KUBECONFIG = {"kubeconfig: ~/.kube/config": 'kubeconfig: "{{ gpuops_kubeconfig }}"'}
BED = {
    "gpu_audit_report": OnTheBed(
        rewrites={
            "  delegate_to: gpu-node-1\n": "  delegate_to: gpu-node-1\n" + nvml_fixture_of("'gpu-node-1'"),
            "gpu-node-1": "h100-0",
            "/var/lib/gpu-audit": "{tmp}/gpu-audit",
        },
        hosts_of={"Read each GPU host's facts for the audit": "gpu_hosts"},
    ),
    "gpu_canary_upgrade": OnTheBed(check=True),
    "gpu_cluster_info": OnTheBed(
        rewrites={
            **KUBECONFIG,
            "context: prod": "context: {context}",
            "gpuops.io/pool=canary": "gpuops.io/pool=h100",
            "nvidia-gpu-operator": NS,
        }
    ),
    "gpu_host_facts": OnTheBed(rewrites={"host_root: /host": 'host_root: "{{ gpu_host_root }}"'}, hosts="gpu_hosts"),
    "gpu_operator": OnTheBed(
        rewrites={
            "chart_repo_url: https://helm.ngc.nvidia.com/nvidia": 'chart_repo_url: "{{ gpuops_chart_repo_url }}"',
            "chart_ref: oci://registry.example.com/charts/gpu-operator": (
                'chart_ref: gpu-operator\n    chart_repo_url: "{{ gpuops_chart_repo_url }}"'
            ),
        },
        check=True,
        fails_on={
            "A new install in GPUCluster mode (GPUs through DRA; hosts with drivers of R580 or later)": ["localhost"]
        },
    ),
    "gpu_preflight_info": OnTheBed(),
    "gpu_smoke_test": OnTheBed(rewrites={**KUBECONFIG, "namespace: gpuops-smoke": "namespace: default"}, check=True),
    "gpu_triage_info": OnTheBed(rewrites={"gpu-h100-3": "h100-0", "nvidia-gpu-operator": NS}),
    "gpu_validate_report": OnTheBed(
        rewrites={
            "/srv/gpu-reports": "{tmp}/gpu-reports",
            '  delegate_to: "{{ item }}"\n': '  delegate_to: "{{ item }}"\n' + nvml_fixture_of("item"),
        }
    ),
    "nvidia_gpu_facts": OnTheBed(
        rewrites={"host_root: /host": 'host_root: "{{ gpu_host_root }}"'},
        hosts="gpu_hosts:gpu_less",
        fails_on={"Fail when the node has no usable GPU": ["cpu-0"]},
    ),
}
EXTRA_GROUPS = {
    "gpu_canary": {"hosts": {"h100-0": {}}},
    "gpu_less": {
        "hosts": {
            "cpu-0": {
                "ansible_connection": "local",
                "ansible_python_interpreter": sys.executable,
                "k8s_node_name": "cpu-0",
                "gpu_host_root": str(ROOT / "tests" / "sim" / "hosts" / "ubuntu2204-kubeadm-containerd"),
                "gpu_nvml_fixture": str(PROFILES / "driver-not-loaded.yml"),
            }
        }
    },
}
SITE_VALUES = {"dcgmExporter": {"enabled": True}}  # files/gpu-operator-site.yml of the gpu_operator examples
PENDING_POD = {
    "metadata": {"name": "train-7f9c", "namespace": "ml"},
    "spec": {"containers": [{"name": "train", "image": "pytorch", "resources": {"limits": {"nvidia.com/gpu": "9"}}}]},
}


def examples_of(module: str) -> str:
    """The module's EXAMPLES string, read without importing the module."""
    tree = ast.parse((ROOT / "plugins" / "modules" / f"{module}.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "EXAMPLES" for t in node.targets):
            return node.value.value
    raise AssertionError(f"{module} has no EXAMPLES")


def bed_tasks(module: str, tmp: Path, context: str) -> list[dict]:
    text = examples_of(module)
    for example, bed in BED[module].rewrites.items():
        text = text.replace(example, bed.replace("{tmp}", str(tmp)).replace("{context}", context))
    return yaml.safe_load(text)


def plays(module: str, tmp: Path, context: str, out: Path) -> list[dict]:
    """The module's examples as plays: consecutive tasks on the same hosts form a play, which ends by saving each
    task's registered result (a register is added where the example has none) by task name."""
    on = BED[module]
    result = []
    for i, task in enumerate(bed_tasks(module, tmp, context)):
        hosts = on.hosts_of.get(task["name"], on.hosts)
        if any(key.startswith(ACTION) for key in task) and "register" not in task:
            task["register"] = f"example_{i}"
        if task["name"] in on.fails_on:
            task["ignore_errors"] = True
        if not result or result[-1]["hosts"] != hosts:
            result.append({"name": f"{module} examples", "hosts": hosts, "gather_facts": False, "tasks": []})
        result[-1]["tasks"].append(task)
    for n, play in enumerate(result):
        play["environment"] = {"GPUOPS_FAKE_NVML_FIXTURE": "{{ gpu_nvml_fixture | default('') }}"}
        registered = {t["name"]: "{{ %s | default(none) }}" % t["register"] for t in play["tasks"] if "register" in t}
        play["tasks"].append(
            {
                "name": "Save the registered results",
                "ansible.builtin.copy": {
                    "content": "{{ registered | to_json }}",
                    "dest": f"{out}/{module}.{n}.{{{{ inventory_hostname }}}}.json",
                    "mode": "0600",
                },
                "vars": {"registered": registered},
                "check_mode": False,
            }
        )
    return result


@dataclass
class Run:
    output: str  # both runs' console output
    results: dict  # module -> host -> task name -> registered result
    tmp: Path
    before: dict  # cluster_state() before the runs
    after: dict  # and after
    writes: list  # audit events: the least-privilege identity's writes during the runs


def run_playbook(tmp: Path, name: str, plays_: list, env: dict, check: bool) -> str:
    path = tmp / f"{name}.yml"
    path.write_text(yaml.safe_dump(plays_, sort_keys=False, width=1000))
    argv = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(tmp / "inventory.yml"), str(path)]
    proc = subprocess.run(
        [*argv, "--check"] if check else argv,
        cwd=tmp,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    return output


def settled(op) -> bool:
    """The fresh install is done with the nodes: the operator healthy, NVIDIA's upgrade controller has labelled every
    GPU node whose driver the operator runs with its upgrade state (once it sees the driver pod), and no MIG
    configuration is pending (the MIG manager applies the default on a MIG-capable node after the install)."""
    if not op.healthy():
        return False
    for name in op.gpu_nodes:
        labels = op.node(name).metadata.labels or {}
        if labels.get(L.DEPLOY + "driver") == "true" and L.UPGRADE_STATE not in labels:
            return False
        if labels.get("nvidia.com/mig.config.state") == "pending":
            return False
    return True


def cluster_state(op) -> dict:
    """The Helm release's revision and every node's labels, taints and cordon."""
    revision = json.loads(op.helm("status", "gpu-operator", "-n", NS, "-o", "json").stdout)["version"]
    nodes = {
        n.metadata.name: (n.metadata.labels, [t.to_dict() for t in n.spec.taints or []], n.spec.unschedulable)
        for n in op.core.list_node().items
    }
    return {"helm revision": revision, "nodes": nodes}


@pytest.fixture(scope="module")
def pending_pod(testbed):
    """Pod ml/train-7f9c, asking for more GPUs than any node has: Pending for good."""
    core = client.CoreV1Api(testbed.api_client())
    core.create_namespace({"metadata": {"name": "ml"}})
    try:
        core.create_namespaced_pod("ml", PENDING_POD)
        yield
    finally:
        core.delete_namespace("ml")


@pytest.fixture(scope="module")
def run(testbed, gpu_operator, pending_pod, tmp_path_factory) -> Run:
    subprocess.run(["make", "-s", "-C", str(NVML)], check=True)
    tmp = tmp_path_factory.mktemp("examples")
    (tmp / "files").mkdir()  # ansible-playbook runs in tmp: the examples' relative paths are found there
    (tmp / "files" / "gpu-operator-site.yml").write_text(yaml.safe_dump(SITE_VALUES))
    out = tmp / "results"
    out.mkdir()
    inventory = yaml.safe_load(testbed.cli("inventory").stdout)
    inventory["all"]["children"].update(EXTRA_GROUPS)
    (tmp / "inventory.yml").write_text(yaml.safe_dump(inventory))
    context = yaml.safe_load(Path(testbed.sa_kubeconfig).read_text())["current-context"]
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=str(ROOT / "build" / "collections"),
        ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_LOCALHOST_WARNING="0",
        K8S_AUTH_KUBECONFIG=testbed.sa_kubeconfig,
        KUBECONFIG="",
        LD_LIBRARY_PATH=str(ROOT / "build" / "nvml"),
    )
    # the operator's and the upgrade controller's own writes after the install are not the examples'
    wait_for(lambda: settled(gpu_operator), 180, what="the operator and the upgrade controller settled")
    before, mark = cluster_state(gpu_operator), testbed.audit_mark()
    output = ""
    for check in (True, False):
        playbook = [play for m in MODULES if BED[m].check is check for play in plays(m, tmp, context, out)]
        output += run_playbook(tmp, "check" if check else "run", playbook, env, check)
    results: dict = {}
    for path in sorted(out.glob("*.json")):
        module, _unused, host = path.stem.split(".", 2)
        results.setdefault(module, {}).setdefault(host, {}).update(json.loads(path.read_text()))
    return Run(output, results, tmp, before, cluster_state(gpu_operator), testbed.audit_writes(mark))


def test_every_module_has_its_examples_run_on_the_bed():
    assert sorted(BED) == MODULES
    for module in MODULES:
        tasks = yaml.safe_load(examples_of(module))
        assert isinstance(tasks, list) and tasks, module


def test_every_name_the_table_maps_occurs_in_the_examples():
    for module, on in BED.items():
        text = examples_of(module)
        names = {task["name"] for task in yaml.safe_load(text)}
        for example in on.rewrites:
            assert example in text, (module, example)
        for name in [*on.hosts_of, *on.fails_on]:
            assert name in names, (module, name)


def test_no_task_fails_but_those_the_examples_say_fail_and_nothing_prints_a_traceback(run):
    assert "Traceback" not in run.output
    expected = sum(len(hosts) for on in BED.values() for hosts in on.fails_on.values())
    assert run.output.count("...ignoring") == expected, run.output[-3000:]
    for module, on in BED.items():
        for name, hosts in on.fails_on.items():
            failed = sorted(h for h, tasks in run.results[module].items() if tasks.get(name, {}).get("failed"))
            assert failed == hosts, (module, name, failed)


def changed_nodes(before, after) -> dict:
    """Per node whose labels, taints or cordon differ: the labels that changed (old, new), its taints and cordon."""
    out = {}
    for name, (labels, taints, cordon) in after.items():
        was_labels, was_taints, was_cordon = before.get(name, ({}, [], None))
        if (labels, taints, cordon) != (was_labels, was_taints, was_cordon):
            keys = sorted(k for k in set(labels) | set(was_labels) if labels.get(k) != was_labels.get(k))
            out[name] = {"labels": {k: (was_labels.get(k), labels.get(k)) for k in keys}, "taints": taints}
            if cordon != was_cordon:
                out[name]["cordon"] = cordon
    return out


def test_the_examples_change_nothing_on_the_cluster(run):
    assert run.after["helm revision"] == run.before["helm revision"]
    assert changed_nodes(run.before["nodes"], run.after["nodes"]) == {}
    writes = [(w["verb"], w["objectRef"]["resource"], w["objectRef"].get("name")) for w in run.writes]
    assert {w[1] for w in writes} <= {"selfsubjectaccessreviews"}, writes


def test_gpu_operator_examples_plan_the_install_upgrade_and_removal_in_check_mode(run):
    r = run.results["gpu_operator"]["localhost"]
    install = r["Install or upgrade the GPU Operator from NVIDIA's repository"]
    assert install["changed"] and install["plan"]["to_version"] == "v26.7.0", install["plan"]
    assert "driver.version" in install["plan"]["values_changed"]
    plan = r["Plan only (check mode) and show the values diff"]
    assert plan["plan"]["action"] == "update" and plan["diff"][0]["before_header"].startswith("values"), plan["diff"]
    site = r["Values synthesised from host facts and inventory, user values on top"]
    assert "dcgmExporter.enabled" in site["plan"]["values_changed"]  # from files/gpu-operator-site.yml
    gpucluster = r["A new install in GPUCluster mode (GPUs through DRA; hosts with drivers of R580 or later)"]
    assert gpucluster["refused"] and "GPUCluster mode is for new installs only" in gpucluster["msg"]
    absent = r["Remove the release, keep the CRDs"]
    assert absent["changed"] and absent["plan"]["action"] == "uninstall" and absent["crds_removed"] == []


def test_gpu_canary_upgrade_examples_plan_the_canary_then_each_step_lists_its_changes(run, gpu_operator):
    r = run.results["gpu_canary_upgrade"]["localhost"]
    plan = r[
        "Plan the upgrade of inventory group gpu_canary's nodes (k8s_node_name; read-only, the gate names refusals)"
    ]
    assert plan["plan"]["gate"]["passed"] and plan["plan"]["waves"][0]["nodes"] == ["h100-0"]
    prepare = r[
        "Prepare - operands tolerate the canary taint, the driver upgrade policy is set, every GPU node is held"
    ]
    assert any("toleration gpuops.io/canary-upgrade" in c for c in prepare["changes"]), prepare["changes"]
    wave = r["Upgrade wave 0, the canary pool (taint, evict GPU pods, release, wait for upgrade-done)"]
    assert "node h100-0: add taint gpuops.io/canary-upgrade:NoSchedule" in wave["changes"]
    smoke = r["Prove the canary pool with a smoke pod per node"]
    assert [p["node"] for p in smoke["planned"]] == ["h100-0"] and smoke["nodes"] == {}
    assert r["Record the proof (passed=false aborts - the wave stays tainted and annotated, every other node held)"][
        "changes"
    ]
    status = r[
        "Where the upgrade stands (read-only, no target needed) - the record, each node, what is left, what to run"
    ]
    assert status["status"]["phase"] is None  # check mode recorded nothing
    rollback = r[
        "After an abort, roll back to the versions the record started from (no target needed), a line every 30 s"
    ]
    assert rollback["skipped"]  # no abort


def test_gpu_cluster_info_examples_return_every_gpu_node_a_pool_and_the_fleet_totals(run, gpu_operator):
    r = run.results["gpu_cluster_info"]["localhost"]
    full = r["Read the cluster's GPU view, every node in full"]
    assert {n: v["gpu"]["count"] for n, v in full["nodes"].items()} == {
        n: g.count for n, g in gpu_operator.gpu_nodes.items()
    }
    pool = r["Only the canary pool, operator in a custom namespace"]
    assert pool["totals"]["nodes"] == 2 and pool["totals"]["products"] == {"NVIDIA-H100-80GB-HBM3": 2}
    fleet = r["A thousand-node fleet - the default returns the totals and only the nodes with a problem"]
    assert fleet["totals"]["nodes"] == len(gpu_operator.gpu_nodes) and fleet["nodes"] == fleet["node_summary"] == {}


def test_gpu_host_facts_examples_set_gpu_host_from_the_root_they_are_given(run, gpu_operator):
    assert sorted(run.results["gpu_host_facts"]) == sorted(gpu_operator.gpu_nodes)
    for r in run.results["gpu_host_facts"].values():
        assert r["Gather GPU host facts"]["ansible_facts"]["gpu_host"]["host_root"] == "/"
        mounted = r["Gather from a container with the host mounted at /host"]["ansible_facts"]["gpu_host"]
        # the bed's host tree, loading the driver of the host's NVML profile (tests/sim/host_trees.py)
        assert "ubuntu2204-kubeadm-containerd" in mounted["host_root"] and mounted["nouveau"]["loaded"] is False


def test_gpu_preflight_info_examples_read_the_cluster_and_check_each_identitys_permissions(run):
    r = run.results["gpu_preflight_info"]["localhost"]
    preflight = r["Read the cluster facts for the baseline"]
    assert preflight["access"] == [{"checked": 2, "missing": [], "identity": "automation"}]
    assert {"h100-0", "h100-1", "t4-0", "cpu-0"} <= set(preflight["nodes"])
    installer = r["Check only what the chart-installing identity may do"]
    assert installer["access"] == [{"checked": 1, "missing": [], "identity": "installer"}]


def test_gpu_smoke_test_examples_plan_the_pods_they_name_in_check_mode(run, gpu_operator):
    r = run.results["gpu_smoke_test"]["localhost"]
    planned = {name: result["planned"] for name, result in r.items() if "planned" in result}
    assert all(result["nodes"] == {} for result in r.values() if "planned" in result)  # nothing ran
    one = planned["One GPU on every GPU node, CUDA vectoradd"]
    assert sorted(p["node"] for p in one) == sorted(gpu_operator.gpu_nodes)
    assert {(p["resources"]["nvidia.com/gpu"], "vectoradd" in p["image"]) for p in one} == {("1", True)}
    h100 = planned["All GPUs of 10 percent of the H100 pool, nvidia-smi, tainted nodes tolerated"]
    assert len(h100) == 1 and h100[0]["node"].startswith("h100-") and h100[0]["resources"] == {"nvidia.com/gpu": "8"}
    claims = planned["One GPU through DRA on every GPU node (GPU Operator in GPUCluster mode)"]
    assert {p["resources"]["gpu.nvidia.com"] for p in claims} == {"1"} and len(claims) == len(gpu_operator.gpu_nodes)
    busy = r["Every GPU of the busy H100 nodes, beside the workloads holding them"]
    assert busy["namespace_labelled"] and {p["resources"]["gpu.nvidia.com"] for p in busy["planned"]} == {"all"}
    assert {p["resources"].get("mig.nvidia.com") for p in planned["One 1g.10gb MIG device per node"]} == {"1"}


def test_gpu_triage_info_examples_explain_the_pending_pod_its_namespace_and_a_node(run):
    r = run.results["gpu_triage_info"]["localhost"]
    pod = r["Why is my GPU pod Pending?"]
    assert pod["target"] == {"kind": "pod", "namespace": "ml", "name": "train-7f9c"}
    assert pod["first_failing_layer"] == "scheduling" and pod["findings"][0]["pods"] == ["ml/train-7f9c"]
    namespace = r["Every Pending or failed GPU pod of a namespace"]
    assert [p["name"] for p in namespace["pods"]] == ["train-7f9c"] and namespace["findings"]
    routed = r["Who should act on each finding, with the driver routed to the on-call infrastructure team"]
    assert all(f["owner"] for f in routed["findings"]) and routed["findings"]
    node = r["One node's GPU stack"]
    assert node["target"]["name"] == "h100-0" and node["first_failing_layer"] is None


def test_gpu_validate_report_example_judges_every_gpu_node_and_writes_the_reports(run):
    validation = run.results["gpu_validate_report"]["localhost"]["Judge every GPU node and write the reports"]
    assert validation["summary"]["passed"] == 3 and validation["summary"]["failed"] == 0
    assert "3 passed, 0 failed" in "\n".join(validation["console"])
    for name in ("gpu-validate.json", "gpu-validate.md", "gpu-validate.html"):
        assert (run.tmp / "gpu-reports" / name).is_file(), name


def test_nvidia_gpu_facts_examples_set_nvidia_gpu_and_fail_only_on_the_host_without_a_usable_gpu(run, gpu_operator):
    for host, r in run.results["nvidia_gpu_facts"].items():
        facts = r["Gather GPU facts"]["ansible_facts"]["nvidia_gpu"]
        if host == "cpu-0":
            assert not facts["available"] and "driver_not_loaded" in r["Fail when the node has no usable GPU"]["msg"]
        else:
            assert facts["gpu_count"] == gpu_operator.gpu_nodes[host].count and facts["health"] == "ok"
            assert r["Gather GPU facts from a container with the host at /host and the operator-managed driver"][
                "ansible_facts"
            ]["nvidia_gpu"]["available"]


def test_gpu_audit_report_examples_write_the_reports_for_one_host_and_through_the_role_for_the_fleet(run):
    r = run.results["gpu_audit_report"]["localhost"]
    assert r["Read the NVML facts of h100-0"]["ansible_facts"]["nvidia_gpu"]["gpu_count"] == 8
    audit = r[
        "Write the audit reports for one cluster, with the changes since the last run's snapshot once there is one"
    ]
    assert audit["summary"]["statuses"]["ok"] == 1 and audit["changes"] is None  # the first run has no baseline
    for report_dir in ("gpu-audit", "gpuops-reports"):
        for ext in ("json", "md", "html"):
            assert (run.tmp / report_dir / f"gpu-audit.{ext}").is_file(), (report_dir, ext)
    fleet = json.loads((run.tmp / "gpuops-reports" / "gpu-audit.json").read_text())
    assert fleet["summary"]["statuses"]["ok"] == 3, fleet["summary"]
