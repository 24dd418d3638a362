# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# NOTE: THIS MODULE UTIL IS PRIVATE TO THE gpuops.gpu_operator COLLECTION. It may change incompatibly at any
# time; do not use it from other collections.

"""GPU host facts read from files under a host root: every reader returns data or records a problem."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import json
import os
import platform
import re
import shlex

try:
    import tomllib as _toml
except ImportError:  # Python < 3.11 on the target
    try:
        import tomli as _toml
    except ImportError:
        _toml = None

NVIDIA_VENDOR = '0x10de'
SECURE_BOOT_VAR = 'sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c'
MODULES = ('nvidia', 'nvidia_uvm', 'nvidia_modeset', 'nvidia_drm', 'nvidia_peermem', 'nouveau')
VALIDATION_COMPONENTS = ('driver', 'toolkit', 'cuda', 'plugin')

# distribution -> (containerd config candidates, socket, marker paths)
DISTRIBUTIONS = (
    (
        'rke2',
        ('var/lib/rancher/rke2/agent/etc/containerd/config.toml',),
        '/run/k3s/containerd/containerd.sock',
        ('etc/rancher/rke2', 'var/lib/rancher/rke2'),
    ),
    (
        'k3s',
        ('var/lib/rancher/k3s/agent/etc/containerd/config.toml',),
        '/run/k3s/containerd/containerd.sock',
        ('etc/rancher/k3s', 'var/lib/rancher/k3s'),
    ),
    (
        'microk8s',
        ('var/snap/microk8s/current/args/containerd-template.toml',),
        '/var/snap/microk8s/common/run/containerd.sock',
        ('var/snap/microk8s',),
    ),
    (
        'k0s',
        ('etc/k0s/containerd.toml', 'etc/k0s/containerd.d/nvidia.toml'),
        '/run/k0s/containerd.sock',
        ('etc/k0s', 'var/lib/k0s'),
    ),
    (
        'kubeadm',
        ('etc/containerd/config.toml',),
        '/run/containerd/containerd.sock',
        ('etc/kubernetes/kubelet.conf', 'etc/kubernetes/manifests'),
    ),
)
TEMPLATES = {
    'rke2': 'var/lib/rancher/rke2/agent/etc/containerd/config.toml.tmpl',
    'k3s': 'var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl',
}


class Reader(object):
    """File access relative to host_root; records problems instead of raising."""

    def __init__(self, host_root='/'):
        self.root = host_root or '/'
        self.problems = []

    def path(self, rel):
        return os.path.join(self.root, rel.lstrip('/'))

    def exists(self, rel):
        return os.path.lexists(self.path(rel))

    def problem(self, rel, reason, detail=None):
        self.problems.append({'source': '/' + rel.lstrip('/'), 'reason': reason, 'detail': detail})

    def read(self, rel, required=False, binary=False):
        """Content, or None when absent (a problem only if required) or unreadable (always a problem)."""
        try:
            with open(self.path(rel), 'rb') as f:
                data = f.read()
        except (IOError, OSError) as exc:
            missing = getattr(exc, 'errno', None) == 2
            if required or not missing:
                self.problem(rel, 'missing' if missing else 'unreadable', str(exc))
            return None
        return data if binary else data.decode('utf-8', 'replace')

    def listdir(self, rel):
        try:
            return sorted(os.listdir(self.path(rel)))
        except (IOError, OSError) as exc:
            if getattr(exc, 'errno', None) not in (2, 20):
                self.problem(rel, 'unreadable', str(exc))
            return []

    def readlink(self, rel):
        try:
            return os.readlink(self.path(rel))
        except (IOError, OSError):
            return None

    def resolves(self, rel):
        """True when rel exists, following symlinks inside the host root."""
        seen = 0
        while seen < 16:
            target = self.readlink(rel)
            if target is None:
                return os.path.exists(self.path(rel))
            rel = target if target.startswith('/') else os.path.normpath(os.path.join(os.path.dirname(rel), target))
            seen += 1
        return False

    def toml(self, rel):
        text = self.read(rel)
        if text is None:
            return None
        if _toml is None:
            self.problem(rel, 'toml_parser_unavailable', 'needs Python 3.11 tomllib or tomli on the target')
            return None
        try:
            return parse_toml(text)
        except ValueError as exc:
            self.problem(rel, 'malformed', str(exc))
            return None

    def json(self, rel):
        text = self.read(rel)
        if text is None:
            return None
        try:
            data = json.loads(text)
        except ValueError as exc:
            self.problem(rel, 'malformed', str(exc))
            return None
        if not isinstance(data, dict):
            self.problem(rel, 'malformed', 'top level is not an object')
            return None
        return data


def parse_toml(text):
    """Parse TOML; raises ValueError (tomllib.TOMLDecodeError is one) on bad input."""
    return _toml.loads(text)


def parse_os_release(text):
    """KEY=value lines with shell quoting (os-release(5)); bad lines are skipped and counted."""
    out, bad = {}, 0
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        key, sep, value = line.partition('=')
        if not sep or not re.match(r'^[A-Z_][A-Z0-9_]*$', key):
            bad += 1
            continue
        try:
            parts = shlex.split(value)
        except ValueError:
            bad += 1
            continue
        out[key] = ' '.join(parts) if parts else ''
    return out, bad


def parse_kv(text):
    """KEY=value lines (validator status files)."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition('=')
        if sep and key:
            out[key] = value.strip()
    return out


NVRM_RE = re.compile(r'^NVRM version:\s+(?P<desc>.*?)\s+(?P<version>\d+\.\d+(?:\.\d+)?)\s', re.M)
GCC_RE = re.compile(r'^GCC version:\s+(?P<gcc>.+)$', re.M)


def parse_nvidia_version(text):
    """Parse /proc/driver/nvidia/version; None when no NVRM line."""
    m = NVRM_RE.search(text)
    if not m:
        return None
    gcc = GCC_RE.search(text)
    return {
        'version': m.group('version'),
        'flavor': 'open' if 'Open Kernel Module' in m.group('desc') else 'proprietary',
        'gcc': gcc.group('gcc').strip() if gcc else None,
    }


def parse_modprobe(text):
    """(blacklisted modules, {module: options}) from modprobe.d text."""
    black, opts = set(), {}
    for line in text.splitlines():
        words = line.split('#', 1)[0].split()
        if len(words) >= 2 and words[0] == 'blacklist':
            black.add(words[1])
        elif len(words) >= 3 and words[0] == 'options':
            opts.setdefault(words[1], {}).update(dict(w.partition('=')[::2] for w in words[2:]))
        elif len(words) >= 3 and words[0] == 'install' and words[2] in ('/bin/false', '/bin/true', '/usr/bin/false'):
            black.add(words[1])
    return black, opts


def parse_cmdline(text):
    args = {}
    for word in (text or '').split():
        if word == '--':  # the rest goes to init
            break
        key, sep, value = word.partition('=')
        args[key] = value if sep else True
    return args


def secure_boot(raw):
    """EFI variable content: 4 attribute bytes then one value byte."""
    if raw is None or len(raw) < 5:
        return None
    return bytearray(raw)[4] == 1


def _get(d, *keys):
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def containerd_summary(cfg):
    """Runtimes, default runtime, CDI and cgroup driver from a parsed containerd config (v2 or v3)."""
    plugins = cfg.get('plugins') or {}
    version = cfg.get('version')
    cri = (
        (_get(plugins, 'io.containerd.cri.v1.runtime') if version == 3 else None)
        or _get(plugins, 'io.containerd.grpc.v1.cri')
        or {}
    )
    ctd = cri.get('containerd') or {}
    runtimes = ctd.get('runtimes') or {}
    nvidia = runtimes.get('nvidia') or {}
    return {
        'version': version,
        'runtimes': sorted(runtimes) if isinstance(runtimes, dict) else [],
        'default_runtime': ctd.get('default_runtime_name'),
        'nvidia_runtime': bool(nvidia),
        'nvidia_runtime_binary': _get(nvidia, 'options', 'BinaryName'),
        'systemd_cgroup': _get(runtimes, ctd.get('default_runtime_name') or 'runc', 'options', 'SystemdCgroup'),
        'cdi_enabled': cri.get('enable_cdi'),
        'imports': cfg.get('imports') or [],
    }


def merge_containerd(base, extra):
    for key in ('runtimes',):
        base[key] = sorted(set(base[key]) | set(extra[key]))
    for key in ('default_runtime', 'nvidia_runtime_binary', 'systemd_cgroup', 'cdi_enabled'):
        if extra[key] is not None:
            base[key] = extra[key]
    base['nvidia_runtime'] = base['nvidia_runtime'] or extra['nvidia_runtime']
    return base


def crio_summary(cfg):
    runtime = _get(cfg, 'crio', 'runtime') or {}
    runtimes = runtime.get('runtimes') or {}
    return {
        'runtimes': sorted(runtimes),
        'default_runtime': runtime.get('default_runtime'),
        'nvidia_runtime': 'nvidia' in runtimes,
        'cgroup_manager': runtime.get('cgroup_manager'),
    }


def docker_summary(cfg):
    runtimes = cfg.get('runtimes') or {}
    return {
        'runtimes': sorted(runtimes) if isinstance(runtimes, dict) else [],
        'default_runtime': cfg.get('default-runtime'),
        'nvidia_runtime': 'nvidia' in runtimes,
        'cdi_enabled': _get(cfg, 'features', 'cdi'),
    }


class HostFacts(object):
    def __init__(self, host_root='/'):
        self.r = Reader(host_root)

    def collect(self):
        r = self.r
        facts = {'host_root': r.root}
        facts['kernel'] = self.kernel()
        facts['os'] = self.os_release()
        facts['cmdline'] = self.cmdline()
        facts['modules'] = self.modules()
        facts['nouveau'] = self.nouveau(facts['cmdline']['args'], facts['modules'])
        facts['nvidia_driver'] = self.nvidia_driver()
        facts['secure_boot'] = self.secure_boot()
        facts['pci'] = self.pci()
        facts['iommu'] = self.iommu(facts['cmdline']['args'])
        facts['devices'] = self.devices()
        facts['kubernetes'] = self.kubernetes()
        facts['container_runtime'] = self.container_runtime(facts['kubernetes']['distribution'])
        facts['cdi'] = self.cdi()
        facts['container_toolkit'] = self.toolkit()
        facts['validations'] = self.validations()
        facts['fabric_manager'] = self.fabric_manager(facts['pci'])
        facts['unattended_upgrades'] = self.unattended_upgrades()
        facts['problems'] = r.problems
        return facts

    def kernel(self):
        r = self.r
        release = (r.read('proc/sys/kernel/osrelease', required=True) or '').strip() or None
        version = (r.read('proc/sys/kernel/version') or '').strip() or None
        arch = (r.read('proc/sys/kernel/arch') or '').strip() or None
        if arch is None and r.root == '/':
            arch = platform.machine()
        headers = None
        if release:
            headers = any(
                r.resolves(p)
                for p in (
                    'lib/modules/%s/build' % release,
                    'usr/src/kernels/%s' % release,
                    'usr/src/linux-headers-%s' % release,
                )
            )
        return {'release': release, 'version': version, 'architecture': arch, 'headers_present': headers}

    def os_release(self):
        r = self.r
        text = r.read('etc/os-release')
        source = 'etc/os-release'
        if text is None:
            text, source = r.read('usr/lib/os-release', required=True), 'usr/lib/os-release'
        data, bad = parse_os_release(text or '')
        if bad:
            r.problem(source, 'malformed', '%d line(s) ignored' % bad)
        return {
            'id': data.get('ID'),
            'version_id': data.get('VERSION_ID'),
            'id_like': data.get('ID_LIKE', '').split(),
            'pretty_name': data.get('PRETTY_NAME'),
            'version_codename': data.get('VERSION_CODENAME'),
        }

    def cmdline(self):
        text = (self.r.read('proc/cmdline', required=True) or '').strip()
        return {'raw': text or None, 'args': parse_cmdline(text)}

    def modules(self):
        r = self.r
        out = {}
        for name in MODULES:
            loaded = r.exists('sys/module/%s' % name)
            refcnt = None
            if loaded:
                raw = r.read('sys/module/%s/refcnt' % name)
                try:
                    refcnt = int(raw.strip()) if raw is not None else None
                except ValueError:
                    r.problem('sys/module/%s/refcnt' % name, 'malformed', raw[:40])
            out[name] = {'loaded': loaded, 'refcount': refcnt}
        return out

    def nouveau(self, args, modules):
        r = self.r
        black, opts, files = set(), {}, []
        for d in ('etc/modprobe.d', 'usr/lib/modprobe.d', 'lib/modprobe.d', 'run/modprobe.d'):
            for name in r.listdir(d):
                if not name.endswith('.conf'):
                    continue
                text = r.read('%s/%s' % (d, name))
                if text is None:
                    continue
                b, o = parse_modprobe(text)
                if 'nouveau' in b or 'nouveau' in o:
                    files.append('/%s/%s' % (d, name))
                black |= b
                for k, v in o.items():
                    opts.setdefault(k, {}).update(v)
        cmd_black = 'nouveau' in str(args.get('modprobe.blacklist', '')).split(',') or 'nouveau' in str(
            args.get('rd.driver.blacklist', '')
        ).split(',')
        return {
            'loaded': modules['nouveau']['loaded'],
            'blacklisted_modprobe': 'nouveau' in black,
            'modeset_disabled': opts.get('nouveau', {}).get('modeset') == '0' or args.get('nouveau.modeset') == '0',
            'blacklisted_cmdline': cmd_black,
            'blacklist_files': files,
        }

    def nvidia_driver(self):
        text = self.r.read('proc/driver/nvidia/version')
        parsed = parse_nvidia_version(text) if text is not None else None
        if text is not None and parsed is None:
            self.r.problem('proc/driver/nvidia/version', 'malformed', text[:80])
        out = {'loaded': parsed is not None, 'version': None, 'flavor': None, 'gcc': None}
        out.update(parsed or {})
        return out

    def secure_boot(self):
        r = self.r
        efi = r.exists('sys/firmware/efi')
        raw = r.read(SECURE_BOOT_VAR, binary=True) if efi else None
        state = secure_boot(raw)
        if raw is not None and state is None:
            r.problem(SECURE_BOOT_VAR, 'malformed', 'expected at least 5 bytes')
        return {'efi': efi, 'enabled': state if efi else False}

    def pci(self):
        r = self.r
        base = 'sys/bus/pci/devices'
        devices = []
        for addr in r.listdir(base):
            d = '%s/%s' % (base, addr)
            vendor = (r.read(d + '/vendor') or '').strip().lower()
            if vendor != NVIDIA_VENDOR:
                continue
            cls = (r.read(d + '/class') or '').strip().lower()
            device = (r.read(d + '/device') or '').strip().lower() or None
            numa = (r.read(d + '/numa_node') or '').strip()
            driver = r.readlink(d + '/driver')
            group = r.readlink(d + '/iommu_group')
            kind = (
                'nvswitch'
                if cls.startswith('0x0680')
                else ('gpu' if cls.startswith('0x0302') or cls.startswith('0x0300') else 'other')
            )
            devices.append(
                {
                    'address': addr,
                    'device_id': device,
                    'class': cls or None,
                    'kind': kind,
                    'driver': os.path.basename(driver) if driver else None,
                    'numa_node': int(numa) if re.match(r'^-?\d+$', numa) else None,
                    'iommu_group': os.path.basename(group) if group else None,
                }
            )
        return {
            'devices': devices,
            'gpu_count': sum(1 for d in devices if d['kind'] == 'gpu'),
            'nvswitch_count': sum(1 for d in devices if d['kind'] == 'nvswitch'),
        }

    def iommu(self, args):
        groups = self.r.listdir('sys/kernel/iommu_groups')
        return {
            'enabled': bool(groups),
            'groups': len(groups),
            'cmdline': {k: args[k] for k in ('intel_iommu', 'amd_iommu', 'iommu') if k in args},
        }

    def devices(self):
        r = self.r
        nodes = [n for n in r.listdir('dev') if n.startswith('nvidia')]
        links = {}
        for name in r.listdir('dev/char'):
            target = r.readlink('dev/char/' + name)
            if target and os.path.basename(target).startswith('nvidia'):
                links[name] = target
        linked = {os.path.basename(t) for t in links.values()}
        return {
            'nodes': nodes,
            'char_links': links,
            'char_links_missing': sorted(n for n in nodes if n != 'nvidia-caps' and n not in linked),
        }

    def kubernetes(self):
        r = self.r
        for name, _configs, _socket, markers in DISTRIBUTIONS:
            if any(r.exists(m) for m in markers):
                role = None
                if name == 'kubeadm':
                    role = 'control-plane' if r.exists('etc/kubernetes/manifests/kube-apiserver.yaml') else 'worker'
                elif name in ('k3s', 'rke2'):
                    role = 'server' if r.exists('var/lib/rancher/%s/server' % name) else 'agent'
                return {'distribution': name, 'role': role}
        return {'distribution': None, 'role': None}

    def container_runtime(self, distro):
        r = self.r
        out = {
            'name': None,
            'config_path': None,
            'socket': None,
            'socket_present': False,
            'config': None,
            'template_path': None,
        }
        for name, configs, socket, _markers in DISTRIBUTIONS:
            if distro and name != distro:
                continue
            present = [c for c in configs if r.exists(c)]
            if present or distro == name:
                cfg = (present or configs)[0]
                out.update({'name': 'containerd', 'config_path': '/' + cfg, 'socket': socket})
                break
        if out['name'] is None or not r.exists(out['config_path']):
            if r.exists('etc/crio/crio.conf') or r.exists('etc/crio/crio.conf.d'):
                return self._crio(out)
            if r.exists('etc/docker/daemon.json') and not r.exists('etc/containerd/config.toml'):
                return self._docker(out)
        if out['name'] == 'containerd':
            out['socket_present'] = r.exists(out['socket'])
            if distro in TEMPLATES and r.exists(TEMPLATES[distro]):
                out['template_path'] = '/' + TEMPLATES[distro]
            cfg = r.toml(out['config_path'])
            if isinstance(cfg, dict):
                summary = containerd_summary(cfg)
                for pattern in summary['imports']:
                    for extra in self._glob(pattern):
                        sub = r.toml(extra)
                        if isinstance(sub, dict):
                            summary = merge_containerd(summary, containerd_summary(sub))
                out['config'] = summary
        return out

    def _glob(self, pattern):
        d, pat = os.path.split(pattern.lstrip('/'))
        return ['%s/%s' % (d, n) for n in self.r.listdir(d) if fnmatch.fnmatch(n, pat)]

    def _crio(self, out):
        r = self.r
        out.update({'name': 'cri-o', 'config_path': '/etc/crio/crio.conf', 'socket': '/run/crio/crio.sock'})
        out['socket_present'] = r.exists(out['socket'])
        summary = crio_summary(r.toml('etc/crio/crio.conf') or {})
        for name in r.listdir('etc/crio/crio.conf.d'):
            extra = crio_summary(r.toml('etc/crio/crio.conf.d/' + name) or {})
            summary['runtimes'] = sorted(set(summary['runtimes']) | set(extra['runtimes']))
            summary['nvidia_runtime'] = summary['nvidia_runtime'] or extra['nvidia_runtime']
            summary['default_runtime'] = extra['default_runtime'] or summary['default_runtime']
        out['config'] = summary
        return out

    def _docker(self, out):
        r = self.r
        out.update({'name': 'docker', 'config_path': '/etc/docker/daemon.json', 'socket': '/run/docker.sock'})
        out['socket_present'] = r.exists(out['socket'])
        cfg = r.json('etc/docker/daemon.json')
        out['config'] = docker_summary(cfg) if cfg is not None else None
        return out

    def cdi(self):
        r = self.r
        specs = []
        for d in ('etc/cdi', 'var/run/cdi', 'run/cdi'):
            for name in r.listdir(d):
                rel = '%s/%s' % (d, name)
                kind = None
                if name.endswith('.json'):
                    data = r.json(rel)
                    kind = data.get('kind') if data else None
                elif name.endswith(('.yaml', '.yml')):
                    kind = _yaml_kind(r, rel)
                else:
                    continue
                specs.append({'path': '/' + rel, 'kind': kind})
        return {'specs': specs, 'nvidia': any((s['kind'] or '').startswith('nvidia.com/') for s in specs)}

    def toolkit(self):
        r = self.r
        for rel in (
            'etc/nvidia-container-runtime/config.toml',
            'usr/local/nvidia/toolkit/.config/nvidia-container-runtime/config.toml',
        ):
            if r.exists(rel):
                cfg = r.toml(rel) or {}
                ncr = cfg.get('nvidia-container-runtime') or {}
                return {
                    'installed': True,
                    'config_path': '/' + rel,
                    'mode': ncr.get('mode'),
                    'cdi_default_kind': _get(ncr, 'modes', 'cdi', 'default-kind'),
                    'ldconfig': _get(cfg, 'nvidia-container-cli', 'ldconfig'),
                    'root': _get(cfg, 'nvidia-container-cli', 'root'),
                }
        return {
            'installed': False,
            'config_path': None,
            'mode': None,
            'cdi_default_kind': None,
            'ldconfig': None,
            'root': None,
        }

    def validations(self):
        r = self.r
        d = 'run/nvidia/validations'
        files = r.listdir(d)
        ready = {c: '%s-ready' % c in files for c in VALIDATION_COMPONENTS}
        driver = r.read(d + '/driver-ready')
        return {
            'present': r.exists(d),
            'files': files,
            'ready': ready,
            'all_ready': all(ready.values()),
            'driver_ready': parse_kv(driver) if driver else None,
        }

    def fabric_manager(self, pci):
        r = self.r
        unit = 'nvidia-fabricmanager.service'
        installed = any(
            r.exists('%s/%s' % (d, unit))
            for d in ('etc/systemd/system', 'lib/systemd/system', 'usr/lib/systemd/system')
        )
        enabled = any(
            r.exists('etc/systemd/system/%s/%s' % (w, unit))
            for w in r.listdir('etc/systemd/system')
            if w.endswith('.wants')
        )
        return {'installed': installed, 'enabled': enabled, 'required': pci['nvswitch_count'] > 0}

    def unattended_upgrades(self):
        r = self.r
        text = r.read('etc/apt/apt.conf.d/20auto-upgrades')
        if text is not None:
            m = re.search(r'APT::Periodic::Unattended-Upgrade\s+"(\d+)"', text)
            blk = r.read('etc/apt/apt.conf.d/50unattended-upgrades') or ''
            return {
                'tool': 'unattended-upgrades',
                'enabled': bool(m and m.group(1) != '0'),
                'kernel_blacklisted': bool(
                    re.search(r'"linux-', blk.split('Package-Blacklist', 1)[-1] if 'Package-Blacklist' in blk else '')
                ),
            }
        if r.exists('etc/dnf/automatic.conf'):
            timer = any(
                r.exists('etc/systemd/system/timers.target.wants/%s' % t)
                for t in ('dnf-automatic.timer', 'dnf-automatic-install.timer')
            )
            text = r.read('etc/dnf/automatic.conf') or ''
            apply = re.search(r'^\s*apply_updates\s*=\s*(yes|true|1)\s*$', text, re.M | re.I) is not None
            return {'tool': 'dnf-automatic', 'enabled': timer and apply, 'kernel_blacklisted': None}
        return {'tool': None, 'enabled': False, 'kernel_blacklisted': None}


def _yaml_kind(r, rel):
    text = r.read(rel)
    if text is None:
        return None
    try:
        import yaml
    except ImportError:
        return None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        r.problem(rel, 'malformed', str(exc)[:200])
        return None
    return data.get('kind') if isinstance(data, dict) else None


def collect(host_root='/'):
    return HostFacts(host_root).collect()
