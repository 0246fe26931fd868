"""TeamRedis: the team Redis itself, as ``components/team_redis.py`` promises it to clients.

Renders a generated password (pulumi-random) in the Secret clients read, a config file, a
volume claim, a ClusterIP Service, a NetworkPolicy, a one-replica StatefulSet with a
redis_exporter sidecar and, with the Prometheus operator, a ServiceMonitor.

Why some choices (docs/workloads.md, "The team Redis", has the long form):

- The password never reaches a command line or the pod spec: the server reads ``requirepass``
  from a file of the Secret (``include``), the probes' ``redis-cli`` and the exporter read it
  from the Secret through their environment (``REDISCLI_AUTH``, ``REDIS_PASSWORD``).
- The claim is a resource of its own, not a ``volumeClaimTemplate``: Pulumi can then refuse to
  delete it (``protect``) in stacks that protect data, like the team volumes.
- One replica in a StatefulSet: two servers must never open one append-only file, and a
  StatefulSet replaces its pod only after the old one is gone.
- ``maxmemory`` below the memory limit: Redis' buffers live outside ``maxmemory``; at the limit
  the kernel kills the server, at ``maxmemory`` the eviction policy decides (``noeviction``:
  writes fail, nothing is lost silently).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any, Final

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random

from . import kube
from .constants import (
    CLUSTER_DOMAIN,
    LABEL_PREFIX,
    METRICS_PORT_NAME,
    MONITORING_NAMESPACE,
    SKIP_AWAIT_ANNOTATION,
    TEAM_WORKLOAD_SERVICE_ACCOUNT,
    VOLUME_PURPOSE_LABEL,
)
from .frozen import frozen
from .images import REDIS_EXPORTER_IMAGE, REDIS_IMAGE
from .network_policies import keda_operator_peer
from .network_rules import namespaces_peer, pod_selector, pods_peer, ports
from .team_redis import (
    REDIS_COMPONENT,
    REDIS_METRICS_PORT,
    REDIS_PASSWORD_KEY,
    REDIS_PORT,
    REDIS_SECRET,
    REDIS_SERVICE,
    REDIS_URL_KEY,
    redis_client_labels,
    redis_server_selector,
    secret_env,
)
from .workloads.common import (
    ComputeResources,
    container_resources,
    container_security_context,
    pod_security_context,
    workload_labels,
)

REDIS_CONTAINER: Final = "redis"
EXPORTER_CONTAINER: Final = "exporter"
REDIS_PORT_NAME: Final = "redis"
REDIS_WORKLOAD_TYPE: Final = "service"
"""The workload-type label of the server: neither training nor inference, a team service."""
REDIS_CONFIG_MAP: Final = f"{REDIS_SERVICE}-config"
REDIS_CLAIM: Final = f"{REDIS_SERVICE}-data"
REDIS_NETWORK_POLICY: Final = f"{REDIS_SERVICE}-network"
REDIS_SERVER_CONFIG_KEY: Final = "auth.conf"
"""The Secret's third key: ``requirepass <password>``, the one line of config the server
includes from the Secret (clients read ``password`` and ``url`` only)."""
CONFIG_FILE: Final = "redis.conf"
CONFIG_DIR: Final = "/etc/redis"
AUTH_DIR: Final = "/etc/redis-auth"
DATA_DIR: Final = "/data"
REDIS_UID: Final = 999
"""The official image's ``redis`` user."""
PASSWORD_LENGTH: Final = 40
"""Letters and digits only: the password goes into a URL and a config line unquoted."""
PASSWORD_REVISION_ANNOTATION: Final = f"{LABEL_PREFIX}/password-revision"
CONFIG_HASH_ANNOTATION: Final = f"{LABEL_PREFIX}/config-sha256"
"""Pod template annotations: a new password or config file restarts the server (it reads both
at start only)."""
PING: Final = f'test "$(redis-cli -h 127.0.0.1 -p {REDIS_PORT} ping)" = PONG'
"""The probes' check: an authenticated PING (``redis-cli`` exits 0 on an error reply, so the
answer itself is compared)."""
EXPORTER_RESOURCES: Final = ComputeResources(cpu="50m", memory="64Mi")


@frozen
class TeamRedisArgs:
    """Inputs of a TeamRedis. Defaults are the platform's seed values."""

    team: str
    namespace: str
    """The team namespace, by name (the objects wait for ``depends_on``)."""
    storage_class: str
    """Class of the data volume."""
    size: str = "5Gi"
    resources: ComputeResources = field(
        default_factory=lambda: ComputeResources(cpu="250m", memory="1Gi")
    )
    """The server container's; the memory limit is what ``maxmemory_bytes`` must stay below."""
    maxmemory_bytes: int = 768 * 1024 * 1024
    eviction_policy: str = "noeviction"
    image: str = REDIS_IMAGE
    exporter_image: str = REDIS_EXPORTER_IMAGE
    priority_class: str | None = None
    password_revision: int = 1
    """Changing it generates a new password (the RandomPassword's keeper) and restarts the
    server with it."""
    protect: bool = False
    """Pulumi refuses to delete or replace the data claim (prod)."""
    service_monitor: bool = False
    """Create a ServiceMonitor for the exporter (needs the Prometheus operator's CRDs)."""
    monitoring_namespace: str = MONITORING_NAMESPACE
    """Namespace whose pods may scrape the exporter."""
    keda_namespace: str | None = None
    """Where KEDA's operator runs, which reads the length of the team's Celery queues (the
    worker pools' ScaledObjects); None: no KEDA, nothing outside the team reads the lists."""
    scrape_interval: str = "30s"
    service_account: str = TEAM_WORKLOAD_SERVICE_ACCOUNT
    cluster_domain: str = CLUSTER_DOMAIN
    depends_on: Sequence[pulumi.Resource] = ()
    """What the server waits for (the team namespace, the team's default LocalQueue Kueue
    admits it through). Not the claim: it waits for ``claim_namespace`` only, so that a
    protected claim depends on nothing a destroy must remove first (TrainingJobArgs says why)."""
    claim_namespace: pulumi.Input[str] | None = None
    """The namespace as ``TeamNamespace.namespace`` (its Output), for the claim; None: the
    name, and the claim waits for ``depends_on``."""

    def __post_init__(self) -> None:
        if self.maxmemory_bytes <= 0:
            raise ValueError(f"TeamRedis {self.team}: maxmemory_bytes must be > 0")
        if self.password_revision < 1:
            raise ValueError(f"TeamRedis {self.team}: password_revision must be >= 1")

    @property
    def host(self) -> str:
        """``team-redis.<namespace>.svc.<domain>``."""
        return f"{REDIS_SERVICE}.{self.namespace}.svc.{self.cluster_domain}"


def server_config(args: TeamRedisArgs) -> str:
    """``redis.conf``: everything but the password, which the last line includes."""
    lines = [
        "# Rendered by the platform (TeamRedis); edit the stack config, not this file.",
        "bind * -::*",
        f"port {REDIS_PORT}",
        f"dir {DATA_DIR}",
        "appendonly yes",
        "appendfsync everysec",
        f"maxmemory {args.maxmemory_bytes}",
        f"maxmemory-policy {args.eviction_policy}",
        # Out of reach of clients: no runtime reconfiguration, no debugging into the server.
        "enable-protected-configs no",
        "enable-debug-command no",
        "enable-module-command no",
        f"include {AUTH_DIR}/{REDIS_SERVER_CONFIG_KEY}",
    ]
    return "\n".join(lines) + "\n"


def config_hash(args: TeamRedisArgs) -> str:
    return hashlib.sha256(server_config(args).encode()).hexdigest()[:16]


def server_labels(args: TeamRedisArgs) -> dict[str, str]:
    return workload_labels(args.team, REDIS_SERVICE, REDIS_COMPONENT, REDIS_WORKLOAD_TYPE)


def _exec_probe(period: int, failures: int) -> dict[str, Any]:
    return {
        "exec": {"command": ["sh", "-c", PING]},
        "periodSeconds": period,
        "timeoutSeconds": 5,
        "failureThreshold": failures,
    }


def redis_container(args: TeamRedisArgs) -> dict[str, Any]:
    return {
        "name": REDIS_CONTAINER,
        "image": args.image,
        "command": ["redis-server", f"{CONFIG_DIR}/{CONFIG_FILE}"],
        "ports": [{"name": REDIS_PORT_NAME, "containerPort": REDIS_PORT, "protocol": "TCP"}],
        # redis-cli (the probes) authenticates with REDISCLI_AUTH; nothing else reads it.
        "env": [secret_env("REDISCLI_AUTH", REDIS_PASSWORD_KEY)],
        "resources": container_resources(args.resources, None, 0),
        # Loading a large append-only file answers LOADING: up to 5 minutes before liveness.
        "startupProbe": _exec_probe(10, 30),
        "readinessProbe": _exec_probe(10, 3),
        "livenessProbe": _exec_probe(20, 3),
        "securityContext": container_security_context(True),
        "volumeMounts": [
            {"name": "data", "mountPath": DATA_DIR},
            {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
            {"name": "auth", "mountPath": AUTH_DIR, "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }


def exporter_container(args: TeamRedisArgs) -> dict[str, Any]:
    """redis_exporter on the server's loopback; only the INFO-derived metrics (no config dump,
    no key sampling), the password from the Secret."""
    health = {"httpGet": {"path": "/health", "port": METRICS_PORT_NAME}, "periodSeconds": 20}
    return {
        "name": EXPORTER_CONTAINER,
        "image": args.exporter_image,
        "ports": [
            {"name": METRICS_PORT_NAME, "containerPort": REDIS_METRICS_PORT, "protocol": "TCP"}
        ],
        "env": [
            {"name": "REDIS_ADDR", "value": f"redis://127.0.0.1:{REDIS_PORT}"},
            secret_env("REDIS_PASSWORD", REDIS_PASSWORD_KEY),
            {"name": "REDIS_EXPORTER_WEB_LISTEN_ADDRESS", "value": f":{REDIS_METRICS_PORT}"},
            {"name": "REDIS_EXPORTER_INCLUDE_CONFIG_METRICS", "value": "false"},
            {"name": "REDIS_EXPORTER_REDACT_CONFIG_METRICS", "value": "true"},
        ],
        "resources": container_resources(EXPORTER_RESOURCES, None, 0),
        "readinessProbe": health,
        "livenessProbe": health,
        "securityContext": container_security_context(True),
    }


def statefulset_spec(args: TeamRedisArgs) -> dict[str, Any]:
    """One server with its exporter; restarted when the password revision or config changes."""
    return {
        "serviceName": REDIS_SERVICE,
        "replicas": 1,
        "selector": {"matchLabels": redis_server_selector()},
        "updateStrategy": {"type": "RollingUpdate"},
        "template": {
            "metadata": {
                "labels": server_labels(args),
                "annotations": {
                    PASSWORD_REVISION_ANNOTATION: str(args.password_revision),
                    CONFIG_HASH_ANNOTATION: config_hash(args),
                },
            },
            "spec": {
                "serviceAccountName": args.service_account,
                "automountServiceAccountToken": False,
                "enableServiceLinks": False,
                **({"priorityClassName": args.priority_class} if args.priority_class else {}),
                "terminationGracePeriodSeconds": 30,
                "securityContext": pod_security_context(REDIS_UID, REDIS_UID, REDIS_UID),
                "containers": [redis_container(args), exporter_container(args)],
                "volumes": [
                    {"name": "data", "persistentVolumeClaim": {"claimName": REDIS_CLAIM}},
                    {
                        "name": "config",
                        "configMap": {"name": REDIS_CONFIG_MAP, "defaultMode": 0o444},
                    },
                    {
                        "name": "auth",
                        "secret": {
                            "secretName": REDIS_SECRET,
                            "defaultMode": 0o440,
                            "items": [
                                {"key": REDIS_SERVER_CONFIG_KEY, "path": REDIS_SERVER_CONFIG_KEY}
                            ],
                        },
                    },
                    {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}},
                ],
            },
        },
    }


def network_policy_spec(args: TeamRedisArgs) -> dict[str, Any]:
    """Redis from the team's own client pods (and KEDA's operator, which reads the queue
    lengths) only, the exporter from monitoring only; no egress of its own (the exporter reaches
    the server over the pod's loopback; the team namespace's DNS policy still applies)."""
    readers = [pods_peer(redis_client_labels())]
    if args.keda_namespace is not None:
        readers.append(keda_operator_peer(args.keda_namespace))
    return {
        "podSelector": pod_selector(redis_server_selector()),
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [
            {"from": readers, "ports": ports([REDIS_PORT])},
            {
                "from": [namespaces_peer([args.monitoring_namespace])],
                "ports": ports([REDIS_METRICS_PORT]),
            },
        ],
        # Egress in policyTypes with no rule: none (an empty list the provider would drop).
    }


def service_spec() -> dict[str, Any]:
    return {
        "type": "ClusterIP",
        "selector": redis_server_selector(),
        "ports": [
            {
                "name": REDIS_PORT_NAME,
                "port": REDIS_PORT,
                "targetPort": REDIS_PORT_NAME,
                "protocol": "TCP",
            },
            {
                "name": METRICS_PORT_NAME,
                "port": REDIS_METRICS_PORT,
                "targetPort": METRICS_PORT_NAME,
                "protocol": "TCP",
            },
        ],
    }


def rendered_objects(service_monitor: bool) -> list[tuple[str, str]]:
    """``(group/Kind, name)`` of every object a TeamRedis renders in its namespace, for the
    escape hatch's collision check (``infra/manifests/rules.py``)."""
    objects = [
        ("Secret", REDIS_SECRET),
        ("ConfigMap", REDIS_CONFIG_MAP),
        ("PersistentVolumeClaim", REDIS_CLAIM),
        ("Service", REDIS_SERVICE),
        ("networking.k8s.io/NetworkPolicy", REDIS_NETWORK_POLICY),
        ("apps/StatefulSet", REDIS_SERVICE),
    ]
    if service_monitor:
        objects.append(("monitoring.coreos.com/ServiceMonitor", REDIS_SERVICE))
    return objects


def redis_url(password: str, host: str) -> str:
    """What the Secret's ``url`` holds (database 0)."""
    return f"redis://:{password}@{host}:{REDIS_PORT}/0"


class TeamRedis(pulumi.ComponentResource):
    """A team's authenticated, persistent Redis, reachable only from the team's clients."""

    if TYPE_CHECKING:  # attribute types, not runtime annotations (components/__init__.py)
        service_name: str
        secret_name: str
        host: str
        password: pulumi.Output[str]
        secret: kube.Secret

    def __init__(
        self, name: str, args: TeamRedisArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("aiplatform:tenancy:TeamRedis", name, None, opts)
        after = list(args.depends_on)
        child = pulumi.ResourceOptions(parent=self, depends_on=after)
        labels = server_labels(args)

        def meta(object_name: str, **extra: Any) -> dict[str, Any]:
            return {"name": object_name, "namespace": args.namespace, "labels": labels, **extra}

        generated = random.RandomPassword(
            f"{name}-password",
            length=PASSWORD_LENGTH,
            special=False,
            min_upper=2,
            min_lower=2,
            min_numeric=2,
            keepers={"revision": str(args.password_revision)},
            opts=pulumi.ResourceOptions(parent=self),
        )
        password: pulumi.Output[str] = pulumi.Output.secret(generated.result)
        secret = kube.Secret(
            f"{name}-auth",
            metadata=meta(REDIS_SECRET),
            type="Opaque",
            string_data={
                REDIS_PASSWORD_KEY: password,
                REDIS_URL_KEY: password.apply(lambda value: redis_url(value, args.host)),
                REDIS_SERVER_CONFIG_KEY: password.apply(lambda value: f"requirepass {value}\n"),
            },
            opts=pulumi.ResourceOptions.merge(
                child, pulumi.ResourceOptions(additional_secret_outputs=["data", "stringData"])
            ),
        )
        config = kube.ConfigMap(
            f"{name}-config",
            metadata=meta(REDIS_CONFIG_MAP),
            data={CONFIG_FILE: server_config(args)},
            opts=child,
        )
        claim = kube.PersistentVolumeClaim(
            f"{name}-data",
            metadata={
                "name": REDIS_CLAIM,
                "namespace": args.claim_namespace or args.namespace,
                "labels": {**labels, VOLUME_PURPOSE_LABEL: "general"},
                # Pending until the server mounts it (WaitForFirstConsumer).
                "annotations": {SKIP_AWAIT_ANNOTATION: "true"},
            },
            spec={
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": args.storage_class,
                "resources": {"requests": {"storage": args.size}},
            },
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=args.protect,
                depends_on=[] if args.claim_namespace is not None else after,
            ),
        )
        service = kube.Service(
            f"{name}-service", metadata=meta(REDIS_SERVICE), spec=service_spec(), opts=child
        )
        network = kube.NetworkPolicy(
            f"{name}-network",
            metadata=meta(REDIS_NETWORK_POLICY),
            spec=network_policy_spec(args),
            opts=child,
        )
        kube.StatefulSet(
            f"{name}-statefulset",
            metadata=meta(REDIS_SERVICE),
            spec=statefulset_spec(args),
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[*after, secret, config, claim, service, network]
            ),
        )
        if args.service_monitor:
            k8s.apiextensions.CustomResource(
                f"{name}-servicemonitor",
                api_version="monitoring.coreos.com/v1",
                kind="ServiceMonitor",
                metadata=meta(REDIS_SERVICE),
                spec={
                    "selector": {"matchLabels": redis_server_selector()},
                    "endpoints": [{"port": METRICS_PORT_NAME, "interval": args.scrape_interval}],
                },
                opts=child,
            )

        self.service_name = REDIS_SERVICE
        self.secret_name = REDIS_SECRET
        self.secret = secret
        """What a client's pods wait for: their ``REDIS_URL`` is read from it at start."""
        self.host = args.host
        self.password = password
        self.register_outputs(
            {"serviceName": self.service_name, "secretName": self.secret_name, "host": self.host}
        )
