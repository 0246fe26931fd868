"""``ai-platform:teams[].redis``: a team's own Redis, the job-status bus and broker of its
workloads (rules in ``rules.py``, the mapping to ``TeamRedis`` in ``build.py``)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, WithJsonSchema

from components.team_redis import DEFAULT_STATUS_CHANNEL

from ..config.base import ConfigModel, matching
from ..config.quantity import Quantity, parse_quantity

EvictionPolicy = Literal[
    "noeviction",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
]
"""Redis' ``maxmemory-policy`` values."""

_CHANNEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
CHANNEL_PATTERN = _CHANNEL.pattern


_channel = matching(
    _CHANNEL,
    "a channel name of letters, digits, '_', '.', ':' and '-' (starting with a letter or digit, "
    "at most 128 characters)",
)


StatusChannel = Annotated[
    str, AfterValidator(_channel), WithJsonSchema({"type": "string", "pattern": CHANNEL_PATTERN})
]
"""A Redis pub/sub channel name, kept to characters that need no quoting anywhere (an
environment variable, a command line, ``redis-cli subscribe``)."""

DEFAULT_MAXMEMORY_SHARE = Decimal("0.75")
"""``maxmemory`` as a share of the container's memory limit when the stack sets none."""
MAX_MAXMEMORY_SHARE = Decimal("0.9")
"""The most of the limit ``maxmemory`` may take: Redis' own buffers (clients, pub/sub output,
the AOF rewrite's copy-on-write) live outside it, and an OOM kill drops every connection."""


class TeamRedisConfig(ConfigModel):
    """The team's Redis: one StatefulSet in the team namespace with an authenticated,
    persistent (AOF) server, reachable only from the team's own workloads."""

    enabled: bool = False
    """Run the team Redis. Default: off."""
    storage_class: str | None = None
    """Class of its volume (``ai-platform:storage.classes``). Default: the stack's default
    class."""
    size: Quantity = "5Gi"
    """The volume: the append-only file and snapshots. Counts against the team's storage and
    PVC quota. Protected in stacks that protect data."""
    cpu: Quantity = "250m"
    """CPU request (and limit) of the server."""
    memory: Quantity = "1Gi"
    """Memory request and limit of the server (no overcommit: an OOM kill drops every client
    and the messages in flight)."""
    maxmemory: Quantity | None = None
    """Redis' ``maxmemory``: past it the eviction policy applies. At most 90% of ``memory``.
    Default: 75% of ``memory``."""
    eviction_policy: EvictionPolicy = "noeviction"
    """Redis' ``maxmemory-policy``. Default ``noeviction``: the team Redis holds Celery's queued
    tasks and Ray's GCS state, and an evicting policy would drop them silently; at
    ``maxmemory`` writes fail loudly instead (clients get an OOM error) while pub/sub, which
    stores nothing, keeps working. Use an ``allkeys-*`` policy only for a Redis that is purely a
    cache."""
    status_channel: StatusChannel = DEFAULT_STATUS_CHANNEL
    """Pub/sub channel the team's workloads publish status on (``STATUS_CHANNEL``) unless a
    workload names its own."""
    priority_class: str | None = None
    """Priority class of the server pod; one the team may use. Default: the stack's global
    default class."""
    password_revision: int = Field(default=1, ge=1)
    """Raise it to rotate the generated password: the next ``pulumi up`` replaces the password,
    updates the Secret and restarts the server (docs/operations.md)."""

    def maxmemory_bytes(self) -> int:
        """``maxmemory`` in bytes: as set, else its share of the memory limit."""
        if self.maxmemory is not None:
            return int(parse_quantity(self.maxmemory))
        return int(parse_quantity(self.memory) * DEFAULT_MAXMEMORY_SHARE)
