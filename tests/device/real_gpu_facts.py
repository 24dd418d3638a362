"""Run nvidia_gpu_facts' collection on a machine with a real NVIDIA GPU and time it against `nvidia-smi -q -x`.

Needs only Python 3, this checkout and nvidia-ml-py (`pip install nvidia-ml-py`); ansible is optional (when it
is importable the module itself is also run through AnsibleModule). One short command, well under a minute:

    python3 tests/device/real_gpu_facts.py [--repeat 5] [--json out.json]

Prints the facts summary, cross-checks GPU count, driver version, UUIDs, bus ids and names with nvidia-smi's XML,
and the timing figures (best of --repeat). Exit status 0 when the cross-checks pass.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def bootstrap():
    base = Path(tempfile.mkdtemp(prefix="gpuops-acp-"))
    (base / "ansible_collections" / "gpuops").mkdir(parents=True)
    (base / "ansible_collections" / "gpuops" / "gpu_operator").symlink_to(ROOT)
    sys.path.insert(0, str(base))


def best(fn, repeat):
    times, result = [], None
    for _unused in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def run_module_in_process():
    try:
        from ansible.module_utils.testing import patch_module_args
    except ImportError:
        return None
    import io
    from contextlib import redirect_stdout

    from ansible_collections.gpuops.gpu_operator.plugins.modules import nvidia_gpu_facts

    buf = io.StringIO()
    with patch_module_args({}), redirect_stdout(buf):
        try:
            nvidia_gpu_facts.main()
        except SystemExit:
            pass
    return json.loads(buf.getvalue())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", help="write the facts here")
    args = ap.parse_args()
    bootstrap()
    import pynvml

    from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients import nvml as _nvml

    t_facts, facts = best(lambda: _nvml.collect(pynvml), args.repeat)
    print(
        f"nvidia-ml-py {getattr(pynvml, '__version__', '?')}; available={facts['available']} "
        f"reason={facts['reason']} library={facts['library_path']}"
    )
    print(
        f"driver={facts['driver_version']} nvml={facts['nvml_version']} cuda={facts['cuda_driver_version']} "
        f"gpus={facts['gpu_count']} health={facts['health']}"
    )
    for g in facts["gpus"]:
        print(
            f"  [{g['index']}] {g.get('name')} {g.get('uuid')} bus={g.get('pci_bus_id')} arch={g.get('architecture')}"
            f" cc={g.get('compute_capability')} mem={g.get('memory_total_bytes')} mig={g.get('mig')}"
            f" ecc={g.get('ecc')} rows={g.get('remapped_rows')} temp={g.get('temperature_c')}"
            f" power={g.get('power_usage_w')}/{g.get('power_limit_w')}W clocks={g.get('clock_event_reasons')}"
            f" pcie=gen{g.get('pcie_generation')}x{g.get('pcie_width')} fabric={g.get('fabric')}"
            f" health={g['health']} errors={g.get('field_errors') or g.get('error')}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(facts, indent=2))
    ok = facts["available"]
    smi = shutil.which("nvidia-smi")
    if smi:
        t_smi, xml = best(
            lambda: subprocess.run([smi, "-q", "-x"], capture_output=True, text=True, check=True).stdout, args.repeat
        )
        root = ET.fromstring(xml)
        gpus = root.findall("gpu")
        checks = {
            "gpu_count": (len(gpus), facts["gpu_count"]),
            "driver_version": (root.findtext("driver_version"), facts["driver_version"]),
            "uuids": ([g.findtext("uuid") for g in gpus], [x.get("uuid") for x in facts["gpus"]]),
            "bus_ids": ([g.get("id") for g in gpus], [x.get("pci_bus_id") for x in facts["gpus"]]),
            "names": ([g.findtext("product_name") for g in gpus], [x.get("name") for x in facts["gpus"]]),
        }
        for key, (want, got) in checks.items():
            same = want == got
            ok = ok and same
            print(f"check {key}: {'OK' if same else 'DIFF'} nvidia-smi={want} facts={got}")
        print(
            f"timing best of {args.repeat}: facts {1000 * t_facts:.1f} ms, nvidia-smi -q -x {1000 * t_smi:.1f} ms,"
            f" ratio {t_facts / t_smi:.3f}"
        )
    else:
        print(f"timing best of {args.repeat}: facts {1000 * t_facts:.1f} ms; nvidia-smi not found")
    module = run_module_in_process()
    if module is not None:
        mf = module.get("ansible_facts", {}).get("nvidia_gpu", {})
        print(f"module run: keys={sorted(module)} gpu_count={mf.get('gpu_count')} health={mf.get('health')}")
        ok = ok and mf.get("gpu_count") == facts["gpu_count"]
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
