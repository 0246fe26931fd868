"""The real Kueue controller beside the local cluster: out of cluster, on loopback only.

The platform installs Kueue with its Helm chart, whose webhooks are ``failurePolicy: Fail``.
Under KWOK the chart's controller pod runs nothing, so without a real process serving those
webhooks no ResourceFlavor, ClusterQueue or Job could be created. Here the ``kueue`` binary
(``python -m tools.e2e build kueue``, the release the platform pins) runs as a process of its own,
as the chart's service account, with the Configuration the chart rendered from the platform's
values, changed only where running out of cluster requires it (:func:`out_of_cluster_config`).
:class:`KueueController` supervises it and plays what a pod's kubelet would. Around it:

- :class:`ServiceProxy`: the cluster's Service CIDR lies inside 127.0.0.0/8, so every ClusterIP
  is a loopback address. The proxy listens on the ClusterIP and port of the chart's webhook and
  visibility Services and forwards TCP, TLS untouched, to the process. The API server reaches
  them by ClusterIP, as on a real cluster, and verifies the certificate Kueue issued itself for
  ``kueue-webhook-service.kueue-system.svc``.
- :func:`kwok_stages` and :class:`ReadinessBridge`: KWOK makes the chart's controller pod Running
  but not Ready, and Ready only while the real process answers ``/readyz``, so Helm's wait, and
  everything the platform orders after the Release, holds until the webhooks serve, as a
  kubelet's readiness probe would make it.
- :func:`running`: starts all of it and always stops all of it.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import ipaddress
import json
import os
import socket
import ssl
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

import yaml

from components.constants import KUEUE_NAMESPACE, KUEUE_RELEASE
from components.kueue import manager_config

from . import build as builder
from .cluster import LOOPBACK, LocalCluster, free_ports, process_alive, stop_group
from .cluster import _start_ticks as start_ticks

CHART_NAME: Final = "kueue"


def chart_fullname(release: str = KUEUE_RELEASE, chart: str = CHART_NAME) -> str:
    """The chart's ``kueue.fullname``: the release name if it contains the chart's name."""
    return release if chart in release else f"{release}-{chart}"


FULLNAME: Final = chart_fullname()
"""The chart's ``kueue.fullname`` for the platform's release: the prefix of its objects."""
WEBHOOK_SERVICE: Final = f"{FULLNAME}-webhook-service"
"""The chart's webhook Service (``<fullname>-webhook-service``), Kueue's default name for it."""
WEBHOOK_SECRET: Final = f"{FULLNAME}-webhook-server-cert"
"""The empty Secret the chart creates; Kueue keeps its CA and serving certificate in it."""
VISIBILITY_SERVICE: Final = f"{FULLNAME}-visibility-server"
"""Behind the chart's APIServices ``v1beta1``/``v1beta2.visibility.kueue.x-k8s.io``."""
SERVICE_PORT: Final = 443
"""The port of both Services (their targetPorts, 9443 and 8082, are the pod's)."""
CONVERSION_CRDS: Final = (
    "localqueues.kueue.x-k8s.io",
    "clusterqueues.kueue.x-k8s.io",
    "workloads.kueue.x-k8s.io",
    "cohorts.kueue.x-k8s.io",
    "multikueueclusters.kueue.x-k8s.io",
)
"""CRDs with a conversion webhook whose CA bundle Kueue's certificate rotator injects."""
CONTROLLER_POD_LABELS: Final = {
    "app.kubernetes.io/name": CHART_NAME,
    "control-plane": "controller-manager",
}
"""The chart's selector labels of the controller Deployment's pods (besides the instance)."""
CONFIG_MAP: Final = f"{FULLNAME}-manager-config"
"""The chart's ConfigMap of the controller's Configuration (``<fullname>-manager-config``): the
platform's ``managerConfig`` as the chart completed it, what the pod mounts."""
CONFIG_KEY: Final = "controller_manager_config.yaml"
SERVICE_ACCOUNT: Final = f"{FULLNAME}-controller-manager"
"""The chart's ServiceAccount of the controller (``<fullname>-controller-manager``): the
process authenticates as it, so the chart's RBAC is what allows or refuses its requests."""
TOKEN_SECONDS: Final = 48 * 3600
READY_ANNOTATION: Final = "e2e.aiplatform.io/process-ready"
"""Set by :class:`ReadinessBridge` on the fake controller pod: ``"true"`` while the real process
is ready, ``"false"`` otherwise. KWOK's stages turn it into the pod's Ready condition."""

POLL_S: Final = 0.5
START_TIMEOUT_S: Final = 180.0
"""A start that is not ready by then is restarted: Kueue's certificate bootstrap waits forever
when the objects it needs vanish while it starts."""
BACKOFF_S: Final = (1.0, 30.0)
"""First and longest pause before restarting a controller that exited."""
STOP_GRACE_S: Final = 15.0
CONNECT_TIMEOUT_S: Final = 5.0
CONNECT_WINDOW_S: Final = 8.0
"""How long a proxied connection keeps trying to reach its backend (a controller restarting, a
listen queue full under load) before it is closed, as by a Service whose pod does not listen:
below the API server's 10 s webhook timeout, so the call still fails as it would in a cluster
when the backend stays away."""
CONNECT_RETRY_S: Final = 0.25
WATCH_TIMEOUT_S: Final = 300
"""The API server ends a watch after this; it is then listed and watched again."""
WATCH_READ_TIMEOUT_S: Final = WATCH_TIMEOUT_S + 60.0
LOG_TAIL_LINES: Final = 40


class KueueError(RuntimeError):
    """The controller did not become ready, or a Service could not be served; the message says
    why and shows the controller's last log lines."""


def webhook_configuration_names(service: str = WEBHOOK_SERVICE) -> tuple[str, str]:
    """The Mutating and Validating WebhookConfigurations Kueue injects its CA into (derived from
    the Service name as Kueue derives them)."""
    base = service.removesuffix("-webhook-service")
    return f"{base}-mutating-webhook-configuration", f"{base}-validating-webhook-configuration"


# --- configuration ------------------------------------------------------------------------------


def manager_config_from_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """The Configuration inside the chart values the platform renders (``managerConfig.
    controllerManagerConfigYaml``), e.g. the Release's inputs in the offline preview's report."""
    text = values["managerConfig"]["controllerManagerConfigYaml"]
    config = yaml.safe_load(text)
    if not isinstance(config, dict) or config.get("kind") != "Configuration":
        raise KueueError("managerConfig.controllerManagerConfigYaml is not a Kueue Configuration")
    return config


def platform_manager_config(fair_sharing: bool = True) -> dict[str, Any]:
    """The platform's Configuration, from the function its chart values use."""
    return manager_config(fair_sharing)


@dataclass(frozen=True)
class KueuePorts:
    """Free loopback ports for the process's servers."""

    webhook: int
    health: int
    metrics: int
    visibility: int

    @classmethod
    def choose(cls) -> KueuePorts:
        return cls(*free_ports(4))


def out_of_cluster_config(
    base: Mapping[str, Any],
    ports: KueuePorts,
    cert_dir: Path,
    namespace: str = KUEUE_NAMESPACE,
) -> dict[str, Any]:
    """``base`` with only what running out of cluster needs changed.

    - No leader election: one process, and nothing to hand over to.
    - Every server on 127.0.0.1 and a free port (in a pod they bind ``:port`` of the pod's IP).
    - ``namespace`` set: in a pod Kueue reads it from the service-account mount.
    - Internal certificate management on, named as the chart names things: Kueue issues the
      webhook serving certificate for ``<service>.<namespace>.svc`` itself, keeps it in the
      chart's Secret and injects the CA into the chart's webhook configurations and conversion
      CRDs; it reads the certificate from ``cert_dir``, which in a pod is the Secret's volume
      (:meth:`KueueController.sync_secret_volume` plays that part). The metrics server then
      makes its own self-signed certificate, so the hard-coded ``/etc/kueue/metrics/certs`` is
      never read.
    - The visibility server on loopback; its certificate goes to ``visibility/`` in the
      process's working directory (a build flag relocates the hard-coded ``/visibility``).
    """
    config = json.loads(json.dumps(dict(base)))  # a deep copy of plain data
    config["namespace"] = namespace
    config["leaderElection"] = {**config.get("leaderElection", {}), "leaderElect": False}
    config["health"] = {
        **config.get("health", {}),
        "healthProbeBindAddress": f"{LOOPBACK}:{ports.health}",
    }
    config["metrics"] = {**config.get("metrics", {}), "bindAddress": f"{LOOPBACK}:{ports.metrics}"}
    config["webhook"] = {
        **config.get("webhook", {}),
        "host": LOOPBACK,
        "port": ports.webhook,
        "certDir": str(cert_dir),
    }
    internal = dict(config.get("internalCertManagement", {}))
    if internal.get("enable") is False:
        raise KueueError(
            "internalCertManagement.enable is false: out of cluster Kueue would read its "
            "certificates from container paths; the e2e needs it on"
        )
    internal.update(enable=True)
    internal.setdefault("webhookServiceName", WEBHOOK_SERVICE)
    internal.setdefault("webhookSecretName", WEBHOOK_SECRET)
    config["internalCertManagement"] = internal
    config["visibilityServer"] = {
        **config.get("visibilityServer", {}),
        "bindAddress": LOOPBACK,
        "bindPort": ports.visibility,
    }
    return config


# --- a small client of the API server -----------------------------------------------------------


class Api(Protocol):
    """What the proxy, the controller and the bridge ask of the API server."""

    server: str
    ca_file: str

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        timeout_s: float = 10.0,
    ) -> tuple[int, Any]: ...

    def get(self, path: str) -> Any | None: ...

    def watch(self, path: str, params: Mapping[str, str]) -> Iterator[dict[str, Any]]: ...

    def close_streams(self) -> None: ...


class KubeApi:
    """JSON over HTTPS with the kubeconfig's client certificate; enough for watching Services,
    reading a few objects and patching pods, without a subprocess per call."""

    def __init__(self, kubeconfig: Path, secrets_dir: Path) -> None:
        document = yaml.safe_load(kubeconfig.read_text())
        context_name = document.get("current-context")
        contexts = {c["name"]: c["context"] for c in document.get("contexts", [])}
        if context_name not in contexts:
            raise KueueError(f"{kubeconfig}: no current-context")
        context = contexts[context_name]
        cluster = {c["name"]: c["cluster"] for c in document["clusters"]}[context["cluster"]]
        user = {u["name"]: u["user"] for u in document["users"]}[context["user"]]
        url = urllib.parse.urlsplit(cluster["server"])
        self.host = url.hostname or LOOPBACK
        self.port = url.port or 443
        secrets_dir.mkdir(parents=True, exist_ok=True, mode=0o700)

        def material(data_key: str, file_key: str, source: Mapping[str, Any], name: str) -> str:
            if file_key in source:
                return str(source[file_key])
            path = secrets_dir / name
            path.write_bytes(base64.b64decode(source[data_key]))
            path.chmod(0o600)
            return str(path)

        ca = material("certificate-authority-data", "certificate-authority", cluster, "ca.crt")
        cert = material("client-certificate-data", "client-certificate", user, "client.crt")
        key = material("client-key-data", "client-key", user, "client.key")
        self._tls = ssl.create_default_context(cafile=ca)
        self._tls.load_cert_chain(cert, key)
        self.server = cluster["server"]
        self.ca_file = ca
        self._lock = threading.Lock()
        self._streams: set[http.client.HTTPSConnection] = set()
        self._closed = False

    def _connection(self, timeout_s: float | None) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(
            self.host, self.port, context=self._tls, timeout=timeout_s
        )

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        timeout_s: float = 10.0,
    ) -> tuple[int, Any]:
        """Status and decoded JSON body (None when the body is not JSON)."""
        connection = self._connection(timeout_s)
        try:
            headers = {"Accept": "application/json"}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                headers["Content-Type"] = content_type
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            raw = response.read()
            try:
                return response.status, json.loads(raw) if raw else None
            except ValueError:
                return response.status, None
        finally:
            connection.close()

    def get(self, path: str) -> Any | None:
        """The object, or None if it does not exist; other failures raise."""
        status, body = self.request("GET", path)
        if status == 404:
            return None
        if status != 200:
            raise KueueError(f"GET {path}: HTTP {status}: {body}")
        return body

    def watch(self, path: str, params: Mapping[str, str]) -> Iterator[dict[str, Any]]:
        """Watch events until the server ends the stream or :meth:`close_streams` is called."""
        query = urllib.parse.urlencode({**params, "watch": "1"})
        connection = self._connection(WATCH_READ_TIMEOUT_S)
        with self._lock:
            if self._closed:
                return
            connection.connect()  # under the lock: close_streams sees a socket to shut down
            self._streams.add(connection)
        try:
            connection.request("GET", f"{path}?{query}", headers={"Accept": "application/json"})
            response = connection.getresponse()
            if response.status != 200:
                raise KueueError(f"watch {path}: HTTP {response.status}: {response.read()[:300]!r}")
            while True:
                line = response.readline()
                if not line:
                    return
                if line.strip():
                    yield json.loads(line)
        finally:
            with self._lock:
                self._streams.discard(connection)
            connection.close()

    def close_streams(self) -> None:
        """End every open watch (a blocked read returns at once) and refuse new ones."""
        with self._lock:
            self._closed = True
            streams = list(self._streams)
        for connection in streams:
            if connection.sock is not None:
                with contextlib.suppress(OSError):
                    connection.sock.shutdown(socket.SHUT_RDWR)


# --- the service proxy ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    """Traffic to ``<ClusterIP of namespace/service>:port`` goes to the backend address."""

    namespace: str
    service: str
    port: int
    backend_port: int
    backend_host: str = LOOPBACK

    def __str__(self) -> str:
        backend = f"{self.backend_host}:{self.backend_port}"
        return f"{self.namespace}/{self.service}:{self.port} -> {backend}"


@dataclass
class _Listening:
    address: tuple[str, int]
    socket: socket.socket
    thread: threading.Thread


@dataclass
class _RouteState:
    route: Route
    listening: _Listening | None = None
    error: str = ""
    watcher: threading.Thread | None = None


class ServiceProxy:
    """Serves Services of the cluster from loopback backends.

    For each :class:`Route` it watches the Service; once it exists it listens on the Service's
    ClusterIP and port (a loopback address: the cluster's Service CIDR is in 127.0.0.0/8) and
    forwards every connection, byte for byte, to the backend. A Service that is recreated with
    another ClusterIP moves the listener; a deleted one closes it. :meth:`stop` closes listeners
    and open connections and joins every thread.
    """

    def __init__(
        self,
        api: Api,
        routes: Sequence[Route],
        log: Callable[[str], None] = print,
        connect_window_s: float = CONNECT_WINDOW_S,
    ) -> None:
        self.api = api
        self.log = log
        self.connect_window_s = connect_window_s
        self._routes = [_RouteState(route) for route in routes]
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._pipes: set[threading.Thread] = set()

    def start(self) -> None:
        for state in self._routes:
            state.watcher = threading.Thread(
                target=self._follow, args=(state,), name=f"proxy {state.route}", daemon=True
            )
            state.watcher.start()

    def address(self, route: Route) -> tuple[str, int] | None:
        """Where the route listens now, or None."""
        state = self._state(route)
        with self._lock:
            return state.listening.address if state.listening else None

    def error(self, route: Route) -> str:
        """Why the route cannot listen (e.g. a ClusterIP outside loopback), or ``""``."""
        return self._state(route).error

    def _state(self, route: Route) -> _RouteState:
        return next(s for s in self._routes if s.route == route)

    def stop(self) -> None:
        self._stop.set()
        self.api.close_streams()
        for state in self._routes:
            if state.watcher is not None:
                state.watcher.join(timeout=15)
        for state in self._routes:
            self._close_listener(state)
        # No pipe starts or adds a connection once the flag is set (both check it under the
        # lock), and a pipe leaves the set only here: what is joined is every pipe there was.
        with self._lock:
            connections = list(self._connections)
            pipes = list(self._pipes)
            self._pipes.clear()
        for sock in connections:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in pipes:
            thread.join(timeout=10)

    # --- watching the Service ---

    def _follow(self, state: _RouteState) -> None:
        route = state.route
        path = f"/api/v1/namespaces/{route.namespace}/services"
        selector = {"fieldSelector": f"metadata.name={route.service}"}
        while not self._stop.is_set():
            try:
                status, listing = self.api.request(
                    "GET", f"{path}?{urllib.parse.urlencode(selector)}"
                )
                if status != 200:
                    raise KueueError(f"listing {path}: HTTP {status}")
                items = listing.get("items", [])
                self._apply(state, items[0] if items else None)
                params = {
                    **selector,
                    "resourceVersion": listing["metadata"]["resourceVersion"],
                    "allowWatchBookmarks": "true",
                    "timeoutSeconds": str(WATCH_TIMEOUT_S),
                }
                for event in self.api.watch(path, params):
                    if self._stop.is_set():
                        return
                    kind = event.get("type")
                    if kind in ("ADDED", "MODIFIED"):
                        self._apply(state, event["object"])
                    elif kind == "DELETED":
                        self._apply(state, None)
                    elif kind == "ERROR":  # e.g. 410 Gone: list again
                        break
            except (OSError, http.client.HTTPException, KueueError, ValueError) as exc:
                if self._stop.is_set():
                    return
                self.log(f"kueue proxy: {route}: {exc}; retrying")
                self._stop.wait(1.0)

    def _apply(self, state: _RouteState, service: Mapping[str, Any] | None) -> None:
        """Listen where the Service says, or nowhere if it is gone."""
        route = state.route
        desired: tuple[str, int] | None = None
        if service is not None:
            spec = service.get("spec", {})
            cluster_ip = spec.get("clusterIP", "")
            if any(p.get("port") == route.port for p in spec.get("ports", [])) and cluster_ip:
                desired = (cluster_ip, route.port)
        with self._lock:
            current = state.listening.address if state.listening else None
        if desired == current:
            return
        self._close_listener(state)
        if desired is None:
            return
        ip = desired[0]
        if ip == "None" or not ipaddress.ip_address(ip).is_loopback:
            state.error = (
                f"{route.namespace}/{route.service} has ClusterIP {ip}, not a loopback address: "
                "the cluster's Service CIDR must lie inside 127.0.0.0/8"
            )
            self.log(f"kueue proxy: {state.error}")
            return
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind(desired)
            listener.listen(64)
        except OSError as exc:
            listener.close()
            state.error = f"cannot listen on {ip}:{route.port} for {route}: {exc}"
            self.log(f"kueue proxy: {state.error}")
            return
        thread = threading.Thread(
            target=self._accept, args=(listener, route), name=f"accept {route}", daemon=True
        )
        with self._lock:
            if self._stop.is_set():
                listener.close()
                return
            state.listening = _Listening(desired, listener, thread)
        state.error = ""
        thread.start()
        self.log(f"kueue proxy: {route} listening on {ip}:{route.port}")

    def _close_listener(self, state: _RouteState) -> None:
        with self._lock:
            listening, state.listening = state.listening, None
        if listening is None:
            return
        with contextlib.suppress(OSError):
            listening.socket.shutdown(socket.SHUT_RDWR)
        listening.socket.close()
        listening.thread.join(timeout=10)

    # --- forwarding ---

    def _accept(self, listener: socket.socket, route: Route) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed
            thread = threading.Thread(
                target=self._pipe, args=(client, route), name=f"pipe {route}", daemon=True
            )
            with self._lock:
                if self._stop.is_set():
                    client.close()
                    return
                self._pipes = {t for t in self._pipes if t.is_alive()}
                self._pipes.add(thread)
                thread.start()

    def _connect(self, route: Route) -> socket.socket | None:
        """The backend, tried for :data:`CONNECT_WINDOW_S`; None when it stayed away."""
        deadline = time.monotonic() + self.connect_window_s
        while not self._stop.is_set():
            try:
                return socket.create_connection(
                    (route.backend_host, route.backend_port), timeout=CONNECT_TIMEOUT_S
                )
            except OSError as error:
                if time.monotonic() >= deadline or self._stop.wait(CONNECT_RETRY_S):
                    self.log(f"proxy {route}: backend unreachable, connection closed: {error}")
                    return None
        return None  # stopping

    def _pipe(self, client: socket.socket, route: Route) -> None:
        """One connection: a backend that stays away means the client sees its connection
        closed, as with a Service whose pod does not listen."""
        backend: socket.socket | None = None
        try:
            backend = self._connect(route)
            if backend is None:
                return
            backend.settimeout(None)
            with self._lock:
                if self._stop.is_set():
                    return
                self._connections.update((client, backend))
            upstream = threading.Thread(target=_pump, args=(client, backend), daemon=True)
            upstream.start()
            _pump(backend, client)
            upstream.join()
        finally:
            with self._lock:
                self._connections.discard(client)
                if backend is not None:
                    self._connections.discard(backend)
            client.close()
            if backend is not None:
                backend.close()


def _pump(source: socket.socket, target: socket.socket) -> None:
    """Copy until end of stream, then pass the half-close on."""
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)


# --- the controller process -------------------------------------------------------------------


def find_binary(bin_dir: Path | None = None) -> Path | None:
    """The built ``kueue``: in ``bin_dir`` if given, else the build cache's current key, else
    ``build/e2e/bin``."""
    candidates = []
    if bin_dir is not None:
        candidates.append(bin_dir / "kueue")
    else:
        tool = builder.TOOLS["kueue"]
        with contextlib.suppress(builder.BuildError, OSError):
            folder = tool.out_dir()
            if (folder / ".complete").exists():
                candidates.append(folder / "kueue")
        candidates.append(builder.BIN_LINKS / "kueue")
    return next((c for c in candidates if c.is_file() and os.access(c, os.X_OK)), None)


def _tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


def readyz(port: int, host: str = LOOPBACK) -> tuple[bool, str]:
    """Whether the main manager's ``readyz`` check passes: certificates ready and the webhook
    server started. The bare status is not enough: while certificates bootstrap, a first manager
    answers ``/readyz`` with its default ``ping`` check, 200, before any webhook serves."""
    connection = http.client.HTTPConnection(host, port, timeout=5)
    try:
        connection.request("GET", "/readyz?verbose")
        response = connection.getresponse()
        body = response.read().decode(errors="replace")
        ok = response.status == 200 and "[+]readyz ok" in body
        return ok, f"HTTP {response.status}: {body.strip()[-200:]}"
    except (OSError, http.client.HTTPException) as exc:
        return False, str(exc)
    finally:
        connection.close()


@dataclass
class ControllerStatus:
    state: str = "not started"
    """``waiting`` (for the chart's objects), ``starting``, ``ready``, ``exited``, ``stopped``."""
    detail: str = ""
    pid: int | None = None
    starts: int = 0
    ready_since: float | None = None
    """``time.time()`` of the current run's first ready check."""


class KueueController:
    """The ``kueue`` process, supervised.

    It starts once the chart's objects it needs at start exist (its ServiceAccount and Secret,
    both webhook configurations, the conversion CRDs): before ``pulumi up`` has created the
    namespace the supervisor just waits. Each start authenticates with a fresh token of the
    chart's ServiceAccount (``identity``; None: the admin kubeconfig as given). While it runs, the
    supervisor also does what the kubelet does for the pod's volumes. The Configuration is the
    chart's ConfigMap (unless ``base_config`` is given), changed by :func:`out_of_cluster_config`;
    when ``pulumi up`` changes it, the process is restarted, as the chart's checksum annotation
    rolls the pod. Kueue's certificate rotator only writes the Secret and waits for the files to
    appear in ``webhook.certDir``, so the Secret's keys are mirrored there. A process that exits,
    or is not ready within ``start_timeout_s``, is stopped and started again after a pause that
    doubles up to 30 s. Output goes to ``<work_dir>/kueue.log``.
    """

    def __init__(
        self,
        binary: Path,
        kubeconfig: Path,
        work_dir: Path,
        base_config: Mapping[str, Any] | None = None,
        *,
        api: Api | None = None,
        namespace: str = KUEUE_NAMESPACE,
        identity: str | None = SERVICE_ACCOUNT,
        log_level: int = 2,
        start_timeout_s: float = START_TIMEOUT_S,
        log: Callable[[str], None] = print,
    ) -> None:
        self.binary = binary
        self.kubeconfig = kubeconfig
        self.work_dir = work_dir.resolve()
        self.namespace = namespace
        self.identity = identity
        self.log_level = log_level
        self.start_timeout_s = start_timeout_s
        self.log = log
        self.ports = KueuePorts.choose()
        self.base_config = base_config
        self.config = self._derive(base_config or {})
        """The Configuration of the current (or next) run."""
        self.api = api or KubeApi(kubeconfig, self.work_dir / "client")
        self.status = ControllerStatus()
        self._stop = threading.Event()
        self._popen: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def config_file(self) -> Path:
        return self.work_dir / "controller_manager_config.yaml"

    @property
    def log_file(self) -> Path:
        return self.work_dir / "kueue.log"

    @property
    def process_kubeconfig(self) -> Path:
        """What the process reads: the service account's, or the one given."""
        return self.kubeconfig if self.identity is None else self.work_dir / "kueue.kubeconfig"

    @property
    def webhook_service(self) -> str:
        return str(self.config["internalCertManagement"]["webhookServiceName"])

    @property
    def webhook_secret(self) -> str:
        return str(self.config["internalCertManagement"]["webhookSecretName"])

    @property
    def cert_dir(self) -> Path:
        return Path(self.config["webhook"]["certDir"])

    def _derive(self, base: Mapping[str, Any]) -> dict[str, Any]:
        return out_of_cluster_config(
            base, self.ports, self.work_dir / "webhook-certs", self.namespace
        )

    def load_config(self) -> dict[str, Any] | None:
        """The Configuration to run with now; None while the chart's ConfigMap is missing."""
        if self.base_config is not None:
            return self._derive(self.base_config)
        config_map = self.api.get(f"/api/v1/namespaces/{self.namespace}/configmaps/{CONFIG_MAP}")
        if config_map is None:
            return None
        text = (config_map.get("data") or {}).get(CONFIG_KEY)
        if not text:
            raise KueueError(f"ConfigMap {self.namespace}/{CONFIG_MAP} has no {CONFIG_KEY}")
        return self._derive(yaml.safe_load(text))

    def sync_secret_volume(self) -> None:
        """Make ``cert_dir`` hold exactly the Secret's keys, each file replaced atomically (the
        webhook server's certificate watcher reloads on change)."""
        path = f"/api/v1/namespaces/{self.namespace}/secrets/{self.webhook_secret}"
        secret = self.api.get(path)
        data = {k: base64.b64decode(v) for k, v in ((secret or {}).get("data") or {}).items()}
        self.cert_dir.mkdir(parents=True, exist_ok=True)
        for stale in self.cert_dir.iterdir():
            if stale.name not in data:
                stale.unlink()
        for key, content in data.items():
            target = self.cert_dir / key
            if target.is_file() and target.read_bytes() == content:
                continue
            staged = self.cert_dir / f".{key}.tmp"
            staged.write_bytes(content)
            staged.chmod(0o600)
            staged.replace(target)

    def command(self) -> list[str]:
        return [
            str(self.binary),
            f"--config={self.config_file}",
            f"--kubeconfig={self.process_kubeconfig}",
            f"--zap-log-level={self.log_level}",
        ]

    @property
    def pid_file(self) -> Path:
        return self.work_dir / "kueue.pid"

    def stop_stray(self) -> str | None:
        """Stop the process a previous run of this folder left (its runner was killed), if
        ``kueue.pid`` names one that still runs; pid and start time must both match."""
        try:
            recorded = json.loads(self.pid_file.read_text())
            pid, ticks = int(recorded["pid"]), recorded["start_ticks"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        self.pid_file.unlink(missing_ok=True)
        if ticks is None or not process_alive(pid, ticks):
            return None
        outcome = stop_group(pid, ticks, grace_s=STOP_GRACE_S)
        self.log(f"kueue: a previous run's pid {pid} {outcome}")
        return outcome

    def start(self) -> None:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        for folder in ("webhook-certs", "tmp"):
            (self.work_dir / folder).mkdir(exist_ok=True)
        self.stop_stray()
        self._thread = threading.Thread(target=self._supervise, name="kueue", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=STOP_GRACE_S + 15)
        self._stop_process()
        self._set("stopped")

    def ready(self) -> bool:
        return self.status.state == "ready"

    def wait_ready(self, timeout_s: float) -> None:
        """Block until ready; raise with the state and the log's tail after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while not self.ready():
            if time.monotonic() > deadline or self._stop.is_set():
                raise KueueError(self.describe(f"not ready after {timeout_s:.0f} s"))
            time.sleep(0.2)

    def describe(self, what: str) -> str:
        """``what``, the supervisor's state and the log's last lines, for an error message."""
        return (
            f"kueue: {what} ({self.status.state}: {self.status.detail}); "
            f"last lines of {self.log_file}:\n{_tail(self.log_file)}"
        )

    def missing(self) -> list[str]:
        """The chart's objects Kueue needs at start that do not exist yet."""
        mutating, validating = webhook_configuration_names(self.webhook_service)
        admission = "/apis/admissionregistration.k8s.io/v1"
        needed = {}
        if self.identity is not None:
            needed[f"ServiceAccount {self.namespace}/{self.identity}"] = (
                f"/api/v1/namespaces/{self.namespace}/serviceaccounts/{self.identity}"
            )
        needed |= {
            f"Secret {self.namespace}/{self.webhook_secret}": (
                f"/api/v1/namespaces/{self.namespace}/secrets/{self.webhook_secret}"
            ),
            f"MutatingWebhookConfiguration {mutating}": (
                f"{admission}/mutatingwebhookconfigurations/{mutating}"
            ),
            f"ValidatingWebhookConfiguration {validating}": (
                f"{admission}/validatingwebhookconfigurations/{validating}"
            ),
        }
        for crd in CONVERSION_CRDS:
            needed[f"CRD {crd}"] = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}"
        missing = []
        for name, path in needed.items():
            found = self.api.get(path)
            if found is None or (name.startswith("CRD ") and not _established(found)):
                missing.append(name)
        return missing

    # --- supervision ---

    def _set(self, state: str, detail: str = "") -> None:
        changed = state != self.status.state
        self.status.state, self.status.detail = state, detail
        if changed:
            self.log(f"kueue: {state}{f' ({detail})' if detail else ''}")

    def _supervise(self) -> None:
        """Never dies of an error: it says what failed and tries again."""
        while not self._stop.is_set():
            try:
                self._supervise_runs()
            except Exception as exc:  # a bug here must not leave Kueue unsupervised
                self._stop_process()
                self._set("error", f"{type(exc).__name__}: {exc}; trying again")
                self._stop.wait(BACKOFF_S[0])

    def _supervise_runs(self) -> None:
        pause = BACKOFF_S[0]
        while not self._stop.is_set():
            try:
                config = self.load_config()
                if config is not None:
                    self.config = config
                missing = self.missing()
                if config is None:
                    missing.insert(0, f"ConfigMap {self.namespace}/{CONFIG_MAP}")
                if not missing and self.identity is not None:
                    self._write_token_kubeconfig()
            except (OSError, http.client.HTTPException, KueueError) as exc:
                missing = [f"(API server: {exc})"]
            if missing:
                self._set("waiting", "for " + ", ".join(missing))
                self._stop.wait(POLL_S * 2)
                continue
            self.config_file.write_text(yaml.safe_dump(self.config, sort_keys=False))
            self.sync_secret_volume()
            self._spawn()
            outcome, was_ready = self._watch_run()
            self._stop_process()
            if self._stop.is_set():
                return
            if was_ready:
                pause = BACKOFF_S[0]
            self._set("exited", f"{outcome}; starting again in {pause:.0f} s")
            self._stop.wait(pause)
            pause = min(pause * 2, BACKOFF_S[1])

    def _write_token_kubeconfig(self) -> None:
        """A kubeconfig with a new token of the service account (TokenRequest)."""
        path = f"/api/v1/namespaces/{self.namespace}/serviceaccounts/{self.identity}/token"
        request = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": TOKEN_SECONDS},
        }
        status, body = self.api.request("POST", path, request)
        if status != 201 or not isinstance(body, dict):
            raise KueueError(f"token for {self.namespace}/{self.identity}: HTTP {status}: {body}")
        ca = base64.b64encode(Path(self.api.ca_file).read_bytes()).decode()
        user = f"system:serviceaccount:{self.namespace}:{self.identity}"
        document = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "e2e",
                    "cluster": {"server": self.api.server, "certificate-authority-data": ca},
                }
            ],
            "users": [{"name": user, "user": {"token": body["status"]["token"]}}],
            "contexts": [{"name": "kueue", "context": {"cluster": "e2e", "user": user}}],
            "current-context": "kueue",
        }
        target = self.process_kubeconfig
        staged = target.with_suffix(".tmp")
        staged.write_text(yaml.safe_dump(document, sort_keys=False))
        staged.chmod(0o600)
        staged.replace(target)

    def _spawn(self) -> None:
        env = {**os.environ, "TMPDIR": str(self.work_dir / "tmp")}
        env.pop("KUBECONFIG", None)
        with open(self.log_file, "ab") as log_file:
            log_file.write(f"--- {time.strftime('%H:%M:%S')} {' '.join(self.command())}\n".encode())
            log_file.flush()
            popen = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                cwd=self.work_dir,
                env=env,
                start_new_session=True,
            )
        with self._lock:
            self._popen = popen
        record = {"pid": popen.pid, "start_ticks": start_ticks(popen.pid)}
        self.pid_file.write_text(json.dumps(record) + "\n")
        self.status.pid = popen.pid
        self.status.starts += 1
        self.status.ready_since = None
        self._set("starting", f"pid {popen.pid}")

    def _watch_run(self) -> tuple[str, bool]:
        """Follow one run until it exits, hangs in start, or we stop; say how it ended and
        whether it had been ready."""
        popen = self._popen
        assert popen is not None
        started = time.monotonic()
        was_ready = False
        while not self._stop.wait(POLL_S):
            code = popen.poll()
            if code is not None:
                return f"exit code {code}", was_ready
            with contextlib.suppress(OSError, http.client.HTTPException, KueueError):
                self.sync_secret_volume()  # a failed pass is retried on the next poll
                config = self.load_config()
                if config is not None and config != self.config:
                    return "the Configuration changed", True  # the shortest pause
            ok, detail = readyz(self.ports.health)
            if ok:
                if not was_ready:
                    self.status.ready_since = time.time()
                was_ready = True
                self._set("ready", f"pid {popen.pid}")
            elif was_ready:
                self._set("starting", f"readyz failing: {detail}")
            elif time.monotonic() - started > self.start_timeout_s:
                return f"not ready after {self.start_timeout_s:.0f} s ({detail})", False
        return "stopped", was_ready

    def _stop_process(self) -> None:
        with self._lock:
            popen, self._popen = self._popen, None
        if popen is not None:
            outcome = stop_group(popen.pid, None, grace_s=STOP_GRACE_S, popen=popen)
            self.pid_file.unlink(missing_ok=True)
            self.log(f"kueue: pid {popen.pid} {outcome}")


def _established(crd: Mapping[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


# --- readiness of the fake pod ----------------------------------------------------------------


def _pod_key_query() -> str:
    """A JQ expression identifying the chart's controller pods: ``<namespace>/<name>/<role>``
    from the namespace and the selector labels (missing labels give empty parts)."""
    name, role = CONTROLLER_POD_LABELS
    return (
        f'.metadata.namespace + "/" + (.metadata.labels["{name}"] // "") + "/" + '
        f'(.metadata.labels["{role}"] // "")'
    )


def controller_pod_key(namespace: str = KUEUE_NAMESPACE) -> str:
    """What :func:`_pod_key_query` yields for the chart's controller pods."""
    return "/".join([namespace, *CONTROLLER_POD_LABELS.values()])


_READY_TEMPLATE: Final = """\
{{ $now := Now }}
conditions:
%(initialized)s- type: Ready
  status: "%(ready)s"
  lastTransitionTime: {{ $now | Quote }}
- type: ContainersReady
  status: "%(ready)s"
  lastTransitionTime: {{ $now | Quote }}
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: %(containers)s
  started: true
  restartCount: 0
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}
"""
"""Status (strategic-merge patched) of a started controller pod, Ready or not."""
_INITIALIZED: Final = """\
- type: Initialized
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
"""

_START_TEMPLATE: Final = (
    _READY_TEMPLATE % {"initialized": _INITIALIZED, "ready": "False", "containers": "false"}
    + """\
{{ $hostIPs := NodeIPsWith .spec.nodeName }}
{{ with $hostIPs }}
hostIP: {{ index . 0 | Quote }}
hostIPs:
{{ range . }}
- ip: {{ . | Quote }}
{{ end }}
{{ end }}
{{ $podIPs := PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) \
( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
{{ with $podIPs }}
podIP: {{ index . 0 | Quote }}
podIPs:
{{ range . }}
- ip: {{ . | Quote }}
{{ end }}
{{ end }}
phase: Running
startTime: {{ $now | Quote }}
"""
)
"""KWOK's fast ``pod-ready`` status (host and pod IPs, Running), with Ready=False."""


def kwok_stages(namespace: str = KUEUE_NAMESPACE) -> str:
    """KWOK Stage documents for the chart's controller pods, to append to KWOK's "fast" stages.

    No default stage needs changing: these match with ``weight: 1``, and when several stages
    match an object KWOK picks among those with a positive weight only (the defaults have none).
    All three require no deletion timestamp, so KWOK's ``pod-delete`` still removes such a pod.

    - ``kueue-controller-running``: a bound, Pending controller pod becomes Running with its
      containers started but not ready, Ready=False (instead of the default ``pod-ready``).
    - ``kueue-controller-ready``: Ready=True once :data:`READY_ANNOTATION` is ``"true"``.
    - ``kueue-controller-unready``: Ready=False again when it is not.
    """
    pod = controller_pod_key(namespace)
    ready = '.status.conditions.[] | select( .type == "Ready" ) | .status'
    annotation = f'.metadata.annotations["{READY_ANNOTATION}"]'

    def stage(name: str, expressions: list[tuple[str, str, str]], template: str) -> dict[str, Any]:
        matches: list[dict[str, Any]] = [
            {"key": _pod_key_query(), "operator": "In", "values": [pod]},
            {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
        ]
        for key, operator, value in expressions:
            matches.append(
                {"key": key, "operator": operator, **({"values": [value]} if value else {})}
            )
        return {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "Stage",
            "metadata": {"name": name},
            "spec": {
                "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
                "weight": 1,
                "selector": {"matchExpressions": matches},
                "next": {"statusTemplate": template},
            },
        }

    documents = [
        stage(
            "kueue-controller-running",
            [(".spec.nodeName", "Exists", ""), (".status.phase", "In", "Pending")],
            _START_TEMPLATE,
        ),
        stage(
            "kueue-controller-ready",
            [
                (".status.phase", "In", "Running"),
                (ready, "NotIn", "True"),
                (annotation, "In", "true"),
            ],
            _READY_TEMPLATE % {"initialized": "", "ready": "True", "containers": "true"},
        ),
        stage(
            "kueue-controller-unready",
            [
                (".status.phase", "In", "Running"),
                (ready, "In", "True"),
                (annotation, "NotIn", "true"),
            ],
            _READY_TEMPLATE % {"initialized": "", "ready": "False", "containers": "false"},
        ),
    ]
    return yaml.dump_all(documents, Dumper=_BlockDumper, sort_keys=False)


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings as literal blocks, so ``kwok.yaml`` reads like KWOK's own stages."""


_BlockDumper.add_representer(
    str,
    lambda dumper, text: dumper.represent_scalar(
        "tag:yaml.org,2002:str", text, style="|" if "\n" in text else None
    ),
)


KWOK_STAGE_NAMES: Final = (
    "kueue-controller-running",
    "kueue-controller-ready",
    "kueue-controller-unready",
)


class ReadinessBridge:
    """Plays the kubelet's readiness probe for the chart's controller pods: keeps
    :data:`READY_ANNOTATION` on each of them equal to whether the real process is ready and the
    webhook Service is served, so KWOK's stages flip the pod's Ready condition. It writes only
    metadata; KWOK remains the only writer of the pod's status."""

    def __init__(
        self,
        api: Api,
        is_ready: Callable[[], bool],
        namespace: str = KUEUE_NAMESPACE,
        interval_s: float = POLL_S,
        log: Callable[[str], None] = print,
    ) -> None:
        self.api = api
        self.is_ready = is_ready
        self.namespace = namespace
        self.interval_s = interval_s
        self.log = log
        self.marked: dict[str, str] = {}
        """Pod name → the annotation value last written."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="kueue bridge", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=15)

    def sync(self) -> None:
        """One pass: list the controller pods, patch those whose annotation differs."""
        value = "true" if self.is_ready() else "false"
        selector = ",".join(f"{k}={v}" for k, v in CONTROLLER_POD_LABELS.items())
        path = f"/api/v1/namespaces/{self.namespace}/pods"
        listing = self.api.get(f"{path}?{urllib.parse.urlencode({'labelSelector': selector})}")
        for pod in (listing or {}).get("items", []):
            metadata = pod["metadata"]
            if metadata.get("deletionTimestamp"):
                continue
            if metadata.get("annotations", {}).get(READY_ANNOTATION) == value:
                continue
            name = metadata["name"]
            status, body = self.api.request(
                "PATCH",
                f"{path}/{name}",
                {"metadata": {"annotations": {READY_ANNOTATION: value}}},
                content_type="application/merge-patch+json",
            )
            if status == 200:
                self.marked[name] = value
                self.log(f"kueue bridge: pod {self.namespace}/{name} process-ready={value}")
            elif status != 404:
                self.log(f"kueue bridge: patching pod {name}: HTTP {status}: {body}")

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.sync()
            except (OSError, http.client.HTTPException, KueueError, ValueError) as exc:
                self.log(f"kueue bridge: {exc}; retrying")
            self._stop.wait(self.interval_s)


# --- all of it ------------------------------------------------------------------------------------


@dataclass
class KueueRun:
    """What :func:`running` started."""

    controller: KueueController
    proxy: ServiceProxy
    routes: dict[str, Route] = field(default_factory=dict)
    """``webhook`` and ``visibility``."""
    bridge: ReadinessBridge | None = None

    def serving(self) -> bool:
        """The process is ready and the webhook Service is served by the proxy."""
        return self.controller.ready() and self.proxy.address(self.routes["webhook"]) is not None

    def wait_serving(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Block until :meth:`serving`; raise with the reason after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while not self.serving():
            error = self.proxy.error(self.routes["webhook"])
            if error:
                raise KueueError(error)
            if time.monotonic() > deadline:
                if not self.controller.ready():
                    raise KueueError(self.controller.describe(f"not ready after {timeout_s:.0f} s"))
                raise KueueError(f"kueue: the proxy does not serve {self.routes['webhook']}")
            time.sleep(0.2)


@contextlib.contextmanager
def running(
    kubeconfig: Path,
    work_dir: Path,
    *,
    base_config: Mapping[str, Any] | None = None,
    binary: Path | None = None,
    namespace: str = KUEUE_NAMESPACE,
    identity: str | None = SERVICE_ACCOUNT,
    start_timeout_s: float = START_TIMEOUT_S,
    log: Callable[[str], None] = print,
) -> Iterator[KueueRun]:
    """Run Kueue for the cluster of ``kubeconfig`` (an admin's) until the block ends (normally,
    by an exception or by Ctrl-C), then stop the process, the proxy and the bridge.

    It returns at once, before the chart is installed: the controller starts when the chart's
    objects appear (:meth:`KueueRun.wait_serving`). The Configuration is the one the chart
    rendered into its ConfigMap; ``base_config`` (e.g. :func:`platform_manager_config` or
    :func:`manager_config_from_values`) replaces it.
    """
    binary = binary or find_binary()
    if binary is None:
        raise KueueError("kueue is not built: run `python -m tools.e2e build kueue`")
    work_dir = work_dir.resolve()
    api = KubeApi(kubeconfig, work_dir / "client")
    controller = KueueController(
        binary,
        kubeconfig,
        work_dir,
        base_config,
        api=api,
        namespace=namespace,
        identity=identity,
        start_timeout_s=start_timeout_s,
        log=log,
    )
    ports = controller.ports
    routes = {
        "webhook": Route(namespace, WEBHOOK_SERVICE, SERVICE_PORT, ports.webhook),
        "visibility": Route(namespace, VISIBILITY_SERVICE, SERVICE_PORT, ports.visibility),
    }
    proxy = ServiceProxy(api, list(routes.values()), log=log)
    run = KueueRun(controller, proxy, routes)
    bridge = run.bridge = ReadinessBridge(api, run.serving, namespace=namespace, log=log)
    try:
        proxy.start()
        controller.start()
        bridge.start()
        yield run
    finally:
        bridge.stop()
        controller.stop()
        proxy.stop()


def running_for(
    cluster: LocalCluster, **kwargs: Any
) -> contextlib.AbstractContextManager[KueueRun]:
    """:func:`running` for a :class:`~tools.e2e.cluster.LocalCluster`: its admin kubeconfig, a
    ``kueue/`` folder in its work folder, its log."""
    kwargs.setdefault("log", cluster.log)
    return running(cluster.kubeconfig, cluster.work_dir / "kueue", **kwargs)
