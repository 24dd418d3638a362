"""playbooks/site.yml end to end, as `make site` runs it (through the collection's console callback): on the
`demo-faults` profile (the demo cluster with one broken node per layer) every healthy node passes and each broken one
is named with its layer, in the printed summary (plain lines with its evidence and a command to run, even with
ANSIBLE_DISPLAY_OK_HOSTS=false) and in the reports, and the play fails - with no retry messages and no result dump;
node triage and the audit judge every node as the validation did (one layer and code each);
a second run over the same fleet changes nothing; once the faults are healed a re-run passes every node and its whole
console fits 60 lines. Last, site.yml and upgrade.yml run as the execution environment runs them: from the collection
installed from its own built tarball (no checkout on the collections path, not run from the checkout), with helm and
helm3 only where the image puts them (meta/ee-helm.sh builds them at the test bed's versions).

The module starts its own test bed (the session bed is the `ci` profile) and stops it afterwards.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from tests.integration.conftest import profile_bed
from tests.integration.workflows import Workflows
from tests.sim.testbed import BIN_DIR

ROOT = Path(__file__).resolve().parents[3]
FAULTY = {"h100-noplugin-0": "device-plugin", "h100-xid-0": "gpu-health", "a100-noruntime-0": "toolkit"}
HEALTHY = ("h100-0", "h100-1", "a100-0")


@pytest.fixture(scope="module")
def site_bed(tmp_path_factory):
    with profile_bed(tmp_path_factory.mktemp("site-bed"), "demo-faults") as (bed, inventory):
        yield bed, inventory, tmp_path_factory.mktemp("site-reports")


def run_site(inventory: Path, report_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            *args,
            "-i",
            str(inventory),
            str(ROOT / "playbooks" / "site.yml"),
            "-e",
            f"gpu_nvml_library={ROOT / 'build' / 'nvml' / 'libnvidia-ml.so.1'}",
            "-e",
            f"gpuops_report_dir={report_dir}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        env=dict(os.environ, ANSIBLE_STDOUT_CALLBACK="gpuops.gpu_operator.console", ANSIBLE_NOCOLOR="true", **env),
    )


def operator_log_tail(bed, lines: int = 40) -> str:
    """The last lines of the simulated operator's log on this bed: the evidence when no node got its labels."""
    log = Path(bed.state_dir) / "logs" / "gpu-operator-sim.log"
    text = log.read_text(errors="replace") if log.is_file() else f"(no log at {log})"
    return "\n--- gpu-operator-sim.log ---\n" + "\n".join(text.splitlines()[-lines:])


def verdicts(report_dir: Path) -> dict:
    document = json.loads((report_dir / "gpu-validate.json").read_text())
    assert document["kind"] == "gpuops.gpu_operator/validation-report"
    assert document["schema_version"].split(".")[0] == "1", document["schema_version"]  # minor versions only add
    return {row["node"]: row for row in document["report"]["rows"]}


def recap(out: str, host: str = "localhost") -> str:
    return [line for line in out.splitlines() if line.startswith(host + " ")][-1]


def changed_tasks(out: str) -> list[str]:
    """The header of every task that reported a change."""
    found, task = [], None
    for line in out.splitlines():
        if line.startswith("TASK ["):
            task = line.rstrip(" *")
        elif line.startswith("changed:") and task not in found:
            found.append(task)
    return found


def summary_block(out: str, node: str) -> list[str]:
    """The summary's lines about one failing node: its FAIL line and the indented lines after it."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("FAIL %s " % node))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("  ")), len(lines))
    return lines[start:end]


def test_site_names_each_broken_node_with_its_layer_and_passes_the_rest(site_bed):
    bed, inventory, report_dir = site_bed
    proc = run_site(inventory, report_dir, ANSIBLE_DISPLAY_OK_HOSTS="false")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert "3 passed, 3 failed" in out, out[-3000:] + operator_log_tail(bed)
    rows = verdicts(report_dir)
    for node, layer in FAULTY.items():
        assert rows[node]["verdict"] == "fail" and rows[node]["failing_layer"] == layer, rows[node]
        assert f"{node} at layer {layer}" in out
    for node in HEALTHY:
        assert rows[node]["verdict"] == "pass", rows[node]
    for name in ("baseline.json", "baseline.md", "gpu-validate.md", "gpu-validate.html"):
        assert (report_dir / name).is_file(), name
    # the console: plain lines, a progress line only when the wait's news change, no retry messages, no result
    # dump, one summary
    assert "FAILED - RETRYING" not in out and "Unknown error" not in out, out[-3000:]
    assert max(len(line) for line in out.splitlines()) < 2000
    dumps = [line for line in proc.stdout.splitlines() if line.lstrip().startswith(('"', "{")) or "=> {" in line]
    assert not dumps, dumps
    assert out.count("GPU validation: 3 passed, 3 failed of 6 GPU nodes") == 1
    assert "5/6 GPU nodes ready; waiting for a100-noruntime-0: device-plugin ContainerCreating" in out
    # the toolkit's node cannot create its operands' sandboxes: the wait stops there, long before its 120 s
    assert "not waiting longer: 1 node(s) stuck" in out and "not waiting longer after 120 s" not in out
    waits = [line.split(" s: ", 1)[1] for line in out.splitlines() if re.match(r"^\d+ s: ", line)]
    assert all(a != b for a, b in zip(waits, waits[1:])), waits
    for node, layer in FAULTY.items():
        block = summary_block(out, node)
        assert block[0].startswith("FAIL %s (pool " % node) and (" at %s: " % layer) in block[0], block
        run = [line for line in block if line.startswith("  run: ")]
        assert len(run) == 1, block
        assert run[0].startswith(("  run: kubectl -n gpu-operator ", "  run: kubectl describe node ")), block
    assert "  run: kubectl -n gpu-operator logs nvidia-container-toolkit-daemonset-" in out
    assert "  run: kubectl describe node h100-xid-0" in out
    # each baseline finding once: the containerd warning about every node is one line, not one per host
    assert out.count("runtime.version") == 1 and "runtime.version on all 6 GPU hosts" in out
    assert "reports: %s" % (report_dir / "baseline.json") in out


def test_node_triage_and_the_audit_judge_each_node_as_the_site_validation_did(site_bed, tmp_path):
    # one judgement of a node: on every node of demo-faults, the first failing layer and code of site.yml's
    # validation report, of gpu_triage_info (node mode, given the host's NVML facts) and of the audit agree
    bed, _inventory, report_dir = site_bed
    expected = dict.fromkeys(HEALTHY, (None, None)) | {
        "h100-noplugin-0": ("device-plugin", "DevicePluginNotAdvertising"),
        "h100-xid-0": ("gpu-health", "UnhealthyGPUs"),
        "a100-noruntime-0": ("toolkit", "RuntimeNotConfigured"),
    }
    Workflows(bed, tmp_path).assert_judged_alike(verdicts(report_dir), expected)


def test_a_second_run_over_the_same_fleet_changes_nothing(site_bed):
    bed, inventory, report_dir = site_bed
    before = {p.name: p.read_bytes() for p in report_dir.iterdir()}
    mark = bed.audit_mark()
    proc = run_site(inventory, report_dir)
    out = proc.stdout + proc.stderr
    assert "3 passed, 3 failed" in out, out[-3000:]
    assert {p.name: p.read_bytes() for p in report_dir.iterdir()} == before
    assert "changed=0" in recap(out), changed_tasks(out)
    # and it sends no write: only the validation's smoke pods (made and deleted by design) and access reviews
    writes = bed.audit_writes(mark, user=bed.sa_username)
    assert [
        (w["verb"], w["objectRef"]["resource"], w["objectRef"].get("name"))
        for w in writes
        if w["objectRef"]["resource"] not in ("pods", "selfsubjectaccessreviews")
    ] == []


def test_check_mode_after_a_run_reports_no_change_and_writes_nothing(site_bed):
    bed, inventory, report_dir = site_bed
    before = {p.name: p.read_bytes() for p in report_dir.iterdir()}
    mark = bed.audit_mark()
    proc = run_site(inventory, report_dir, "--check")
    out = proc.stdout + proc.stderr
    # the validation verdict does not claim a change (its smoke verdicts are predicted from the last report); the
    # baseline report may, when the cluster it reads moved since the last run (a real run would rewrite it too)
    assert [t for t in changed_tasks(out) if "gpu_baseline" not in t] == [], recap(out)
    assert {p.name: p.read_bytes() for p in report_dir.iterdir()} == before
    writes = bed.audit_writes(mark, user=bed.sa_username)
    assert [w for w in writes if w["objectRef"]["resource"] != "selfsubjectaccessreviews"] == []


def gpu_allocatable(bed, nodes) -> dict:
    core = client.CoreV1Api(bed.api_client())
    return {n: core.read_node(n).status.allocatable.get("nvidia.com/gpu") for n in nodes}


def test_site_passes_every_node_once_the_faults_are_healed(site_bed):
    bed, inventory, report_dir = site_bed
    core = client.CoreV1Api(bed.api_client())
    for node in FAULTY:
        core.patch_node(node, {"metadata": {"annotations": {"sim.gpuops.io/fault": None}}})
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if all(v == "8" for v in gpu_allocatable(bed, FAULTY).values()):
            break
        time.sleep(2)
    proc = run_site(inventory, report_dir)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:] + operator_log_tail(bed)
    assert "6 passed, 0 failed" in out
    assert len(proc.stdout.splitlines()) <= 60, proc.stdout
    assert {row["verdict"] for row in verdicts(report_dir).values()} == {"pass"}


@pytest.fixture(scope="module")
def ee_layout(tmp_path_factory):
    """The collection as the execution environment holds it: its tarball (`ansible-galaxy collection build`, what
    `make build` runs) installed into a scratch collections path beside kubernetes.core, and a PATH of the image's
    tools - helm (v4) and helm3 in a bin directory of their own, then Python's and the system's."""
    root = tmp_path_factory.mktemp("ee")
    galaxy = str(Path(sys.executable).parent / "ansible-galaxy")
    # only the scratch path: a collection found on another configured path counts as installed already
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(root / "collections"))
    build = [galaxy, "collection", "build", "--force", "--output-path", str(root), str(ROOT)]
    subprocess.run(build, check=True, capture_output=True, timeout=300, env=env)
    (tarball,) = root.glob("gpuops-gpu_operator-*.tar.gz")
    install = [galaxy, "collection", "install", "--offline", "--no-deps", "-p", str(root / "collections"), str(tarball)]
    subprocess.run(install, check=True, capture_output=True, timeout=300, env=env)
    k8s_core = Path(client.__file__).parents[2] / "ansible_collections" / "kubernetes" / "core"
    (root / "collections" / "ansible_collections" / "kubernetes").mkdir(parents=True)
    (root / "collections" / "ansible_collections" / "kubernetes" / "core").symlink_to(k8s_core)
    image_bin = root / "usr-local-bin"  # /usr/local/bin of the image
    image_bin.mkdir()
    for name in ("helm", "helm3"):
        (image_bin / name).symlink_to((BIN_DIR / name).resolve())
    path = os.pathsep.join([str(image_bin), str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    assert shutil.which("helm", path=path.split(os.pathsep, 1)[1]) is None  # the only helm is the image's
    return root, path


def run_in_ee(layout, inventory: Path, playbook: str, *extra: str) -> subprocess.CompletedProcess:
    root, path = layout
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(
        PATH=path,
        ANSIBLE_COLLECTIONS_PATH=str(root / "collections"),
        ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
        ANSIBLE_STDOUT_CALLBACK="gpuops.gpu_operator.console",  # the image's ENV
        ANSIBLE_NOCOLOR="true",
    )
    cmd = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), playbook, *extra]
    return subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=900, check=False)


def test_site_and_upgrade_run_from_the_execution_environments_collection_with_its_helm(site_bed, ee_layout):
    bed, inventory, _reports = site_bed
    installed = ee_layout[0] / "collections" / "ansible_collections" / "gpuops" / "gpu_operator"
    assert not installed.is_symlink() and (installed / "MANIFEST.json").is_file()
    assert not (installed / "tests").exists() and not (installed / "docs" / "simulated-operator.md").exists()
    report_dir = ee_layout[0] / "reports"
    nvml = "gpu_nvml_library=%s" % (ROOT / "build" / "nvml" / "libnvidia-ml.so.1")
    reports = f"gpuops_report_dir={report_dir}"
    site = run_in_ee(ee_layout, inventory, "gpuops.gpu_operator.site", "-e", nvml, "-e", reports)
    out = site.stdout + site.stderr
    assert "helm was not found" not in out and "of 6 GPU nodes" in out, out[-3000:] + operator_log_tail(bed)
    rows = verdicts(report_dir)
    # after the healing spec above every node passes (run alone, the bed's three faults fail as they should)
    healed = all(v == "8" for v in gpu_allocatable(bed, FAULTY).values())
    assert (site.returncode == 0) == healed, out[-3000:]
    assert {node for node, row in rows.items() if row["verdict"] == "pass"} >= set(HEALTHY), rows
    status = run_in_ee(ee_layout, inventory, "gpuops.gpu_operator.upgrade", "-e", "gpu_canary_upgrade_action=status")
    assert status.returncode == 0, (status.stdout + status.stderr)[-3000:]
    assert "TASK [gpuops.gpu_operator.gpu_canary_upgrade : status |" in status.stdout, status.stdout[-3000:]
    helm3 = [str(ee_layout[0] / "usr-local-bin" / "helm3"), "list", "-A", "-o", "yaml", "--kubeconfig", bed.kubeconfig]
    releases = yaml.safe_load(subprocess.run(helm3, capture_output=True, text=True, timeout=120, check=True).stdout)
    # the image's helm3 reads the release its helm (v4) installed
    assert [(r["namespace"], r["chart"].startswith("gpu-operator-")) for r in releases] == [("gpu-operator", True)]
