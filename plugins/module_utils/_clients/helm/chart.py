# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Chart references (a repository chart, an ``oci://`` reference, a local chart), the parts of a chart the module
reads (``Chart.yaml``, ``crds/``, subcharts) and which subcharts a set of values enables."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import os
import tarfile

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    yaml = None

#: The name of the private repository entry added for a repository-URL chart.
REPO_ALIAS = "gpuops-chart-repo"
_MANIFEST = (".yaml", ".yml", ".json")


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


class ChartFiles:
    """One chart as the module reads it: ``meta`` (``Chart.yaml``), ``crds`` (``[(path, text)]`` under ``crds/``)
    and ``subcharts`` (ChartFiles of ``charts/*/`` and ``charts/*.tgz``)."""

    def __init__(self, meta, crds, subcharts):
        self.meta = meta if isinstance(meta, dict) else {}
        self.crds = crds
        self.subcharts = subcharts

    @property
    def name(self):
        return self.meta.get("name")


def _tree(files, prefix):
    """The ChartFiles rooted at ``prefix`` (``"gpu-operator/"``) of ``files`` (``{path: bytes}``)."""
    meta = yaml.safe_load(files.get(prefix + "Chart.yaml") or b"") or {}
    crds = sorted(
        (path, data.decode("utf-8"))
        for path, data in files.items()
        if path.startswith(prefix + "crds/") and path.endswith(_MANIFEST)
    )
    charts = prefix + "charts/"
    subcharts = []
    for entry in sorted({p[len(charts) :].split("/", 1)[0] for p in files if p.startswith(charts)}):
        if entry.endswith(".tgz") and charts + entry in files:
            subcharts.append(chart_from_archive(files[charts + entry]))
        elif charts + entry + "/Chart.yaml" in files:
            subcharts.append(_tree(files, charts + entry + "/"))
    return ChartFiles(meta, crds, subcharts)


def _wanted(path):
    """Files of a chart the module reads (templates are helm's business)."""
    return path.endswith(("Chart.yaml", ".tgz")) or "/crds/" in path


def chart_from_archive(data):
    """The ChartFiles of a chart archive (``.tgz`` bytes), nested subchart archives included."""
    files = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            if member.isfile() and _wanted(member.name):
                files[member.name] = tar.extractfile(member).read()
    tops = sorted({p.split("/", 1)[0] for p in files})
    return _tree(files, tops[0] + "/" if tops else "")


def chart_from_dir(root):
    """The ChartFiles of an unpacked chart directory."""
    files = {}
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            if _wanted("/" + rel):
                with open(path, "rb") as handle:
                    files[rel] = handle.read()
    return _tree(files, "")


def dependency_enabled(dep, values, prefix=""):
    """``(enabled, why)`` of one ``Chart.yaml`` dependency, as helm decides it: ``tags`` (any true tag enables, all
    false disable), then the first ``condition`` path that holds a boolean wins. ``why`` names the deciding value."""
    tags = values.get("tags") if isinstance(values.get("tags"), dict) else {}
    set_tags = [(t, tags[t]) for t in dep.get("tags") or [] if isinstance(tags.get(t), bool)]
    enabled, why = True, None
    if set_tags and not any(v for _t, v in set_tags):
        enabled, why = False, ", ".join("tags.%s=false" % t for t, _v in set_tags)
    for cond in [c.strip() for c in str(dep.get("condition") or "").split(",") if c.strip()]:
        value = values
        for part in (prefix + cond).split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, bool):
            return value, "%s%s=%s" % (prefix, cond, str(value).lower())
    return enabled, why


def crd_files(chart, values):
    """``(rendered, skipped)`` CRD files of ``chart`` (ChartFiles) for ``values`` (the chart's defaults with the
    release's values on top). ``rendered``: ``[(chart name, path, text)]`` of the chart and the subcharts those values
    enable, what helm installs; ``skipped``: ``[(chart name, path, text, why)]`` of the disabled subcharts."""
    rendered, skipped = [], []

    def walk(node, prefix, off):
        deps = {d.get("name"): d for d in node.meta.get("dependencies") or [] if isinstance(d, dict)}
        for path, text in node.crds:
            if off:
                skipped.append((node.name, path, text, off))
            else:
                rendered.append((node.name, path, text))
        for sub in node.subcharts:
            dep = deps.get(sub.name) or {}
            key = prefix + (dep.get("alias") or sub.name or "") + "."
            enabled, why = dependency_enabled(dep, values, prefix) if not off else (False, off)
            walk(sub, key, None if enabled else "subchart %s disabled by %s" % (sub.name, why))

    walk(chart, "", None)
    return rendered, skipped
