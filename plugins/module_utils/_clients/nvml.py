# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""NVML fact collection for nvidia_gpu_facts: library discovery, per-GPU queries, health verdicts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ctypes
import os

DEFAULT_DRIVER_ROOT = '/run/nvidia/driver'
SONAME = 'libnvidia-ml.so.1'
LIB_DIRS = (
    'usr/lib64',
    'usr/lib/x86_64-linux-gnu',
    'usr/lib/aarch64-linux-gnu',
    'usr/lib',
    'lib64',
    'lib/x86_64-linux-gnu',
    'lib/aarch64-linux-gnu',
    'usr/local/nvidia/lib64',
)

# NVML return codes (nvml.h) -> (reason code, hint)
REASONS = {
    4: ('no_permission', 'The caller cannot open /dev/nvidia*; run as root (become: true) or fix device permissions.'),
    9: (
        'driver_not_loaded',
        'The NVIDIA kernel module is not loaded: check `lsmod | grep nvidia`, the driver pod '
        '(nvidia-driver-daemonset) logs, nouveau blacklisting and Secure Boot.',
    ),
    12: (
        'library_not_found',
        'No libnvidia-ml.so.1 found: install the driver, or set driver_root/library_path '
        'to the operator-managed driver root (/run/nvidia/driver).',
    ),
    13: ('function_not_found', 'The NVML library is too old for this call; upgrade the driver.'),
    15: (
        'gpu_lost',
        'The GPU fell off the bus (Xid 79): drain the node, check `dmesg | grep -i xid`, reset or '
        'power-cycle the GPU, and check PCIe/thermal health.',
    ),
    18: (
        'driver_library_mismatch',
        'The user-space NVML library and the loaded kernel module differ (driver '
        'upgraded without reload): reboot or reload the nvidia modules, then restart the operands.',
    ),
    999: (
        'unknown',
        'NVML returned Unknown Error; in containers this is often missing /dev/char symlinks or a '
        'cgroup device rule (GPU Operator issue #485).',
    ),
}

CLOCK_EVENT_REASONS = (
    (0x1, 'gpu_idle'),
    (0x2, 'applications_clocks_setting'),
    (0x4, 'sw_power_cap'),
    (0x8, 'hw_slowdown'),
    (0x10, 'sync_boost'),
    (0x20, 'sw_thermal_slowdown'),
    (0x40, 'hw_thermal_slowdown'),
    (0x80, 'hw_power_brake_slowdown'),
    (0x100, 'display_clock_setting'),
)
ARCHITECTURES = {
    2: 'kepler',
    3: 'maxwell',
    4: 'pascal',
    5: 'volta',
    6: 'turing',
    7: 'ampere',
    8: 'ada',
    9: 'hopper',
    10: 'blackwell',
}
COMPUTE_MODES = {0: 'default', 1: 'exclusive_thread', 2: 'prohibited', 3: 'exclusive_process'}
FABRIC_STATES = {0: 'not_supported', 1: 'not_started', 2: 'in_progress', 3: 'completed'}
# "Benign" reasons: not a slowdown.
BENIGN_CLOCK_REASONS = frozenset(('gpu_idle', 'applications_clocks_setting', 'sync_boost', 'display_clock_setting'))


def reason_for(code):
    """(reason, hint) for an NVML return code."""
    if code in REASONS:
        return REASONS[code]
    return ('nvml_error_%d' % code, 'NVML returned error code %d; see nvml.h nvmlReturn_t.' % code)


def decode_clock_reasons(mask):
    if mask is None:
        return None
    return [name for bit, name in CLOCK_EVENT_REASONS if mask & bit]


def _text(value):
    if isinstance(value, bytes):
        return value.decode('utf-8', 'replace')
    return value


def candidate_paths(host_root='/', driver_root=DEFAULT_DRIVER_ROOT):
    """Absolute library paths under host_root/driver_root, in search order."""
    root = os.path.join(host_root, driver_root.lstrip('/'))
    return [os.path.join(root, d, SONAME) for d in LIB_DIRS]


class NvmlSession(object):
    """Loads the library into pynvml (optionally from a given path) and wraps calls."""

    def __init__(self, pynvml):
        self.nvml = pynvml
        self.library = None

    def load(self, library_path=None, host_root='/', driver_root=DEFAULT_DRIVER_ROOT):
        """Return (loaded_path or None, error code or None). Never raises."""
        nvml = self.nvml
        if library_path:
            return self._load_path(library_path)
        try:
            nvml.nvmlLib = None  # fresh load each run
            nvml._LoadNvmlLibrary()
            self.library = SONAME
            return SONAME, None
        except nvml.NVMLError:
            pass
        for path in candidate_paths(host_root, driver_root):
            if os.path.exists(path):
                return self._load_path(path)
        return None, 12

    def _load_path(self, path):
        nvml = self.nvml
        if not os.path.exists(path):
            return None, 12
        # pynvml has no public way to load the library from a path: its loader only dlopens the bare soname, which
        # misses the operator's driver root (/run/nvidia/driver) and library_path. So this does what its loader
        # does, under its lock: set its module-level library handle and drop its cached function pointers.
        with nvml.libLoadLock:
            try:
                nvml.nvmlLib = ctypes.CDLL(path)
            except OSError:
                return None, 12
            nvml._nvmlGetFunctionPointer_cache.clear()
        self.library = path
        return path, None

    def call(self, fn, *args):
        """(value, None) or (None, code); NOT_SUPPORTED/FUNCTION_NOT_FOUND give (None, None)."""
        try:
            return fn(*args), None
        except self.nvml.NVMLError as exc:
            code = getattr(exc, 'value', 999)
            if code in (3, 13):
                return None, None
            return None, code


def _field(sess, errors, name, fn, *args):
    value, code = sess.call(fn, *args)
    if code is not None:
        errors.append({'field': name, 'reason': reason_for(code)[0], 'code': code})
        if code == 15:
            raise _GpuLost()
    return value


class _GpuLost(Exception):
    pass


def gpu_facts(sess, index):
    """Facts for one GPU; never raises."""
    n = sess.nvml
    entry = {'index': index}
    handle, code = sess.call(n.nvmlDeviceGetHandleByIndex, index)
    if handle is None:
        code = 3 if code is None else code
        reason, hint = reason_for(code)
        entry.update(
            {
                'error': {'reason': reason, 'code': code, 'hint': hint},
                'health': {'status': 'critical', 'reasons': [reason]},
            }
        )
        return entry
    errors = []
    try:
        _collect(sess, handle, entry, errors)
    except _GpuLost:
        reason, hint = reason_for(15)
        entry['error'] = {'reason': reason, 'code': 15, 'hint': hint}
    if errors:
        entry['field_errors'] = errors
    entry['health'] = health(entry)
    return entry


def _collect(sess, h, e, errors):
    n = sess.nvml

    def f(name, fn, *args):
        return _field(sess, errors, name, fn, *args)

    e['name'] = _text(f('name', n.nvmlDeviceGetName, h))
    e['uuid'] = _text(f('uuid', n.nvmlDeviceGetUUID, h))
    e['serial'] = _text(f('serial', n.nvmlDeviceGetSerial, h))
    pci = f('pci', n.nvmlDeviceGetPciInfo, h)
    e['pci_bus_id'] = _text(pci.busId) if pci is not None else None
    e['pci_device_id'] = ('0x%08X' % pci.pciDeviceId) if pci is not None else None
    arch = f('architecture', n.nvmlDeviceGetArchitecture, h)
    e['architecture'] = ARCHITECTURES.get(arch, 'unknown') if arch is not None else None
    cc = f('compute_capability', n.nvmlDeviceGetCudaComputeCapability, h)
    e['compute_capability'] = '%d.%d' % tuple(cc) if cc is not None else None
    mem = f('memory', n.nvmlDeviceGetMemoryInfo, h)
    e['memory_total_bytes'] = mem.total if mem is not None else None
    e['memory_used_bytes'] = mem.used if mem is not None else None
    mig = f('mig_mode', n.nvmlDeviceGetMigMode, h)
    e['mig'] = {
        'current': bool(mig[0]) if mig else None,
        'pending': bool(mig[1]) if mig else None,
        'max_devices': f('mig_max_devices', n.nvmlDeviceGetMaxMigDeviceCount, h) if mig else None,
        'devices': _mig_devices(sess, h, e, errors) if mig and mig[0] else [],
    }
    ecc = f('ecc_mode', n.nvmlDeviceGetEccMode, h)
    e['ecc'] = {'current': bool(ecc[0]) if ecc else None, 'pending': bool(ecc[1]) if ecc else None}
    for kind, etype in (('corrected', 0), ('uncorrected', 1)):
        for scope, ctype in (('volatile', 0), ('aggregate', 1)):
            e['ecc']['%s_%s' % (scope, kind)] = (
                f('ecc_%s_%s' % (scope, kind), n.nvmlDeviceGetTotalEccErrors, h, etype, ctype) if ecc else None
            )
    sbe = f('retired_pages', n.nvmlDeviceGetRetiredPages, h, 0)
    dbe = f('retired_pages', n.nvmlDeviceGetRetiredPages, h, 1) if sbe is not None else None
    pend = f('retired_pages_pending', n.nvmlDeviceGetRetiredPagesPendingStatus, h)
    e['retired_pages'] = {
        'single_bit': len(sbe) if sbe is not None else None,
        'double_bit': len(dbe) if dbe is not None else None,
        'pending': bool(pend) if pend is not None else None,
    }
    rows = f('remapped_rows', n.nvmlDeviceGetRemappedRows, h)
    e['remapped_rows'] = dict(
        zip(
            ('corrected', 'uncorrected', 'pending', 'failure'),
            (rows[0], rows[1], bool(rows[2]), bool(rows[3])) if rows else (None,) * 4,
        )
    )
    e['temperature_c'] = f('temperature', n.nvmlDeviceGetTemperature, h, 0)
    pw = f('power_usage', n.nvmlDeviceGetPowerUsage, h)
    lim = f('power_limit', n.nvmlDeviceGetEnforcedPowerLimit, h)
    e['power_usage_w'] = pw / 1000.0 if pw is not None else None
    e['power_limit_w'] = lim / 1000.0 if lim is not None else None
    pm = f('persistence_mode', n.nvmlDeviceGetPersistenceMode, h)
    e['persistence_mode'] = bool(pm) if pm is not None else None
    cm = f('compute_mode', n.nvmlDeviceGetComputeMode, h)
    e['compute_mode'] = COMPUTE_MODES.get(cm, str(cm)) if cm is not None else None
    getter = getattr(n, 'nvmlDeviceGetCurrentClocksEventReasons', None) or n.nvmlDeviceGetCurrentClocksThrottleReasons
    mask = f('clock_event_reasons', getter, h)
    e['clock_event_reasons_mask'] = mask
    e['clock_event_reasons'] = decode_clock_reasons(mask)
    e['pcie_generation'] = f('pcie_generation', n.nvmlDeviceGetCurrPcieLinkGeneration, h)
    e['pcie_width'] = f('pcie_width', n.nvmlDeviceGetCurrPcieLinkWidth, h)
    e['vbios_version'] = _text(f('vbios_version', n.nvmlDeviceGetVbiosVersion, h))
    e['fabric'] = _fabric(sess, h, f)


def _fabric(sess, h, f):
    n = sess.nvml
    info = n.c_nvmlGpuFabricInfo_t()
    rc = f('fabric', n.nvmlDeviceGetGpuFabricInfo, h, ctypes.byref(info))
    if rc is None:
        return None
    state = FABRIC_STATES.get(info.state, str(info.state))
    if state == 'not_supported':
        return None
    return {
        'state': state,
        'status': reason_for(info.status)[0] if info.status else 'success',
        'clique_id': info.cliqueId,
    }


def _mig_devices(sess, h, e, errors):
    n = sess.nvml
    count = _field(sess, errors, 'mig_max_devices', n.nvmlDeviceGetMaxMigDeviceCount, h) or 0
    devices = []
    for j in range(count):
        mh, code = sess.call(n.nvmlDeviceGetMigDeviceHandleByIndex, h, j)
        if mh is None:
            continue  # slot not populated (NOT_FOUND) or unsupported
        mem, dummy = sess.call(n.nvmlDeviceGetMemoryInfo, mh)
        uuid, dummy = sess.call(n.nvmlDeviceGetUUID, mh)
        devices.append({'index': j, 'uuid': _text(uuid), 'memory_total_bytes': mem.total if mem else None})
    return devices


def health(e):
    """Verdict: {'status': ok|warning|critical, 'reasons': [...]}."""
    crit, warn = [], []
    if e.get('error'):
        crit.append(e['error']['reason'])
    rows = e.get('remapped_rows') or {}
    if rows.get('pending'):
        crit.append('row_remap_pending_reset_required')
    if rows.get('failure'):
        crit.append('row_remap_failure')
    ecc = e.get('ecc') or {}
    if ecc.get('volatile_uncorrected'):
        crit.append('uncorrectable_ecc_volatile')
    elif ecc.get('aggregate_uncorrected'):
        warn.append('uncorrectable_ecc_aggregate')
    pages = e.get('retired_pages') or {}
    if pages.get('pending'):
        crit.append('retired_pages_pending_reset_required')
    reasons = e.get('clock_event_reasons') or []
    for r in ('hw_thermal_slowdown', 'sw_thermal_slowdown', 'hw_slowdown', 'hw_power_brake_slowdown'):
        if r in reasons:
            crit.append(r) if r.startswith('hw') else warn.append(r)
    if 'sw_power_cap' in reasons:
        warn.append('sw_power_cap')
    if (e.get('mig') or {}).get('current') is not None and e['mig']['current'] != e['mig']['pending']:
        warn.append('mig_mode_change_pending_reset')
    fabric = e.get('fabric')
    if fabric and fabric['state'] != 'completed':
        warn.append('fabric_not_registered')
    status = 'critical' if crit else ('warning' if warn else 'ok')
    return {'status': status, 'reasons': crit + warn}


def collect(pynvml, library_path=None, host_root='/', driver_root=DEFAULT_DRIVER_ROOT):
    """The whole nvidia_gpu fact; never raises for NVML errors."""
    facts = {
        'available': False,
        'reason': None,
        'hint': None,
        'library_path': None,
        'driver_version': None,
        'nvml_version': None,
        'cuda_driver_version': None,
        'gpu_count': 0,
        'gpus': [],
        'health': None,
    }
    sess = NvmlSession(pynvml)
    path, code = sess.load(library_path, host_root, driver_root)
    if code is not None:
        facts['reason'], facts['hint'] = reason_for(code)
        return facts
    facts['library_path'] = path
    try:
        pynvml.nvmlInit()
        code = None
    except pynvml.NVMLError as exc:
        code = getattr(exc, 'value', 999)
    if code is not None:
        facts['reason'], facts['hint'] = reason_for(code)
        return facts
    try:
        facts['available'] = True
        facts['driver_version'] = _text(sess.call(pynvml.nvmlSystemGetDriverVersion)[0])
        facts['nvml_version'] = _text(sess.call(pynvml.nvmlSystemGetNVMLVersion)[0])
        cuda = sess.call(pynvml.nvmlSystemGetCudaDriverVersion)[0]
        facts['cuda_driver_version'] = '%d.%d' % (cuda // 1000, (cuda % 1000) // 10) if cuda else None
        count, code = sess.call(pynvml.nvmlDeviceGetCount)
        if code is not None:
            facts['available'] = False
            facts['reason'], facts['hint'] = reason_for(code)
            return facts
        facts['gpu_count'] = count or 0
        facts['gpus'] = [gpu_facts(sess, i) for i in range(facts['gpu_count'])]
        statuses = [g['health']['status'] for g in facts['gpus']]
        facts['health'] = 'critical' if 'critical' in statuses else ('warning' if 'warning' in statuses else 'ok')
    finally:
        sess.call(pynvml.nvmlShutdown)
    return facts


def require_gpus_problem(facts):
    """Message for require_gpus, or None when the node has usable GPUs."""
    if not facts['available']:
        return 'NVML unavailable (%s): %s' % (facts['reason'], facts['hint'])
    if not facts['gpu_count']:
        return 'NVML reports no GPUs'
    failed = ['%d (%s)' % (g['index'], g['error']['reason']) for g in facts['gpus'] if g.get('error')]
    if failed:
        return 'GPUs with errors: %s' % ', '.join(failed)
    return None
