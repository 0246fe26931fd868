"""GPU pools and the NVIDIA stack: config -> GpuNodePool and GpuOperator args -> components."""

from __future__ import annotations

import pulumi

from components.gpu_node_pool import (
    BlockDevice,
    DisruptionBudget,
    Ec2NodeClassSpec,
    GpuNodePool,
    GpuNodePoolArgs,
    GpuSharing,
    KarpenterBackend,
    KarpenterDisruption,
    KubeletSpec,
    StaticBackend,
)
from components.gpu_operator import GpuOperator, GpuOperatorArgs
from components.network_policies import SystemNetwork
from components.scheduling_contract import Taint

from ..chart_fields import chart_fields
from ..config.root import PlatformConfig
from ..sources import GPU_OPERATOR, pool_name
from .config import Ec2NodeClassConfig, GpuNodePoolConfig, KarpenterPoolConfig, KubeletConfig


def kubelet_spec(kubelet: KubeletConfig) -> KubeletSpec:
    """The pool's kubelet settings, for its node class or its drop-in."""
    return KubeletSpec(
        eviction_hard={str(k): v for k, v in kubelet.eviction_hard.items()},
        eviction_soft={str(k): v for k, v in kubelet.eviction_soft.items()},
        eviction_soft_grace_period={
            str(k): v for k, v in kubelet.eviction_soft_grace_period.items()
        },
        eviction_max_pod_grace_period=kubelet.eviction_max_pod_grace_period,
        max_pods=kubelet.max_pods,
        system_reserved={str(k): v for k, v in kubelet.system_reserved.items()},
        kube_reserved={str(k): v for k, v in kubelet.kube_reserved.items()},
    )


def node_class(spec: Ec2NodeClassConfig, kubelet: KubeletConfig) -> Ec2NodeClassSpec:
    return Ec2NodeClassSpec(
        role=spec.role,
        subnet_tags=dict(spec.subnet_selector_tags),
        security_group_tags=dict(spec.security_group_selector_tags),
        ami_alias=spec.ami_alias,
        block_devices=tuple(
            BlockDevice(
                device_name=device.device_name,
                volume_size=device.volume_size,
                volume_type=device.volume_type,
                iops=device.iops,
                throughput=device.throughput,
                encrypted=device.encrypted,
                root_volume=device.root_volume,
            )
            for device in spec.block_devices
        ),
        instance_store_policy=spec.instance_store_policy,
        kubelet=kubelet_spec(kubelet),
        tags=dict(spec.tags),
        capacity_reservation_ids=tuple(spec.capacity_reservation_ids),
        capacity_reservation_tags=dict(spec.capacity_reservation_tags),
    )


def karpenter_backend(pool: GpuNodePoolConfig, karpenter: KarpenterPoolConfig) -> KarpenterBackend:
    disruption = karpenter.disruption
    return KarpenterBackend(
        node_class_name=karpenter.node_class_ref.name,
        node_class_group=karpenter.node_class_ref.group,
        node_class_kind=karpenter.node_class_ref.kind,
        max_nodes=pool.max_nodes or 0,
        min_nodes=pool.min_nodes or 0,
        ec2_node_class=(
            node_class(karpenter.ec2_node_class, pool.kubelet) if karpenter.ec2_node_class else None
        ),
        instance_types=tuple(karpenter.instance_types),
        instance_families=tuple(karpenter.instance_families),
        zones=tuple(karpenter.zones),
        architectures=tuple(karpenter.architectures),
        disruption=KarpenterDisruption(
            consolidation_policy=disruption.consolidation_policy_for(pool.purpose),
            consolidate_after=disruption.consolidate_after,
            budgets=tuple(
                DisruptionBudget(
                    nodes=budget.nodes,
                    schedule=budget.schedule,
                    duration=budget.duration,
                    reasons=tuple(budget.reasons),
                )
                for budget in disruption.budgets
            ),
            expire_after=disruption.expire_after_for(pool.purpose),
            termination_grace_period=disruption.termination_grace_period,
        ),
        weight=karpenter.weight,
    )


def pool_args(pool: GpuNodePoolConfig) -> GpuNodePoolArgs:
    backend: KarpenterBackend | StaticBackend
    if pool.backend == "karpenter" and pool.karpenter is not None:
        backend = karpenter_backend(pool, pool.karpenter)
    else:
        backend = StaticBackend(nodes=tuple(pool.nodes), kubelet=kubelet_spec(pool.kubelet))
    sharing = pool.sharing
    return GpuNodePoolArgs(
        pool=pool.name,
        product=pool.gpu_product,
        gpus_per_node=pool.gpus_per_node,
        backend=backend,
        capacity_type=pool.capacity_type,
        labels=dict(pool.labels),
        taints=tuple(Taint(t.key, t.value, t.effect) for t in pool.taints),
        sharing=GpuSharing(
            mode=sharing.mode,
            replicas=sharing.replicas or 1,
            mig_profile=sharing.mig_profile,
            mig_strategy=sharing.mig_strategy,
        ),
    )


def gpu_operator_args(
    config: PlatformConfig, pools: list[GpuNodePool], network: SystemNetwork
) -> GpuOperatorArgs:
    stack = config.gpu_stack
    mig_pools = [p for p in config.node_pools if p.sharing.mode == "mig"]
    return GpuOperatorArgs(
        **chart_fields(config, network),
        device_plugin_configs={pool.contract.pool: pool.device_plugin_config for pool in pools},
        node_tolerations=[toleration for pool in pools for toleration in pool.contract.tolerations],
        driver=stack.driver,
        toolkit=stack.toolkit,
        gpu_feature_discovery=stack.gpu_feature_discovery,
        dcgm_exporter=stack.dcgm_exporter,
        service_monitor=stack.service_monitor,
        node_feature_discovery=stack.node_feature_discovery,
        mig_strategy=mig_pools[0].sharing.mig_strategy if mig_pools else "single",
        mig_manager=bool(mig_pools),
    )


def gpu_node_pools(config: PlatformConfig, opts: pulumi.ResourceOptions) -> dict[str, GpuNodePool]:
    """One ``GpuNodePool`` per configured pool, by pool name."""
    return {
        pool.name: GpuNodePool(pool_name(pool), pool_args(pool), opts) for pool in config.node_pools
    }


def gpu_operator(
    config: PlatformConfig,
    pools: dict[str, GpuNodePool],
    network: SystemNetwork,
    opts: pulumi.ResourceOptions,
) -> GpuOperator | None:
    """The GPU operator for every pool's nodes, if ``gpuStack`` installs it."""
    if not config.gpu_stack.enabled:
        return None
    return GpuOperator(GPU_OPERATOR, gpu_operator_args(config, list(pools.values()), network), opts)
