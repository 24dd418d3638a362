# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Failures talking to Kubernetes, and the message of an HTTP error status (what failed, and what to fix)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import GpuOpsError

#: What to do about an HTTP error status; any other status is the server's own failure.
STATUS_HINTS = {
    401: "the credentials in the kubeconfig were rejected; refresh the token or client certificate",
    404: "the resource or API group does not exist on this cluster",
    410: "the list continue token expired; retry",
    429: "the API server is throttling requests; retry later or lower the request rate",
}


class K8sError(GpuOpsError):
    """A failure talking to Kubernetes, with a message that says what to fix.

    ``status`` is the HTTP status (0 when no response came back); ``details`` is a dict safe to return
    from a module (no secrets).
    """

    def __init__(self, msg, status=0, details=None):
        super().__init__(msg, status=status, details=details)


def _body_message(body):
    """The ``message`` of a Kubernetes Status body, else the start of the body as text."""
    try:
        parsed = json.loads(body)
        if isinstance(parsed, dict) and parsed.get("message"):
            return parsed["message"]
    except (ValueError, TypeError):
        pass
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body or "")
    return text.strip()[:300]


def status_error(resp, what):
    """The :class:`K8sError` for an HTTP error response to the request ``what`` (e.g. ``"list nodes"``)."""
    status = resp.status
    if status == 403:
        hint = "grant this user RBAC permission to %s" % what
    else:
        hint = STATUS_HINTS.get(status, "the API server failed; check its health")
    detail = _body_message(resp.data)
    return K8sError("%s failed: HTTP %d %s: %s (%s)." % (what, status, resp.reason or "", detail, hint), status)
