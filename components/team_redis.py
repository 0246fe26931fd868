"""A team's Redis: the job-status bus and the Celery broker of one team namespace.

What every workload that talks to it needs is written here once: the Service and Secret names,
the keys of the Secret, the labels that let a pod through the Redis NetworkPolicy (the key is
``constants.REDIS_CLIENT_LABEL``) and the environment a client gets. Workloads read the
connection from the Secret, never from config.
"""

from __future__ import annotations

from typing import Any, Final

from .constants import APP_COMPONENT_LABEL, APP_NAME_LABEL, REDIS_CLIENT_LABEL
from .frozen import frozen
from .network_rules import pods_peer, ports

REDIS_SERVICE: Final = "team-redis"
"""The team Redis Service (and StatefulSet) in the team namespace."""
REDIS_PORT: Final = 6379
REDIS_COMPONENT: Final = "redis"
"""The server pod's ``app.kubernetes.io/component``."""
REDIS_METRICS_PORT: Final = 9121
"""The exporter sidecar's port, named ``metrics`` (the port Prometheus may reach in teams)."""
REDIS_SECRET: Final = "team-redis-auth"
"""The Secret with the generated password and the URL built from it."""
REDIS_PASSWORD_KEY: Final = "password"
REDIS_URL_KEY: Final = "url"
"""``redis://:<password>@team-redis.<namespace>.svc.cluster.local:6379/0``."""
DEFAULT_STATUS_CHANNEL: Final = "training_status"
"""Pub/sub channel job status goes to unless a workload names another."""
REDIS_URL_ENV: Final = "REDIS_URL"
STATUS_CHANNEL_ENV: Final = "STATUS_CHANNEL"


@frozen
class RedisClient:
    """A workload's pods as clients of their team's Redis (``WorkloadPodArgs.redis``)."""

    status_channel: str = DEFAULT_STATUS_CHANNEL
    """The channel the workload's status goes to (``STATUS_CHANNEL``)."""


REDIS_CLIENT_ENV: Final = frozenset({REDIS_URL_ENV, STATUS_CHANNEL_ENV})
"""What ``redis_client_env`` sets: a client's own environment may not."""


def redis_client_labels() -> dict[str, str]:
    """Pod labels of a team Redis client (the NetworkPolicy's ingress selector)."""
    return {REDIS_CLIENT_LABEL: "true"}


def redis_server_selector() -> dict[str, str]:
    """The immutable labels that select the team Redis pod (its Service, its NetworkPolicy and
    the egress rule of every client)."""
    return {APP_NAME_LABEL: REDIS_SERVICE, APP_COMPONENT_LABEL: REDIS_COMPONENT}


def redis_egress_rule() -> dict[str, Any]:
    """The NetworkPolicy egress rule a client pod needs: the team Redis pod of its own
    namespace, on the Redis port only."""
    return {"to": [pods_peer(redis_server_selector())], "ports": ports([REDIS_PORT])}


def secret_env(name: str, key: str, secret: str = REDIS_SECRET) -> dict[str, Any]:
    """One env var read from a key of the team Redis Secret."""
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


def redis_client_env(channel: str | None = DEFAULT_STATUS_CHANNEL) -> list[dict[str, Any]]:
    """``REDIS_URL`` from the Secret, plus ``STATUS_CHANNEL`` when the pod publishes status."""
    env = [secret_env(REDIS_URL_ENV, REDIS_URL_KEY)]
    if channel is not None:
        env.append({"name": STATUS_CHANNEL_ENV, "value": channel})
    return env
