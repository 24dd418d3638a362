# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The gate's CUDA check: the CUDA version of each running GPU container on a planned node against the target
driver's (from the image tag of NVIDIA CUDA images, or the user's ``cuda_images`` rules; nothing is guessed)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import key_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator import compat
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.errors import PlanError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.pods import (
    active_gpu_pods,
    requests_gpu,
)

#: NVIDIA CUDA images (``nvidia/cuda`` on Docker Hub, ``nvcr.io/nvidia/cuda``, or a mirror that keeps the path):
#: the tag starts with the CUDA version, e.g. ``12.4.1-base-ubuntu22.04`` or ``13.0.0-runtime-ubuntu24.04``.
_NVIDIA_CUDA_REPO = re.compile(r"(^|/)nvidia/cuda$")
_CUDA_TAG = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)*(?:-|$)")
_CUDA_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)*$")


def split_image(image):
    """``"nvcr.io/nvidia/cuda:12.4.1-base@sha256:..."`` -> ``("nvcr.io/nvidia/cuda", "12.4.1-base")``; the tag
    is ``None`` when there is none (a registry port is not a tag)."""
    ref = str(image or "").split("@", 1)[0]
    repo, _sep, tag = ref.rpartition(":")
    if not repo or "/" in tag:
        return ref, None
    return repo, tag


def cuda_image_rules(entries):
    """Compile the user's ``cuda_images`` entries (``{image: regex, cuda: "12.4"}``; without ``cuda`` the regex
    captures the version in a group named ``cuda`` or its first group) as ``[(regex, cuda or None, text)]``."""
    rules = []
    for i, entry in enumerate(entries or []):
        if not isinstance(entry, dict) or not entry.get("image"):
            raise PlanError(
                "cuda_images[%d] needs an image regex, e.g. {image: '^registry.example/ml/', cuda: '12.4'}" % i
            )
        try:
            rx = re.compile(str(entry["image"]))
        except re.error as e:
            raise PlanError(
                "cuda_images[%d].image %r is not a regular expression: %s" % (i, entry["image"], e)
            ) from None
        cuda = entry.get("cuda")
        if cuda is not None and not _CUDA_VERSION.match(str(cuda)):
            raise PlanError("cuda_images[%d].cuda %r is not a CUDA version like 12.4" % (i, cuda))
        if cuda is None and not rx.groups:
            raise PlanError(
                "cuda_images[%d] has no cuda and its regex %r captures nothing: add cuda: '12.4' or a group "
                "(?P<cuda>\\d+\\.\\d+)" % (i, entry["image"])
            )
        rules.append((rx, None if cuda is None else str(cuda), str(entry["image"])))
    return rules


def _major_minor(text):
    m = _CUDA_VERSION.match(str(text or "").strip())
    return "%s.%s" % (int(m.group(1)), int(m.group(2))) if m else None


def image_cuda(image, rules=()):
    """``(cuda major.minor, how it is known)`` for an image reference, or ``(None, why not)``: the user's rules
    first (in order), then the NVIDIA CUDA image tag. Nothing is guessed."""
    for rx, cuda, text in rules or ():
        m = rx.search(str(image or ""))
        if not m:
            continue
        if cuda is None:
            found = m.groupdict().get("cuda") or (m.group(1) if rx.groups else None)
            cuda = _major_minor(found)
            if cuda is None:
                return None, "cuda_images rule %r matched but captured %r, not a CUDA version" % (text, found)
        return _major_minor(cuda), "cuda_images rule %r" % text
    repo, tag = split_image(image)
    if _NVIDIA_CUDA_REPO.search(repo):
        m = _CUDA_TAG.match(tag or "")
        if m:
            return "%d.%d" % (int(m.group(1)), int(m.group(2))), "NVIDIA CUDA image tag"
        return None, "NVIDIA CUDA image without a version tag"
    return None, "not an NVIDIA CUDA image and no cuda_images rule matches"


def _by_pod(entries):
    return sorted(entries, key=lambda w: (w["pod"], w["container"] or ""))


def cuda_check(pods, planned, target_driver, rules=(), min_driver=compat.min_driver_for_cuda):
    """The CUDA versions of the GPU containers of running pods on ``planned`` nodes against ``target_driver``:
    ``{"target_driver", "workloads", "unknown", "failures"}``. A container whose CUDA version is not knowable
    (or not in the compatibility matrix) is listed in ``unknown`` and fails nothing; without a target driver
    (a chart-only upgrade) the versions are listed and nothing is compared."""
    workloads, unknown, failures = [], [], []
    for pod in active_gpu_pods(pods, None if planned is None else set(planned)):
        for c in (pod.get("spec") or {}).get("containers") or []:
            if not requests_gpu(c):
                continue
            image = c.get("image") or ""
            entry = {
                "pod": key_of(pod),
                "node": (pod.get("spec") or {}).get("nodeName"),
                "container": c.get("name"),
                "image": image,
            }
            cuda, how = image_cuda(image, rules)
            required = None
            if cuda is not None:
                try:
                    required = min_driver(cuda)
                except compat.CompatError as e:
                    how = str(e)
            if required is None:
                unknown.append(dict(entry, cuda=cuda, severity="info", reason="unknown CUDA: %s" % how))
                continue
            ok = None if not target_driver else compat.driver_at_least(target_driver, required)
            workloads.append(dict(entry, cuda=cuda, source=how, required_driver=required, ok=ok))
            if ok is False:
                failures.append(
                    "pod %s (container %s, image %s) runs CUDA %s, which needs driver %s or later; the target "
                    "driver %s is older: upgrade to a driver >= %s, move the workload off the planned nodes, or "
                    "exclude its node"
                    % (entry["pod"], entry["container"], image, cuda, required, target_driver, required)
                )
    return {
        "target_driver": target_driver or None,
        "workloads": _by_pod(workloads),
        "unknown": _by_pod(unknown),
        "failures": failures,
    }
