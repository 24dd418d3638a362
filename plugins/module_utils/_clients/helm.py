# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The helm CLI (v3 and v4), driven through one ``run_command`` funnel.

* :class:`ChartRef` - a chart reference: repository URL + chart name, ``oci://`` reference, or a local path;
* :class:`Helm` - version detection, ``show chart|values|crds``, ``template``, ``get metadata|values``,
  ``history``, ``upgrade --install``, ``rollback``, ``uninstall``.

Every command runs with a C locale, ``--kubeconfig``/``--kube-context`` when given, and a private repository
config and cache (``HELM_REPOSITORY_CONFIG``/``HELM_REPOSITORY_CACHE`` in a temporary directory), so the user's
``helm repo`` setup is neither read nor changed. Credentials never appear on a command line: a repository
password goes to ``helm repo add --password-stdin``, a registry password to ``helm registry login
--password-stdin`` with a private registry config.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import json
import os
import re
import shutil
import tarfile
import tempfile

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import GpuOpsError

try:
    import yaml

    HAS_YAML = True
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    HAS_YAML = False

#: Argument spec of the release/chart/helm options; mirrors plugins/doc_fragments/helm.py one to one.
HELM_ARG_SPEC = dict(
    release_name=dict(type="str", default="gpu-operator", aliases=["name"]),
    release_namespace=dict(type="str", default="gpu-operator", aliases=["namespace"]),
    chart_ref=dict(type="str"),
    chart_repo_url=dict(type="str"),
    chart_version=dict(type="str"),
    chart_repo_username=dict(type="str"),
    chart_repo_password=dict(type="str", no_log=True),
    values=dict(type="dict", default={}),
    values_files=dict(type="list", elements="path", default=[]),
    fleet=dict(type="dict"),
    detect=dict(type="bool", default=True),
    force_conflicts=dict(type="bool", default=True),
    wait=dict(type="bool", default=True),
    timeout=dict(type="int", default=600),
    create_namespace=dict(type="bool", default=False),
    helm_binary=dict(type="path"),
)

#: The name of the private repository entry added for a repository-URL chart.
REPO_ALIAS = "gpuops-chart-repo"

_NOT_FOUND = re.compile(r"release: not found|not found", re.IGNORECASE)


class HelmError(GpuOpsError):
    """A helm command failed; ``msg`` names the input and the fix, ``details`` hold cmd/rc/stdout/stderr."""

    def __init__(self, msg, cmd=None, rc=None, stdout="", stderr=""):
        super().__init__(msg, details={"cmd": cmd, "rc": rc, "stdout": stdout, "stderr": stderr})


def parse_version(text):
    """``"v3.19.2+g8766e71"`` -> ``(3, 19, 2)``; None when unparsable."""
    match = re.search(r"v?(\d+)\.(\d+)\.(\d+)", text or "")
    return tuple(int(x) for x in match.groups()) if match else None


class ChartRef:
    """Where the chart comes from.

    ``kind`` is ``repo`` (``repo_url`` + ``name``), ``oci`` (``name`` is ``oci://host/path/chart``) or ``local``
    (``name`` is a chart directory or ``.tgz``).
    """

    def __init__(self, name, repo_url=None):
        self.repo_url = repo_url.rstrip("/") if repo_url else None
        self.name = name
        if repo_url:
            if name.startswith("oci://") or "/" in name:
                raise ValueError(
                    "chart_ref %r must be a bare chart name when chart_repo_url is set (for example gpu-operator)"
                    % name
                )
            self.kind = "repo"
        elif name.startswith("oci://"):
            self.kind = "oci"
        elif os.path.exists(os.path.expanduser(name)):
            self.kind = "local"
            self.name = os.path.expanduser(name)
        else:
            raise ValueError(
                "chart_ref %r is neither an oci:// reference nor an existing local chart path; set chart_repo_url "
                "(for example https://helm.ngc.nvidia.com/nvidia) to use a chart name from a repository" % name
            )

    @property
    def registry_host(self):
        return self.name[len("oci://") :].split("/", 1)[0] if self.kind == "oci" else None

    def describe(self):
        if self.kind == "repo":
            return "chart %s from repository %s" % (self.name, self.repo_url)
        return "chart %s" % self.name

    def __repr__(self):
        return "ChartRef(%s)" % self.describe()


def _is_crd_file(parts):
    """``chart/crds/x.yaml`` or ``chart/charts/sub/crds/x.yaml`` (path parts inside a chart archive)."""
    return len(parts) >= 3 and parts[-2] == "crds" and parts[-1].endswith((".yaml", ".yml", ".json"))


def _crd_files_in_archive(data):
    """``[(name, text)]`` of the CRD files in a chart archive, nested subchart archives included."""
    out = []
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            parts = member.name.split("/")
            if _is_crd_file(parts) and "crds" not in parts[:-2]:
                out.append((member.name, tar.extractfile(member).read().decode("utf-8")))
            elif len(parts) >= 3 and parts[-2] == "charts" and parts[-1].endswith(".tgz"):
                out += _crd_files_in_archive(tar.extractfile(member).read())
    return out


def _crd_files_in_dir(root):
    out = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, os.path.dirname(root.rstrip("/")))
            if _is_crd_file(rel.split(os.sep)):
                with open(path) as handle:
                    out.append((rel, handle.read()))
            elif name.endswith(".tgz") and os.path.basename(dirpath) == "charts":
                with open(path, "rb") as handle:
                    out += _crd_files_in_archive(handle.read())
    return out


class Helm:
    """One helm binary bound to a cluster (kubeconfig path, context) and a private repository setup.

    ``module`` provides ``run_command`` and ``get_bin_path`` (an AnsibleModule). Call :meth:`close` (or use the
    instance as a context manager) to remove the temporary directory.
    """

    def __init__(self, module, binary=None, kubeconfig=None, context=None, username=None, password=None):
        self.module = module
        self.binary = self._resolve(binary)
        self.kubeconfig = kubeconfig
        self.context = context
        self.username = username
        self.password = password
        self.tmpdir = tempfile.mkdtemp(prefix="gpuops-helm-")
        self.env = {
            "LANG": "C",
            "LC_ALL": "C",
            "LANGUAGE": "C",
            "HELM_REPOSITORY_CONFIG": os.path.join(self.tmpdir, "repositories.yaml"),
            "HELM_REPOSITORY_CACHE": os.path.join(self.tmpdir, "repository-cache"),
        }
        if username or password:
            self.env["HELM_REGISTRY_CONFIG"] = os.path.join(self.tmpdir, "registry.json")
        self._version = None
        self._prepared = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        shutil.rmtree(self.tmpdir, ignore_errors=True)

    def _resolve(self, binary):
        if binary:
            path = os.path.expanduser(binary)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
            raise HelmError(
                "helm_binary %r is not an executable file; set helm_binary to the helm v3 or v4 binary" % binary
            )
        found = self.module.get_bin_path("helm")
        if not found:
            raise HelmError("helm was not found on PATH; install helm v3 or v4 or set helm_binary to its path")
        return found

    # -- the funnel --------------------------------------------------------------------------------

    def _cluster_args(self):
        args = []
        if self.kubeconfig:
            args += ["--kubeconfig", self.kubeconfig]
        if self.context:
            args += ["--kube-context", self.context]
        return args

    def run(self, args, cluster=True, data=None, what=None, check=True):
        """Run ``helm ARGS``; return ``(rc, stdout, stderr)``; raise HelmError when ``check`` and rc != 0."""
        cmd = [self.binary] + list(args) + (self._cluster_args() if cluster else [])
        rc, out, err = self.module.run_command(cmd, data=data, environ_update=self.env, check_rc=False)
        if rc != 0 and check:
            raise HelmError(
                "helm %s failed (rc %d): %s" % (what or args[0], rc, (err or out).strip()[-2000:]),
                cmd=cmd,
                rc=rc,
                stdout=out,
                stderr=err,
            )
        return rc, out, err

    def run_json(self, args, what=None, **kwargs):
        _rc, out, _err = self.run(list(args) + ["-o", "json"], what=what, **kwargs)
        try:
            return json.loads(out) if out.strip() else None
        except ValueError as exc:
            raise HelmError("helm %s returned invalid JSON: %s" % (what or args[0], exc), stdout=out) from exc

    # -- version -----------------------------------------------------------------------------------

    def version(self):
        """``(major, minor, patch)`` of the binary; 3 and 4 are supported."""
        if self._version is None:
            _rc, out, _err = self.run(["version", "--template", "{{.Version}}"], cluster=False, what="version")
            parsed = parse_version(out)
            if not parsed or parsed[0] not in (3, 4):
                raise HelmError(
                    "%s reports version %r; gpu_operator supports helm v3 and v4. Set helm_binary to one of those"
                    % (self.binary, out.strip())
                )
            self._version = parsed
        return self._version

    @property
    def major(self):
        return self.version()[0]

    # -- chart references --------------------------------------------------------------------------

    def prepare(self, chart):
        """Register the repository (or log in to the registry) once; idempotent per instance."""
        if self._prepared is chart:
            return
        if chart.kind == "repo":
            args = ["repo", "add", REPO_ALIAS, chart.repo_url, "--force-update"]
            data = None
            if self.username:
                args += ["--username", self.username, "--password-stdin"]
                data = self.password or ""
            rc, out, err = self.run(args, cluster=False, data=data, check=False)
            if rc != 0:
                raise HelmError(
                    "chart repository %s is unreachable or is not a Helm chart repository: %s. Check chart_repo_url "
                    "(and chart_repo_username/chart_repo_password if it needs credentials)"
                    % (chart.repo_url, (err or out).strip()[-1000:]),
                    rc=rc,
                    stdout=out,
                    stderr=err,
                )
        elif chart.kind == "oci" and self.username:
            args = ["registry", "login", chart.registry_host, "--username", self.username, "--password-stdin"]
            rc, out, err = self.run(args, cluster=False, data=self.password or "", check=False)
            if rc != 0:
                raise HelmError(
                    "login to registry %s failed: %s. Check chart_repo_username/chart_repo_password"
                    % (chart.registry_host, (err or out).strip()[-1000:]),
                    rc=rc,
                    stdout=out,
                    stderr=err,
                )
        self._prepared = chart

    def chart_args(self, chart, version=None):
        """The positional chart argument plus ``--version``."""
        self.prepare(chart)
        ref = "%s/%s" % (REPO_ALIAS, chart.name) if chart.kind == "repo" else chart.name
        return [ref] + (["--version", version] if version and chart.kind != "local" else [])

    def _show(self, what, chart, version):
        rc, out, err = self.run(["show", what] + self.chart_args(chart, version), cluster=False, check=False)
        if rc != 0:
            text = (err or out).strip()
            if version and re.search(r"version|not found|no chart", text, re.IGNORECASE):
                raise HelmError(
                    "chart version %s of %s was not found: %s. Set chart_version to a published version (with its "
                    "v prefix, for example v26.7.0)" % (version, chart.describe(), text[-1000:]),
                    rc=rc,
                    stderr=err,
                )
            raise HelmError(
                "helm show %s for %s failed: %s" % (what, chart.describe(), text[-1000:]), rc=rc, stderr=err
            )
        return out

    def show_chart(self, chart, version=None):
        return yaml.safe_load(self._show("chart", chart, version)) or {}

    def show_values(self, chart, version=None):
        return yaml.safe_load(self._show("values", chart, version)) or {}

    def show_crds(self, chart, version=None):
        """The CRD objects in the chart's ``crds/`` directories, the subcharts' included, one per file.

        Read from the chart archive (``helm pull``) rather than ``helm show crds``, whose helm v3 output joins
        the files without document separators.
        """
        docs = []
        for name, text in sorted(self._crd_files(chart, version)):
            try:
                loaded = list(yaml.safe_load_all(text))
            except yaml.YAMLError as exc:
                raise HelmError("CRD file %s of %s is not valid YAML: %s" % (name, chart.describe(), exc)) from exc
            docs += [d for d in loaded if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"]
        return docs

    def _crd_files(self, chart, version):
        if chart.kind == "local" and os.path.isdir(chart.name):
            return _crd_files_in_dir(chart.name)
        if chart.kind == "local":
            archive = chart.name
        else:
            self._show("chart", chart, version)  # names a missing version or unreachable repository clearly
            dest = tempfile.mkdtemp(prefix="pull-", dir=self.tmpdir)
            self.run(["pull"] + self.chart_args(chart, version) + ["-d", dest], cluster=False, what="pull")
            archives = [f for f in os.listdir(dest) if f.endswith(".tgz")]
            if len(archives) != 1:
                raise HelmError("helm pull of %s left %r, expected one chart archive" % (chart.describe(), archives))
            archive = os.path.join(dest, archives[0])
        with open(archive, "rb") as handle:
            return _crd_files_in_archive(handle.read())

    # -- releases ----------------------------------------------------------------------------------

    def release(self, name, namespace):
        """``helm get metadata`` as a dict (``chart``, ``version``, ``revision``, ``status``...), or None."""
        rc, out, err = self.run(["get", "metadata", name, "-n", namespace, "-o", "json"], check=False)
        if rc != 0:
            if _NOT_FOUND.search(err or out):
                return None
            self._cluster_failure("read release %s in namespace %s" % (name, namespace), rc, out, err)
        meta = json.loads(out)
        return {
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "chart": meta.get("chart"),
            "chart_version": meta.get("version"),
            "app_version": meta.get("appVersion") or meta.get("app_version"),
            "revision": meta.get("revision"),
            "status": meta.get("status"),
            # helm v4: "ssa" (server-side apply) or "csa" (client-side, e.g. installed by helm v3); absent in v3
            "apply_method": meta.get("applyMethod"),
        }

    def _cluster_failure(self, what, rc, out, err):
        text = (err or out).strip()
        if self.context and re.search(r"context .*(does not exist|not found)", text, re.IGNORECASE):
            raise HelmError(
                "kubeconfig context %r does not exist: %s. Set context to a context of the kubeconfig"
                % (self.context, text),
                rc=rc,
                stderr=err,
            )
        raise HelmError("helm could not %s: %s" % (what, text[-1500:]), rc=rc, stdout=out, stderr=err)

    def get_values(self, name, namespace, revision=None):
        args = ["get", "values", name, "-n", namespace]
        if revision:
            args += ["--revision", str(revision)]
        return self.run_json(args, what="get values") or {}

    def get_manifest(self, name, namespace):
        return self.run(["get", "manifest", name, "-n", namespace], what="get manifest")[1]

    def history(self, name, namespace):
        rc, out, err = self.run(["history", name, "-n", namespace, "--max", "20", "-o", "json"], check=False)
        if rc != 0:
            if _NOT_FOUND.search(err or out):
                return []
            self._cluster_failure("read the history of release %s" % name, rc, out, err)
        return json.loads(out) if out.strip() else []

    def template(self, name, namespace, chart, version, values_file):
        args = ["template", name] + self.chart_args(chart, version) + ["-n", namespace, "-f", values_file]
        return self.run(args, cluster=False, what="template")[1]

    def _wait_flag(self):
        """``--wait``; with helm v4 ``--wait=legacy``: v4's default watcher (kstatus) also waits for the ClusterPolicy's
        Ready condition, which a GPU Operator reaches only after every node's operands (minutes to hours during a
        driver rollout). The module waits for the ClusterPolicy itself, bounded and with a per-node report."""
        return "--wait=legacy" if self.major >= 4 else "--wait"

    def upgrade(
        self,
        name,
        namespace,
        chart,
        version,
        values_file,
        wait=True,
        timeout=600,
        force_conflicts=True,
        create_namespace=False,
        apply_method=None,
    ):
        """``helm upgrade --install`` with exactly ``values_file`` (``--reset-values``), no CRD hook validation.

        Helm v4 applies server-side; a field another manager set in a chart object (for example a canary's
        patch of ``spec.driver.version``) is then a conflict. ``force_conflicts`` passes ``--force-conflicts``
        so the chart, the declared source of truth, takes the field back - what helm v3's three-way merge does
        anyway.
        """
        args = ["upgrade", "--install", name] + self.chart_args(chart, version)
        args += ["-n", namespace, "-f", values_file, "--reset-values", "--disable-openapi-validation"]
        args += ["--timeout", "%ds" % timeout]
        if wait:
            args.append(self._wait_flag())
        if create_namespace:
            args.append("--create-namespace")
        if self.major >= 4:
            args.append("--server-side=auto")
            if force_conflicts and self.server_side(apply_method):
                args.append("--force-conflicts")
        return self.run(args, what="upgrade --install")

    def server_side(self, apply_method):
        """Whether helm v4 applies server-side for a release last applied with ``apply_method``.

        ``--server-side=auto`` keeps a release's method: a release installed client-side (by helm v3, or with
        ``--server-side=false``) stays client-side, where ``--force-conflicts`` is an error and not needed (the
        three-way merge overwrites). A new release is applied server-side.
        """
        return self.major >= 4 and apply_method in (None, "ssa")

    def rollback(self, name, namespace, revision, wait=True, timeout=600, apply_method=None):
        args = ["rollback", name, str(revision), "-n", namespace, "--timeout", "%ds" % timeout]
        if wait:
            args.append(self._wait_flag())
        if self.server_side(apply_method):
            args.append("--force-conflicts")
        return self.run(args, what="rollback")

    def uninstall(self, name, namespace, wait=True, timeout=600):
        args = ["uninstall", name, "-n", namespace, "--timeout", "%ds" % timeout]
        if wait:
            args.append(self._wait_flag())
        return self.run(args, what="uninstall")
