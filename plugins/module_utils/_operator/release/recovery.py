# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""What to do after a failed helm write, decided from what helm recorded (the release history before and after).

* No new revision: helm failed before writing one (a render, schema or validation failure, an ownership conflict);
  the release is as it was. Nothing is rolled back.
* A new revision: helm wrote it and failed while applying or waiting. With ``rollback_on_failure`` the release goes
  back to the revision that was ``deployed`` before this run (never an older one); without it, or when no revision
  was deployed before (a first install), it stays at the failed revision.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.helm import HelmError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.errors import ReleaseError


def deployed_revision(history):
    """The newest revision whose status is ``deployed`` (a history entry), or None."""
    deployed = [h for h in history if h.get("status") == "deployed"]
    return max(deployed, key=lambda h: h.get("revision") or 0) if deployed else None


def latest_revision(history):
    """The newest revision number, 0 without a release."""
    return max((h.get("revision") or 0 for h in history), default=0)


def _describe(entry):
    return "revision %d (chart %s)" % (entry["revision"], entry.get("chart_version"))


class Recovery:
    """After a failed write of ``plan`` (``before``: the history read just before it): inspect the history, roll back
    when allowed, and raise the ReleaseError that says exactly what happened."""

    def __init__(self, helm, params, plan, before):
        self.helm, self.p, self.before = helm, params, before
        self.apply_method = plan["_apply_method"]
        verb = "helm install of" if plan["action"] == "install" else "helm upgrade to"
        self.what = "%s chart %s" % (verb, plan["to_version"])
        self.crds_changed = [c["name"] for c in plan["crd_changes"] if c["action"] != "none"]

    def fail(self, exc):
        p = self.p
        after = self.helm.history(p.release_name, p.release_namespace)
        written = [h for h in after if (h.get("revision") or 0) > latest_revision(self.before)]
        details = {"helm_error": exc.msg, "rolled_back": False, "revision_written": bool(written)}
        if not written:
            raise ReleaseError(self._unwritten(exc), changed=bool(self.crds_changed), **details) from exc
        failed = max(written, key=lambda h: h["revision"])
        details.update(changed=True, failed_revision=failed["revision"])
        head = "%s wrote revision %d and failed: %s" % (self.what, failed["revision"], exc.msg)
        good = deployed_revision(self.before)
        if good is None:
            raise ReleaseError(
                "%s. No revision was deployed before this run, so there is nothing to roll back to: the release stays "
                "at revision %d (%s)" % (head, failed["revision"], failed.get("status")),
                **details,
            ) from exc
        if not p.rollback_on_failure:
            raise ReleaseError(
                "%s. rollback_on_failure is false, so the release stays at revision %d (%s); %s was deployed before "
                "this run (helm rollback %s %d -n %s returns to it)"
                % (
                    head,
                    failed["revision"],
                    failed.get("status"),
                    _describe(good),
                    p.release_name,
                    good["revision"],
                    p.release_namespace,
                ),
                **details,
            ) from exc
        self._roll_back(exc, head, good, details)

    def _unwritten(self, exc):
        running = deployed_revision(self.before)
        if running:
            state = "the release is unchanged and %s is still deployed" % _describe(running)
        elif self.before:
            last = max(self.before, key=lambda h: h.get("revision") or 0)
            state = "the release is unchanged at revision %d (%s)" % (last["revision"], last.get("status"))
        else:
            state = "no release was created"
        crds = ". The CRDs applied before it stay: %s" % ", ".join(self.crds_changed) if self.crds_changed else ""
        return "%s failed before helm wrote a release revision, so %s: %s%s" % (
            self.what,
            state,
            exc.msg,
            crds,
        )

    def _roll_back(self, exc, head, good, details):
        p = self.p
        details["rollback_revision"] = good["revision"]
        try:
            self.helm.rollback(
                p.release_name,
                p.release_namespace,
                good["revision"],
                wait=p.wait,
                timeout=p.timeout,
                apply_method=self.apply_method,
            )
        except HelmError as rb_exc:
            details["rollback_error"] = rb_exc.msg
            raise ReleaseError(
                "%s. Rolling back to %s, the revision deployed before this run, failed too: %s"
                % (head, _describe(good), rb_exc.msg),
                **details,
            ) from exc
        now = latest_revision(self.helm.history(p.release_name, p.release_namespace))
        details.update(rolled_back=True, rollback_error=None)
        raise ReleaseError(
            "%s. The release was rolled back to %s, the revision deployed before this run; it is now revision %d"
            % (head, _describe(good), now),
            **details,
        ) from exc
