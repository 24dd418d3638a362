# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Render an audit snapshot (see ``join``) as JSON, Markdown and self-contained HTML, and write files atomically.

Rendering is deterministic: the same snapshot gives the same bytes, so an unchanged fleet rewrites nothing.
The HTML has no external asset (inline CSS, JavaScript and SVG only) and escapes every value.

This module runs one audit; ``cells``, ``markdown`` and ``html_page`` render, ``files`` reads and writes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
from dataclasses import dataclass, fields
from typing import Optional, Sequence

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.files import read_text, write_stale
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.changes import (
    SnapshotError,
    check_baseline,
    same_content,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.html_page import render_html
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.join import build_snapshot
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.markdown import render_markdown

FORMATS = {"json": "json", "markdown": "md", "html": "html"}


def render_json(snapshot):
    """The snapshot as JSON with sorted keys (stable bytes)."""
    return json.dumps(snapshot, indent=2, sort_keys=True) + "\n"


def render_all(snapshot, formats, title):
    """``{format: text}`` for each of ``formats``."""
    out = {}
    for fmt in formats:
        if fmt == "json":
            out[fmt] = render_json(snapshot)
        elif fmt == "markdown":
            out[fmt] = render_markdown(snapshot, title)
        elif fmt == "html":
            out[fmt] = render_html(snapshot, title)
        else:
            raise ValueError("unknown report format %r; use json, markdown or html" % fmt)
    return out


class ReportError(GpuOpsError):
    """A bad input the user must fix (the message names it and the fix)."""


def load_baseline(path):
    """The snapshot at ``path``, checked to be comparable; ReportError names the path and the fix."""
    text = read_text(path)
    if text is None:
        raise ReportError("baseline %s cannot be read; give the path of a JSON snapshot an earlier audit wrote" % path)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ReportError("baseline %s is not JSON (%s); give a snapshot an earlier audit wrote" % (path, exc)) from exc
    try:
        return check_baseline(data, path)
    except SnapshotError as exc:
        raise ReportError(str(exc)) from exc


@dataclass(frozen=True)
class ReportOptions:
    """Where and how gpu_audit_report writes (its options, same names): the ``dest`` directory, the ``formats``
    (json, markdown, html) named ``basename``, the ``baseline`` snapshot to compare with (a path, None: none), the
    ``title`` and the temperature from which a GPU is ``warning`` (``thermal_warning_c``)."""

    dest: str
    formats: Sequence[str]
    basename: str = "gpu-audit"
    baseline: Optional[str] = None
    title: str = "GPU fleet audit"
    thermal_warning_c: int = 85

    @classmethod
    def from_params(cls, params):
        """The options of a gpu_audit_report task."""
        return cls(**{field.name: params[field.name] for field in fields(cls)})


class AuditReport(object):
    """Build the snapshot of ``hosts`` and ``clusters``, render the chosen formats, and write only the files whose
    content changed, as ``options`` (a :class:`ReportOptions`) say.

    A re-run over an unchanged fleet keeps the earlier snapshot's ``generated_at``, so it renders the same bytes
    and reports ``changed=false``.
    """

    def __init__(self, hosts, clusters, options):
        self.dest = options.dest
        self.hosts = hosts
        self.clusters = clusters
        self.formats = list(dict.fromkeys(options.formats))
        self.basename = options.basename
        self.baseline_path = options.baseline
        self.title = options.title
        self.thermal_warning_c = options.thermal_warning_c

    def path(self, fmt):
        """The report file of format ``fmt``."""
        return os.path.join(self.dest, "%s.%s" % (self.basename, FORMATS[fmt]))

    def run(self, now, module):
        """Audit at ``now`` and write the stale files through ``module`` (none in its check mode); the result."""
        if os.path.exists(self.dest) and not os.path.isdir(self.dest):
            raise ReportError("dest %s exists and is not a directory; choose a report directory" % self.dest)
        baseline = load_baseline(self.baseline_path) if self.baseline_path else None
        snapshot = build_snapshot(self.hosts, self.clusters, now, baseline, self.thermal_warning_c)
        previous_text = read_text(self.path("json"))
        previous = None
        if previous_text is not None:
            try:
                previous = json.loads(previous_text)
            except ValueError:
                previous = None
        if same_content(previous, snapshot):
            snapshot["generated_at"] = previous["generated_at"]
        rendered = render_all(snapshot, self.formats, self.title)
        files = {self.path(fmt): text for fmt, text in rendered.items()}
        current, stale = write_stale(module, self.dest, files)
        primary = self.path("markdown" if "markdown" in self.formats else self.formats[0])
        return {
            "changed": bool(stale),
            "files": {fmt: self.path(fmt) for fmt in self.formats},
            "written": [] if module.check_mode else sorted(stale),
            "summary": snapshot["summary"],
            "generated_at": snapshot["generated_at"],
            "unreachable_hosts": sorted(r["host"] for r in snapshot["fleet"] if r["status"] == "unreachable"),
            "degraded_gpus": [
                "%s GPU %s (%s)" % (r["id"], g["index"], ", ".join(g["reasons"]) or g["health"])
                for r in snapshot["fleet"]
                for g in r["gpus"]
                if g["health"] in ("warning", "critical")
            ],
            "changes": snapshot["changes"],
            "diff": {
                "before": current[primary] or "",
                "after": files[primary],
                "before_header": primary,
                "after_header": primary,
            },
        }
