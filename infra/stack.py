"""Stack composition: validated config in, components out. Nothing else builds resources.

Data flows one way: ``PlatformConfig`` → each domain's ``build`` (component args) → components
→ resources. Components never import from ``infra``; a domain's build never imports another's:
what one needs of another (the pools, Kueue, a team's namespace) is passed in here.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.kueue import DefaultQueue, TeamQueue
from components.network_policies import SystemNetwork

from .autoscaling import build as autoscaling
from .config import PlatformConfig
from .gpu import build as gpu
from .manifests import build as manifests
from .monitoring import build as monitoring
from .outputs import (
    ClassSetOutputs,
    GpuPoolOutputs,
    StackOutputs,
    TeamOutputs,
    WorkloadOutputs,
)
from .queueing import build as queueing
from .ray import build as ray
from .redis import build as redis_build
from .scheduling import build as scheduling
from .storage import build as storage_build
from .tenancy import build as tenancy
from .workloads import build as workloads_build
from .workloads.build import Tenant


def kubernetes_provider(config: PlatformConfig) -> k8s.Provider:
    """The only provider Kubernetes resources use; default providers are disabled in Pulumi.yaml."""
    cluster = config.cluster
    return k8s.Provider(
        f"{cluster.name}-cluster",
        context=cluster.kubeconfig_context,
        kubeconfig=cluster.kubeconfig,
        enable_server_side_apply=True,
    )


def system_network(config: PlatformConfig) -> SystemNetwork:
    """What the platform namespaces' NetworkPolicies need: the API server's and the nodes'
    addresses (the monitoring network settings say where they are) and where Prometheus runs,
    if anywhere."""
    monitoring = config.monitoring
    return SystemNetwork(
        api_server_cidrs=tuple(monitoring.network.api_server_cidrs),
        node_cidrs=tuple(monitoring.network.node_cidrs),
        prometheus_namespace=monitoring.namespace if monitoring.enabled else None,
    )


def build_platform(config: PlatformConfig) -> StackOutputs:
    """Register every resource of the stack and return its outputs."""
    provider = kubernetes_provider(config)
    on_cluster = pulumi.ResourceOptions(provider=provider)

    priority = scheduling.priority_classes(config, on_cluster)
    storage = storage_build.storage_classes(config, on_cluster)

    tenancy.guardrails(config, on_cluster)

    network = system_network(config)
    pools = gpu.gpu_node_pools(config, on_cluster)
    gpu_operator = gpu.gpu_operator(config, pools, network, on_cluster)
    kueue = queueing.kueue(config, pools, network, on_cluster)
    keda = autoscaling.keda(config, network, on_cluster)
    autoscaling.metrics_server(config, network, on_cluster)
    kuberay = ray.kuberay_operator(config, network, on_cluster)

    teams: dict[str, TeamOutputs] = {}
    tenants: dict[str, Tenant] = {}
    for team in config.teams:
        tenant = tenancy.team_namespace(team, config, on_cluster)
        queue: TeamQueue | None = None
        default_queue: DefaultQueue | None = None
        if kueue is not None:
            queue, default_queue = queueing.team_queues(
                team, config, pools, [kueue, tenant], provider
            )
        volumes = storage_build.team_volumes(team, tenant.namespace, config, on_cluster)
        # Kueue admits the server (it names no queue) through the default LocalQueue.
        redis_after = [default_queue.local_queue if default_queue else tenant]
        redis = redis_build.team_redis(team, config, redis_after, tenant.namespace, on_cluster)
        tenants[team.name] = Tenant(team, tenant, queue, volumes, default_queue, redis)

    workloads: dict[str, dict[str, WorkloadOutputs]] = {}
    for workload in config.workloads:
        owner = tenants[workload.team]
        contract = pools[workload.gpus.pool].contract if workload.gpus else None
        component = workloads_build.deploy_workload(
            workload,
            owner,
            contract,
            config,
            provider,
            keda=[keda.release] if keda else [],
            ray_operator=kuberay.release if kuberay else None,
        )
        workloads.setdefault(workload.team, {})[workload.name] = workloads_build.workload_outputs(
            workload, component, owner.config.namespace_name
        )

    monitoring_stack = monitoring.monitoring_stack(config, gpu_operator, on_cluster)
    autoscaling.prometheus_adapter(
        config,
        network,
        monitoring_stack.prometheus_url if monitoring_stack else None,
        on_cluster,
    )
    manifests.extra_manifests(config, [t.namespace for t in tenants.values()], on_cluster)

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
            redis=redis_build.team_redis_outputs(owner.redis),
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
        kubelet_drop_ins={
            name: pool.kubelet_configuration
            for name, pool in pools.items()
            if pool.kubelet_configuration is not None
        },
        monitoring=monitoring.monitoring_outputs(monitoring_stack),
    )
