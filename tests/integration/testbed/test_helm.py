"""helm v4 and helm v3 install charts from the loopback chart repository."""

import subprocess
import urllib.request

import pytest
import yaml


def _index(testbed):
    with urllib.request.urlopen(f"{testbed.chart_repo_url}/index.yaml", timeout=10) as r:
        return yaml.safe_load(r.read())


def _helm(binary, tmp_path, *args, check=True):
    env = {
        "HELM_CACHE_HOME": str(tmp_path / "cache"),
        "HELM_CONFIG_HOME": str(tmp_path / "config"),
        "HELM_DATA_HOME": str(tmp_path / "data"),
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
    }
    proc = subprocess.run([binary, *args], capture_output=True, text=True, env=env, timeout=180, check=False)
    if check:
        assert proc.returncode == 0, f"{binary} {' '.join(args)}: {proc.stdout}\n{proc.stderr}"
    return proc


def test_repo_serves_index(testbed):
    index = _index(testbed)
    assert "gpuops-testbed-hello" in index["entries"]


@pytest.mark.parametrize("which", ["helm", "helm3"])
def test_helm_install_from_repo(testbed, tmp_path, which):
    binary = getattr(testbed, which)
    rel = f"hello-{which}"
    ns = f"helm-{which}"
    out = _helm(binary, tmp_path, "version")
    assert ("v4." if which == "helm" else "v3.") in out.stdout
    _helm(binary, tmp_path, "repo", "add", "gpuops", testbed.chart_repo_url)
    _helm(binary, tmp_path, "repo", "update")
    _helm(
        binary,
        tmp_path,
        "install",
        rel,
        "gpuops/gpuops-testbed-hello",
        "--namespace",
        ns,
        "--create-namespace",
        "--kubeconfig",
        testbed.kubeconfig,
        "--wait",
        "--timeout",
        "120s",
    )
    st = _helm(binary, tmp_path, "status", rel, "--namespace", ns, "--kubeconfig", testbed.kubeconfig)
    assert "deployed" in st.stdout
    _helm(binary, tmp_path, "uninstall", rel, "--namespace", ns, "--kubeconfig", testbed.kubeconfig, "--wait")


@pytest.mark.parametrize("which", ["helm", "helm3"])
def test_stand_in_gpu_operator_chart_renders(testbed, tmp_path, which):
    entries = _index(testbed)["entries"].get("gpu-operator")
    if not entries:
        pytest.skip("stand-in gpu-operator chart not in the repository yet (tests/sim/chart)")
    binary = getattr(testbed, which)
    for e in entries:
        _helm(
            binary,
            tmp_path,
            "template",
            "gpu-operator",
            "gpu-operator",
            "--repo",
            testbed.chart_repo_url,
            "--version",
            e["version"],
            "--namespace",
            "gpu-operator",
            "--kubeconfig",
            testbed.kubeconfig,
        )
