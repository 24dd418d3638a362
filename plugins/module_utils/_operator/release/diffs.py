# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""What a plan changes in the chart values, as dotted paths and as the module's ``--diff`` output."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    yaml = None


def value_changes(before, after, prefix=""):
    """Dotted paths whose value differs between two values dicts (added, removed or changed)."""
    paths = []
    keys = set(before or {}) | set(after or {})
    for key in sorted(keys, key=str):
        path = prefix + str(key)
        a, b = (before or {}).get(key, None), (after or {}).get(key, None)
        if isinstance(a, dict) and isinstance(b, (dict, type(None))) or isinstance(b, dict) and a is None:
            paths += value_changes(a or {}, b or {}, path + ".") or ([path] if (a is None) != (b is None) else [])
        elif a != b or (key in (before or {})) != (key in (after or {})):
            paths.append(path)
    return paths


def normalised(values):
    """``values`` as plain JSON data with sorted keys (what helm and the diff compare)."""
    return json.loads(json.dumps(values or {}, sort_keys=True))


def present_diff(plan, before_manifest, after_manifest):
    """The ``diff`` of ``state: present``: the values, then the rendered manifests, before and after."""
    before = plan["from_version"] or "not installed"
    return [
        {
            "before_header": "values (%s)" % before,
            "after_header": "values (%s)" % plan["to_version"],
            "before": yaml.safe_dump(plan["previous_values"], default_flow_style=False) if plan["from_version"] else "",
            "after": yaml.safe_dump(plan["values"], default_flow_style=False),
        },
        {
            "before_header": "manifests (%s)" % before,
            "after_header": "manifests (%s)" % plan["to_version"],
            "before": before_manifest,
            "after": after_manifest,
        },
    ]


def absent_diff(deployed, crds):
    """The ``diff`` of ``state: absent``: the release and the CRDs that go."""
    return {
        "before": yaml.safe_dump({"release": deployed, "crds": crds}) if deployed or crds else "",
        "after": "",
    }
