# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Chart references (a repository chart, an ``oci://`` reference, a local chart) and the CRD files in a chart."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import os
import tarfile

#: The name of the private repository entry added for a repository-URL chart.
REPO_ALIAS = "gpuops-chart-repo"


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


def crd_files_in_archive(data):
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
                out += crd_files_in_archive(tar.extractfile(member).read())
    return out


def crd_files_in_dir(root):
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
                    out += crd_files_in_archive(handle.read())
    return out
