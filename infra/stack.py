"""Stack composition: validated config in, components out. Nothing else builds resources.

Data flows one way: ``PlatformConfig`` → component args → components → resources. Components
never import from ``infra``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.constants import TEAM_LOCAL_QUEUE_NAME
from components.data_volume import DataVolume, DataVolumeArgs
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
from components.guardrails import TenantGuardrails, TenantGuardrailsArgs, TenantLimits
from components.images import mirrored
from components.kueue import (
    DefaultQueue,
    DefaultQueueArgs,
    FlavorQuota,
    FlavorSpec,
    Kueue,
    KueueArgs,
    QuotaLimits,
    TeamQueue,
    TeamQueueArgs,
    WorkloadPrioritySpec,
)
from components.monitoring.stack import MonitoringStack
from components.network_policies import SystemNetwork
from components.priority_classes import PriorityClasses, PriorityClassesArgs, PriorityClassSpec
from components.raw_manifests import RawManifests, RawManifestsArgs
from components.scheduling_contract import SchedulingContract, Taint
from components.storage_classes import StorageClasses, StorageClassesArgs, StorageClassSpec
from components.team_namespace import TeamNamespace, TeamNamespaceArgs, TeamQuotaSpec
from components.workloads import (
    Autoscaling,
    CheckpointVolume,
    ComputeResources,
    CustomMetric,
    EgressAllowance,
    InferenceService,
    InferenceServiceArgs,
    PreflightSpec,
    Probes,
    StatefulDependency,
    TrainingJob,
    TrainingJobArgs,
    service_dns_name,
)

from .config import PlatformConfig
from .config.gpu import Ec2NodeClassConfig, GpuNodePoolConfig, KarpenterPoolConfig
from .config.manifests import exception_positions
from .config.quantity import format_bytes
from .config.queueing import QuotaAmounts, TeamQueueConfig, default_queue_capacity
from .config.rules import pool_capacity
from .config.teams import TeamConfig
from .config.workloads import ComputeConfig, EgressConfig, WorkloadConfig
from .monitoring import monitoring_stack_args
from .outputs import (
    ClassSetOutputs,
    GpuPoolOutputs,
    MonitoringOutputs,
    StackOutputs,
    TeamOutputs,
    WorkloadOutputs,
)
from .sources import (
    EXTRA_MANIFESTS,
    GPU_OPERATOR,
    KUEUE,
    MONITORING,
    PRIORITY_CLASSES,
    STORAGE_CLASSES,
    default_queue_name,
    pool_name,
    team_queue_name,
    volume_name,
    workload_name,
)


def kubernetes_provider(config: PlatformConfig) -> k8s.Provider:
    """The only provider Kubernetes resources use; default providers are disabled in Pulumi.yaml."""
    cluster = config.cluster
    return k8s.Provider(
        f"{cluster.name}-cluster",
        context=cluster.kubeconfig_context,
        kubeconfig=cluster.kubeconfig,
        enable_server_side_apply=True,
    )


def tenant_limits(team: TeamConfig, config: PlatformConfig) -> TenantLimits:
    """What a team namespace allows: its priority classes, with Kueue the pools of its queue and
    that queue (without Kueue, any pool and no queue to name), and the teams that may reach it."""
    classes = team.priority_classes
    if classes is None:
        classes = [pc.name for pc in config.priority_classes]
    namespaces = {other.name: other.namespace_name for other in config.teams}
    callers = [namespaces[name] for name in team.reachable_from]
    if not config.queueing.enabled:
        return TenantLimits(classes, [pool.name for pool in config.node_pools], None, callers)
    if team.queue is None:
        return TenantLimits(classes, (), None, callers)
    pools = list(dict.fromkeys(entry.pool for entry in team.queue.pools))
    return TenantLimits(classes, pools, TEAM_LOCAL_QUEUE_NAME, callers)


def _team_args(team: TeamConfig, config: PlatformConfig) -> TeamNamespaceArgs:
    return TeamNamespaceArgs(
        team=team.name,
        namespace=team.namespace_name,
        environment=config.cluster.environment,
        purpose=team.purpose,
        quota=TeamQuotaSpec(
            cpu=team.quota.cpu,
            memory=team.quota.memory,
            gpus=team.quota.gpus,
            storage=team.quota.storage,
            persistent_volume_claims=team.quota.persistent_volume_claims,
            pods=team.quota.pods,
            mig_slices=dict(team.quota.mig_slices),
        ),
        default_requests=team.container_defaults.requests.model_dump(),
        default_limits=team.container_defaults.limits.model_dump(),
        admin_groups=tuple(team.admin_groups),
        viewer_groups=tuple(team.viewer_groups),
        env=dict(team.env),
        labels=dict(team.labels),
        retain_on_delete=config.cluster.protects_data,
        limits=tenant_limits(team, config),
    )


def _node_class(spec: Ec2NodeClassConfig) -> Ec2NodeClassSpec:
    kubelet = spec.kubelet
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
        kubelet=KubeletSpec(
            eviction_hard={str(k): v for k, v in kubelet.eviction_hard.items()},
            eviction_soft={str(k): v for k, v in kubelet.eviction_soft.items()},
            eviction_soft_grace_period={
                str(k): v for k, v in kubelet.eviction_soft_grace_period.items()
            },
            eviction_max_pod_grace_period=kubelet.eviction_max_pod_grace_period,
            max_pods=kubelet.max_pods,
            system_reserved=dict(kubelet.system_reserved),
            kube_reserved=dict(kubelet.kube_reserved),
        ),
        tags=dict(spec.tags),
        capacity_reservation_ids=tuple(spec.capacity_reservation_ids),
        capacity_reservation_tags=dict(spec.capacity_reservation_tags),
    )


def _karpenter_backend(pool: GpuNodePoolConfig, karpenter: KarpenterPoolConfig) -> KarpenterBackend:
    training = pool.purpose == "training"
    disruption = karpenter.disruption
    return KarpenterBackend(
        node_class_name=karpenter.node_class_ref.name,
        node_class_group=karpenter.node_class_ref.group,
        node_class_kind=karpenter.node_class_ref.kind,
        max_nodes=pool.max_nodes or 0,
        min_nodes=pool.min_nodes or 0,
        ec2_node_class=_node_class(karpenter.ec2_node_class) if karpenter.ec2_node_class else None,
        instance_types=tuple(karpenter.instance_types),
        instance_families=tuple(karpenter.instance_families),
        zones=tuple(karpenter.zones),
        architectures=tuple(karpenter.architectures),
        disruption=KarpenterDisruption(
            consolidation_policy=disruption.consolidation_policy
            or ("WhenEmpty" if training else "WhenEmptyOrUnderutilized"),
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
            expire_after=disruption.expire_after or ("Never" if training else "720h"),
            termination_grace_period=disruption.termination_grace_period,
        ),
        weight=karpenter.weight,
    )


def _pool_args(pool: GpuNodePoolConfig) -> GpuNodePoolArgs:
    backend: KarpenterBackend | StaticBackend
    if pool.backend == "karpenter" and pool.karpenter is not None:
        backend = _karpenter_backend(pool, pool.karpenter)
    else:
        backend = StaticBackend(nodes=tuple(pool.nodes))
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


def _gpu_operator_args(config: PlatformConfig, pools: list[GpuNodePool]) -> GpuOperatorArgs:
    stack = config.gpu_stack
    mig_pools = [p for p in config.node_pools if p.sharing.mode == "mig"]
    return GpuOperatorArgs(
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
        chart_source=config.charts.chart_source,
        registry_mirror=config.images.registry_mirror,
        retain_on_delete=config.cluster.protects_data,
        network=system_network(config),
    )


def system_network(config: PlatformConfig) -> SystemNetwork:
    """What the platform namespaces' NetworkPolicies need: the API server's addresses (the
    monitoring network settings say where it is) and where Prometheus runs, if anywhere."""
    monitoring = config.monitoring
    return SystemNetwork(
        api_server_cidrs=tuple(monitoring.network.api_server_cidrs),
        prometheus_namespace=monitoring.namespace if monitoring.enabled else None,
    )


def _limits(nominal: str, borrow: str | int | None, lend: str | int | None) -> QuotaLimits:
    return QuotaLimits(
        nominal=nominal,
        borrowing_limit=str(borrow or 0),
        lending_limit=None if lend is None else str(lend),
    )


def _team_queue_args(
    team: TeamConfig, queue: TeamQueueConfig, config: PlatformConfig, pools: dict[str, GpuNodePool]
) -> TeamQueueArgs:
    flavors = []
    for entry in queue.pools:
        borrow: QuotaAmounts = entry.borrowing_limit
        lend: QuotaAmounts = entry.lending_limit
        flavors.append(
            FlavorQuota(
                flavor=entry.pool,
                resources={
                    "cpu": _limits(entry.cpu, borrow.cpu, lend.cpu),
                    "memory": _limits(entry.memory, borrow.memory, lend.memory),
                    pools[entry.pool].contract.gpu_resource: _limits(
                        str(entry.gpus), borrow.gpus, lend.gpus
                    ),
                },
            )
        )
    queueing = config.queueing
    return TeamQueueArgs(
        team=team.name,
        namespace=team.namespace_name,
        cohort=queueing.cohort,
        flavors=flavors,
        fair_sharing_weight=queue.fair_sharing_weight,
        queueing_strategy=queueing.queueing_strategy,
        reclaim_within_cohort=queueing.reclaim_within_cohort,
        within_cluster_queue=queueing.within_cluster_queue,
    )


def default_queue_args(team: TeamConfig) -> DefaultQueueArgs:
    """The team's default queue: its namespace quota less what its GPU queue may admit
    (``default_queue_capacity`` says why), so Kueue never admits what the quota refuses."""
    left = default_queue_capacity(team.quota.cpu, team.quota.memory, team.queue)
    cpu = left["cpu"]
    return DefaultQueueArgs(
        team.name,
        team.namespace_name,
        str(int(cpu)) if cpu == cpu.to_integral_value() else f"{int(cpu * 1000)}m",
        format_bytes(left["memory"]),
    )


@dataclass(frozen=True)
class Tenant:
    """What a team's workloads need from the team: its config, namespace, queue and volumes.

    Workloads take the namespace by name (``config.namespace_name``), not as the TeamNamespace's
    Output: ``deploy_workload`` already orders each workload after the whole team namespace, and
    an Output would cost every child resource a property dependency and its cycle check in the
    SDK (docs/performance.md).
    """

    config: TeamConfig
    namespace: TeamNamespace
    queue: TeamQueue | None
    volumes: dict[str, DataVolume]
    default_queue: DefaultQueue | None = None
    """What Kueue gives the team's work that names no queue (CPU-only work)."""


def _compute(resources: ComputeConfig) -> ComputeResources:
    return ComputeResources(
        cpu=resources.cpu,
        memory=resources.memory,
        cpu_limit=resources.cpu_limit,
        memory_limit=resources.memory_limit,
    )


def _egress(egress: EgressConfig) -> EgressAllowance:
    return EgressAllowance(cidrs=tuple(egress.cidrs), ports=tuple(egress.ports))


def _image(reference: str, config: PlatformConfig) -> str:
    """A workload's image as the cluster pulls it: through the stack's mirror, if it has one."""
    return mirrored(reference, config.images.registry_mirror)


def _priority_class(workload: WorkloadConfig, config: PlatformConfig) -> str:
    default = next(pc.name for pc in config.priority_classes if pc.global_default)
    return workload.priority_class or default


def _queue_name(workload: WorkloadConfig, owner: Tenant) -> str | None:
    """GPU jobs (and GPU services that ask) go through the team's LocalQueue; CPU-only work
    never does: the queue admits onto GPU flavours only."""
    if owner.queue is None or workload.gpus is None:
        return None
    if workload.kind == "inference" and not workload.inference_settings.queued:
        return None
    return owner.queue.local_queue_name


def training_job_args(
    workload: WorkloadConfig,
    owner: Tenant,
    contract: SchedulingContract | None,
    config: PlatformConfig,
    after: Sequence[pulumi.Resource] = (),
) -> TrainingJobArgs:
    settings = workload.training_settings
    checkpoints = settings.checkpoints
    preflight = settings.preflight
    return TrainingJobArgs(
        team=workload.team,
        namespace=owner.config.namespace_name,  # the name: see Tenant
        name=workload.name,
        image=_image(workload.image, config),
        resources=_compute(workload.resources),
        command=tuple(workload.command),
        args=tuple(workload.args),
        nodes=settings.nodes,
        gpus_per_node=workload.gpus.count if workload.gpus else 0,
        scheduling=contract,
        workload_type=settings.workload_type,
        priority_class=_priority_class(workload, config),
        queue_name=_queue_name(workload, owner),
        dataset_claim=settings.dataset,
        checkpoints=None
        if checkpoints is None
        else CheckpointVolume(
            claim=checkpoints.claim,
            storage_class=checkpoints.storage_class,
            size=checkpoints.size,
            access_modes=tuple(checkpoints.access_modes),
            protect=config.cluster.protects_data,
        ),
        shm_size=settings.shm_size,
        env=dict(workload.env),
        log_level=workload.log_level,
        master_port=settings.master_port,
        backoff_limit=settings.backoff_limit,
        active_deadline_seconds=settings.active_deadline_seconds,
        ttl_seconds_after_finished=settings.ttl_seconds_after_finished,
        non_retryable_exit_codes=tuple(settings.non_retryable_exit_codes),
        preflight=PreflightSpec(
            enabled=preflight.enabled,
            image=None if preflight.image is None else _image(preflight.image, config),
            dataset_min_files=preflight.dataset_min_files,
            checkpoint_min_free=preflight.checkpoint_min_free,
            fail_job_on_gpu_mismatch=preflight.fail_job_on_gpu_mismatch,
        ),
        egress=_egress(workload.egress),
        depends_on=tuple(after),
        # Its Output: a claim the job creates waits for the namespace (and nothing else).
        claim_namespace=owner.namespace.namespace,
    )


def inference_service_args(
    workload: WorkloadConfig,
    owner: Tenant,
    contract: SchedulingContract | None,
    config: PlatformConfig,
) -> InferenceServiceArgs:
    settings = workload.inference_settings
    metric = settings.custom_metric
    return InferenceServiceArgs(
        team=workload.team,
        namespace=owner.config.namespace_name,  # the name: see Tenant
        name=workload.name,
        image=_image(workload.image, config),
        resources=_compute(workload.resources),
        command=tuple(workload.command),
        args=tuple(workload.args),
        port=settings.port,
        metrics_port=settings.metrics_port,
        metrics_path=settings.metrics_path,
        probes=Probes(
            readiness_path=settings.readiness_path,
            liveness_path=settings.liveness_path,
            startup_timeout_seconds=settings.startup_timeout_seconds,
        ),
        autoscaling=Autoscaling(
            min_replicas=settings.min_replicas,
            max_replicas=settings.max_replicas,
            cpu_utilization=settings.target_cpu_utilization,
            custom_metric=None
            if metric is None
            else CustomMetric(metric.name, metric.average_value),
        ),
        max_surge=settings.max_surge,
        pdb_max_unavailable=settings.pdb_max_unavailable,
        pdb_min_available=settings.pdb_min_available,
        gpus=workload.gpus.count if workload.gpus else 0,
        scheduling=contract,
        priority_class=_priority_class(workload, config),
        queue_name=_queue_name(workload, owner),
        model_claim=settings.model,
        shm_size=settings.shm_size,
        env=dict(workload.env),
        log_level=workload.log_level,
        allow_from_namespaces=tuple(settings.allow_from_namespaces),
        egress=_egress(workload.egress),
        service_monitor=settings.service_monitor,
        node_spread=settings.node_spread,
        dependencies=tuple(
            StatefulDependency(
                name=dep.name,
                image=_image(dep.image, config),
                port=dep.port,
                storage_class=dep.storage_class,
                size=dep.size,
                resources=_compute(dep.resources),
                mount_path=dep.mount_path,
                command=tuple(dep.command),
                args=tuple(dep.args),
                replicas=dep.replicas,
                run_as_user=dep.run_as_user,
            )
            for dep in settings.stateful_dependencies
        ),
        retain_data=config.cluster.protects_data,
    )


def deploy_workload(
    workload: WorkloadConfig,
    owner: Tenant,
    contract: SchedulingContract | None,
    config: PlatformConfig,
    provider: k8s.Provider,
) -> TrainingJob | InferenceService:
    """One workload in its team's namespace, after the team's queue and the volumes it mounts."""
    claims: set[str | None] = set()
    if workload.kind == "training":
        settings = workload.training_settings
        claims = {settings.dataset, settings.checkpoints.claim if settings.checkpoints else None}
    else:
        claims = {workload.inference_settings.model}
    # One edge stands for the whole team: the LocalQueue is registered only after its TeamQueue's
    # dependencies, the TeamNamespace and everything in it (quota, limits, policies, identity),
    # so a workload after the LocalQueue is after all of them. Depending on the components
    # instead made the SDK expand and cycle-check a dozen resources per workload
    # (docs/performance.md). Without a queue, the TeamNamespace itself.
    after: list[pulumi.Resource] = [owner.queue.local_queue if owner.queue else owner.namespace]
    # Kueue holds what names no queue (CPU-only work, a service's stateful dependencies) until
    # the team's default LocalQueue exists, for good if it is created first.
    names_no_queue = _queue_name(workload, owner) is None or (
        workload.kind == "inference" and bool(workload.inference_settings.stateful_dependencies)
    )
    if owner.default_queue is not None and names_no_queue:
        after.append(owner.default_queue.local_queue)
    after += [volume for name, volume in owner.volumes.items() if name in claims]
    name = workload_name(workload)
    if workload.kind == "training":
        # The job's objects wait, not the component: a checkpoint claim it creates would
        # otherwise depend on all of the above (TrainingJobArgs.depends_on says why).
        args = training_job_args(workload, owner, contract, config, after)
        return TrainingJob(name, args, pulumi.ResourceOptions(provider=provider))
    opts = pulumi.ResourceOptions(provider=provider, depends_on=after)
    return InferenceService(name, inference_service_args(workload, owner, contract, config), opts)


def workload_outputs(workload: WorkloadConfig, namespace: str) -> WorkloadOutputs:
    """Names other programs use to reach the workload (``<svc>.<ns>.svc.cluster.local``)."""
    if workload.kind == "training":
        settings = workload.training_settings
        multi_node = settings.nodes > 1
        checkpoints = settings.checkpoints
        return WorkloadOutputs(
            kind=workload.kind,
            workload_type=settings.workload_type,
            object_name=workload.name,
            service_host=service_dns_name(workload.name, namespace) if multi_node else None,
            port=settings.master_port if multi_node else None,
            checkpoint_claim=None
            if checkpoints is None
            else checkpoints.claim or f"{workload.name}-checkpoints",
        )
    inference = workload.inference_settings
    return WorkloadOutputs(
        kind=workload.kind,
        workload_type="inference",
        object_name=workload.name,
        service_host=service_dns_name(workload.name, namespace),
        port=inference.port,
        dependency_hosts={
            dep.name: service_dns_name(f"{workload.name}-{dep.name}", namespace)
            for dep in inference.stateful_dependencies
        },
    )


def build_platform(config: PlatformConfig) -> StackOutputs:
    """Register every resource of the stack and return its outputs."""
    provider = kubernetes_provider(config)
    on_cluster = pulumi.ResourceOptions(provider=provider)
    protect = config.cluster.protects_data

    priority = PriorityClasses(
        PRIORITY_CLASSES,
        PriorityClassesArgs(
            classes=[
                PriorityClassSpec(
                    name=pc.name,
                    value=pc.value,
                    global_default=pc.global_default,
                    preemption_policy=pc.preemption_policy,
                    description=pc.description,
                )
                for pc in config.priority_classes
            ]
        ),
        on_cluster,
    )
    storage = StorageClasses(
        STORAGE_CLASSES,
        StorageClassesArgs(
            classes=[
                StorageClassSpec(
                    name=sc.name,
                    provisioner=sc.provisioner,
                    purpose=sc.purpose,
                    parameters=dict(sc.parameters),
                    default=sc.default,
                    reclaim_policy=sc.reclaim_policy or ("Retain" if protect else "Delete"),
                    volume_binding_mode=sc.volume_binding_mode,
                    allow_volume_expansion=sc.allow_volume_expansion,
                    mount_options=tuple(sc.mount_options),
                )
                for sc in config.storage.classes
            ],
            retain_on_delete=protect,
        ),
        on_cluster,
    )

    TenantGuardrails(
        "guardrails", TenantGuardrailsArgs(queueing=config.queueing.enabled), on_cluster
    )

    pool_configs = {pool.name: pool for pool in config.node_pools}
    pools = {
        pool.name: GpuNodePool(pool_name(pool), _pool_args(pool), on_cluster)
        for pool in config.node_pools
    }
    gpu_operator: GpuOperator | None = None
    if config.gpu_stack.enabled:
        gpu_operator = GpuOperator(
            GPU_OPERATOR, _gpu_operator_args(config, list(pools.values())), on_cluster
        )
    kueue: Kueue | None = None
    if config.queueing.enabled:
        kueue = Kueue(
            KUEUE,
            KueueArgs(
                flavors=[
                    FlavorSpec(
                        contract=pool.contract,
                        capacity=pool_capacity(pool_configs[name]),
                        overcommit=str(config.queueing.overcommit),
                    )
                    for name, pool in pools.items()
                ],
                priority_classes=[
                    WorkloadPrioritySpec(pc.name, pc.value, pc.description)
                    for pc in config.priority_classes
                ],
                fair_sharing=config.queueing.fair_sharing,
                service_monitor=config.queueing.service_monitor,
                chart_source=config.charts.chart_source,
                registry_mirror=config.images.registry_mirror,
                retain_on_delete=protect,
                network=system_network(config),
            ),
            on_cluster,
        )

    teams: dict[str, TeamOutputs] = {}
    tenants: dict[str, Tenant] = {}
    for team in config.teams:
        tenant = TeamNamespace(team.name, _team_args(team, config), on_cluster)
        queue: TeamQueue | None = None
        if kueue is not None and team.queue is not None:
            queue = TeamQueue(
                team_queue_name(team),
                _team_queue_args(team, team.queue, config, pools),
                # Load-bearing for workloads too: their one edge to this queue's LocalQueue
                # orders them after the whole team namespace (deploy_workload).
                pulumi.ResourceOptions(provider=provider, depends_on=[kueue, tenant]),
            )
        default_queue: DefaultQueue | None = None
        if kueue is not None:
            default_queue = DefaultQueue(
                default_queue_name(team),
                default_queue_args(team),
                pulumi.ResourceOptions(provider=provider, depends_on=[kueue, tenant]),
            )
        volumes: dict[str, DataVolume] = {}
        for volume in team.volumes:
            volumes[volume.name] = DataVolume(
                volume_name(team, volume),
                DataVolumeArgs(
                    team=team.name,
                    namespace=tenant.namespace,
                    claim_name=volume.name,
                    storage_class=volume.storage_class,
                    size=volume.size,
                    purpose=volume.purpose,
                    access_modes=tuple(volume.access_modes),
                    protect=protect,
                ),
                on_cluster,
            )
        tenants[team.name] = Tenant(team, tenant, queue, volumes, default_queue)

    workloads: dict[str, dict[str, WorkloadOutputs]] = {}
    for workload in config.workloads:
        owner = tenants[workload.team]
        contract = pools[workload.gpus.pool].contract if workload.gpus else None
        deploy_workload(workload, owner, contract, config, provider)
        workloads.setdefault(workload.team, {})[workload.name] = workload_outputs(
            workload, owner.config.namespace_name
        )

    monitoring: MonitoringStack | None = None
    if config.monitoring.enabled:
        monitoring = MonitoringStack(
            MONITORING,
            monitoring_stack_args(
                config.monitoring,
                cluster_name=config.cluster.name,
                retain_on_delete=protect,
                gpu_stack_enabled=config.gpu_stack.enabled,
                queueing_enabled=config.queueing.enabled,
                dcgm_namespace_ready=[gpu_operator] if gpu_operator else [],
                chart_source=config.charts.chart_source,
                registry_mirror=config.images.registry_mirror,
                team_namespaces={team.name: team.namespace_name for team in config.teams},
            ),
            on_cluster,
        )

    if config.extra_manifests:
        RawManifests(
            EXTRA_MANIFESTS,
            RawManifestsArgs(
                manifests=config.extra_manifests,
                depends_on=[t.namespace for t in tenants.values()],
                exceptions=exception_positions(config),
            ),
            on_cluster,
        )

    for name, owner in tenants.items():
        team, queue = owner.config, owner.queue
        teams[name] = TeamOutputs(
            namespace=team.namespace_name,
            service_account=owner.namespace.service_account_name,
            env_config_map=owner.namespace.env_config_map_name,
            volumes={volume.name: volume.purpose for volume in team.volumes},
            local_queue=queue.local_queue_name if queue else None,
            cluster_queue=queue.cluster_queue_name if queue else None,
            workloads=workloads.get(name, {}),
        )

    return StackOutputs(
        cluster_name=config.cluster.name,
        environment=config.cluster.environment,
        teams=teams,
        priority_classes=ClassSetOutputs(names=priority.names, default=priority.default_name or ""),
        storage_classes=ClassSetOutputs(names=storage.names, default=storage.default_name or ""),
        gpu_pools={
            name: GpuPoolOutputs.model_validate(pool.contract.to_output())
            for name, pool in pools.items()
        },
        monitoring=_monitoring_outputs(monitoring),
    )


def _monitoring_outputs(stack: MonitoringStack | None) -> MonitoringOutputs | None:
    """Addresses and names only; the Grafana password stays in its Secret."""
    if stack is None:
        return None
    return MonitoringOutputs(
        namespace=stack.monitoring_namespace,
        logging_namespace=stack.logging_namespace,
        grafana_url=stack.grafana_url,
        grafana_admin_secret=stack.grafana_admin_secret_name,
        prometheus_url=stack.prometheus_url,
        alertmanager_url=stack.alertmanager_url,
        loki_push_url=stack.loki_push_url,
    )
