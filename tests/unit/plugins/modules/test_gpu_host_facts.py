"""gpu_host_facts module contract: only ansible_facts.gpu_host, the same facts in check mode, the facts that
``collect`` reads from the host tree, and clean failures for an unknown option, a wrong type or a host_root that
is missing, a file or not a root file system."""

from __future__ import annotations

from pathlib import Path

import module_harness as harness
import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.facts import collect
from ansible_collections.gpuops.gpu_operator.plugins.modules import gpu_host_facts

HOSTS = Path(__file__).resolve().parents[3] / "sim" / "hosts"
TREES = sorted(p.name for p in HOSTS.iterdir() if p.is_dir())
ROOT = str(HOSTS / "ubuntu2404-operator-driver-root")


def run(monkeypatch, args, check=False):
    return harness.run_module(gpu_host_facts, monkeypatch, args, check=check)


def result_keys(out):
    return set(out) - {"_kind", "_no_log"}


def test_returns_only_ansible_facts_gpu_host(monkeypatch):
    out = run(monkeypatch, {"host_root": ROOT})
    assert out["_kind"] == "exit"
    assert result_keys(out) == {"ansible_facts"}
    assert set(out["ansible_facts"]) == {"gpu_host"}


def test_check_mode_returns_the_same_facts(monkeypatch):
    normal = run(monkeypatch, {"host_root": ROOT})
    checked = run(monkeypatch, {"host_root": ROOT}, check=True)
    assert checked["_kind"] == "exit"
    assert checked["ansible_facts"] == normal["ansible_facts"]


@pytest.mark.parametrize("tree", TREES)
def test_facts_are_what_collect_reads_from_the_tree(monkeypatch, tree):
    root = str(HOSTS / tree)
    out = run(monkeypatch, {"host_root": root}, check=True)
    assert out["ansible_facts"]["gpu_host"] == collect(root)
    assert out["ansible_facts"]["gpu_host"]["host_root"] == root


def test_an_unknown_option_fails_naming_it(monkeypatch):
    out = run(monkeypatch, {"host_root": ROOT, "hostroot": "/host"})
    assert out["_kind"] == "fail" and "ansible_facts" not in out
    assert "Unsupported parameters" in out["msg"] and "hostroot" in out["msg"]


def test_a_wrong_type_fails_naming_the_option(monkeypatch):
    out = run(monkeypatch, {"host_root": ["/", "/host"]})
    assert out["_kind"] == "fail" and "ansible_facts" not in out
    assert out["msg"].startswith("host_root ") and "is not a directory" in out["msg"]


def test_a_directory_that_is_not_a_root_file_system_fails(monkeypatch, tmp_path):
    out = run(monkeypatch, {"host_root": str(tmp_path)})
    assert out["_kind"] == "fail" and "ansible_facts" not in out
    assert out["msg"].startswith("host_root %s does not look like a root file system" % tmp_path)


def test_a_missing_host_root_fails_naming_it_and_the_fix(monkeypatch, tmp_path):
    out = run(monkeypatch, {"host_root": str(tmp_path / "hots")})
    assert out["_kind"] == "fail" and "ansible_facts" not in out
    assert out["msg"] == (
        "host_root %s is not a directory: it does not exist; set host_root to where the host's / is mounted "
        "(/ on the host itself, for example /host in a container)" % (tmp_path / "hots")
    )


def test_a_file_as_host_root_fails(monkeypatch, tmp_path):
    (tmp_path / "host").write_text("")
    out = run(monkeypatch, {"host_root": str(tmp_path / "host")})
    assert out["_kind"] == "fail"
    assert out["msg"].startswith("host_root %s is not a directory: it is a file" % (tmp_path / "host"))
