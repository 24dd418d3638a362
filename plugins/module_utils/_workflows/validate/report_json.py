# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The fleet summary as a versioned JSON report (``docs/validate-report.schema.json``).

The report's content is ``report``; ``generated_at`` sits outside it. Given the previous report, an unchanged
content keeps the previous timestamp, so the same fleet gives the same bytes and a re-run rewrites nothing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import as_document

REPORT_KIND = "gpuops.gpu_operator/validation-report"
#: A minor version only adds optional fields; a major version changes or removes fields.
SCHEMA_VERSION = "1.7"


def report_content(summary):
    """The compared content: the summary as plain JSON data, without the printed table (``lines``)."""
    return json.loads(json.dumps({k: v for k, v in summary.items() if k != "lines"}))


def report_document(summary, generated_at=None, previous=None):
    """``{kind, schema_version, generated_at, report}``; ``generated_at`` is the previous report's when its kind,
    schema version and content are the same."""
    content = report_content(summary)
    before = as_document(previous)
    same = (
        before is not None
        and before.get("kind") == REPORT_KIND
        and before.get("schema_version") == SCHEMA_VERSION
        and before.get("report") == content
    )
    return {
        "kind": REPORT_KIND,
        "schema_version": SCHEMA_VERSION,
        "generated_at": before.get("generated_at") if same else generated_at,
        "report": content,
    }


def render_json(document):
    """The report as JSON text with sorted keys and a final newline (stable bytes)."""
    return json.dumps(document, indent=2, sort_keys=True) + "\n"
