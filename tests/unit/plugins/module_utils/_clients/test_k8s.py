"""Specification of plugins/module_utils/_clients/k8s/: configuration, retries, pagination, error messages."""

from __future__ import annotations

import json

import pytest
import urllib3
from kubernetes import client as k8s_client

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients import k8s as _k8s
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import (
    K8sClient,
    K8sError,
    RetryPolicy,
    load_configuration,
)

# ------------------------------------------------------------------------------------------------
# Doubles


class Resp:
    def __init__(self, status=200, body=None, headers=None, reason="OK"):
        self.status = status
        self.data = body if isinstance(body, bytes) else json.dumps(body if body is not None else {}).encode()
        self.headers = headers or {}
        self.reason = reason


class Stream(Resp):
    """A streamed watch response: one JSON line per event (or raw bytes), then the end of the stream."""

    def __init__(self, *events, status=200, body=None):
        super().__init__(status, body)
        self.lines = [e if isinstance(e, (bytes, Exception)) else json.dumps(e).encode() + b"\n" for e in events]
        self.closed = self.released = False

    def __iter__(self):
        for line in self.lines:
            if isinstance(line, Exception):
                raise line
            yield line

    def close(self):
        self.closed = True

    def release_conn(self):
        self.released = True


class FakePool:
    """Answers each request with the next scripted response (or raises it); records methods, URLs and headers."""

    def __init__(self, *script):
        self.script = list(script)
        self.calls = []

    def request(self, method, url, body=None, headers=None, timeout=None, retries=None, preload_content=True):
        self.calls.append((method, url, headers))
        item = self.script.pop(0)
        if isinstance(item, Exception):
            raise item
        return item


def make_client(*script, attempts=4, token="s3cret"):
    cfg = k8s_client.Configuration()
    cfg.host = "https://api.example:6443"
    cfg.api_key = {"authorization": "Bearer %s" % token}
    sleeps = []
    retry = RetryPolicy(attempts=attempts, base_delay=1.0, max_delay=8.0, sleep=sleeps.append, rand=lambda: 1.0)
    client = K8sClient(cfg, retry=retry, pool_manager=FakePool(*script))
    return client, client._pool, sleeps


KUBECONFIG = """
apiVersion: v1
kind: Config
current-context: admin@bed
clusters:
- name: bed
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: abc}
contexts:
- name: admin@bed
  context: {cluster: bed, user: admin}
- name: viewer@bed
  context: {cluster: bed, user: admin}
"""


# ------------------------------------------------------------------------------------------------
# Configuration


class TestLoadConfiguration:
    def test_reads_server_and_token_from_the_current_context(self, tmp_path):
        path = tmp_path / "config"
        path.write_text(KUBECONFIG)
        cfg = load_configuration(kubeconfig=str(path))
        assert cfg.host == "https://127.0.0.1:6443"
        assert cfg.auth_settings()["BearerToken"]["value"] == "Bearer abc"
        assert cfg.verify_ssl is False

    def test_accepts_an_inline_kubeconfig_dict(self):
        import yaml

        cfg = load_configuration(kubeconfig=yaml.safe_load(KUBECONFIG), context="viewer@bed")
        assert cfg.host == "https://127.0.0.1:6443"

    def test_unreadable_kubeconfig_names_the_file_and_the_fix(self, tmp_path):
        missing = tmp_path / "nope"
        with pytest.raises(K8sError) as err:
            load_configuration(kubeconfig=str(missing))
        assert str(missing) in err.value.msg
        assert "could not be read" in err.value.msg
        assert "Set the kubeconfig option" in err.value.msg

    def test_kubeconfig_that_is_not_yaml_mapping_is_rejected(self, tmp_path):
        path = tmp_path / "config"
        path.write_text("- just\n- a list\n")
        with pytest.raises(K8sError, match="is not a kubeconfig"):
            load_configuration(kubeconfig=str(path))

    def test_unknown_context_lists_the_available_ones(self, tmp_path):
        path = tmp_path / "config"
        path.write_text(KUBECONFIG)
        with pytest.raises(K8sError) as err:
            load_configuration(kubeconfig=str(path), context="prod")
        assert "context 'prod' is not in kubeconfig" in err.value.msg
        assert "admin@bed, viewer@bed" in err.value.msg

    def test_default_kubeconfig_comes_from_k8s_auth_kubeconfig_first(self, monkeypatch, tmp_path):
        monkeypatch.setenv("K8S_AUTH_KUBECONFIG", str(tmp_path / "a"))
        monkeypatch.setenv("KUBECONFIG", str(tmp_path / "b"))
        assert _k8s.default_kubeconfig_path() == str(tmp_path / "a")

    def test_no_kubeconfig_and_not_in_a_cluster_is_an_actionable_error(self, monkeypatch, tmp_path):
        monkeypatch.setenv("K8S_AUTH_KUBECONFIG", str(tmp_path / "absent"))
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        with pytest.raises(K8sError, match="no kubeconfig found .* not running inside a cluster"):
            load_configuration()

    def test_validate_certs_and_host_override_the_kubeconfig(self, tmp_path):
        path = tmp_path / "config"
        path.write_text(KUBECONFIG)
        cfg = load_configuration(kubeconfig=str(path), validate_certs=True, host="https://other:6443")
        assert (cfg.host, cfg.verify_ssl) == ("https://other:6443", True)


# ------------------------------------------------------------------------------------------------
# GET, retries and errors


class TestGet:
    def test_returns_parsed_json_and_sends_the_bearer_token(self):
        client, pool, _unused = make_client(Resp(body={"kind": "NodeList"}))
        assert client.get("/api/v1/nodes") == {"kind": "NodeList"}
        method, url, headers = pool.calls[0]
        assert (method, url) == ("GET", "https://api.example:6443/api/v1/nodes")
        assert headers["authorization"] == "Bearer s3cret"
        assert client.requests == 1

    def test_query_parameters_are_encoded_and_empty_ones_dropped(self):
        client, pool, _unused = make_client(Resp(body={}))
        client.get("/api/v1/nodes", {"labelSelector": "a=b,c in (d)", "continue": None, "limit": 5})
        assert pool.calls[0][1].endswith("/api/v1/nodes?labelSelector=a%3Db%2Cc+in+%28d%29&limit=5")

    @pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
    def test_throttling_and_server_errors_are_retried(self, status):
        client, _unused, sleeps = make_client(Resp(status, {"message": "busy"}), Resp(body={"ok": True}))
        assert client.get("/x") == {"ok": True}
        assert client.requests == 2
        assert len(sleeps) == 1

    def test_backoff_doubles_with_jitter_and_is_capped(self):
        policy = RetryPolicy(base_delay=1.0, max_delay=5.0, rand=lambda: 0.5)
        assert [policy.delay(n) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 2.5, 2.5]

    def test_retry_after_is_honoured_and_capped(self):
        client, _unused, sleeps = make_client(
            Resp(429, {}, {"Retry-After": "3"}), Resp(429, {}, {"Retry-After": "120"}), Resp(body={})
        )
        client.get("/x")
        assert sleeps == [3.0, 8.0]

    def test_connection_errors_are_retried_then_reported_with_the_server_address(self):
        refused = urllib3.exceptions.NewConnectionError(None, "Connection refused")
        client, _unused, sleeps = make_client(refused, refused, refused, refused, attempts=4)
        with pytest.raises(K8sError) as err:
            client.get("/api/v1/nodes", what="list nodes")
        assert client.requests == 4 and len(sleeps) == 3
        assert "cannot reach the Kubernetes API server https://api.example:6443 for list nodes" in err.value.msg
        assert "after 4 attempt(s)" in err.value.msg

    def test_attempts_are_bounded_for_persistent_5xx(self):
        client, _unused, _unused = make_client(*[Resp(503, {"message": "etcd down"})] * 3, attempts=3)
        with pytest.raises(K8sError) as err:
            client.get("/x", what="list pods")
        assert err.value.status == 503
        assert "etcd down" in err.value.msg
        assert client.requests == 3

    def test_forbidden_is_not_retried_and_names_the_permission(self):
        client, _unused, sleeps = make_client(
            Resp(403, {"message": 'nodes is forbidden: User "x"'}, reason="Forbidden")
        )
        with pytest.raises(K8sError) as err:
            client.get("/api/v1/nodes", what="list nodes")
        assert sleeps == [] and err.value.status == 403
        assert "grant this user RBAC permission to list nodes" in err.value.msg

    def test_unauthorized_says_the_credentials_were_rejected(self):
        client, _unused, _unused = make_client(Resp(401, {"message": "Unauthorized"}))
        with pytest.raises(K8sError, match="credentials in the kubeconfig were rejected"):
            client.get("/x")

    def test_tls_failures_point_at_the_certificate_authority(self):
        client, _unused, _unused = make_client(urllib3.exceptions.SSLError("certificate verify failed"))
        with pytest.raises(K8sError, match="certificate-authority"):
            client.get("/x")

    def test_token_never_appears_in_error_messages(self):
        client, _unused, _unused = make_client(Resp(500, {"message": "boom"}), attempts=1)
        with pytest.raises(K8sError) as err:
            client.get("/x")
        assert "s3cret" not in err.value.msg


# ------------------------------------------------------------------------------------------------
# LIST helpers


def page(items, cont=None):
    return Resp(body={"items": items, "metadata": {"continue": cont, "resourceVersion": "7"}})


class TestList:
    def test_follows_continue_tokens_and_counts_every_page(self):
        client, pool, _unused = make_client(page([1, 2], "t1"), page([3, 4], "t2"), page([5]))
        items, meta = client.list_all("/api/v1/nodes", page_size=2)
        assert items == [1, 2, 3, 4, 5]
        assert meta["resourceVersion"] == "7"
        assert client.requests == 3
        assert "continue=t1" in pool.calls[1][1] and "limit=2" in pool.calls[1][1]

    def test_expired_continue_token_restarts_the_list_once(self):
        gone = Resp(410, {"message": "The provided continue parameter is too old"})
        client, _unused, _unused = make_client(page([1], "t1"), gone, page([1], "t9"), page([2]))
        assert client.list_all("/api/v1/nodes", page_size=1)[0] == [1, 2]

    def test_core_list_in_a_namespace_builds_the_namespaced_path(self):
        client, pool, _unused = make_client(page([]))
        client.list_core("pods", namespace="gpu-operator", label_selector="app=x")
        assert "/api/v1/namespaces/gpu-operator/pods?" in pool.calls[0][1]

    def test_custom_list_returns_none_when_the_crd_is_not_installed(self):
        client, pool, _unused = make_client(Resp(404, {"message": "the server could not find the requested resource"}))
        assert client.list_custom("nvidia.com", "v1", "clusterpolicies") is None
        assert "/apis/nvidia.com/v1/clusterpolicies?" in pool.calls[0][1]

    def test_custom_list_can_insist_on_the_crd(self):
        client, _unused, _unused = make_client(Resp(404, {}))
        with pytest.raises(K8sError):
            client.list_custom("nvidia.com", "v1", "clusterpolicies", missing_ok=False)

    def test_each_list_leaves_where_a_watch_of_it_can_start(self):
        client, _unused, _unused = make_client(page([1], "t1"), page([2]))
        client.list_all("/api/v1/pods", label_selector="app=x", page_size=1)
        assert client.listed == {
            "/api/v1/pods": {"labelSelector": "app=x", "fieldSelector": None, "resourceVersion": "7"}
        }

    def test_version_is_reduced_to_four_fields(self):
        client, _unused, _unused = make_client(
            Resp(
                body={
                    "gitVersion": "v1.33.1",
                    "major": "1",
                    "minor": "33",
                    "platform": "linux/amd64",
                    "goVersion": "go1.24",
                }
            )
        )
        assert client.version() == {"git_version": "v1.33.1", "major": "1", "minor": "33", "platform": "linux/amd64"}


SINCE = {"labelSelector": "app=x", "fieldSelector": None, "resourceVersion": "7"}
NODE = {"type": "MODIFIED", "object": {"kind": "Node", "metadata": {"name": "n1"}}}


class TestWatch:
    def test_streams_the_events_from_the_lists_version_for_the_whole_seconds_and_counts_one_request(self):
        stream = Stream(NODE, b"\n", dict(NODE, type="DELETED"))
        client, pool, _unused = make_client(stream)
        events = list(client.watch("/api/v1/nodes", SINCE, 0.4))
        assert [e["type"] for e in events] == ["MODIFIED", "DELETED"]
        url = pool.calls[0][1]
        assert "watch=1" in url and "resourceVersion=7" in url and "timeoutSeconds=1" in url
        assert "labelSelector=app%3Dx" in url and "fieldSelector" not in url
        assert client.requests == 1
        assert stream.closed and stream.released

    def test_a_caller_that_stops_at_the_first_event_closes_the_stream(self):
        stream = Stream(NODE, NODE)
        client, _unused, _unused = make_client(stream)
        watch = client.watch("/api/v1/nodes", SINCE, 2)
        assert next(watch)["type"] == "MODIFIED"
        watch.close()
        assert stream.closed

    def test_a_version_too_old_is_an_error_with_its_status(self):
        gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old resource version"}}
        client, _unused, _unused = make_client(Stream(gone))
        with pytest.raises(K8sError) as err:
            list(client.watch("/api/v1/nodes", SINCE, 1))
        assert err.value.status == 410 and "too old resource version" in str(err.value)

    def test_an_error_status_is_not_retried(self):
        client, _unused, _unused = make_client(Stream(status=403, body={"message": "forbidden"}))
        with pytest.raises(K8sError) as err:
            list(client.watch("/api/v1/nodes", SINCE, 1, what="watch nodes"))
        assert err.value.status == 403 and "watch nodes" in str(err.value)
        assert client.requests == 1

    def test_a_dropped_connection_or_garbage_is_an_error(self):
        dropped = urllib3.exceptions.ProtocolError("Connection broken")
        client, _unused, _unused = make_client(Stream(NODE, dropped), Stream(b"not json\n"), dropped)
        for _attempt in range(3):
            with pytest.raises(K8sError):
                list(client.watch("/api/v1/nodes", SINCE, 1))


# --- API discovery ----------------------------------------------------------------------------------------------


class LegacyDiscovery:
    """An API server without aggregated discovery: the legacy documents, one per group version."""

    DOCS = {
        "/api": {"kind": "APIVersions", "versions": ["v1"]},
        "/apis": {"kind": "APIGroupList", "groups": [{"name": "apps", "versions": [{"groupVersion": "apps/v1"}]}]},
        "/api/v1": {"resources": [{"name": "pods", "kind": "Pod", "namespaced": True}, {"name": "pods/log"}]},
        "/apis/apps/v1": {"resources": [{"name": "deployments", "kind": "Deployment", "namespaced": True}]},
    }

    def __init__(self):
        self.paths = []

    def get(self, path, what=None, accept=None):
        self.paths.append(path)
        return self.DOCS[path]


def test_discovery_without_the_aggregated_api_reads_each_group_version_and_gives_helm_its_capabilities():
    from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import (
        api_resources,
        helm_api_versions,
        object_path,
    )

    client = LegacyDiscovery()
    resources = api_resources(client)
    assert client.paths == ["/api", "/apis", "/api/v1", "/apis/apps/v1"]
    assert helm_api_versions(resources) == ["apps/v1", "apps/v1/Deployment", "v1", "v1/Pod"]
    assert object_path(resources, "apps/v1", "Deployment", "op", "gpu-operator") == (
        "/apis/apps/v1/namespaces/gpu-operator/deployments/op"
    )
    assert object_path(resources, "v1", "Secret", "s", "ns") is None
