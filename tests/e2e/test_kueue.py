"""Kueue for real: the out-of-cluster configuration, the service proxy, the supervisor, the
readiness bridge, and a run of the real controller against the local cluster.

The run needs the binaries ``python -m tools.e2e build kubernetes etcd kwok kueue`` makes;
without them it is skipped, saying so. Every process and thread a test starts is stopped by it
(``finally``/context managers), and every wait is on a condition with a deadline.
"""

from __future__ import annotations

import base64
import calendar
import contextlib
import http.server
import json
import os
import queue
import re
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.charts import merge_values
from components.constants import TEAM_LABEL
from components.kueue import KueueArgs, chart_values, manager_config
from tools.e2e import build as builder
from tools.e2e import cluster as clusters
from tools.e2e import kueue as kueues
from tools.e2e.cluster import LocalCluster
from tools.e2e.kueue import (
    KueuePorts,
    ReadinessBridge,
    Route,
    ServiceProxy,
    out_of_cluster_config,
)

WAIT_S = 180.0
"""Cold starts of the API server and of Kueue on two busy cores take tens of seconds."""


def wait_for(what: str, check: Callable[[], Any], timeout_s: float = WAIT_S) -> Any:
    """Poll until ``check`` returns something truthy; fail naming ``what`` after the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout_s:.0f} s (last: {result!r})")
        time.sleep(0.2)


# --- configuration ----------------------------------------------------------------------------


PORTS = KueuePorts(webhook=10001, health=10002, metrics=10003, visibility=10004)


def test_out_of_cluster_config_changes_only_what_out_of_cluster_needs(tmp_path):
    base = manager_config(fair_sharing=True)
    config = out_of_cluster_config(base, PORTS, tmp_path / "certs")
    changed = {k for k in config if config.get(k) != base.get(k)}
    assert changed == {
        "namespace",
        "leaderElection",
        "health",
        "metrics",
        "webhook",
        "internalCertManagement",
        "visibilityServer",
    }
    assert config["namespace"] == "kueue-system"
    assert config["leaderElection"] == {**base["leaderElection"], "leaderElect": False}
    assert config["health"] == {"healthProbeBindAddress": "127.0.0.1:10002"}
    assert config["metrics"] == {"bindAddress": "127.0.0.1:10003"}
    assert config["webhook"] == {
        "port": 10001,
        "host": "127.0.0.1",
        "certDir": str(tmp_path / "certs"),
    }
    assert config["internalCertManagement"] == {
        "enable": True,
        "webhookServiceName": "kueue-webhook-service",
        "webhookSecretName": "kueue-webhook-server-cert",
    }
    assert config["visibilityServer"] == {"bindAddress": "127.0.0.1", "bindPort": 10004}
    # What decides behaviour is the platform's, untouched.
    for key in ("integrations", "manageJobsWithoutQueueName", "fairSharing", "clientConnection"):
        assert config[key] == base[key]
    assert base["leaderElection"]["leaderElect"] is True  # the input is not modified


def test_the_platform_config_is_read_back_from_its_chart_values():
    for fair in (True, False):
        values = chart_values(KueueArgs(fair_sharing=fair))
        assert kueues.manager_config_from_values(values) == manager_config(fair)
    assert kueues.platform_manager_config(False) == manager_config(False)


def test_a_config_without_internal_certificates_is_refused(tmp_path):
    base = {**manager_config(True), "internalCertManagement": {"enable": False}}
    with pytest.raises(kueues.KueueError, match="internalCertManagement"):
        out_of_cluster_config(base, PORTS, tmp_path)


def test_names_follow_the_chart():
    assert kueues.chart_fullname("kueue") == "kueue"
    assert kueues.chart_fullname("queues") == "queues-kueue"
    assert kueues.webhook_configuration_names() == (
        "kueue-mutating-webhook-configuration",
        "kueue-validating-webhook-configuration",
    )


# --- KWOK stages --------------------------------------------------------------------------------


def test_kwok_stages_select_only_live_controller_pods_and_win_over_the_defaults():
    documents = list(yaml.safe_load_all(kueues.kwok_stages()))
    assert [d["metadata"]["name"] for d in documents] == list(kueues.KWOK_STAGE_NAMES)
    for stage in documents:
        assert stage["kind"] == "Stage"
        assert stage["spec"]["resourceRef"] == {"apiGroup": "v1", "kind": "Pod"}
        assert stage["spec"]["weight"] == 1  # the defaults have none: these are chosen
        expressions = stage["spec"]["selector"]["matchExpressions"]
        assert expressions[0]["values"] == ["kueue-system/kueue/controller-manager"]
        assert {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"} in expressions
        template = yaml.safe_load(
            re.sub(r"\{\{[^}]*\}\}", "", stage["spec"]["next"]["statusTemplate"])
        )
        ready = {c["type"]: c["status"] for c in template["conditions"]}
        expected = "True" if stage["metadata"]["name"] == "kueue-controller-ready" else "False"
        assert ready["Ready"] == ready["ContainersReady"] == expected
    assert "phase: Running" in documents[0]["spec"]["next"]["statusTemplate"]


# --- the service proxy ------------------------------------------------------------------------


class FakeApi:
    """Services and pods in memory; watches are fed from a queue."""

    server = "https://127.0.0.1:1"
    ca_file = "/nonexistent"

    def __init__(self) -> None:
        self.objects: dict[str, Any] = {}
        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.patches: list[tuple[str, Any]] = []
        self.closed = threading.Event()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        timeout_s: float = 10.0,
    ) -> tuple[int, Any]:
        if method == "PATCH":
            self.patches.append((path, body))
            return 200, {}
        base = path.split("?")[0]
        if base.endswith("/services"):
            items = [v for k, v in self.objects.items() if k.startswith(base + "/")]
            return 200, {"metadata": {"resourceVersion": "1"}, "items": items}
        if base.endswith("/pods"):
            return 200, {"items": [v for k, v in self.objects.items() if k.startswith(base)]}
        if base in self.objects:
            return 200, self.objects[base]
        return 404, None

    def get(self, path: str) -> Any | None:
        status, body = self.request("GET", path)
        return body if status == 200 else None

    def watch(self, path: str, params: Mapping[str, str]) -> Iterator[dict[str, Any]]:
        while not self.closed.is_set():
            try:
                event = self.events.get(timeout=0.1)
            except queue.Empty:
                continue
            if event is None:
                return
            yield event

    def close_streams(self) -> None:
        self.closed.set()


def service(ip: str, port: int) -> dict[str, Any]:
    return {
        "metadata": {"name": "svc", "namespace": "ns"},
        "spec": {"clusterIP": ip, "ports": [{"port": port}]},
    }


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "tls.crt", folder / "tls.key"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-subj", "/CN=svc.ns.svc", "-addext", "subjectAltName=DNS:svc.ns.svc",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.fixture
def tls_echo(tls_files) -> Iterator[int]:
    """A TLS echo server on 127.0.0.1 that upper-cases what it reads; yields its port."""
    cert, key = tls_files
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.create_server((clusters.LOOPBACK, 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                raw, _ = listener.accept()
            except OSError:
                return
            # A client that hangs up during the handshake: on to the next one.
            with (
                raw,
                contextlib.suppress(OSError),
                context.wrap_socket(raw, server_side=True) as conn,
            ):
                conn.sendall(conn.recv(1024).upper())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        close_listener(listener)
        thread.join(timeout=10)


def close_listener(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


def free_port_on(ip: str) -> int:
    with socket.socket() as sock:
        sock.bind((ip, 0))
        return int(sock.getsockname()[1])


def tls_call(address: tuple[str, int], cafile: Path, payload: bytes) -> bytes:
    context = ssl.create_default_context(cafile=str(cafile))
    with (
        socket.create_connection(address, timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="svc.ns.svc") as conn,
    ):
        conn.sendall(payload)
        return conn.recv(1024)


def proxy_threads() -> list[str]:
    prefixes = ("proxy ", "accept ", "pipe ")
    return [t.name for t in threading.enumerate() if t.name.startswith(prefixes) and t.is_alive()]


@pytest.fixture
def proxy_of(tls_echo) -> Iterator[Callable[[str], tuple[FakeApi, ServiceProxy, Route]]]:
    started: list[ServiceProxy] = []

    def make(ip: str) -> tuple[FakeApi, ServiceProxy, Route]:
        api = FakeApi()
        route = Route("ns", "svc", free_port_on(ip), tls_echo)
        api.objects["/api/v1/namespaces/ns/services/svc"] = service(ip, route.port)
        proxy = ServiceProxy(api, [route], log=lambda line: None)
        proxy.start()
        started.append(proxy)
        return api, proxy, route

    try:
        yield make
    finally:
        for proxy in started:
            proxy.stop()


def test_the_proxy_serves_the_cluster_ip_and_passes_tls_through(proxy_of, tls_files):
    _, proxy, route = proxy_of("127.77.0.1")
    address = wait_for("listening", lambda: proxy.address(route))
    assert address == ("127.77.0.1", route.port)
    # The client verifies the backend's certificate for the Service's DNS name: untouched TLS.
    assert tls_call(address, tls_files[0], b"admission review") == b"ADMISSION REVIEW"


def test_the_proxy_follows_the_service(proxy_of, tls_files):
    api, proxy, route = proxy_of("127.77.0.2")
    first = wait_for("listening", lambda: proxy.address(route))
    moved = service("127.77.0.3", route.port)
    api.events.put({"type": "MODIFIED", "object": moved})
    wait_for("moved", lambda: proxy.address(route) == ("127.77.0.3", route.port))
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(first, timeout=5).close()
    assert tls_call(("127.77.0.3", route.port), tls_files[0], b"x") == b"X"
    api.events.put({"type": "DELETED", "object": moved})
    wait_for("closed", lambda: proxy.address(route) is None)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.77.0.3", route.port), timeout=5).close()


def test_the_proxy_refuses_a_cluster_ip_outside_loopback(proxy_of):
    _, proxy, route = proxy_of("127.77.0.4")
    wait_for("listening", lambda: proxy.address(route))
    proxy_api = proxy.api
    assert isinstance(proxy_api, FakeApi)
    proxy_api.events.put({"type": "MODIFIED", "object": service("10.96.0.10", route.port)})
    error = wait_for("an error", lambda: proxy.error(route))
    assert "10.96.0.10" in error and "127.0.0.0/8" in error
    assert proxy.address(route) is None


def dead_backend_proxy(ip: str, connect_window_s: float) -> tuple[ServiceProxy, Route, list[str]]:
    """A started proxy for a Service whose backend port nothing listens on, and its log."""
    api = FakeApi()
    route = Route("ns", "svc", free_port_on(ip), free_port_on(clusters.LOOPBACK))
    api.objects["/api/v1/namespaces/ns/services/svc"] = service(ip, route.port)
    logged: list[str] = []
    proxy = ServiceProxy(api, [route], log=logged.append, connect_window_s=connect_window_s)
    proxy.start()
    return proxy, route, logged


def test_a_connection_to_a_dead_backend_is_closed():
    proxy, route, logged = dead_backend_proxy("127.77.0.5", connect_window_s=0.5)
    try:
        address = wait_for("listening", lambda: proxy.address(route))
        with socket.create_connection(address, timeout=10) as conn:
            assert conn.recv(10) == b""  # closed, as by a Service whose pod does not listen
        assert any("backend unreachable" in line for line in logged)
    finally:
        proxy.stop()


def test_a_backend_back_within_the_connect_window_is_reached(monkeypatch):
    api = FakeApi()
    ip = "127.77.0.7"
    backend = socket.socket()
    backend.bind((clusters.LOOPBACK, 0))  # bound, not listening yet: connecting is refused
    backend_address = backend.getsockname()
    route = Route("ns", "svc", free_port_on(ip), backend_address[1])
    api.objects["/api/v1/namespaces/ns/services/svc"] = service(ip, route.port)
    attempts: list[str] = []
    connect = socket.create_connection

    def connect_then_listen(address, *args, **kwargs):
        if tuple(address) != backend_address:
            return connect(address, *args, **kwargs)
        try:
            result = connect(address, *args, **kwargs)
            attempts.append("connected")
            return result
        except OSError:
            attempts.append("refused")
            backend.listen()  # the controller is back
            server.start()
            raise

    def echo_once() -> None:
        with contextlib.suppress(OSError):
            conn, _ = backend.accept()
            with conn:
                conn.sendall(conn.recv(1024).upper())

    monkeypatch.setattr(socket, "create_connection", connect_then_listen)
    server = threading.Thread(target=echo_once, daemon=True)
    proxy = ServiceProxy(api, [route], log=lambda line: None, connect_window_s=10)
    proxy.start()
    try:
        address = wait_for("listening", lambda: proxy.address(route))
        with connect(address, timeout=10) as conn:
            conn.sendall(b"admission review")
            assert conn.recv(1024) == b"ADMISSION REVIEW"
        assert attempts == ["refused", "connected"]
    finally:
        proxy.stop()
        close_listener(backend)
        if server.is_alive():
            server.join(timeout=10)


def test_stopping_the_proxy_ends_connections_still_waiting_for_their_backend(monkeypatch):
    # As when the API server keeps probing an aggregated API whose controller has stopped: many
    # connections inside their connect window when the proxy stops; none outlives stop(), not
    # even one still closing its sockets (made slow here) when stop() looks for them.
    close = socket.socket.close

    def slow_in_pipes(sock: socket.socket) -> None:
        if threading.current_thread().name.startswith("pipe "):
            time.sleep(0.5)
        close(sock)

    monkeypatch.setattr(socket.socket, "close", slow_in_pipes)
    proxy, route, logged = dead_backend_proxy("127.77.0.8", connect_window_s=600)
    clients: list[socket.socket] = []
    try:
        address = wait_for("listening", lambda: proxy.address(route))
        clients = [socket.create_connection(address, timeout=10) for _ in range(20)]
        wait_for(
            "20 waiting pipes",
            lambda: sum(n.startswith("pipe ") for n in proxy_threads()) == 20,
        )
        proxy.stop()
        assert proxy_threads() == []
        assert all(client.recv(10) == b"" for client in clients)
        assert sum("backend unreachable" in line for line in logged) == 20
    finally:
        for client in clients:
            client.close()
        proxy.stop()


def test_stopping_the_proxy_closes_listeners_connections_and_threads(tls_echo):
    api = FakeApi()
    ip = "127.77.0.6"
    route = Route("ns", "svc", free_port_on(ip), tls_echo)
    api.objects["/api/v1/namespaces/ns/services/svc"] = service(ip, route.port)
    proxy = ServiceProxy(api, [route], log=lambda line: None)
    proxy.start()
    address = wait_for("listening", lambda: proxy.address(route))
    idle = socket.create_connection(address, timeout=10)  # an open connection, never used
    try:
        wait_for("a pipe thread", lambda: any(n.startswith("pipe ") for n in proxy_threads()))
        proxy.stop()
        assert proxy_threads() == []
        assert idle.recv(10) == b""
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(address, timeout=5).close()
    finally:
        idle.close()
        proxy.stop()


# --- the supervisor ---------------------------------------------------------------------------

FAKE_KUEUE = """\
import http.server, os, sys, yaml
config = yaml.safe_load(open(sys.argv[1].split("=", 1)[1]))
if os.environ.get("FAKE_KUEUE") == "exit":
    sys.exit(3)
host, port = config["health"]["healthProbeBindAddress"].rsplit(":", 1)
check = "ping" if os.environ.get("FAKE_KUEUE") == "ping" else "readyz"

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = f"[+]{check} ok\\nreadyz check passed".encode()
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

http.server.HTTPServer((host, int(port)), Handler).serve_forever()
"""


def crd(name: str) -> dict[str, Any]:
    return {"status": {"conditions": [{"type": "Established", "status": "True"}]}}


def chart_objects() -> dict[str, Any]:
    """What ``missing`` looks for, as FakeApi paths."""
    admission = "/apis/admissionregistration.k8s.io/v1"
    objects: dict[str, Any] = {
        "/api/v1/namespaces/kueue-system/secrets/kueue-webhook-server-cert": {},
        f"{admission}/mutatingwebhookconfigurations/kueue-mutating-webhook-configuration": {},
        f"{admission}/validatingwebhookconfigurations/kueue-validating-webhook-configuration": {},
    }
    for name in kueues.CONVERSION_CRDS:
        objects[f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"] = crd(name)
    return objects


@pytest.fixture
def fake_binary(tmp_path) -> Path:
    script = tmp_path / "fake_kueue.py"
    script.write_text(FAKE_KUEUE)
    binary = tmp_path / "kueue"
    binary.write_text(f'#!/bin/sh\nexec {sys.executable} {script} "$@"\n')
    binary.chmod(0o755)
    return binary


def controller(
    fake_binary: Path, tmp_path: Path, api: FakeApi, **kwargs: Any
) -> kueues.KueueController:
    kubeconfig = tmp_path / "admin.kubeconfig"
    kubeconfig.write_text("")
    kwargs.setdefault("base_config", manager_config(True))
    return kueues.KueueController(
        fake_binary,
        kubeconfig,
        tmp_path / "work",
        api=api,
        identity=None,
        log=lambda line: None,
        **kwargs,
    )


def test_the_controller_waits_for_the_charts_objects_then_starts(fake_binary, tmp_path):
    api = FakeApi()
    ctl = controller(fake_binary, tmp_path, api)
    ctl.start()
    try:
        wait_for("waiting", lambda: ctl.status.state == "waiting")
        assert "Secret kueue-system/kueue-webhook-server-cert" in ctl.status.detail
        assert ctl.status.starts == 0
        api.objects.update(chart_objects())
        ctl.wait_ready(60)
        assert ctl.status.starts == 1
        assert ctl.status.ready_since is not None
        config = yaml.safe_load(ctl.config_file.read_text())
        assert config["leaderElection"]["leaderElect"] is False
        pid = ctl.status.pid
        assert pid is not None and clusters.process_alive(pid)
    finally:
        ctl.stop()
    assert not clusters.process_alive(pid)
    assert ctl.status.state == "stopped"


def config_map(config: Mapping[str, Any]) -> dict[str, Any]:
    return {"data": {kueues.CONFIG_KEY: yaml.safe_dump(dict(config))}}


def test_the_controller_runs_the_charts_config_map_and_follows_it(fake_binary, tmp_path):
    api = FakeApi()
    api.objects.update(chart_objects())
    path = f"/api/v1/namespaces/kueue-system/configmaps/{kueues.CONFIG_MAP}"
    ctl = controller(fake_binary, tmp_path, api, base_config=None)
    ctl.start()
    try:
        wait_for("waiting for the ConfigMap", lambda: "ConfigMap" in ctl.status.detail)
        api.objects[path] = config_map(manager_config(True))
        ctl.wait_ready(60)
        written = yaml.safe_load(ctl.config_file.read_text())
        assert written == out_of_cluster_config(
            manager_config(True), ctl.ports, ctl.cert_dir, "kueue-system"
        )
        api.objects[path] = config_map(manager_config(False))  # pulumi up changed it
        wait_for("a restart", lambda: ctl.status.starts == 2 and ctl.ready(), 60)
        assert "fairSharing" not in yaml.safe_load(ctl.config_file.read_text())
    finally:
        ctl.stop()


def test_the_secret_is_mirrored_into_the_cert_dir_as_a_volume_would_be(fake_binary, tmp_path):
    api = FakeApi()
    secret = "/api/v1/namespaces/kueue-system/secrets/kueue-webhook-server-cert"
    ctl = controller(fake_binary, tmp_path, api)
    ctl.cert_dir.mkdir(parents=True)
    (ctl.cert_dir / "old.crt").write_text("stale")
    b64 = base64.b64encode
    api.objects[secret] = {"data": {"tls.crt": b64(b"C").decode(), "tls.key": b64(b"K").decode()}}
    ctl.sync_secret_volume()
    assert {f.name: f.read_bytes() for f in ctl.cert_dir.iterdir()} == {
        "tls.crt": b"C",
        "tls.key": b"K",
    }
    api.objects[secret]["data"]["tls.crt"] = b64(b"C2").decode()
    ctl.sync_secret_volume()
    assert (ctl.cert_dir / "tls.crt").read_bytes() == b"C2"


def test_a_process_left_by_a_killed_runner_is_stopped_by_the_next_start(fake_binary, tmp_path):
    ctl = controller(fake_binary, tmp_path, FakeApi())  # the Secret never appears: no start
    ctl.work_dir.mkdir(parents=True)
    ctl.config_file.write_text(yaml.safe_dump(ctl.config))
    stray = subprocess.Popen(
        [str(fake_binary), f"--config={ctl.config_file}"], start_new_session=True
    )
    try:
        wait_for("the stray serving", lambda: kueues.readyz(ctl.ports.health)[0], 30)
        record = {"pid": stray.pid, "start_ticks": clusters._start_ticks(stray.pid)}
        ctl.pid_file.write_text(json.dumps(record))  # as its killed runner left it
        ctl.start()
        ctl.stop()
        assert stray.poll() is not None
        assert not ctl.pid_file.exists()
    finally:
        if stray.poll() is None:
            stray.kill()
        stray.wait()


def test_a_controller_that_exits_is_started_again_with_backoff(fake_binary, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KUEUE", "exit")
    api = FakeApi()
    api.objects.update(chart_objects())
    ctl = controller(fake_binary, tmp_path, api)
    started = time.monotonic()
    ctl.start()
    try:
        wait_for("a third start", lambda: ctl.status.starts >= 3, 60)
        # Pauses of 1 s then 2 s lie between the three starts.
        assert time.monotonic() - started >= 3.0
        assert "exit code 3" in ctl.status.detail or ctl.status.state == "starting"
    finally:
        ctl.stop()
    assert "--- " in ctl.log_file.read_text()


def test_the_bootstrap_ping_is_not_taken_for_ready(fake_binary, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KUEUE", "ping")
    api = FakeApi()
    api.objects.update(chart_objects())
    ctl = controller(fake_binary, tmp_path, api, start_timeout_s=3.0)
    ctl.start()
    try:
        wait_for("a restart after the start timeout", lambda: ctl.status.starts >= 2, 60)
        assert not ctl.ready()
    finally:
        ctl.stop()


def test_readyz_wants_the_managers_own_check():
    class Handler(http.server.BaseHTTPRequestHandler):
        body = b""

        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(self.body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer((clusters.LOOPBACK, 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        Handler.body = b"[+]ping ok\nhealthz check passed"
        assert not kueues.readyz(port)[0]
        Handler.body = b"[+]readyz ok\nreadyz check passed"
        assert kueues.readyz(port)[0]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


# --- the readiness bridge -------------------------------------------------------------------


def test_the_bridge_mirrors_process_readiness_onto_live_controller_pods():
    api = FakeApi()
    pods = "/api/v1/namespaces/kueue-system/pods"
    api.objects[f"{pods}/a"] = {"metadata": {"name": "a"}}
    api.objects[f"{pods}/b"] = {
        "metadata": {"name": "b", "annotations": {kueues.READY_ANNOTATION: "true"}}
    }
    api.objects[f"{pods}/c"] = {"metadata": {"name": "c", "deletionTimestamp": "now"}}
    ready = False
    bridge = ReadinessBridge(api, lambda: ready, log=lambda line: None)
    bridge.sync()
    assert api.patches == [
        (f"{pods}/a", {"metadata": {"annotations": {kueues.READY_ANNOTATION: "false"}}}),
        (f"{pods}/b", {"metadata": {"annotations": {kueues.READY_ANNOTATION: "false"}}}),
    ]
    api.patches.clear()
    ready = True
    api.objects[f"{pods}/a"]["metadata"]["annotations"] = {kueues.READY_ANNOTATION: "false"}
    bridge.sync()
    assert [p for p, _ in api.patches] == [f"{pods}/a"]
    assert api.patches[0][1]["metadata"]["annotations"][kueues.READY_ANNOTATION] == "true"


# --- a real run against the local cluster -------------------------------------------------------

BINARIES, MISSING = clusters.find_binaries()
KUEUE_BINARY = kueues.find_binary()
NOT_BUILT = [*MISSING, *([] if KUEUE_BINARY else ["kueue"])]
needs_binaries = pytest.mark.skipif(
    bool(NOT_BUILT),
    reason=f"not built: {', '.join(NOT_BUILT)} "
    "(python -m tools.e2e build kubernetes etcd kwok kueue)",
)

RBAC_TEMPLATES = (
    "rbac/service_account.yaml",
    "rbac/role.yaml",
    "rbac/role_binding.yaml",
    "rbac/manager_secrets_role.yaml",
    "rbac/manager_secrets_role_binding.yaml",
    "rbac/leader_election_role.yaml",
    "rbac/leader_election_role_binding.yaml",
    "rbac/metrics_auth_role.yaml",
    "rbac/metrics_auth_role_binding.yaml",
    "visibility/role_binding.yaml",
    "webhook/service.yaml",
    "visibility/service.yaml",
    "manager/auth_proxy_service.yaml",
)
"""Installed first, with the controller's Deployment: what lets the process start is later."""
ADMISSION_TEMPLATES = (
    "webhook/manifests.yaml",
    "visibility/apiservice_v1beta1.yaml",
    "visibility/apiservice_v1beta2.yaml",
)


class ChartTemplates:
    """Renders the templates of Kueue's chart this test installs, for the chart's values
    merged with the platform's. There is no helm binary here; these templates use a handful of
    constructs (the chart's name helpers, values, ``if``/``else``, ``has``/``hasKey`` on the
    manager config, ``toYaml | nindent``), each handled as Helm does, and anything else fails."""

    ACTION = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}")
    COMMENT = re.compile(r"\{\{-?\s*/\*.*?\*/\s*-?\}\}", re.DOTALL)

    def __init__(self, chart: Path, values: Mapping[str, Any], release: str, namespace: str):
        self.chart = chart
        meta = yaml.safe_load((chart / "Chart.yaml").read_text())
        self.version, self.app_version = meta["version"], meta["appVersion"]
        self.values = merge_values(yaml.safe_load((chart / "values.yaml").read_text()), values)
        self.manager = yaml.safe_load(self.values["managerConfig"]["controllerManagerConfigYaml"])
        self.release, self.namespace = release, namespace
        self.fullname = kueues.chart_fullname(release)

    def labels(self, helper: str) -> dict[str, str]:
        selector = {
            "app.kubernetes.io/name": "kueue",
            "app.kubernetes.io/instance": self.release,
            "control-plane": "controller-manager",
        }
        if helper == "kueue.selectorLabels":
            return selector
        labels = {
            "helm.sh/chart": f"kueue-{self.version}",
            **selector,
            "app.kubernetes.io/version": self.app_version,
            "app.kubernetes.io/managed-by": "Helm",
        }
        components = {
            "kueue.labels": None,
            "kueue.webhookService.labels": "webhook-service",
            "kueue.visibilityService.labels": "visibility-service",
            "kueue.metricsService.labels": "metrics-service",
            "kueue.controllerManager.labels": "controller",
        }
        if components[helper]:
            labels["app.kubernetes.io/component"] = str(components[helper])
        return labels

    def value(self, expression: str) -> Any:
        if expression == ".Release.Namespace":
            return self.namespace
        if expression.startswith(".Values."):
            node: Any = self.values
            for part in expression.removeprefix(".Values.").split("."):
                node = node.get(part) if isinstance(node, dict) else None
            return node
        if expression.startswith("$managerConfig."):
            return self.manager.get(expression.removeprefix("$managerConfig."))
        raise AssertionError(f"unhandled expression {expression!r}")

    def condition(self, expression: str) -> bool:
        expression = expression.strip()
        if expression.startswith("(") and expression.endswith(")"):
            expression = expression[1:-1]
        if expression.startswith("not "):
            return not self.condition(expression[4:])
        match = re.fullmatch(r'has "([^"]+)" \$integrationsConfig\.frameworks', expression)
        if match:
            return match.group(1) in self.manager["integrations"]["frameworks"]
        match = re.fullmatch(r'hasKey \$managerConfig "([^"]+)"', expression)
        if match:
            return match.group(1) in self.manager
        return bool(self.value(expression))

    def inline(self, line: str) -> str:
        def substitute(match: re.Match[str]) -> str:
            action = match.group(1)
            if action == 'include "kueue.fullname" .':
                return self.fullname
            return str(self.value(action))

        return self.ACTION.sub(substitute, line)

    def render(self, relative: str) -> list[dict[str, Any]]:
        text = self.COMMENT.sub("", (self.chart / "templates" / relative).read_text())
        out: list[str] = []
        frames: list[bool] = []
        for line in text.splitlines():
            whole = self.ACTION.fullmatch(line.strip())
            if whole:
                action = whole.group(1)
                if action.startswith("if "):
                    frames.append(all(frames) and self.condition(action[3:]))
                elif action == "else":
                    frames[-1] = not frames[-1] and all(frames[:-1])
                elif action == "end":
                    frames.pop()
                elif action.startswith("$"):
                    pass  # the variables condition() reads
                elif all(frames):
                    out.extend(self.block(action))
                continue
            if all(frames):
                out.append(self.inline(line))
        return [d for d in yaml.safe_load_all("\n".join(out)) if d]

    def block(self, action: str) -> list[str]:
        """``include "<labels>" . | nindent N`` or ``toYaml X | nindent N``, alone on a line."""
        match = re.fullmatch(r'include "([\w.]+)" \. \| nindent (\d+)', action)
        if match:
            data: Any = self.labels(match.group(1))
            indent = int(match.group(2))
        else:
            match = re.fullmatch(r"(?:toYaml (\S+)|(\S+) \| toYaml) \| nindent (\d+)", action)
            if not match:
                raise AssertionError(f"unhandled action {action!r}")
            data = self.value(match.group(1) or match.group(2))
            indent = int(match.group(3))
        dumped = yaml.safe_dump(data, sort_keys=False).splitlines()
        return [" " * indent + line for line in dumped]


def kueue_chart() -> Path:
    tool = builder.TOOLS["kueue"]
    return builder.module_dir_of(tool.module_dir, "sigs.k8s.io/kueue") / "charts" / "kueue"


def chart_config_map(templates: ChartTemplates) -> dict[str, Any]:
    """What manager/manager-config.yaml renders: the values' Configuration, completed with
    internal certificate management named after the release when it has none. (Built here:
    that template uses ``dict``/``set``, which ChartTemplates does not handle.)"""
    config = dict(templates.manager)
    config.setdefault(
        "internalCertManagement",
        {
            "enable": True,
            "webhookServiceName": f"{templates.fullname}-webhook-service",
            "webhookSecretName": f"{templates.fullname}-webhook-server-cert",
        },
    )
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": kueues.CONFIG_MAP, "namespace": templates.namespace},
        "data": {kueues.CONFIG_KEY: yaml.safe_dump(config, sort_keys=False)},
    }


def controller_deployment(namespace: str = "kueue-system") -> dict[str, Any]:
    """The chart's controller Deployment as far as KWOK and the bridge care: its labels, service
    account and a restricted-compliant pod. (Its manager.yaml template is not rendered here.)"""
    labels = {
        "app.kubernetes.io/name": "kueue",
        "app.kubernetes.io/instance": "kueue",
        "control-plane": "controller-manager",
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "kueue-controller-manager", "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": "kueue-controller-manager",
                    "securityContext": {
                        "runAsNonRoot": True,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [
                        {
                            "name": "manager",
                            "image": "kueue:v0.17.0",  # never pulled: a KWOK pod
                            "args": ["--config=/controller_manager_config.yaml"],
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]},
                                "readOnlyRootFilesystem": True,
                                "runAsUser": 65532,
                            },
                            "ports": [
                                {"containerPort": 9443, "name": "webhook-server"},
                                {"containerPort": 8082, "name": "visibility"},
                            ],
                        }
                    ],
                },
            },
        },
    }


class Cluster:
    """The cluster and the Kueue run of the class, with what the fixture observed on the way."""

    def __init__(self, cluster: LocalCluster, run: kueues.KueueRun, templates: ChartTemplates):
        self.cluster = cluster
        self.run = run
        self.templates = templates
        self.observed: dict[str, Any] = {}

    def apply(self, documents: list[dict[str, Any]], manager: str = "e2e-test") -> None:
        self.cluster.kubectl(
            "apply",
            "--server-side",
            f"--field-manager={manager}",
            "-f",
            "-",
            input=yaml.safe_dump_all(documents, sort_keys=False),
        )

    def get(self, *args: str) -> Any:
        return self.cluster.get_json(*args)

    def controller_pod(self) -> dict[str, Any] | None:
        selector = ",".join(f"{k}={v}" for k, v in kueues.CONTROLLER_POD_LABELS.items())
        pods = self.get("pods", "-n", "kueue-system", "-l", selector)["items"]
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        return live[0] if live else None

    def pod_ready(self) -> str | None:
        pod = self.controller_pod()
        if pod is None:
            return None
        conditions = {c["type"]: c for c in pod["status"].get("conditions", [])}
        return conditions.get("Ready", {}).get("status")


def with_our_stages(documents: Callable[..., str]) -> Callable[..., str]:
    def combined(*args: Any, **kwargs: Any) -> str:
        text = documents(*args, **kwargs)
        if "kueue-controller-running" in text:
            return text
        return text.rstrip() + "\n---\n" + kueues.kwok_stages()

    return combined


@pytest.fixture(scope="class")
def kueue_cluster(tmp_path_factory) -> Iterator[Cluster]:
    """A dev cluster, then, in the order ``pulumi up`` brings them: Kueue started before its
    namespace exists, the namespace with the chart's ServiceAccount, RBAC, Services and
    controller Deployment, the CRDs and webhook configurations, and last the Secret, which lets
    the process start."""
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(
        clusters, "kwok_stage_documents", with_our_stages(clusters.kwok_stage_documents)
    )
    work = tmp_path_factory.mktemp("kueue-e2e")
    lines: list[str] = []
    cluster = LocalCluster("dev", work_dir=work / "cluster", log=lines.append)
    templates = ChartTemplates(kueue_chart(), chart_values(KueueArgs()), "kueue", "kueue-system")
    try:
        with (
            cluster.running(),
            kueues.running_for(cluster, binary=KUEUE_BINARY) as run,
        ):
            env = Cluster(cluster, run, templates)
            wait_for("the controller waiting", lambda: run.controller.status.state == "waiting")
            env.observed["waiting for"] = run.controller.status.detail
            namespace = {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": "kueue-system",
                    "labels": {"pod-security.kubernetes.io/enforce": "restricted"},
                },
            }
            rbac = [d for t in RBAC_TEMPLATES for d in templates.render(t)]
            env.apply([namespace, *rbac, chart_config_map(templates), controller_deployment()])

            def running_not_ready() -> bool:
                ready = env.pod_ready()
                if ready == "True":
                    pytest.fail("KWOK made the controller pod Ready before the process was")
                pod = env.controller_pod() or {}
                marked = pod.get("metadata", {}).get("annotations", {})
                return ready == "False" and marked.get(kueues.READY_ANNOTATION) == "false"

            wait_for("the controller pod Running", running_not_ready)
            env.observed["pod before"] = env.controller_pod()
            crds = [d for t in sorted(os.listdir(kueue_chart() / "templates" / "crd"))
                    for d in templates.render(f"crd/{t}")]  # fmt: skip
            env.apply(crds)
            cluster.kubectl(
                "wait", "--for=condition=Established", "--timeout=60s",
                *[f"crd/{d['metadata']['name']}" for d in crds],
            )  # fmt: skip
            env.apply([d for t in ADMISSION_TEMPLATES for d in templates.render(t)])
            flavor = {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ResourceFlavor",
                "metadata": {"name": "early"},
            }
            early = cluster.kubectl("create", "-f", "-", input=json.dumps(flavor), check=False)
            env.observed["create before serving"] = early
            env.apply(templates.render("internalcert/secret.yaml"))
            run.wait_serving(WAIT_S)
            wait_for("the controller pod Ready", lambda: env.pod_ready() == "True")
            yield env
    finally:
        monkeypatch.undo()
        print("\n".join(lines[-80:]))


@pytest.mark.real
@needs_binaries
class TestKueueForReal:
    def test_the_controller_waited_for_the_chart_and_the_pod_for_the_process(self, kueue_cluster):
        env = kueue_cluster
        assert "ServiceAccount kueue-system/kueue-controller-manager" in env.observed["waiting for"]
        before = env.observed["pod before"]
        assert before["status"]["phase"] == "Running"
        assert before["metadata"]["annotations"][kueues.READY_ANNOTATION] == "false"
        pod = env.controller_pod()
        assert pod is not None
        assert pod["metadata"]["annotations"][kueues.READY_ANNOTATION] == "true"
        ready = next(c for c in pod["status"]["conditions"] if c["type"] == "Ready")
        transition = calendar.timegm(
            time.strptime(ready["lastTransitionTime"], "%Y-%m-%dT%H:%M:%SZ")
        )
        since = env.run.controller.status.ready_since
        assert since is not None
        assert transition >= int(since) - 1  # Ready only after the process was

    def test_webhooks_refused_objects_until_the_process_served_them(self, kueue_cluster):
        early = kueue_cluster.observed["create before serving"]
        assert early.returncode != 0
        assert "failed calling webhook" in early.stderr, early.stderr

    def test_kueue_injected_its_ca_into_the_charts_webhooks_and_crds(self, kueue_cluster):
        env = kueue_cluster
        for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
            name = f"kueue-{kind.removesuffix('webhookconfiguration')}-webhook-configuration"
            webhooks = env.get(kind, name)["webhooks"]
            assert webhooks and all(w["clientConfig"].get("caBundle") for w in webhooks)
        for name in kueues.CONVERSION_CRDS:
            conversion = env.get("crd", name)["spec"]["conversion"]
            assert conversion["webhook"]["clientConfig"]["caBundle"]
        secret = env.get("secret", "-n", "kueue-system", "kueue-webhook-server-cert")
        cert = base64.b64decode(secret["data"]["tls.crt"])
        subject = subprocess.run(
            ["openssl", "x509", "-noout", "-ext", "subjectAltName"],
            input=cert,
            capture_output=True,
            check=True,
        ).stdout.decode()
        assert "DNS:kueue-webhook-service.kueue-system.svc" in subject

    def test_a_queued_job_is_suspended_by_the_webhook_and_admitted_by_kueue(self, kueue_cluster):
        env = kueue_cluster
        cq = "cq-e2e"
        env.apply(
            [
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "ResourceFlavor",
                    "metadata": {"name": "default-flavor"},
                },
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "ClusterQueue",
                    "metadata": {"name": cq},
                    "spec": {
                        "namespaceSelector": {},
                        "resourceGroups": [
                            {
                                "coveredResources": ["cpu", "memory"],
                                "flavors": [
                                    {
                                        "name": "default-flavor",
                                        "resources": [
                                            {"name": "cpu", "nominalQuota": "4"},
                                            {"name": "memory", "nominalQuota": "8Gi"},
                                        ],
                                    }
                                ],
                            }
                        ],
                    },
                },
                # Kueue's webhooks see team namespaces only (components/kueue.py).
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": "team-e2e", "labels": {TEAM_LABEL: "e2e"}},
                },
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "LocalQueue",
                    "metadata": {"name": "lq", "namespace": "team-e2e"},
                    "spec": {"clusterQueue": cq},
                },
            ]
        )
        wait_for(
            "the ClusterQueue Active",
            lambda: any(
                c["type"] == "Active" and c["status"] == "True"
                for c in env.get("clusterqueue", cq).get("status", {}).get("conditions", [])
            ),
        )
        job = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "queued",
                "namespace": "team-e2e",
                "labels": {"kueue.x-k8s.io/queue-name": "lq"},
            },
            "spec": {
                "suspend": False,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "main",
                                "image": "busybox",
                                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                            }
                        ],
                    }
                },
            },
        }
        created = json.loads(
            env.cluster.kubectl("create", "-o", "json", "-f", "-", input=json.dumps(job)).stdout
        )
        assert created["spec"]["suspend"] is True  # Kueue's mutating webhook suspended it
        wait_for(
            "the Job unsuspended",
            lambda: env.get("job", "-n", "team-e2e", "queued")["spec"]["suspend"] is False,
        )
        workloads = env.get("workloads", "-n", "team-e2e")["items"]
        assert len(workloads) == 1
        conditions = {c["type"]: c["status"] for c in workloads[0]["status"]["conditions"]}
        assert conditions.get("Admitted") == "True"
        admission = workloads[0]["status"]["admission"]
        assert admission["clusterQueue"] == cq
        wait_for(
            "the Job complete (its pods ran on KWOK nodes)",
            lambda: any(
                c["type"] == "Complete" and c["status"] == "True"
                for c in env.get("job", "-n", "team-e2e", "queued")
                .get("status", {})
                .get("conditions", [])
            ),
        )

    def test_the_visibility_api_is_served_through_the_aggregator(self, kueue_cluster):
        env = kueue_cluster
        wait_for(
            "the visibility APIService Available",
            lambda: any(
                c["type"] == "Available" and c["status"] == "True"
                for c in env.get("apiservice", "v1beta2.visibility.kueue.x-k8s.io")
                .get("status", {})
                .get("conditions", [])
            ),
        )
        raw = env.cluster.kubectl(
            "get",
            "--raw",
            "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq-e2e/pendingworkloads",
        ).stdout
        assert json.loads(raw)["kind"] == "PendingWorkloadsSummary"

    def test_an_older_api_version_is_converted_by_kueues_webhook(self, kueue_cluster):
        old = kueue_cluster.get("clusterqueues.v1beta1.kueue.x-k8s.io", "cq-e2e")
        assert old["apiVersion"] == "kueue.x-k8s.io/v1beta1"

    def test_the_process_is_started_again_and_the_pod_follows(self, kueue_cluster):
        env = kueue_cluster
        controller = env.run.controller
        pid = controller.status.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        wait_for("the pod not Ready", lambda: env.pod_ready() == "False")
        wait_for("a second start", lambda: controller.status.starts >= 2)
        controller.wait_ready(WAIT_S)
        wait_for("the pod Ready again", lambda: env.pod_ready() == "True")
        flavor = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "after-restart"},
        }
        env.cluster.kubectl("create", "-f", "-", input=json.dumps(flavor))

    def test_leaving_stops_the_process_the_proxy_and_the_bridge(self, kueue_cluster):
        env = kueue_cluster
        run = env.run
        pid = run.controller.status.pid
        webhook = run.proxy.address(run.routes["webhook"])
        assert pid is not None and webhook is not None
        # What running() does on exit, run here so the cluster can still be asked.
        run.controller.stop()
        run.proxy.stop()
        assert not clusters.process_alive(pid)
        assert proxy_threads() == []
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(webhook, timeout=5).close()
        names = {t.name for t in threading.enumerate()}
        assert "kueue" not in names
