# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Helm releases on the cluster: read a release, its values, manifest and history; install or upgrade, roll back,
uninstall."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
from collections import namedtuple

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.helm.cli import HelmCli, HelmError

_NOT_FOUND = re.compile(r"release: not found|not found", re.IGNORECASE)
#: ``gpu-operator-v26.3.3`` (helm's ``<chart name>-<chart version>``) -> the version.
_CHART_VERSION = re.compile(r"^.+?-(v?\d+\.\d+\.\d+\S*)$")

#: What :meth:`Helm.template` renders and :meth:`Helm.upgrade` installs: the release ``name`` in ``namespace``, the
#: ``chart`` (a ``.chart.ChartRef``) at ``version`` and exactly the values in ``values_file``.
ReleaseSpec = namedtuple("ReleaseSpec", "name namespace chart version values_file")


class Helm(HelmCli):
    """:class:`.cli.HelmCli` plus the release commands (same constructor; use it as a context manager)."""

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

    def get_values(self, name, namespace, revision=None, computed=False):
        """The release's user-supplied values; with ``computed`` (``--all``) merged over the chart's defaults."""
        args = ["get", "values", name, "-n", namespace] + (["--all"] if computed else [])
        if revision:
            args += ["--revision", str(revision)]
        return self.run_json(args, what="get values") or {}

    def get_manifest(self, name, namespace):
        return self.run(["get", "manifest", name, "-n", namespace], what="get manifest")[1]

    def history(self, name, namespace):
        """The last 20 revisions, oldest first: ``revision``, ``status``, ``chart``, ``description`` as helm gives them
        and ``chart_version``; ``[]`` when there is no release."""
        rc, out, err = self.run(["history", name, "-n", namespace, "--max", "20", "-o", "json"], check=False)
        if rc != 0:
            if _NOT_FOUND.search(err or out):
                return []
            self._cluster_failure("read the history of release %s" % name, rc, out, err)
        revisions = json.loads(out) if out.strip() else []
        for entry in revisions:
            match = _CHART_VERSION.match(entry.get("chart") or "")
            entry["chart_version"] = match.group(1) if match else None
        return revisions

    def get_hooks(self, name, namespace):
        return self.run(["get", "hooks", name, "-n", namespace], what="get hooks")[1]

    def template(self, spec, api_versions=(), kube_version=None):
        """``helm template`` of a :class:`ReleaseSpec` (no cluster contact) with the cluster's ``.Capabilities``:
        ``api_versions`` (every ``group/version`` and ``group/version/Kind`` served) and ``kube_version``, so that a
        chart reading them renders as ``helm install`` would."""
        args = ["template", spec.name] + self.chart_args(spec.chart, spec.version)
        args += ["-n", spec.namespace, "-f", spec.values_file]
        for api_version in api_versions:
            args += ["--api-versions", api_version]
        if kube_version:
            args += ["--kube-version", kube_version]
        return self.run(args, cluster=False, what="template")[1]

    def _wait_flag(self):
        """``--wait``; with helm v4 ``--wait=legacy``: v4's default watcher (kstatus) also waits for the ClusterPolicy's
        Ready condition, which a GPU Operator reaches only after every node's operands (minutes to hours during a
        driver rollout). The module waits for the ClusterPolicy itself, bounded and with a per-node report."""
        return "--wait=legacy" if self.major >= 4 else "--wait"

    def upgrade(self, spec, wait=True, timeout=600, force_conflicts=True, create_namespace=False, apply_method=None):
        """``helm upgrade --install`` of a :class:`ReleaseSpec` with exactly its ``values_file`` (``--reset-values``),
        no CRD hook validation.

        Helm v4 applies server-side; a field another manager set in a chart object (for example a canary's
        patch of ``spec.driver.version``) is then a conflict. ``force_conflicts`` passes ``--force-conflicts``
        so the chart, the declared source of truth, takes the field back - what helm v3's three-way merge does
        anyway.
        """
        args = ["upgrade", "--install", spec.name] + self.chart_args(spec.chart, spec.version)
        args += ["-n", spec.namespace, "-f", spec.values_file, "--reset-values", "--disable-openapi-validation"]
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
