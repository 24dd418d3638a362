"""The device plugin's pod as the GPU Operator deploys it, so that it runs for real on the test bed's real node
(tests/sim/realnode): NVIDIA's binary, privileged, the kubelet's device-plugin directory mounted, the NVIDIA
runtime class with every GPU visible (the runtime injects the driver's NVML through CDI), the plugin's settings
as environment and the ClusterPolicy's ``devicePlugin.env`` after them. kwok ignores all of it on its nodes."""

from __future__ import annotations

KUBELET_PLUGIN_DIR = "/var/lib/kubelet/device-plugins"


def settings_env(spec: dict) -> list[dict]:
    """The plugin's settings (its documented environment variables), then ``devicePlugin.env``."""
    mig = (spec.get("mig") or {}).get("strategy", "single")
    env = {
        "FAIL_ON_INIT_ERROR": "true",
        "DEVICE_DISCOVERY_STRATEGY": "nvml",
        "DEVICE_LIST_STRATEGY": "envvar",
        "DEVICE_ID_STRATEGY": "uuid",
        "MIG_STRATEGY": mig,
        "NVIDIA_VISIBLE_DEVICES": "all",
        "NVIDIA_DRIVER_CAPABILITIES": "all",
    }
    out = [{"name": k, "value": v} for k, v in env.items()]
    extra = [e for e in (spec.get("devicePlugin") or {}).get("env") or [] if isinstance(e, dict) and e.get("name")]
    names = {e["name"] for e in extra}
    return [e for e in out if e["name"] not in names] + [
        {"name": e["name"], "value": str(e.get("value", ""))} for e in extra
    ]


def complete(pod_spec: dict, spec: dict) -> None:
    """Fill in the device plugin's pod spec (its one container is already named and has its image)."""
    container = pod_spec["containers"][0]
    container.update(
        {
            "command": ["nvidia-device-plugin"],
            "env": settings_env(spec),
            "securityContext": {"privileged": True},
            # a failed start leaves the plugin's last log lines in its status (kubectl describe shows them)
            "terminationMessagePolicy": "FallbackToLogsOnError",
            "volumeMounts": [{"name": "device-plugin", "mountPath": KUBELET_PLUGIN_DIR}],
        }
    )
    pod_spec["volumes"] = [{"name": "device-plugin", "hostPath": {"path": KUBELET_PLUGIN_DIR}}]
    if (spec.get("cdi") or {}).get("nriPluginEnabled") is not True:  # NRI mode: no runtime class
        pod_spec["runtimeClassName"] = (spec.get("operator") or {}).get("runtimeClass") or "nvidia"
