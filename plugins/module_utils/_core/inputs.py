# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Every option value checked before a module's first request, against the rule Kubernetes (or the file system)
applies to it.

The argument spec checks types and choices; :func:`check_inputs` checks what it cannot: that a namespace is a
DNS-1123 label (a ``/`` or ``..`` in it would send a request to another resource), that a taint key is a
qualified name, that a timeout is positive, that a report's basename stays inside ``dest``. :data:`RULES` names each
option once (nested options by their dotted path, list elements checked one by one); an option a module does not
have is never looked at. The runner (``_core.module.run_module``) calls it before ``execute``, so a bad value
changes nothing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import ArgumentError

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL = re.compile(r"^%s$" % _LABEL)
DNS1123_SUBDOMAIN = re.compile(r"^%s(\.%s)*$" % (_LABEL, _LABEL))
_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
QUALIFIED_NAME_PART = re.compile(r"^%s$" % _NAME)
LABEL_VALUE = re.compile(r"^(%s)?$" % _NAME)


class Rule:
    """One rule: ``test(value)`` is None when ``value`` passes, else the reason it does not; ``fix`` says what a
    valid value looks like."""

    def __init__(self, test, fix):
        self.test = test
        self.fix = fix


def _dns_label(value):
    if not value:
        return "it is empty"
    if len(value) > 63:
        return "it is %d characters long (at most 63)" % len(value)
    if not DNS1123_LABEL.match(value):
        return "it is not a DNS-1123 label"
    return None


def _dns_subdomain(value):
    if not value:
        return "it is empty"
    if len(value) > 253:
        return "it is %d characters long (at most 253)" % len(value)
    if not DNS1123_SUBDOMAIN.match(value):
        return "it is not a DNS-1123 subdomain"
    return None


def _pod_ref(value):
    """``NAME`` or ``NAMESPACE/NAME``."""
    namespace, sep, name = value.rpartition("/")
    reason = (sep and _dns_label(namespace)) or _dns_subdomain(name)
    return "%s (it must be NAME or NAMESPACE/NAME)" % reason if reason else None


def _qualified_name(value):
    """A label, annotation or taint key: an optional DNS-1123 subdomain prefix and ``/``, then a name."""
    if not value:
        return "it is empty"
    prefix, sep, name = value.rpartition("/")
    if sep and _dns_subdomain(prefix):
        return "its prefix %r is not a DNS-1123 subdomain" % prefix
    if len(name) > 63 or not QUALIFIED_NAME_PART.match(name):
        return (
            "its name part %r is not 1 to 63 letters, digits, '-', '_' or '.' starting and ending alphanumeric" % name
        )
    return None


def _label_value(value):
    if len(value) > 63 or not LABEL_VALUE.match(value):
        return "it is not a label value (at most 63 letters, digits, '-', '_' or '.', starting and ending alphanumeric)"
    return None


def _positive(value):
    return None if value > 0 else "it is not greater than 0"


def _not_negative(value):
    return None if value >= 0 else "it is negative"


def _basename(value):
    if not value or value in (".", ".."):
        return "it is empty or a directory reference"
    if "/" in value or "\\" in value or "\0" in value:
        return "it contains a path separator"
    return None


def _non_empty(value):
    return None if str(value).strip() else "it is empty"


def _mapping_values(value):
    for key, entry in value.items():
        if not isinstance(entry, dict):
            return "its entry %r is a %s, not a mapping" % (key, type(entry).__name__)
    return None


def _labels(value):
    for key, entry in value.items():
        reason = _qualified_name(str(key)) or _label_value(str(entry if entry is not None else ""))
        if reason:
            return "label %r: %s" % (key, reason)
    return None


NAMESPACE = Rule(_dns_label, "a namespace name: lower-case letters, digits and '-', at most 63, e.g. gpu-operator")
OBJECT_NAME = Rule(_dns_subdomain, "an object name: lower-case letters, digits, '-' and '.', at most 253, e.g. node-1")
POD_REF = Rule(_pod_ref, "a pod as NAME or NAMESPACE/NAME, e.g. ml/train-0")
KEY = Rule(_qualified_name, "a key such as example.com/name: a DNS subdomain prefix, '/', then a name")
LABEL_SET = Rule(_labels, "labels as {key: value}, keys such as example.com/name, values label values")
POSITIVE = Rule(_positive, "a number greater than 0")
NOT_NEGATIVE = Rule(_not_negative, "0 or more")
BASENAME = Rule(_basename, "a file name without '/', e.g. gpu-report (the files are written inside dest)")
NON_EMPTY = Rule(_non_empty, "a non-empty value")
MAPPINGS = Rule(_mapping_values, "a mapping of names to mappings (e.g. hostvars: {host: {facts}})")

#: Option (dotted path for nested options) -> rule. Shared by every module; each applies the rows of its own options.
RULES = {
    "api_timeout": POSITIVE,
    "namespace": NAMESPACE,
    "operator_namespace": NAMESPACE,
    "release_namespace": NAMESPACE,
    "release_name": OBJECT_NAME,
    "node": OBJECT_NAME,
    "nodes": OBJECT_NAME,
    "canary_nodes": OBJECT_NAME,
    "exclude": OBJECT_NAME,
    "failed_nodes": OBJECT_NAME,
    "pod": POD_REF,
    "cluster_policy": OBJECT_NAME,
    "record_name": OBJECT_NAME,
    "runtime_class": OBJECT_NAME,
    "runtime_class_name": OBJECT_NAME,
    "image_pull_secrets": OBJECT_NAME,
    "device_class": OBJECT_NAME,
    "taint_key": KEY,
    "admission.taint_key": KEY,
    "admission.annotation": KEY,
    "admission.known_taints": KEY,
    "quarantine_markers.key": KEY,
    "pod_labels": LABEL_SET,
    "basename": BASENAME,
    "dest": NON_EMPTY,
    "chart_ref": NON_EMPTY,
    "hosts": MAPPINGS,
    "clusters": MAPPINGS,
    "timeout": POSITIVE,
    "ready_timeout": NOT_NEGATIVE,  # 0 skips the readiness wait
    "schedule_timeout": POSITIVE,
    "eviction_timeout": POSITIVE,
    "proof_timeout": POSITIVE,
    "wave_timeout": POSITIVE,
    "stall_grace": POSITIVE,
    "progress_interval": NOT_NEGATIVE,  # 0 waits to the end
    "poll_interval": POSITIVE,
    "page_size": POSITIVE,
    "concurrency": POSITIVE,
    "log_lines": POSITIVE,
    "max_logs": NOT_NEGATIVE,
    "console_limit": NOT_NEGATIVE,
    "max_evicted_workloads": NOT_NEGATIVE,
    "thermal_warning_c": POSITIVE,
}


def _values(value):
    """The values a rule checks: each element of a list, else the value itself."""
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _values(item)
    else:
        yield value


def _check(path, value, rule):
    for item in _values(value):
        if item is None:
            continue
        reason = rule.test(item)
        if reason:
            raise ArgumentError(
                "option %s: %r is refused: %s. Set %s to %s; nothing was changed."
                % (path, item, reason, path, rule.fix)
            )


def check_inputs(params, spec, rules=None, prefix=""):
    """Raise :class:`ArgumentError` naming the first option of ``spec`` whose value in ``params`` breaks its rule
    in ``rules`` (default :data:`RULES`); suboptions are checked under their dotted path."""
    rules = RULES if rules is None else rules
    for name, option in sorted(spec.items()):
        path = prefix + name
        value = params.get(name) if isinstance(params, dict) else None
        if value is None:
            continue
        if path in rules:
            _check(path, value, rules[path])
        if option.get("options"):
            for entry in value if isinstance(value, list) else [value]:
                if isinstance(entry, dict):
                    check_inputs(entry, option["options"], rules, path + ".")
