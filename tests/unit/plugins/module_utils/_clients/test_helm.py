"""Specification of module_utils/_clients/helm/: the helm CLI funnel, v3 and v4, with a recording module stub."""

from __future__ import annotations

import io
import json
import os
import tarfile

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.helm import (
    REPO_ALIAS,
    ChartRef,
    Helm,
    HelmError,
    ReleaseSpec,
    parse_version,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.helm.chart import dependency_enabled


class FakeModule:
    """Answers run_command from (predicate, (rc, out, err)) rules; records every call."""

    def __init__(self, version="v4.0.1", rules=()):
        self.calls = []
        self.rules = list(rules)
        self.version = version

    def get_bin_path(self, name):
        return "/usr/bin/" + name

    def run_command(self, cmd, data=None, environ_update=None, check_rc=False):
        self.calls.append({"cmd": cmd, "data": data, "env": dict(environ_update or {})})
        if cmd[1] == "version":
            return 0, self.version, ""
        for pred, answer in self.rules:
            if pred(cmd):
                return answer
        return 0, "", ""

    def cmds(self, sub):
        return [c["cmd"] for c in self.calls if c["cmd"][1] == sub]


def helm(module, **kwargs):
    kwargs.setdefault("kubeconfig", "/kc")
    h = Helm(module, **kwargs)
    return h


REPO = ChartRef("gpu-operator", "https://charts.example/nvidia/")


def test_versions_3_and_4_are_supported_and_others_refused():
    assert parse_version("v3.19.2+g8766e71") == (3, 19, 2)
    assert helm(FakeModule("v3.19.2")).major == 3
    assert helm(FakeModule("v4.0.1")).major == 4
    with pytest.raises(HelmError, match="supports helm v3 and v4"):
        helm(FakeModule("v2.17.0")).version()


def test_a_missing_helm_binary_names_the_option(tmp_path):
    with pytest.raises(HelmError, match="helm_binary"):
        Helm(FakeModule(), binary=str(tmp_path / "nope"))


def test_chart_reference_kinds(tmp_path):
    assert REPO.kind == "repo" and REPO.repo_url == "https://charts.example/nvidia"
    assert ChartRef("oci://nvcr.io/nvidia/gpu-operator").registry_host == "nvcr.io"
    (tmp_path / "chart").mkdir()
    assert ChartRef(str(tmp_path / "chart")).kind == "local"
    with pytest.raises(ValueError, match="chart_repo_url"):
        ChartRef("nvidia/gpu-operator")
    with pytest.raises(ValueError, match="bare chart name"):
        ChartRef("oci://x/y", "https://charts.example")


def test_a_repository_chart_uses_a_private_repo_config_and_its_alias():
    m = FakeModule()
    h = helm(m)
    h.show_chart(REPO, "v26.3.3")
    add, show = m.cmds("repo")[0], m.cmds("show")[0]
    assert add[:5] == ["/usr/bin/helm", "repo", "add", REPO_ALIAS, "https://charts.example/nvidia"]
    assert show[2:6] == ["chart", REPO_ALIAS + "/gpu-operator", "--version", "v26.3.3"]
    env = m.calls[-1]["env"]
    assert env["HELM_REPOSITORY_CONFIG"].startswith(h.tmpdir) and env["LC_ALL"] == "C"
    h.show_values(REPO, "v26.3.3")
    assert len(m.cmds("repo")) == 1  # registered once per run
    h.close()
    assert not os.path.exists(h.tmpdir)


def test_repository_credentials_go_to_stdin_never_to_the_command_line():
    m = FakeModule()
    h = helm(m, username="robot", password="s3cret")
    h.show_chart(REPO)
    add = [c for c in m.calls if c["cmd"][1] == "repo"][0]
    assert "--password-stdin" in add["cmd"] and add["data"] == "s3cret"
    assert all("s3cret" not in " ".join(c["cmd"]) for c in m.calls)


def test_registry_login_for_oci_uses_stdin_and_a_private_registry_config():
    m = FakeModule()
    h = helm(m, username="robot", password="s3cret")
    h.show_chart(ChartRef("oci://nvcr.io/nvidia/gpu-operator"), "v26.7.0")
    login = [c for c in m.calls if c["cmd"][1] == "registry"][0]
    assert login["cmd"][2:4] == ["login", "nvcr.io"] and login["data"] == "s3cret"
    assert login["env"]["HELM_REGISTRY_CONFIG"].startswith(h.tmpdir)
    assert all("s3cret" not in " ".join(c["cmd"]) for c in m.calls)


def test_an_unreachable_repository_is_named_in_the_error():
    m = FakeModule(rules=[(lambda c: c[1] == "repo", (1, "", "Error: looks like ... connection refused"))])
    with pytest.raises(
        HelmError, match="chart repository https://charts.example/nvidia is unreachable.*chart_repo_url"
    ):
        helm(m).show_chart(REPO, "v26.3.3")


def test_an_unknown_chart_version_is_named_in_the_error():
    err = 'Error: chart "gpu-operator" matching v9.9.9 not found in gpuops-chart-repo index'
    m = FakeModule(rules=[(lambda c: c[1] == "show", (1, "", err))])
    with pytest.raises(HelmError, match="chart version v9.9.9 of chart gpu-operator from repository .* was not found"):
        helm(m).show_chart(REPO, "v9.9.9")


def test_a_missing_release_is_none_and_metadata_is_mapped():
    missing = FakeModule(rules=[(lambda c: c[1] == "get", (1, "", "Error: release: not found"))])
    assert helm(missing).release("gpu-operator", "gpu-operator") is None
    meta = {
        "name": "gpu-operator",
        "chart": "gpu-operator",
        "version": "v26.3.3",
        "appVersion": "v26.3.3",
        "revision": 2,
        "status": "deployed",
        "namespace": "gpu-operator",
    }
    found = FakeModule(rules=[(lambda c: c[1] == "get", (0, json.dumps(meta), ""))])
    rel = helm(found, context="ctx").release("gpu-operator", "gpu-operator")
    assert rel["chart_version"] == "v26.3.3" and rel["revision"] == 2 and rel["status"] == "deployed"
    cmd = found.cmds("get")[0]
    assert cmd[-4:] == ["--kubeconfig", "/kc", "--kube-context", "ctx"]


def test_a_wrong_context_is_named():
    m = FakeModule(rules=[(lambda c: c[1] == "get", (1, "", 'Error: context "nope" does not exist'))])
    with pytest.raises(HelmError, match="context 'nope' does not exist"):
        helm(m, context="nope").release("gpu-operator", "gpu-operator")


@pytest.mark.parametrize("version, v4", [("v3.19.2", False), ("v4.0.1", True)])
def test_upgrade_flags_per_helm_major(version, v4):
    m = FakeModule(version)
    helm(m).upgrade(ReleaseSpec("gpu-operator", "ns", REPO, "v26.3.3", "/tmp/v.yaml"), wait=True, timeout=120)
    cmd = m.cmds("upgrade")[0]
    assert cmd[1:4] == ["upgrade", "--install", "gpu-operator"]
    for flag in ("--reset-values", "--disable-openapi-validation"):
        assert flag in cmd
    # v4's watcher would also wait for the ClusterPolicy's Ready condition; the module waits for that itself
    assert ("--wait=legacy" if v4 else "--wait") in cmd
    assert cmd[cmd.index("-f") + 1] == "/tmp/v.yaml" and cmd[cmd.index("--timeout") + 1] == "120s"
    assert ("--force-conflicts" in cmd) is v4
    assert ("--server-side=auto" in cmd) is v4


def test_a_release_applied_client_side_gets_no_force_conflicts_on_v4():
    """A release installed by helm v3 stays client-side under v4's --server-side=auto; --force-conflicts is invalid."""
    m = FakeModule("v4.0.1")
    h = helm(m)
    h.upgrade(ReleaseSpec("r", "ns", REPO, "v26.3.3", "/v"), apply_method="csa")
    h.rollback("r", "ns", 1, apply_method="csa")
    assert "--force-conflicts" not in m.cmds("upgrade")[0] and "--force-conflicts" not in m.cmds("rollback")[0]
    h.upgrade(ReleaseSpec("r", "ns", REPO, "v26.3.3", "/v"), apply_method="ssa")
    assert "--force-conflicts" in m.cmds("upgrade")[1]


def test_force_conflicts_can_be_turned_off_on_v4():
    m = FakeModule("v4.0.1")
    helm(m).upgrade(ReleaseSpec("r", "ns", REPO, "v26.3.3", "/v"), force_conflicts=False)
    assert "--force-conflicts" not in m.cmds("upgrade")[0]


CRD_A = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: a.nvidia.com}\n"
CRD_B = "---\nkind: CustomResourceDefinition\nmetadata: {name: b.nfd.k8s-sigs.io}\n---\nkind: ConfigMap\n"
CRD_C = "kind: CustomResourceDefinition\nmetadata: {name: c.example.com}\n"
PARENT = (
    "name: gpu-operator\nversion: v26.7.0\ndependencies:\n"
    "  - {name: node-feature-discovery, version: 0.19.0, condition: nfd.enabled}\n"
    "  - {name: extras, version: 1.0.0, condition: 'extras.on,global.extras', tags: [optional]}\n"
)


def _tgz(path, files):
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


@pytest.fixture
def chart(tmp_path):
    """gpu-operator with an NFD subchart (an archive, condition nfd.enabled) and an unpacked one with tags."""
    sub = tmp_path / "nfd.tgz"
    _tgz(
        sub,
        {
            "node-feature-discovery/Chart.yaml": b"name: node-feature-discovery\nversion: 0.19.0\n",
            "node-feature-discovery/crds/nfd-api-crds.yaml": CRD_B.encode(),
        },
    )
    path = tmp_path / "gpu-operator.tgz"
    _tgz(
        path,
        {
            "gpu-operator/Chart.yaml": PARENT.encode(),
            "gpu-operator/crds/nvidia.com_a.yaml": CRD_A.encode(),
            "gpu-operator/templates/crds/not-a-crd-dir.yaml": b"kind: ConfigMap\n",
            "gpu-operator/charts/node-feature-discovery-0.19.0.tgz": sub.read_bytes(),
            "gpu-operator/charts/extras/Chart.yaml": b"name: extras\nversion: 1.0.0\n",
            "gpu-operator/charts/extras/crds/c.yaml": CRD_C.encode(),
        },
    )
    return ChartRef(str(path))


def names(crds):
    return sorted(c["metadata"]["name"] for c in crds)


def test_crds_are_read_per_file_from_the_chart_and_its_enabled_subcharts(chart):
    """One document per file even when a file has no leading ---, which helm v3's show crds would merge."""
    crds, skipped = helm(FakeModule()).chart_crds(chart, None, {"nfd": {"enabled": True}})
    assert names(crds) == ["a.nvidia.com", "b.nfd.k8s-sigs.io", "c.example.com"] and skipped == []


def test_a_subchart_disabled_by_its_condition_contributes_no_crds_and_is_named(chart):
    crds, skipped = helm(FakeModule()).chart_crds(chart, None, {"nfd": {"enabled": False}})
    assert names(crds) == ["a.nvidia.com", "c.example.com"]
    assert skipped == [
        {
            "name": "b.nfd.k8s-sigs.io",
            "chart": "node-feature-discovery",
            "reason": "subchart node-feature-discovery disabled by nfd.enabled=false",
        }
    ]


@pytest.mark.parametrize(
    "values, enabled, why",
    [
        ({}, True, None),
        ({"tags": {"optional": False}}, False, "tags.optional=false"),
        ({"tags": {"optional": False}, "extras": {"on": True}}, True, "extras.on=true"),
        ({"global": {"extras": False}}, False, "global.extras=false"),
        ({"extras": {"on": "yes"}, "global": {"extras": True}}, True, "global.extras=true"),
    ],
    ids=["default-on", "all-tags-false", "condition-beats-tags", "second-condition", "non-boolean-skipped"],
)
def test_conditions_and_tags_decide_as_helm_does(values, enabled, why):
    dep = {"name": "extras", "condition": "extras.on,global.extras", "tags": ["optional"]}
    assert dependency_enabled(dep, values) == (enabled, why)


def test_crds_of_an_unpacked_chart_directory(tmp_path):
    directory = tmp_path / "dir" / "gpu-operator"
    (directory / "crds").mkdir(parents=True)
    (directory / "Chart.yaml").write_text(PARENT)
    (directory / "crds" / "nvidia.com_a.yaml").write_text(CRD_A)
    (directory / "charts" / "extras" / "crds").mkdir(parents=True)
    (directory / "charts" / "extras" / "Chart.yaml").write_text("name: extras\n")
    (directory / "charts" / "extras" / "crds" / "c.yaml").write_text(CRD_C)
    crds, skipped = helm(FakeModule()).chart_crds(ChartRef(str(directory)), None, {"extras": {"on": False}})
    assert names(crds) == ["a.nvidia.com"] and [s["name"] for s in skipped] == ["c.example.com"]


def test_crds_of_a_repository_chart_come_from_helm_pull():
    m = FakeModule()

    def pull(cmd):
        if cmd[1] != "pull":
            return False
        _tgz(
            os.path.join(cmd[cmd.index("-d") + 1], "gpu-operator-v26.3.3.tgz"),
            {"gpu-operator/Chart.yaml": b"name: gpu-operator\n", "gpu-operator/crds/a.yaml": CRD_A.encode()},
        )
        return True

    m.rules.append((pull, (0, "", "")))
    h = helm(m)
    assert names(h.chart_crds(REPO, "v26.3.3", {})[0]) == ["a.nvidia.com"]
    assert m.cmds("pull")[0][2:5] == [REPO_ALIAS + "/gpu-operator", "--version", "v26.3.3"]


def test_history_names_each_revision_s_chart_version_and_a_missing_release_has_none():
    entries = [
        {"revision": 1, "status": "superseded", "chart": "gpu-operator-v26.3.3"},
        {"revision": 2, "status": "failed", "chart": "gpu-operator-v26.7.0-rc.1"},
    ]
    m = FakeModule(rules=[(lambda c: c[1] == "history", (0, json.dumps(entries), ""))])
    assert [(h["revision"], h["chart_version"]) for h in helm(m).history("r", "ns")] == [
        (1, "v26.3.3"),
        (2, "v26.7.0-rc.1"),
    ]
    missing = FakeModule(rules=[(lambda c: c[1] == "history", (1, "", "Error: release: not found"))])
    assert helm(missing).history("r", "ns") == []


def test_computed_values_ask_helm_for_all_values():
    m = FakeModule(rules=[(lambda c: c[1] == "get", (0, '{"nfd": {"enabled": false}}', ""))])
    assert helm(m).get_values("r", "ns", computed=True) == {"nfd": {"enabled": False}}
    assert m.cmds("get")[0][2:6] == ["values", "r", "-n", "ns"] and "--all" in m.cmds("get")[0]


def test_a_failing_command_reports_cmd_rc_and_stderr():
    m = FakeModule(rules=[(lambda c: c[1] == "rollback", (1, "", "Error: boom"))])
    with pytest.raises(HelmError) as exc:
        helm(m).rollback("r", "ns", 3)
    assert exc.value.details["rc"] == 1 and "boom" in exc.value.msg
    assert exc.value.details["cmd"][1:4] == ["rollback", "r", "3"]


@pytest.mark.parametrize("version", ["v3.19.2", "v4.0.1"])
def test_template_renders_offline_with_the_clusters_api_versions_and_kubernetes_version(version):
    m = FakeModule(version)
    spec = ReleaseSpec("gpu-operator", "gpu-operator", REPO, "v26.7.0", "/v.yaml")
    helm(m).template(spec, ["resource.k8s.io/v1/DeviceClass", "v1"], "v1.36.3")
    (cmd,) = m.cmds("template")
    assert cmd[cmd.index("--kube-version") + 1] == "v1.36.3"
    assert [cmd[i + 1] for i, a in enumerate(cmd) if a == "--api-versions"] == ["resource.k8s.io/v1/DeviceClass", "v1"]
    assert "--kubeconfig" not in cmd  # helm template reads nothing from the cluster itself
