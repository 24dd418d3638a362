# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The helm binary (v3 and v4) driven through one ``run_command`` funnel, and what it reads from charts.

Every command runs with a C locale, ``--kubeconfig``/``--kube-context`` when given, and a private repository
config and cache (``HELM_REPOSITORY_CONFIG``/``HELM_REPOSITORY_CACHE`` in a temporary directory), so the user's
``helm repo`` setup is neither read nor changed. Credentials never appear on a command line: a repository
password goes to ``helm repo add --password-stdin``, a registry password to ``helm registry login
--password-stdin`` with a private registry config.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import shutil
import tempfile

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    yaml = None

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.helm.chart import (
    REPO_ALIAS,
    chart_from_archive,
    chart_from_dir,
    crd_files,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import name_of


class HelmError(GpuOpsError):
    """A helm command failed; ``msg`` names the input and the fix, ``details`` hold cmd/rc/stdout/stderr."""

    def __init__(self, msg, cmd=None, rc=None, stdout="", stderr=""):
        super().__init__(msg, details={"cmd": cmd, "rc": rc, "stdout": stdout, "stderr": stderr})


def parse_version(text):
    """``"v3.19.2+g8766e71"`` -> ``(3, 19, 2)``; None when unparsable."""
    match = re.search(r"v?(\d+)\.(\d+)\.(\d+)", text or "")
    return tuple(int(x) for x in match.groups()) if match else None


class HelmCli:
    """One helm binary bound to a cluster (kubeconfig path, context) and a private repository setup; reads charts.

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
            # helm's own cache, config and data homes too: nothing of a run is left under $HOME
            "HELM_CACHE_HOME": os.path.join(self.tmpdir, "cache"),
            "HELM_CONFIG_HOME": os.path.join(self.tmpdir, "config"),
            "HELM_DATA_HOME": os.path.join(self.tmpdir, "data"),
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

    def chart_crds(self, chart, version, values):
        """``(crds, skipped)`` for the chart's defaults with the release's values on top (``values``).

        ``crds``: the CRD objects helm installs, one per document, from the chart's ``crds/`` and those of the
        subcharts ``values`` enable; ``skipped``: ``[{name, chart, reason}]`` of the CRDs of disabled subcharts. Read
        from the chart archive (``helm pull``) rather than ``helm show crds``, which lists every subchart's CRDs and,
        in helm v3, joins the files without document separators.
        """
        rendered, disabled = crd_files(self.chart_files(chart, version), values or {})
        crds = [doc for _sub, path, text in rendered for doc in self._crd_docs(chart, path, text)]
        skipped = [
            {"name": name_of(doc), "chart": sub, "reason": why}
            for sub, path, text, why in disabled
            for doc in self._crd_docs(chart, path, text)
        ]
        return crds, skipped

    def _crd_docs(self, chart, path, text):
        try:
            loaded = list(yaml.safe_load_all(text))
        except yaml.YAMLError as exc:
            raise HelmError("CRD file %s of %s is not valid YAML: %s" % (path, chart.describe(), exc)) from exc
        return [d for d in loaded if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"]

    def chart_files(self, chart, version=None):
        """The chart's :class:`.chart.ChartFiles`: a local directory or archive as it is, any other one pulled."""
        if chart.kind == "local" and os.path.isdir(chart.name):
            return chart_from_dir(chart.name)
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
            return chart_from_archive(handle.read())
