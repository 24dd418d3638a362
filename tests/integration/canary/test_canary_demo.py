"""The "Try it on the demo cluster" section of docs/canary-upgrade.md as written, on a demo bed of its own (profile
demo: preinstalled drivers, so the ClusterPolicy has driver.enabled=false) set up as `make site` sets it up: the
driver upgrade is refused before any write, nothing is left, the chart upgrade is proven wave by wave with the driver
still preinstalled, and the rollback puts the ClusterPolicy back as it was. `make canary-demo` runs the same commands.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from canary_helpers import NS, REPO_ROOT, collection_root

from tests.integration.conftest import _from_state, run_cli

DOC = REPO_ROOT / "docs" / "canary-upgrade.md"
ANSIBLE_PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")


def demo_commands():
    """The ansible-playbook commands of the doc's demo block, in order."""
    text = DOC.read_text()
    section = text[text.index("## Try it on the demo cluster") :]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.startswith("ansible-playbook ")]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """A demo bed with playbooks/site.yml run on it, as `make site` does; its inventory and an environment whose
    collection root is this checkout."""
    work = tmp_path_factory.mktemp("canary-demo")
    state_dir = work / "bed"
    proc = run_cli("up", "--profile", "demo", "--state-dir", str(state_dir), timeout=900)
    if proc.returncode != 0:
        run_cli("down", "--state-dir", str(state_dir))
        pytest.fail(f"demo test bed did not come up: {proc.stderr.strip()[-2000:]}")
    try:
        collections = collection_root(work)
        inventory = work / "inventory.yml"
        inventory.write_text(run_cli("inventory", "--state-dir", str(state_dir)).stdout)
        env = dict(
            os.environ,
            ANSIBLE_COLLECTIONS_PATH=str(collections),
            ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
            ANSIBLE_NOCOLOR="1",
            ANSIBLE_HOME=str(work / "ansible-home"),
            HELM_CACHE_HOME=str(work / "helm-cache"),
            HELM_CONFIG_HOME=str(work / "helm-config"),
            HELM_DATA_HOME=str(work / "helm-data"),
        )
        for name in ("K8S_AUTH_KUBECONFIG", "KUBECONFIG"):
            env.pop(name, None)
        nvml = REPO_ROOT / "build" / "nvml" / "libnvidia-ml.so.1"
        site = ["-i", str(inventory), "playbooks/site.yml", "-e", f"gpu_nvml_library={nvml}"]
        rc, out = playbook(site + ["-e", f"gpuops_report_dir={work / 'reports'}"], env)
        assert rc == 0, out[-3000:]
        yield _from_state(state_dir, owned=True), inventory, env
    finally:
        run_cli("down", "--state-dir", str(state_dir))


def playbook(args, env):
    """ansible-playbook ``args`` from the repository root, as the doc's commands run; ``(rc, output)``."""
    proc = subprocess.run(
        [ANSIBLE_PLAYBOOK, *args], cwd=REPO_ROOT, capture_output=True, text=True, env=env, timeout=900, check=False
    )
    return proc.returncode, proc.stdout + proc.stderr


def run(command, inventory, env):
    """One command of the doc, on this bed's inventory."""
    return playbook(shlex.split(command.replace("build/inventory.yml", str(inventory)))[1:], env)


def test_make_canary_demo_runs_the_commands_of_the_doc():
    makefile = (REPO_ROOT / "Makefile").read_text()
    recipe = makefile[makefile.index("\ncanary-demo: site") :].split("\n\n", 1)[0]
    commands = demo_commands()
    assert len(commands) == 5
    assert [c for c in commands if c in recipe] == commands


def test_the_demo_refuses_the_driver_upgrade_then_upgrades_the_chart_and_rolls_it_back(demo):
    bed, inventory, env = demo
    from kubernetes import client

    api = bed.api_client()
    custom, core = client.CustomObjectsApi(api), client.CoreV1Api(api)

    def cluster_policy():
        return custom.get_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", "cluster-policy")

    before = cluster_policy()["spec"]
    assert before["driver"]["enabled"] is False  # the demo's drivers are preinstalled
    refuse, status, upgrade, status_after, rollback = demo_commands()

    # 1. the expected failure: refused before any write, per pool, with the fix
    mark = bed.audit_mark()
    rc, out = run(refuse, inventory, env)
    assert rc != 0
    assert (
        "the driver change to 610.57.04 is refused before any write: the GPU Operator does not manage the driver of "
        "pool h100 (h100-0, h100-1, h100-2, h100-3): ClusterPolicy cluster-policy has driver.enabled=false (drivers "
        "preinstalled on the hosts). Upgrade the host driver with your own tooling, or switch the pool to "
        "operator-managed drivers (set driver.enabled=true in the chart values), or exclude its nodes"
    ) in out, out[-3000:]
    assert "pool a100 (a100-0, a100-1)" in out
    # the baseline's permission questions are the only requests that write (SelfSubjectAccessReviews persist nothing)
    assert {w["objectRef"]["resource"] for w in bed.audit_writes(mark)} <= {"selfsubjectaccessreviews"}

    # 2. nothing recorded, nothing left
    rc, out = run(status, inventory, env)
    assert rc == 0 and "No canary upgrade is recorded in ConfigMap gpu-operator/gpuops-canary-upgrade." in out
    assert "Nothing of a canary upgrade is left on the cluster." in out

    # 3. the recovery: the chart upgrade, canary first, each wave proven by its operand versions
    rc, out = run(upgrade, inventory, env)
    assert rc == 0, out[-4000:]
    assert "(item=canary: 2 of 2 nodes done, 0 in progress, 0 not started, 0 failed" in out
    policy = cluster_policy()
    assert policy["spec"]["driver"]["enabled"] is False  # still preinstalled: the chart upgrade kept it off
    assert policy["metadata"]["labels"]["helm.sh/chart"] == "gpu-operator-v26.7.1"
    plugins = core.list_namespaced_pod(NS, label_selector="app=nvidia-device-plugin-daemonset").items
    assert len(plugins) == 6 and {p.spec.containers[0].image.rsplit(":", 1)[1] for p in plugins} == {"v0.20.1"}
    rc, out = run(status_after, inventory, env)
    assert rc == 0 and "phase done" in out and "Nothing of a canary upgrade is left on the cluster." in out

    # 4. back to where the demo started
    rc, out = run(rollback, inventory, env)
    assert rc == 0, out[-4000:]
    policy = cluster_policy()
    assert policy["metadata"]["labels"]["helm.sh/chart"] == "gpu-operator-v26.7.0"
    assert policy["spec"] == before
