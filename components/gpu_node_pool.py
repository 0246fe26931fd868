"""GpuNodePool: a set of GPU nodes with one product, one sharing mode and one scheduling contract.

Two backends:

- ``karpenter``: a Karpenter ``NodePool`` (karpenter.sh/v1) that launches the nodes, optionally
  with its own ``EC2NodeClass`` (karpenter.k8s.aws/v1).
- ``static``: on-premises nodes that already exist. The pool labels and taints them with one
  ``NodePatch`` per node (server-side apply, explicit field manager per pool).

Why NodePatch, and what removing a static pool does (evidence, pulumi/pulumi-kubernetes):

- Deleting a Patch resource never deletes the object. With server-side apply the provider's
  Delete calls ``ssa.Relinquish`` for Patch resources instead of ``client.Delete``
  (provider/pkg/await, provider/pkg/ssa/actions.go): it applies an empty object with the same
  field manager, so the API server drops the fields only that manager owned. Removing a pool
  therefore removes its labels and taints and leaves the Node in place. Retaining patches by
  default was proposed and rejected (#2253, #2149: "unpatching" stays the default,
  ``retainOnDelete`` is the opt-out), so this is the supported behaviour, not a side effect.
- The field manager is explicit and stable (``aiplatform-node-pool-<pool>``), not the provider's
  random per-resource one, so a replaced patch relinquishes and re-applies the same fields, and
  ``kubectl get node -o yaml --show-managed-fields`` names the owning pool.
- ``metadata.labels`` is a granular map: we own exactly our keys. ``spec.taints`` is an atomic
  list (``x-kubernetes-list-type: atomic`` in the Node schema), so whoever applies it owns the
  whole list. We apply without ``patchForce``: if another manager (``kubectl taint``, a
  controller) changed the node's taints, the next update fails with a conflict instead of
  silently dropping their taints (the failure mode in fluxcd/kustomize-controller#772). On
  removal we relinquish the list; if another manager co-owns it, the taints stay and the node is
  still usable by GPU pods (they tolerate the GPU taint). ``retainOnDelete`` is never set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_kubernetes as k8s

from . import kube
from .constants import (
    ARCH_LABEL,
    CAPACITY_TYPE_LABEL,
    DEVICE_PLUGIN_CONFIG_LABEL,
    EC2_NODE_CLASS_KIND,
    GPU_RESOURCE,
    GPU_TAINT_EFFECT,
    GPU_TAINT_KEY,
    GPU_TAINT_VALUE,
    INSTANCE_TYPE_LABEL,
    KARPENTER_API_VERSION,
    KARPENTER_AWS_API_VERSION,
    KARPENTER_AWS_GROUP,
    KARPENTER_GPU_COUNT_LABEL,
    KARPENTER_GPU_LIMIT_KEY,
    KARPENTER_INSTANCE_FAMILY_LABEL,
    KUBELET_CONFIG_API_VERSION,
    KUBELET_CONFIG_KIND,
    MIG_CONFIG_LABEL,
    MIG_CONFIG_PREFIX,
    NODE_POOL_FIELD_MANAGER_PREFIX,
    NODE_POOL_LABEL,
    OS_LABEL,
    PATCH_FIELD_MANAGER_ANNOTATION,
    ZONE_LABEL,
)
from .frozen import frozen
from .gpu_products import units_per_gpu
from .labels import platform_labels
from .scheduling_contract import SchedulingContract, Taint, gpu_resource_name
from .yaml_text import dump_yaml

GPU_TAINT = Taint(GPU_TAINT_KEY, GPU_TAINT_VALUE, GPU_TAINT_EFFECT)
"""The ecosystem's GPU taint; the GPU operator's daemonsets tolerate it by default."""


@frozen
class GpuSharing:
    """How one physical GPU is offered to pods."""

    mode: str = "exclusive"
    """``exclusive`` (whole GPUs), ``time-slicing`` or ``mig``."""
    replicas: int = 1
    """Time-slicing: pods that share one GPU (>= 2); ignored otherwise."""
    mig_profile: str | None = None
    """MIG: the profile every GPU is cut into, e.g. ``1g.10gb``."""
    mig_strategy: str = "mixed"
    """MIG: ``mixed`` advertises ``nvidia.com/mig-<profile>``, ``single`` ``nvidia.com/gpu``."""

    def units_per_gpu(self, product: str) -> int:
        """Units of the pool's GPU resource one physical GPU yields."""
        return units_per_gpu(product, self.mode, self.replicas, self.mig_profile)

    def device_plugin_config(self) -> dict[str, Any]:
        """The device plugin / GFD config entry (``version: v1``) for nodes of this pool."""
        strategy = self.mig_strategy if self.mode == "mig" else "none"
        config: dict[str, Any] = {"version": "v1", "flags": {"migStrategy": strategy}}
        if self.mode == "time-slicing":
            config["sharing"] = {
                "timeSlicing": {"resources": [{"name": GPU_RESOURCE, "replicas": self.replicas}]}
            }
        return config


@frozen
class DisruptionBudget:
    """A Karpenter disruption budget: at most ``nodes`` disrupted at once (while scheduled)."""

    nodes: str
    """A count (``"0"`` blocks voluntary disruption) or a percentage (``"10%"``)."""
    schedule: str | None = None
    """Cron schedule when the budget starts to apply (UTC); needs ``duration``."""
    duration: str | None = None
    """How long the budget applies after each schedule hit, e.g. ``10h``."""
    reasons: tuple[str, ...] = ()
    """``Underutilized``, ``Empty``, ``Drifted``; empty means every reason."""

    def manifest(self) -> dict[str, Any]:
        budget: dict[str, Any] = {"nodes": self.nodes}
        if self.schedule:
            budget["schedule"] = self.schedule
        if self.duration:
            budget["duration"] = self.duration
        if self.reasons:
            budget["reasons"] = list(self.reasons)
        return budget


@frozen
class KarpenterDisruption:
    """When Karpenter may take nodes away. Defaults protect running training."""

    consolidation_policy: str = "WhenEmpty"
    """``WhenEmpty`` never evicts running pods to consolidate; training pools must use it."""
    consolidate_after: str = "15m"
    """How long a node must be empty (or underutilised) before Karpenter removes it."""
    budgets: tuple[DisruptionBudget, ...] = (DisruptionBudget("10%"),)
    """Budgets; Karpenter applies the most restrictive active one."""
    expire_after: str = "Never"
    """Node lifetime. Expiry is forceful (no budget applies), so training pools keep ``Never``."""
    termination_grace_period: str | None = None
    """Longest a draining node waits for its pods before Karpenter terminates it anyway."""


@frozen
class BlockDevice:
    """An EBS volume of the node."""

    device_name: str = "/dev/xvda"
    volume_size: str = "200Gi"
    volume_type: str = "gp3"
    iops: int | None = None
    throughput: int | None = None
    encrypted: bool = True
    delete_on_termination: bool = True
    root_volume: bool = True

    def manifest(self) -> dict[str, Any]:
        ebs: dict[str, Any] = {
            "volumeSize": self.volume_size,
            "volumeType": self.volume_type,
            "encrypted": self.encrypted,
            "deleteOnTermination": self.delete_on_termination,
        }
        if self.iops is not None:
            ebs["iops"] = self.iops
        if self.throughput is not None:
            ebs["throughput"] = self.throughput
        return {"deviceName": self.device_name, "rootVolume": self.root_volume, "ebs": ebs}


@frozen
class KubeletSpec:
    """Kubelet settings of the pool's nodes: eviction thresholds and reservations. Empty maps
    leave the kubelet's (or Karpenter's) own values."""

    eviction_hard: Mapping[str, str] = field(default_factory=dict)
    """Signal -> threshold below which pods are evicted at once."""
    eviction_soft: Mapping[str, str] = field(default_factory=dict)
    """Signal -> threshold below which pods are evicted after the signal's grace period."""
    eviction_soft_grace_period: Mapping[str, str] = field(default_factory=dict)
    eviction_max_pod_grace_period: int | None = None
    """Longest termination grace period (seconds) a soft eviction grants."""
    max_pods: int | None = None
    system_reserved: Mapping[str, str] = field(default_factory=dict)
    kube_reserved: Mapping[str, str] = field(default_factory=dict)

    def manifest(self) -> dict[str, Any]:
        """The fields as both the EC2NodeClass ``spec.kubelet`` and ``KubeletConfiguration``
        spell them (Karpenter's are a subset of the kubelet's, same names)."""
        kubelet: dict[str, Any] = {}
        for key, value in (
            ("evictionHard", self.eviction_hard),
            ("evictionSoft", self.eviction_soft),
            ("evictionSoftGracePeriod", self.eviction_soft_grace_period),
            ("systemReserved", self.system_reserved),
            ("kubeReserved", self.kube_reserved),
        ):
            if value:
                kubelet[key] = dict(value)
        if self.eviction_max_pod_grace_period is not None:
            kubelet["evictionMaxPodGracePeriod"] = self.eviction_max_pod_grace_period
        if self.max_pods is not None:
            kubelet["maxPods"] = self.max_pods
        return kubelet


def kubelet_configuration(kubelet: KubeletSpec) -> dict[str, Any]:
    """A ``KubeletConfiguration`` drop-in for a static pool's nodes (the kubelet's
    ``--config-dir``). Every drop-in file names its apiVersion and kind, and maps merge key by
    key over the node's main config, so the file holds only the pool's settings."""
    return {
        "apiVersion": KUBELET_CONFIG_API_VERSION,
        "kind": KUBELET_CONFIG_KIND,
        **kubelet.manifest(),
    }


@frozen
class Ec2NodeClassSpec:
    """An EC2NodeClass the pool owns (AWS). Selectors match subnets/groups by tag."""

    role: str
    """IAM role (name) of the nodes' instance profile."""
    subnet_tags: Mapping[str, str]
    security_group_tags: Mapping[str, str]
    ami_alias: str = "al2023@latest"
    """EKS-optimised AMI ``family@version``; the GPU variants ship the NVIDIA driver."""
    block_devices: tuple[BlockDevice, ...] = (BlockDevice(),)
    instance_store_policy: str | None = None
    """``RAID0`` stripes local NVMe (p5, g6e) into the node's ephemeral storage."""
    kubelet: KubeletSpec = field(default_factory=KubeletSpec)
    tags: Mapping[str, str] = field(default_factory=dict)
    capacity_reservation_ids: tuple[str, ...] = ()
    capacity_reservation_tags: Mapping[str, str] = field(default_factory=dict)
    """Reserved capacity (ODCRs, capacity blocks) Karpenter may launch into."""

    def manifest_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "amiSelectorTerms": [{"alias": self.ami_alias}],
            "role": self.role,
            "subnetSelectorTerms": [{"tags": dict(self.subnet_tags)}],
            "securityGroupSelectorTerms": [{"tags": dict(self.security_group_tags)}],
            "blockDeviceMappings": [device.manifest() for device in self.block_devices],
            "kubelet": self.kubelet.manifest(),
            "metadataOptions": {"httpTokens": "required", "httpPutResponseHopLimit": 1},
        }
        if self.instance_store_policy:
            spec["instanceStorePolicy"] = self.instance_store_policy
        if self.tags:
            spec["tags"] = dict(self.tags)
        terms: list[dict[str, Any]] = [{"id": rid} for rid in self.capacity_reservation_ids]
        if self.capacity_reservation_tags:
            terms.append({"tags": dict(self.capacity_reservation_tags)})
        if terms:
            spec["capacityReservationSelectorTerms"] = terms
        return spec


@frozen
class KarpenterBackend:
    """Nodes launched on demand by Karpenter."""

    node_class_name: str
    """Name of the node class the NodePool references (owned here or elsewhere)."""
    max_nodes: int
    """Upper bound; ``spec.limits`` caps the pool at ``max_nodes x GPUs per node`` GPUs."""
    min_nodes: int = 0
    """0 scales from zero. Equal to ``max_nodes``: static capacity (``spec.replicas``)."""
    node_class_group: str = KARPENTER_AWS_GROUP
    node_class_kind: str = EC2_NODE_CLASS_KIND
    ec2_node_class: Ec2NodeClassSpec | None = None
    """Set to create the EC2NodeClass ``node_class_name`` with this pool."""
    instance_types: Sequence[str] = ()
    instance_families: Sequence[str] = ()
    zones: Sequence[str] = ()
    """Empty: every zone of the node class's subnets."""
    architectures: Sequence[str] = ("amd64",)
    disruption: KarpenterDisruption = field(default_factory=KarpenterDisruption)
    weight: int | None = None
    """Preference among NodePools that fit the same pod (higher first)."""


@frozen
class StaticBackend:
    """Existing nodes, labelled and tainted in place."""

    nodes: Sequence[str]
    """Node names (``kubectl get nodes``)."""
    kubelet: KubeletSpec = field(default_factory=KubeletSpec)
    """Settings the node administrators install as a drop-in (``kubelet_configuration``): the
    platform cannot reconfigure an existing kubelet."""


@frozen
class GpuNodePoolArgs:
    """Inputs of a GpuNodePool."""

    pool: str
    """Pool name: the pool label's value and the Kueue flavour's name."""
    product: str
    """``nvidia.com/gpu.product`` of the GPUs, e.g. ``NVIDIA-H100-80GB-HBM3``."""
    gpus_per_node: int
    backend: KarpenterBackend | StaticBackend
    capacity_type: str = "on-demand"
    """``on-demand``, ``spot`` or ``reserved``: a Karpenter requirement; informational on static."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Extra node labels."""
    taints: Sequence[Taint] = ()
    """Extra taints; the GPU taint is always added."""
    sharing: GpuSharing = field(default_factory=GpuSharing)


def pool_field_manager(pool: str) -> str:
    """The server-side-apply field manager of a static pool."""
    return f"{NODE_POOL_FIELD_MANAGER_PREFIX}{pool}"


def node_labels(args: GpuNodePoolArgs) -> dict[str, str]:
    """Labels the pool puts on each of its nodes."""
    labels = {
        **dict(args.labels),
        NODE_POOL_LABEL: args.pool,
        DEVICE_PLUGIN_CONFIG_LABEL: args.pool,
    }
    if args.sharing.mode == "mig" and args.sharing.mig_profile:
        labels[MIG_CONFIG_LABEL] = f"{MIG_CONFIG_PREFIX}{args.sharing.mig_profile}"
    return labels


def scheduling_contract(args: GpuNodePoolArgs) -> SchedulingContract:
    """The pool's contract, computed from its args alone (no cluster state)."""
    sharing = args.sharing
    return SchedulingContract(
        pool=args.pool,
        product=args.product,
        capacity_type=args.capacity_type,
        gpu_resource=gpu_resource_name(sharing.mode, sharing.mig_profile, sharing.mig_strategy),
        gpus_per_node=args.gpus_per_node,
        resources_per_node=args.gpus_per_node * sharing.units_per_gpu(args.product),
        sharing=sharing.mode,
        node_selector={NODE_POOL_LABEL: args.pool},
        taints=(GPU_TAINT, *args.taints),
    )


def _requirement(key: str, values: Sequence[str]) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": list(values)}


def nodepool_spec(args: GpuNodePoolArgs, backend: KarpenterBackend) -> dict[str, Any]:
    """``NodePool.spec`` for a Karpenter pool."""
    requirements = [
        _requirement(CAPACITY_TYPE_LABEL, [args.capacity_type]),
        _requirement(ARCH_LABEL, backend.architectures),
        _requirement(OS_LABEL, ["linux"]),
    ]
    if backend.instance_types:
        requirements.append(_requirement(INSTANCE_TYPE_LABEL, backend.instance_types))
    if backend.instance_families:
        requirements.append(
            _requirement(KARPENTER_INSTANCE_FAMILY_LABEL, backend.instance_families)
        )
    if backend.zones:
        requirements.append(_requirement(ZONE_LABEL, backend.zones))
    if backend.node_class_group == KARPENTER_AWS_GROUP:
        # Families span sizes with different GPU counts (g6.xlarge: 1, g6.48xlarge: 8): pin the
        # count so every node matches gpusPerNode, the contract and the quota arithmetic.
        requirements.append(_requirement(KARPENTER_GPU_COUNT_LABEL, [str(args.gpus_per_node)]))
    disruption = backend.disruption
    template_spec: dict[str, Any] = {
        "nodeClassRef": {
            "group": backend.node_class_group,
            "kind": backend.node_class_kind,
            "name": backend.node_class_name,
        },
        "requirements": requirements,
        "taints": [taint.manifest() for taint in (GPU_TAINT, *args.taints)],
        "expireAfter": disruption.expire_after,
    }
    if disruption.termination_grace_period:
        template_spec["terminationGracePeriod"] = disruption.termination_grace_period
    spec: dict[str, Any] = {
        "template": {"metadata": {"labels": node_labels(args)}, "spec": template_spec},
        "disruption": {
            "consolidationPolicy": disruption.consolidation_policy,
            "consolidateAfter": disruption.consolidate_after,
            "budgets": [budget.manifest() for budget in disruption.budgets],
        },
    }
    if backend.min_nodes and backend.min_nodes == backend.max_nodes:
        # Static capacity: Karpenter keeps exactly this many nodes; only limits.nodes is allowed.
        spec["replicas"] = backend.min_nodes
        spec["limits"] = {"nodes": str(backend.max_nodes)}
    else:
        spec["limits"] = {KARPENTER_GPU_LIMIT_KEY: str(backend.max_nodes * args.gpus_per_node)}
        if backend.weight is not None:
            spec["weight"] = backend.weight
    return spec


class GpuNodePool(pulumi.ComponentResource):
    """GPU nodes of one product and sharing mode, and the contract to schedule onto them."""

    if TYPE_CHECKING:  # attribute types, not runtime annotations (components/__init__.py)
        contract: SchedulingContract
        device_plugin_config: dict[str, Any]
        max_units: int
        kubelet_configuration: dict[str, Any] | None

    def __init__(
        self, name: str, args: GpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("aiplatform:gpu:GpuNodePool", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.contract = scheduling_contract(args)
        self.device_plugin_config = args.sharing.device_plugin_config()
        meta_labels = platform_labels({NODE_POOL_LABEL: args.pool})
        backend = args.backend
        self.kubelet_configuration = None

        if isinstance(backend, KarpenterBackend):
            node_count = backend.max_nodes
            depends: list[pulumi.Resource] = []
            if backend.ec2_node_class is not None:
                depends.append(
                    k8s.apiextensions.CustomResource(
                        f"{name}-nodeclass",
                        api_version=KARPENTER_AWS_API_VERSION,
                        kind=EC2_NODE_CLASS_KIND,
                        metadata={"name": backend.node_class_name, "labels": meta_labels},
                        spec=backend.ec2_node_class.manifest_spec(),
                        opts=child,
                    )
                )
            k8s.apiextensions.CustomResource(
                f"{name}-nodepool",
                api_version=KARPENTER_API_VERSION,
                kind="NodePool",
                metadata={"name": args.pool, "labels": meta_labels},
                spec=nodepool_spec(args, backend),
                opts=pulumi.ResourceOptions.merge(
                    child, pulumi.ResourceOptions(depends_on=depends)
                ),
            )
        else:
            node_count = len(backend.nodes)
            self.kubelet_configuration = kubelet_configuration(backend.kubelet)
            manager = pool_field_manager(args.pool)
            taints = [taint.manifest() for taint in self.contract.taints]
            for node in backend.nodes:
                kube.NodePatch(
                    f"{name}-node-{node}",
                    metadata={
                        "name": node,
                        "labels": node_labels(args),
                        "annotations": {PATCH_FIELD_MANAGER_ANNOTATION: manager},
                    },
                    spec={"taints": taints},
                    opts=child,
                )

        self.max_units = node_count * self.contract.resources_per_node
        self.register_outputs(
            {
                "contract": self.contract.to_output(),
                "maxUnits": self.max_units,
                "kubeletConfiguration": self.kubelet_configuration,
            }
        )


def device_plugin_config_yaml(config: Mapping[str, Any]) -> str:
    """A config entry as the device plugin reads it from the ConfigMap."""
    return dump_yaml(dict(config))
