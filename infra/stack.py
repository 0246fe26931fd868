"""Stack composition: validated config in, components out. Nothing else builds resources.

Data flows one way: ``PlatformConfig`` → component args → components → resources. Components
never import from ``infra``.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.data_volume import DataVolume, DataVolumeArgs
from components.priority_classes import PriorityClasses, PriorityClassesArgs, PriorityClassSpec
from components.storage_classes import StorageClasses, StorageClassesArgs, StorageClassSpec
from components.team_namespace import TeamNamespace, TeamNamespaceArgs, TeamQuotaSpec

from .config import PlatformConfig
from .config.teams import TeamConfig
from .outputs import ClassSetOutputs, StackOutputs, TeamOutputs


def kubernetes_provider(config: PlatformConfig) -> k8s.Provider:
    """The only provider Kubernetes resources use; default providers are disabled in Pulumi.yaml."""
    cluster = config.cluster
    return k8s.Provider(
        f"{cluster.name}-cluster",
        context=cluster.kubeconfig_context,
        kubeconfig=cluster.kubeconfig,
        enable_server_side_apply=True,
    )


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
        ),
        default_requests=team.container_defaults.requests.model_dump(),
        default_limits=team.container_defaults.limits.model_dump(),
        admin_groups=tuple(team.admin_groups),
        viewer_groups=tuple(team.viewer_groups),
        env=dict(team.env),
        labels=dict(team.labels),
        retain_on_delete=config.cluster.protects_data,
    )


def build_platform(config: PlatformConfig) -> StackOutputs:
    """Register every resource of the stack and return its outputs."""
    provider = kubernetes_provider(config)
    on_cluster = pulumi.ResourceOptions(provider=provider)
    protect = config.cluster.protects_data

    priority = PriorityClasses(
        "priority",
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
        "storage",
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

    teams: dict[str, TeamOutputs] = {}
    for team in config.teams:
        tenant = TeamNamespace(team.name, _team_args(team, config), on_cluster)
        for volume in team.volumes:
            DataVolume(
                f"{team.name}-{volume.name}",
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
        teams[team.name] = TeamOutputs(
            namespace=team.namespace_name,
            service_account=tenant.service_account_name,
            env_config_map=tenant.env_config_map_name,
            volumes={volume.name: volume.purpose for volume in team.volumes},
        )

    return StackOutputs(
        cluster_name=config.cluster.name,
        environment=config.cluster.environment,
        teams=teams,
        priority_classes=ClassSetOutputs(names=priority.names, default=priority.default_name or ""),
        storage_classes=ClassSetOutputs(names=storage.names, default=storage.default_name or ""),
    )
