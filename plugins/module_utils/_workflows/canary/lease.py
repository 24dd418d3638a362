# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""One canary run at a time per progress record: a ``coordination.k8s.io/v1`` Lease beside the record.

A writing step takes the Lease named after the record before its first write and gives it back when it ends.
Every take and renewal is a write on the Lease's resourceVersion, so of two runs only one wins; the other is
refused with the holder's identity and how long ago it renewed. A holder renews every third of
:data:`LEASE_SECONDS`; one that died (SIGKILL, a lost machine) stops renewing, and its Lease may be taken once it
is :data:`LEASE_SECONDS` old.

A run whose controller is gone (its parent process ended: ansible-playbook killed) stops renewing and makes no
further write: :meth:`RecordLease.check` refuses it, so only the writes already in flight (at most
``session.WRITERS``, each bounded by ``api_timeout``) can land after the controller died.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import getpass
import os
import socket
import threading
import time
from urllib.parse import quote

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import K8sError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.errors import PlanError

LEASE_SECONDS = 30


def holder_identity(step):
    """Who holds the lease: user, host, process and step, e.g. ``alice@ctl-1 pid 4242 step=wave``."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "uid-%d" % os.getuid()
    return "%s@%s pid %d step=%s" % (user, socket.gethostname(), os.getpid(), step)


def micro_time(seconds):
    """``seconds`` as a Kubernetes MicroTime (``2026-12-06T07:00:00.000000Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + ".%06dZ" % int((seconds % 1) * 1e6)


def parse_micro_time(text):
    """A MicroTime (or RFC 3339 time) as seconds since the epoch; None when absent or unparsable."""
    if not text:
        return None
    try:
        whole = calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None
    fraction = text[19:].rstrip("Z")
    return whole + (float("0" + fraction) if fraction.startswith(".") else 0.0)


class RecordLease:
    """The Lease ``name`` in ``namespace`` held by ``holder`` while a step writes (see the module docstring)."""

    def __init__(self, client, namespace, name, holder, clock=time.time, seconds=LEASE_SECONDS):
        self.client = client
        self.path = "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s" % (
            quote(namespace, safe=""),
            quote(name, safe=""),
        )
        self.namespace, self.name, self.holder = namespace, name, holder
        self.clock = clock
        self.seconds = seconds
        self.parent = os.getppid()
        self.renewed = None  # time.monotonic() of the last take or renewal that the API server accepted
        self.lost = None
        self._lease = None
        self._stop = threading.Event()
        self._renewer = None

    def _body(self, lease, now, taken):
        spec = dict((lease or {}).get("spec") or {})
        if taken:
            spec["acquireTime"] = micro_time(now)
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (1 if lease else 0)
        spec.update(holderIdentity=self.holder, leaseDurationSeconds=self.seconds, renewTime=micro_time(now))
        metadata = {"name": self.name, "namespace": self.namespace}
        if lease:
            metadata["resourceVersion"] = lease["metadata"]["resourceVersion"]
        labels = {"app.kubernetes.io/managed-by": "gpuops.gpu_operator"}
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": dict(metadata, labels=labels),
            "spec": spec,
        }

    def refusal(self, lease, now):
        """The reason ``lease`` keeps this run out, or None when it is free, expired or this run's own."""
        spec = (lease or {}).get("spec") or {}
        other = spec.get("holderIdentity")
        if not other or other == self.holder:
            return None
        renewed = parse_micro_time(spec.get("renewTime") or spec.get("acquireTime"))
        duration = int(spec.get("leaseDurationSeconds") or self.seconds)
        age = None if renewed is None else now - renewed
        if age is not None and age > duration:
            return None
        return (
            "another canary run holds Lease %s/%s: %s, renewed %s ago (it expires %ds after its last renewal). Wait "
            "for that run to end; if it died, run this step again once the lease has expired"
            % (self.namespace, self.name, other, "%ds" % age if age is not None else "an unknown time", duration)
        )

    def acquire(self):
        """Take the Lease, or raise :class:`PlanError` naming its holder; then keep it renewed until :meth:`release`."""
        lease = self.client.get_or_none(self.path, what="read Lease %s/%s" % (self.namespace, self.name))
        now = self.clock()
        reason = self.refusal(lease, now)
        if reason:
            raise PlanError(reason)
        body = self._body(lease, now, taken=True)
        try:
            if lease is None:
                collection = self.path.rsplit("/", 1)[0]
                self._lease = self.client.send("POST", collection, body=body, what="take Lease %s" % self.name)
            else:
                self._lease = self.client.send("PUT", self.path, body=body, what="take Lease %s" % self.name)
        except K8sError as exc:
            if exc.status != 409:
                raise
            raise PlanError(
                "another canary run took Lease %s/%s at the same moment; run this step again once it has ended"
                % (self.namespace, self.name)
            ) from None
        self.renewed = time.monotonic()
        self._renewer = threading.Thread(target=self._renew_until_stopped, name="lease-renewer", daemon=True)
        self._renewer.start()

    def _renew_until_stopped(self):
        while not self._stop.wait(self.seconds / 3.0):
            if os.getppid() != self.parent:
                self.lost = "the controller that started this run is gone (its parent process ended)"
                return
            try:
                self._lease = self.client.send(
                    "PUT", self.path, body=self._body(self._lease, self.clock(), taken=False), what="renew Lease"
                )
                self.renewed = time.monotonic()
            except K8sError as exc:
                if exc.status == 409:
                    self.lost = "Lease %s/%s was taken by another run" % (self.namespace, self.name)
                    return

    def check(self):
        """Raise :class:`PlanError` when this run may no longer write (its lease lost, its controller gone)."""
        if self.lost is None and os.getppid() != self.parent:
            self.lost = "the controller that started this run is gone (its parent process ended)"
        if self.lost is None and self.renewed is not None and time.monotonic() - self.renewed > self.seconds:
            self.lost = "Lease %s/%s could not be renewed for %ds: another run may hold it now" % (
                self.namespace,
                self.name,
                self.seconds,
            )
        if self.lost:
            raise PlanError("stopped before the next write: %s" % self.lost)

    def release(self):
        """Stop renewing and give the Lease back (deleted on its resourceVersion; a lease already lost stays)."""
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join()
        if self._lease is None or self.lost:
            return
        rv = self._lease["metadata"]["resourceVersion"]
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"resourceVersion": rv}}
        try:
            self.client.send("DELETE", self.path, body=body, what="release Lease", accept_statuses=(404, 409))
        finally:
            self._lease = None
