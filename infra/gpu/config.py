"""``ai-platform:nodePools`` and ``ai-platform:gpuStack``: GPU nodes and the NVIDIA stack on them.

A pool is either launched by Karpenter (``backend: karpenter``) or made of existing on-premises
nodes (``backend: static``). Cross-field rules (sizes, sharing, node classes) are in ``rules.py``,
what a pool holds in ``capacity.py``, the mapping to ``GpuNodePool`` and ``GpuOperator`` in
``build.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Final, Literal

from pydantic import AfterValidator, Field

from ..config.base import ConfigModel, DnsLabel, DnsSubdomain, LabelKey, LabelMap, LabelValue
from ..config.quantity import Quantity, parse_quantity

Backend = Literal["karpenter", "static"]
PoolPurpose = Literal["training", "inference", "batch"]
CapacityType = Literal["on-demand", "spot", "reserved"]
SharingMode = Literal["exclusive", "time-slicing", "mig"]
MigStrategy = Literal["single", "mixed"]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
ConsolidationPolicy = Literal["WhenEmpty", "WhenEmptyOrUnderutilized"]
DisruptionReason = Literal["Underutilized", "Empty", "Drifted"]
Architecture = Literal["amd64", "arm64"]
VolumeType = Literal["gp3", "gp2", "io1", "io2", "st1", "sc1", "standard"]
EvictionSignal = Literal[
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
]
ReservedResource = Literal["cpu", "memory", "ephemeral-storage", "pid"]
MEMORY_SIGNAL: Final[EvictionSignal] = "memory.available"

_GRACE_PERIOD = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")
_INT32_MAX = 2**31 - 1
_DURATION = re.compile(r"^(([0-9]+(s|m|h))+|Never)$")
_BUDGET_DURATION = re.compile(r"^(([0-9]+(h|m))|([0-9]+h[0-9]+m))$")
_BUDGET_NODES = re.compile(r"^((100|[0-9]{1,2})%|[0-9]+)$")
_SCHEDULE = re.compile(
    r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))$|^(\S+\s){4}\S+$"
)
_THRESHOLD = re.compile(
    r"^(\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%$|^[0-9]+(\.[0-9]+)?([KMGTPE]i|[kMGTPE])?$"
)
_VOLUME_SIZE = re.compile(r"^[1-9][0-9]{0,4}Gi$|^[1-9][0-9]?Ti$")
_AMI_ALIAS = re.compile(r"^(al2|al2023|bottlerocket)@(latest|v[0-9][0-9.]*)$")
_INSTANCE_TYPE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9]+$")
_INSTANCE_FAMILY = re.compile(r"^[a-z][a-z0-9-]*$")


def _pattern(regex: re.Pattern[str], what: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if not regex.match(value):
            raise ValueError(f"must be {what}, got {value!r}")
        return value

    return check


def duration_seconds(duration: str) -> int | None:
    """Seconds of a Karpenter duration (``1h30m``); ``None`` for ``Never``."""
    if duration == "Never":
        return None
    units = {"s": 1, "m": 60, "h": 3600}
    return sum(int(n) * units[u] for n, u in re.findall(r"([0-9]+)(s|m|h)", duration))


KarpenterDuration = Annotated[
    str, AfterValidator(_pattern(_DURATION, "a duration such as '30m', '720h' or 'Never'"))
]
BudgetDuration = Annotated[
    str, AfterValidator(_pattern(_BUDGET_DURATION, "hours and minutes such as '10h' or '8h30m'"))
]
BudgetNodes = Annotated[
    str,
    AfterValidator(
        _pattern(_BUDGET_NODES, "a node count such as '0' or a percentage such as '10%'")
    ),
]
CronSchedule = Annotated[
    str,
    AfterValidator(_pattern(_SCHEDULE, "a cron schedule such as '0 8 * * mon-fri' or '@daily'")),
]


def _threshold(value: str) -> str:
    if not _THRESHOLD.match(value):
        raise ValueError(
            f"must be a percentage such as '10%' or a quantity such as '1Gi', got {value!r}"
        )
    if value.endswith("%"):
        if not 0 < float(value[:-1]) < 100:
            raise ValueError(f"must be a percentage above 0% and below 100%, got {value!r}")
    elif parse_quantity(value) <= 0:
        raise ValueError(
            f"must be above zero (0 turns the threshold off: leave it out), got {value!r}"
        )
    return value


def _grace_period(value: str) -> str:
    if not _GRACE_PERIOD.match(value):
        raise ValueError(f"must be a duration such as '90s', '1m30s' or '2m', got {value!r}")
    if not any(ch in "123456789" for ch in value):
        raise ValueError(f"must be longer than zero, got {value!r}")
    return value


Threshold = Annotated[str, AfterValidator(_threshold)]
"""An eviction threshold: a percentage of the resource's capacity, or an amount left."""
GracePeriod = Annotated[str, AfterValidator(_grace_period)]
"""A Go duration the kubelet parses (``time.ParseDuration``), above zero."""
VolumeSize = Annotated[
    str, AfterValidator(_pattern(_VOLUME_SIZE, "a size in Gi or Ti such as '500Gi'"))
]
AmiAlias = Annotated[
    str,
    AfterValidator(
        _pattern(_AMI_ALIAS, "an EKS AMI alias 'family@version' such as 'al2023@v20251110'")
    ),
]
InstanceType = Annotated[
    str, AfterValidator(_pattern(_INSTANCE_TYPE, "an EC2 instance type such as 'p5.48xlarge'"))
]
InstanceFamily = Annotated[
    str, AfterValidator(_pattern(_INSTANCE_FAMILY, "an EC2 instance family such as 'g6'"))
]


class TaintConfig(ConfigModel):
    """An extra node taint. Pods get the matching toleration from the pool's contract."""

    key: LabelKey
    value: LabelValue = ""
    effect: TaintEffect = "NoSchedule"


class GpuSharingConfig(ConfigModel):
    """How pods share the pool's GPUs."""

    mode: SharingMode = "exclusive"
    """``exclusive``: whole GPUs. ``time-slicing``: ``replicas`` pods per GPU, no memory
    isolation. ``mig``: hardware partitions of ``migProfile``."""
    replicas: int | None = None
    """Time-slicing only: pods sharing one GPU (at least 2)."""
    mig_profile: str | None = None
    """MIG only: the profile every GPU is cut into, e.g. ``1g.10gb``; must suit the product."""
    mig_strategy: MigStrategy = "mixed"
    """MIG only: ``mixed`` exposes ``nvidia.com/mig-<profile>``; ``single`` ``nvidia.com/gpu``.
    One strategy for all MIG pools (the GPU operator's is cluster-wide)."""


class DisruptionBudgetConfig(ConfigModel):
    """A Karpenter disruption budget."""

    nodes: BudgetNodes
    """Most nodes disrupted at once: ``"0"`` blocks voluntary disruption while active."""
    schedule: CronSchedule | None = None
    """When the budget starts (cron, UTC), e.g. ``0 8 * * mon-fri``. Needs ``duration``."""
    duration: BudgetDuration | None = None
    """How long it stays active after each start, e.g. ``10h``."""
    reasons: list[DisruptionReason] = []
    """``Underutilized``, ``Empty``, ``Drifted``; empty: all reasons."""


class KarpenterDisruptionConfig(ConfigModel):
    """When Karpenter may remove the pool's nodes."""

    consolidation_policy: ConsolidationPolicy | None = None
    """Default: ``WhenEmpty`` for training pools (running training is never consolidated away),
    ``WhenEmptyOrUnderutilized`` otherwise. Training pools must use ``WhenEmpty``."""
    consolidate_after: KarpenterDuration = "15m"
    """How long a node stays empty (or underutilised) before Karpenter removes it."""
    budgets: list[DisruptionBudgetConfig] = Field(
        default_factory=lambda: [DisruptionBudgetConfig.model_validate({"nodes": "10%"})]
    )
    """Default: at most 10% of the nodes at once (Karpenter's default)."""
    expire_after: KarpenterDuration | None = None
    """Node lifetime. Default ``Never`` for training (expiry ignores budgets), else ``720h``."""
    termination_grace_period: KarpenterDuration | None = None
    """Longest Karpenter waits for pods on a draining node before terminating it."""

    def consolidation_policy_for(self, purpose: PoolPurpose) -> ConsolidationPolicy:
        """``consolidationPolicy`` as set, else its default for a pool of ``purpose``."""
        if self.consolidation_policy is not None:
            return self.consolidation_policy
        return "WhenEmpty" if purpose == "training" else "WhenEmptyOrUnderutilized"

    def expire_after_for(self, purpose: PoolPurpose) -> str:
        """``expireAfter`` as set, else its default for a pool of ``purpose``."""
        if self.expire_after is not None:
            return self.expire_after
        return "Never" if purpose == "training" else "720h"


class NodeClassRefConfig(ConfigModel):
    """The node class a Karpenter NodePool launches with."""

    name: DnsSubdomain
    group: str = "karpenter.k8s.aws"
    kind: str = "EC2NodeClass"


class BlockDeviceConfig(ConfigModel):
    """An EBS volume of each node."""

    device_name: str = "/dev/xvda"
    volume_size: VolumeSize = "200Gi"
    volume_type: VolumeType = "gp3"
    iops: int | None = Field(default=None, ge=100)
    throughput: int | None = Field(default=None, ge=125)
    encrypted: bool = True
    root_volume: bool = True


_EVICTION_HARD: dict[EvictionSignal, str] = {
    "memory.available": "10%",
    "nodefs.available": "10%",
    "nodefs.inodesFree": "5%",
    "imagefs.available": "15%",
}
_EVICTION_SOFT: dict[EvictionSignal, str] = {"memory.available": "20%"}
_EVICTION_SOFT_GRACE: dict[EvictionSignal, str] = {"memory.available": "1m30s"}
_AMD64: list[Architecture] = ["amd64"]


class KubeletConfig(ConfigModel):
    """The kubelet settings of the pool's nodes: evict non-critical pods under memory pressure
    before the kernel's OOM killer picks a victim. Karpenter pools render them into their
    EC2NodeClass; static pools publish them as a ``KubeletConfiguration`` drop-in (stack output
    ``kubeletDropIns.<pool>``) for the node administrators to install."""

    eviction_hard: dict[EvictionSignal, Threshold] = Field(
        default_factory=lambda: dict(_EVICTION_HARD)
    )
    """Evict at once (no grace period) below these. Default: memory 10%, and the kubelet's own
    disk defaults (node disk 10%, inodes 5%, image disk 15%), which the kubelet drops as soon as
    any hard threshold is set."""
    eviction_soft: dict[EvictionSignal, Threshold] = Field(
        default_factory=lambda: dict(_EVICTION_SOFT)
    )
    """Evict after ``evictionSoftGracePeriod`` below these; each above its hard threshold.
    Default: memory 20%."""
    eviction_soft_grace_period: dict[EvictionSignal, GracePeriod] = Field(
        default_factory=lambda: dict(_EVICTION_SOFT_GRACE)
    )
    """How long a soft threshold must be crossed before pods go, one per ``evictionSoft``
    signal. Default: 1m30s for memory."""
    eviction_max_pod_grace_period: int = Field(default=300, ge=0, le=_INT32_MAX)
    """Longest grace period (seconds) a pod gets when a soft threshold evicts it; a pod's
    ``terminationGracePeriodSeconds`` above it is cut short. Default: 300 (five minutes, room
    for a training job's last checkpoint). Hard evictions give no grace period."""
    max_pods: int | None = Field(default=None, ge=1, le=_INT32_MAX)
    """Most pods per node; default: the kubelet's (or Karpenter's for the instance type)."""
    system_reserved: dict[ReservedResource, Quantity] = {}
    """Held back from pods for the OS's daemons, e.g. ``{memory: 4Gi, cpu: "1"}``. Default:
    none set here (the node's own kubelet config, or Karpenter's defaults, apply)."""
    kube_reserved: dict[ReservedResource, Quantity] = {}
    """Held back from pods for the kubelet and the container runtime. Default: none set here."""


class Ec2NodeClassConfig(ConfigModel):
    """An EC2NodeClass the pool creates (AWS), named by ``nodeClassRef.name``."""

    role: str = Field(min_length=1)
    """IAM role name of the nodes."""
    subnet_selector_tags: dict[str, str] = Field(min_length=1)
    """Tags that select the nodes' subnets, e.g. ``karpenter.sh/discovery: <cluster>``."""
    security_group_selector_tags: dict[str, str] = Field(min_length=1)
    """Tags that select the nodes' security groups."""
    ami_alias: AmiAlias = "al2023@latest"
    """EKS-optimised AMI; its NVIDIA variant ships the driver. Pin a version in prod."""
    block_devices: list[BlockDeviceConfig] = Field(
        default_factory=lambda: [BlockDeviceConfig()], min_length=1
    )
    """Default: one encrypted 200Gi gp3 root volume."""
    instance_store_policy: Literal["RAID0"] | None = None
    """``RAID0``: use local NVMe (p5, g6e) as node ephemeral storage."""
    tags: dict[str, str] = {}
    """Tags on instances and volumes (cost allocation)."""
    capacity_reservation_ids: list[str] = []
    """ODCR / capacity block ids (``cr-...``) for ``capacityType: reserved``."""
    capacity_reservation_tags: dict[str, str] = {}
    """Tags that select capacity reservations."""


class KarpenterPoolConfig(ConfigModel):
    """Karpenter settings of a pool."""

    node_class_ref: NodeClassRefConfig
    """The node class to launch with. Required: every Karpenter pool names one."""
    ec2_node_class: Ec2NodeClassConfig | None = None
    """Create the EC2NodeClass with the pool. Omit to reference one managed elsewhere."""
    instance_types: list[InstanceType] = []
    """Allowed instance types, e.g. ``p5.48xlarge``. Set these or ``instanceFamilies``."""
    instance_families: list[InstanceFamily] = []
    """Allowed instance families, e.g. ``g6``."""
    zones: list[str] = []
    """Allowed zones; default: those of the node class's subnets."""
    architectures: list[Architecture] = Field(default_factory=lambda: list(_AMD64), min_length=1)
    disruption: KarpenterDisruptionConfig = KarpenterDisruptionConfig()
    weight: int | None = Field(default=None, ge=1, le=100)
    """Preference when several NodePools fit a pod (higher first)."""


class GpuNodePoolConfig(ConfigModel):
    """One pool of GPU nodes: one product, one sharing mode, one scheduling contract."""

    name: DnsLabel
    """Unique; the ``aiplatform.io/node-pool`` label value and the Kueue flavour name."""
    backend: Backend
    """``karpenter`` (nodes launched on demand) or ``static`` (existing on-premises nodes)."""
    purpose: PoolPurpose = "training"
    """``training`` pools are never consolidated while pods run; ``inference``/``batch`` may be."""
    gpu_product: LabelValue = Field(min_length=1)
    """``nvidia.com/gpu.product`` of the GPUs, e.g. ``NVIDIA-H100-80GB-HBM3``."""
    gpus_per_node: int = Field(gt=0)
    """Physical GPUs per node."""
    min_nodes: int | None = Field(default=None, ge=0)
    """Karpenter only. 0 (default) scales from zero; equal to ``maxNodes`` keeps that many nodes
    (Karpenter static capacity). Karpenter NodePools have no floor in between."""
    max_nodes: int | None = Field(default=None, ge=1)
    """Karpenter only, required: caps the pool at ``maxNodes x gpusPerNode`` GPUs."""
    nodes: list[DnsSubdomain] = []
    """Static only, required: the names of the existing nodes."""
    capacity_type: CapacityType = "on-demand"
    """``on-demand``, ``spot`` (preemptible work only) or ``reserved`` (ODCRs, capacity blocks)."""
    labels: LabelMap = {}
    """Extra node labels."""
    taints: list[TaintConfig] = []
    """Extra taints; ``nvidia.com/gpu=present:NoSchedule`` is always set."""
    sharing: GpuSharingConfig = GpuSharingConfig()
    karpenter: KarpenterPoolConfig | None = None
    """Required for ``backend: karpenter``; not allowed for ``static``."""
    kubelet: KubeletConfig = KubeletConfig()
    """Eviction thresholds and reservations of the pool's kubelets. Pools sharing a Karpenter
    node class share its kubelet settings, so they must agree."""
    node_memory: Quantity | None = None
    """Memory of one node (the smallest, if they differ), e.g. ``1Ti``. Checks that the kubelet's
    reservations and eviction thresholds leave room for pods; required when they are quantities
    that cannot be compared otherwise."""

    @property
    def node_count(self) -> int:
        """Most nodes the pool can have."""
        if self.backend == "static":
            return len(self.nodes)
        return self.max_nodes or 0


class GpuStackConfig(ConfigModel):
    """The NVIDIA GPU Operator and what it installs on GPU nodes."""

    enabled: bool = True
    """Install the GPU operator. Off: no operator (a cluster without GPUs still previews)."""
    driver: bool = True
    """Install the NVIDIA driver on nodes. False where node images ship it (EKS GPU AMIs)."""
    toolkit: bool = True
    """Install the NVIDIA container toolkit. False where node images ship it."""
    gpu_feature_discovery: bool = True
    """Label nodes with GPU facts (product, memory, MIG, sharing)."""
    dcgm_exporter: bool = True
    """Export GPU metrics for Prometheus."""
    service_monitor: bool = False
    """Create the DCGM exporter's ServiceMonitor; needs the Prometheus operator (monitoring)."""
    node_feature_discovery: bool = True
    """Deploy NFD with the operator; false if the cluster already runs it."""
