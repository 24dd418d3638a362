"""DCGM-exporter stand-in: Prometheus text metrics for every simulated GPU, served on loopback.

One HTTP server for the whole cluster (no pod runs under kwok, so no per-node :9400 endpoint exists); each
series carries gpu, UUID, device, modelName, Hostname and DCGM_FI_DRIVER_VERSION labels, as the real exporter's.
Only nodes whose nvidia-dcgm-exporter pod is Ready are exported.
"""

from __future__ import annotations

import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import logic as L

METRICS = (
    # name, type, help
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %)."),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB)."),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors"),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors"),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed"),
)


def _h(*parts) -> int:
    return int(hashlib.sha1("/".join(map(str, parts)).encode()).hexdigest()[:8], 16)


def gpu_values(node_name: str, index: int, memory_mib: int, xid: int, tick: int = 0) -> dict:
    """Deterministic, plausible per-GPU values (they drift slowly with tick)."""
    base = _h(node_name, index)
    util = (base + tick) % 101
    mem = memory_mib or 16384
    used = min(mem, (base % 97) * mem // 100)
    reserved = min(mem - used, 512)
    return {
        "DCGM_FI_DEV_SM_CLOCK": 1410 + base % 570,
        "DCGM_FI_DEV_MEM_CLOCK": 1593,
        "DCGM_FI_DEV_GPU_TEMP": 30 + base % 45,
        "DCGM_FI_DEV_MEMORY_TEMP": 32 + base % 40,
        "DCGM_FI_DEV_POWER_USAGE": round(60 + (base % 600) + util * 0.5, 3),
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 10_000_000 + base % 1_000_000 + tick * 1000,
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": 0,
        "DCGM_FI_DEV_GPU_UTIL": util,
        "DCGM_FI_DEV_MEM_COPY_UTIL": util // 2,
        "DCGM_FI_DEV_ENC_UTIL": 0,
        "DCGM_FI_DEV_DEC_UTIL": 0,
        "DCGM_FI_DEV_XID_ERRORS": xid,
        "DCGM_FI_DEV_FB_FREE": mem - used - reserved,
        "DCGM_FI_DEV_FB_USED": used,
        "DCGM_FI_DEV_FB_RESERVED": reserved,
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": 0,
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": 0,
        "DCGM_FI_DEV_ROW_REMAP_FAILURE": 0,
    }


def render(gpus: list[dict], tick: int = 0) -> str:
    """gpus: [{hostname, index, product, memory, driver, xid}] → Prometheus text exposition."""
    lines = []
    vals = [(g, gpu_values(g["hostname"], g["index"], g["memory"], g.get("xid", 0), tick)) for g in gpus]
    for mname, mtype, mhelp in METRICS:
        lines.append(f"# HELP {mname} {mhelp}")
        lines.append(f"# TYPE {mname} {mtype}")
        for g, v in vals:
            lab = (
                f'gpu="{g["index"]}",UUID="{L.gpu_uuid(g["hostname"], g["index"])}",'
                f'pci_bus_id="00000000:{0x18 + g["index"]:02X}:00.0",device="nvidia{g["index"]}",'
                f'modelName="{g["product"].replace("-", " ")}",Hostname="{g["hostname"]}",'
                f'DCGM_FI_DRIVER_VERSION="{g.get("driver", "")}"'
            )
            lines.append(f"{mname}{{{lab}}} {v[mname]}")
    return "\n".join(lines) + "\n"


def gpus_from_cache(nodes: list[dict], pods_by_node: dict) -> list[dict]:
    out = []
    for node in nodes:
        if not L.is_gpu_node(node):
            continue
        ops = pods_by_node.get(L.name(node), {})
        exp = ops.get("dcgm-exporter")
        if not exp or not exp["ready"]:
            continue
        info = L.gpu_info(node)
        drv = ops.get("driver")
        version = L.image_version(drv["image"]) if drv else ""
        xid = 79 if "xid79" in L.faults(node) else 0
        for i in range(info["count"]):
            out.append(
                {
                    "hostname": L.name(node),
                    "index": i,
                    "product": info["product"],
                    "memory": info["memory"],
                    "driver": version,
                    "xid": xid if i == 0 else 0,
                }
            )
    return out


class Exporter:
    def __init__(self, source, host: str = "127.0.0.1", port: int = 0):
        """source() returns the list of GPUs to export (see gpus_from_cache)."""
        self.source = source
        self.tick = 0
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                if self.path.split("?")[0] not in ("/metrics", "/"):
                    self.send_error(404)
                    return
                exporter.tick += 1
                body = render(exporter.source(), exporter.tick).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.url = f"http://{host}:{self.server.server_address[1]}/metrics"
        self.thread = threading.Thread(target=self.server.serve_forever, name="dcgm-exporter", daemon=True)

    def start(self) -> "Exporter":
        self.thread.start()
        return self
