"""Every label key, taint key, well-known name and pinned chart version, defined once.

Components, the stack composition, the policy pack and the tests import these; nobody retypes
them. Changing one is a contract change: see docs/upgrading.md.
"""

from typing import Final

PROJECT: Final = "ai-platform"
"""Pulumi project name and the namespace of every stack config key (``ai-platform:<key>``)."""

ANYWHERE_CIDRS: Final[tuple[str, ...]] = ("0.0.0.0/0",)
"""The default of every address allowlist the platform cannot know (API server, nodes, object
storage, notification targets): open, for a first deploy; prod narrows each (the policy pack
refuses the open value there)."""

# --- Labels of our own ----------------------------------------------------------------------------
LABEL_PREFIX: Final = "aiplatform.io"
TEAM_LABEL: Final = f"{LABEL_PREFIX}/team"
"""Carried by every team-owned object and pod; the unit of quota, showback and isolation."""
WORKLOAD_TYPE_LABEL: Final = f"{LABEL_PREFIX}/workload-type"
"""``training``, ``evaluation``, ``inference`` or ``worker``: policies and dashboards key on it."""
WORKLOAD_TYPE_TRAINING: Final = "training"
WORKLOAD_TYPE_EVALUATION: Final = "evaluation"
WORKLOAD_TYPE_INFERENCE: Final = "inference"
WORKLOAD_TYPE_WORKER: Final = "worker"
"""A worker pool's pods: Celery workers taking tasks from a queue."""
CHECKPOINT_GRACE_SECONDS: Final = 120
"""``terminationGracePeriodSeconds`` of training pods unless set: time to save a last checkpoint
after SIGTERM. The policy pack's minimum for GPU training pods with a checkpoint volume."""
NODE_POOL_LABEL: Final = f"{LABEL_PREFIX}/node-pool"
"""Set on every GPU node of a pool; the node selector of the pool's scheduling contract."""
TEAM_PURPOSE_LABEL: Final = f"{LABEL_PREFIX}/team-purpose"
VOLUME_PURPOSE_LABEL: Final = f"{LABEL_PREFIX}/volume-purpose"
"""``datasets``, ``checkpoints``, ``models`` or ``general`` on PVCs and storage classes."""
SYSTEM_NAMESPACE_LABEL: Final = f"{LABEL_PREFIX}/system"
"""Marks platform namespaces (GPU operator, Kueue, monitoring) that are not team namespaces."""

# --- What a team namespace allows (annotations the in-cluster guardrails read) ------------------
TENANT_GPU_QUEUE_ANNOTATION: Final = f"{LABEL_PREFIX}/gpu-queue"
"""On a team Namespace: the LocalQueue its GPU workloads must name; absent: the team has none."""
TENANT_PRIORITY_CLASSES_ANNOTATION: Final = f"{LABEL_PREFIX}/priority-classes"
"""On a team Namespace: the PriorityClasses its pods may use, comma-separated."""
TENANT_NODE_POOLS_ANNOTATION: Final = f"{LABEL_PREFIX}/node-pools"
"""On a team Namespace: the GPU node pools its pods may select, comma-separated."""
TENANT_REACHABLE_FROM_ANNOTATION: Final = f"{LABEL_PREFIX}/reachable-from"
"""On a team Namespace: the namespaces of the teams whose pods may connect to its pods,
comma-separated (``teams[].reachableFrom``); absent: none."""
REDIS_CLIENT_LABEL: Final = f"{LABEL_PREFIX}/redis-client"
"""``"true"`` on the pods the team Redis NetworkPolicy admits (its clients)."""

# --- Kubernetes recommended labels ----------------------------------------------------------------
APP_NAME_LABEL: Final = "app.kubernetes.io/name"
APP_INSTANCE_LABEL: Final = "app.kubernetes.io/instance"
APP_COMPONENT_LABEL: Final = "app.kubernetes.io/component"
APP_PART_OF_LABEL: Final = "app.kubernetes.io/part-of"
APP_MANAGED_BY_LABEL: Final = "app.kubernetes.io/managed-by"
MANAGED_BY: Final = "pulumi"
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"
"""Set by the API server on every namespace; what namespaceSelectors match on."""

# --- Pod Security Admission -----------------------------------------------------------------------
PSA_ENFORCE_LABEL: Final = "pod-security.kubernetes.io/enforce"
PSA_AUDIT_LABEL: Final = "pod-security.kubernetes.io/audit"
PSA_WARN_LABEL: Final = "pod-security.kubernetes.io/warn"
PSA_ENFORCE_VERSION_LABEL: Final = "pod-security.kubernetes.io/enforce-version"
PSA_RESTRICTED: Final = "restricted"
PSA_BASELINE: Final = "baseline"
PSA_PRIVILEGED: Final = "privileged"

# --- GPUs -----------------------------------------------------------------------------------------
GPU_RESOURCE: Final = "nvidia.com/gpu"
"""Extended resource the NVIDIA device plugin advertises (whole GPUs and time-sliced replicas)."""
MIG_RESOURCE_PREFIX: Final = "nvidia.com/mig-"
"""MIG slices are advertised as ``nvidia.com/mig-<profile>`` under the ``mixed`` strategy."""
GPU_QUOTA_KEY: Final = f"requests.{GPU_RESOURCE}"
GPU_TAINT_KEY: Final = "nvidia.com/gpu"
GPU_TAINT_VALUE: Final = "present"
GPU_TAINT_EFFECT: Final = "NoSchedule"
GPU_PRODUCT_LABEL: Final = "nvidia.com/gpu.product"
GPU_PRESENT_LABEL: Final = "nvidia.com/gpu.present"
DEVICE_PLUGIN_CONFIG_LABEL: Final = "nvidia.com/device-plugin.config"
"""Per-node selection of a device-plugin config entry (time-slicing, MIG)."""
MIG_CONFIG_LABEL: Final = "nvidia.com/mig.config"
CAPACITY_TYPE_LABEL: Final = "karpenter.sh/capacity-type"

# --- Kueue ----------------------------------------------------------------------------------------
KUEUE_QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY_LABEL: Final = "kueue.x-k8s.io/priority-class"
KUEUE_DEFAULT_LOCAL_QUEUE: Final = "default"
"""The LocalQueue name Kueue's LocalQueue defaulting (GA, always on) gives every job, pod and
workload of a namespace that names no queue, when the namespace has a LocalQueue of that name."""
KUEUE_API_VERSION: Final = "kueue.x-k8s.io/v1beta2"

# --- The escape hatch (ai-platform:extraManifests) ------------------------------------------------
RAW_MANIFESTS_TYPE: Final = "aiplatform:raw:RawManifests"
"""Component type of the escape hatch: its children are the stack file's extraManifests."""
ESCAPE_HATCH_EXCEPTION_ANNOTATION: Final = f"{LABEL_PREFIX}/escape-hatch-exception"
"""On an extraManifests object outside the allow-list: the named exception that admits it (the
policy pack checks the policy config approves it)."""

# --- Pulumi Kubernetes provider annotations -------------------------------------------------------
SKIP_AWAIT_ANNOTATION: Final = "pulumi.com/skipAwait"
"""The provider waits for Jobs to finish and PVCs to bind unless this is "true"."""

# --- Where each workload kind keeps its pod template ----------------------------------------------
POD_TEMPLATE_PATHS: Final[dict[str, tuple[str, ...]]] = {
    "core/Pod": (),
    "core/ReplicationController": ("spec", "template"),
    "apps/Deployment": ("spec", "template"),
    "apps/StatefulSet": ("spec", "template"),
    "apps/DaemonSet": ("spec", "template"),
    "apps/ReplicaSet": ("spec", "template"),
    "batch/Job": ("spec", "template"),
    "batch/CronJob": ("spec", "jobTemplate", "spec", "template"),
}
"""``<group>/<Kind>`` (``core`` for the legacy group, as Pulumi's type tokens spell it) → the
path from a manifest's root to the object holding the pod's ``metadata`` and ``spec`` (empty for
a bare Pod); versions do not matter. The policy pack (generated into it), the reachability
checker and the admission guardrails read pod templates through it; a kind that embeds several
templates (a Ray cluster's groups) has its own reader in the pack."""

# --- Platform system namespaces (the documented exceptions to restricted Pod Security) ------------
GPU_OPERATOR_NAMESPACE: Final = "gpu-operator"
KUEUE_NAMESPACE: Final = "kueue-system"
KEDA_NAMESPACE: Final = "keda"
KUBERAY_NAMESPACE: Final = "ray-system"
METRICS_SERVER_NAMESPACE: Final = "metrics-server"
PROMETHEUS_ADAPTER_NAMESPACE: Final = "prometheus-adapter"
MONITORING_NAMESPACE: Final = "monitoring"
LOGGING_NAMESPACE: Final = "logging"
KUBE_SYSTEM_NAMESPACE: Final = "kube-system"
KUBE_PUBLIC_NAMESPACE: Final = "kube-public"
KUBE_NODE_LEASE_NAMESPACE: Final = "kube-node-lease"
SYSTEM_NAMESPACES: Final = frozenset(
    {"default", KUBE_SYSTEM_NAMESPACE, KUBE_PUBLIC_NAMESPACE, KUBE_NODE_LEASE_NAMESPACE}
)
"""Kubernetes' own namespaces: no team takes them, the escape hatch needs an exception there."""
PLATFORM_NAMESPACES: Final = frozenset(
    {
        GPU_OPERATOR_NAMESPACE,
        KUEUE_NAMESPACE,
        KEDA_NAMESPACE,
        KUBERAY_NAMESPACE,
        METRICS_SERVER_NAMESPACE,
        PROMETHEUS_ADAPTER_NAMESPACE,
        MONITORING_NAMESPACE,
        LOGGING_NAMESPACE,
    }
)
"""The namespaces the platform's own components install into (at their default names)."""
PRIVILEGED_SYSTEM_NAMESPACES: Final = (
    GPU_OPERATOR_NAMESPACE,
    MONITORING_NAMESPACE,
    LOGGING_NAMESPACE,
)
"""System namespaces whose agents need host access (drivers, node exporters, log shippers)."""

# --- DNS ------------------------------------------------------------------------------------------
KUBE_DNS_LABEL: Final = "k8s-app"
KUBE_DNS_LABEL_VALUE: Final = "kube-dns"
DNS_PORT: Final = 53

# --- Names of the objects every team namespace gets -----------------------------------------------
TEAM_WORKLOAD_SERVICE_ACCOUNT: Final = "workload"
"""Service account team workloads run as; its token is not mounted unless a pod asks."""
TEAM_ENV_CONFIGMAP: Final = "team-env"
TEAM_QUOTA_NAME: Final = "team-quota"
TEAM_LIMIT_RANGE_NAME: Final = "container-defaults"
TEAM_ADMIN_ROLE: Final = "team-admin"
TEAM_VIEWER_ROLE: Final = "team-viewer"
DEFAULT_DENY_POLICY_NAME: Final = "default-deny-all"
ALLOW_DNS_POLICY_NAME: Final = "allow-dns-egress"
TRAINING_ENV_VAR: Final = "TRAINING_ENV"

# --- Seed defaults --------------------------------------------------------------------------------
DEFAULT_CONTAINER_REQUESTS: Final = {"cpu": "2", "memory": "8Gi"}
"""LimitRange default requests for containers that state none (our seed values)."""
DEFAULT_CONTAINER_LIMITS: Final = {"cpu": "4", "memory": "16Gi"}
"""LimitRange default limits for containers that state none (our seed values)."""

# --- Node pools -----------------------------------------------------------------------------------
NODE_POOL_FIELD_MANAGER_PREFIX: Final = "aiplatform-node-pool-"
"""Server-side-apply field manager of a static pool's NodePatches: ``<prefix><pool>``."""
PATCH_FIELD_MANAGER_ANNOTATION: Final = "pulumi.com/patchFieldManager"
"""Pulumi Patch resources apply with this field manager; deleting the patch relinquishes it."""
ARCH_LABEL: Final = "kubernetes.io/arch"
OS_LABEL: Final = "kubernetes.io/os"
ZONE_LABEL: Final = "topology.kubernetes.io/zone"
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
"""The kubelet sets it on every node to the node's name: one topology domain per node."""
INSTANCE_TYPE_LABEL: Final = "node.kubernetes.io/instance-type"
KARPENTER_API_VERSION: Final = "karpenter.sh/v1"
KARPENTER_AWS_GROUP: Final = "karpenter.k8s.aws"
KARPENTER_AWS_API_VERSION: Final = f"{KARPENTER_AWS_GROUP}/v1"
EC2_NODE_CLASS_KIND: Final = "EC2NodeClass"
KUBELET_CONFIG_API_VERSION: Final = "kubelet.config.k8s.io/v1beta1"
KUBELET_CONFIG_KIND: Final = "KubeletConfiguration"
"""A static pool's kubelet drop-in; the kubelet refuses a drop-in file without both."""
KARPENTER_INSTANCE_FAMILY_LABEL: Final = f"{KARPENTER_AWS_GROUP}/instance-family"
KARPENTER_GPU_COUNT_LABEL: Final = f"{KARPENTER_AWS_GROUP}/instance-gpu-count"
"""Required to equal the pool's GPUs per node, so a family never yields a bigger instance."""
KARPENTER_DO_NOT_DISRUPT_ANNOTATION: Final = "karpenter.sh/do-not-disrupt"
"""Pod annotation: Karpenter never voluntarily disrupts the node while the pod runs (training)."""
KARPENTER_GPU_LIMIT_KEY: Final = GPU_RESOURCE
"""``NodePool.spec.limits`` key bounding a pool's physical GPUs."""

# --- NVIDIA GPU stack ----------------------------------------------------------------------------
GPU_OPERATOR_CHART: Final = "gpu-operator"
GPU_OPERATOR_CHART_REPO: Final = "https://helm.ngc.nvidia.com/nvidia"
GPU_OPERATOR_CHART_VERSION: Final = "v25.10.1"
"""Pinned once; NVIDIA's install guide names v25.10.1 the current patch release of v25.10."""
GPU_OPERATOR_RELEASE: Final = "gpu-operator"
DEVICE_PLUGIN_CONFIGMAP: Final = "device-plugin-config"
"""ConfigMap in the GPU operator namespace with one device-plugin config entry per pool."""
DEVICE_PLUGIN_DEFAULT_CONFIG: Final = "default"
"""Entry for GPU nodes outside every pool: whole GPUs, no sharing."""
MIG_CONFIG_PREFIX: Final = "all-"
"""``nvidia.com/mig.config`` values in the operator's default mig-parted config: ``all-<p>``."""

# --- Kueue install, queues and flavours -----------------------------------------------------------
KUEUE_CHART: Final = "kueue"
KUEUE_CHART_REPO: Final = "oci://registry.k8s.io/kueue/charts"
KUEUE_CHART_VERSION: Final = "0.17.0"
"""Pinned once, chart and controller alike: the release whose controller the e2e can build and
run for real (the only one the Go module proxy serves; tools/e2e/go/kueue). Serves kueue
v1beta2."""
KUEUE_RELEASE: Final = "kueue"
TEAM_LOCAL_QUEUE_NAME: Final = "gpu-queue"
"""The LocalQueue in every queued team namespace. Not ``default``: Kueue's LocalQueue defaulting
would then also queue CPU-only jobs onto GPU flavours."""
DEFAULT_QUEUE_FLAVOR: Final = "no-gpu"
"""The ResourceFlavor of every team's default queue: no node labels, no tolerations, so what it
admits runs wherever the scheduler puts it (never on GPU nodes: it does not tolerate their
taint). Reserved: no node pool may take the name."""
DEFAULT_CLUSTER_QUEUE_PREFIX: Final = "default-"
"""ClusterQueue behind team T's ``default`` LocalQueue: ``default-T`` (GPU ones are ``team-T``)."""
CLUSTER_QUEUE_PREFIX: Final = "team-"
"""ClusterQueue of team T is ``team-T``."""
GPU_CAPACITY_ANNOTATION: Final = f"{LABEL_PREFIX}/gpu-capacity"
"""On a ResourceFlavor: the most units of its GPU resource the pool behind it can provide."""
GPU_RESOURCE_ANNOTATION: Final = f"{LABEL_PREFIX}/gpu-resource"
"""On a ResourceFlavor: the extended resource its pool advertises (GPU, replica or MIG slice)."""
QUOTA_OVERCOMMIT_ANNOTATION: Final = f"{LABEL_PREFIX}/quota-overcommit"
"""On a ResourceFlavor: factor by which teams' nominal quotas may exceed the pool's capacity."""

# --- KEDA: event-driven autoscaling (worker pools on their queue length) -------------------------
KEDA_CHART: Final = "keda"
KEDA_CHART_REPO: Final = "https://kedacore.github.io/charts"
KEDA_CHART_VERSION: Final = "2.20.2"
"""Pinned once; KEDA 2.20.2, chart and operator alike (the chart's appVersion). Serves
``keda.sh/v1alpha1`` ScaledObjects and TriggerAuthentications."""
KEDA_RELEASE: Final = "keda"
KEDA_API_VERSION: Final = "keda.sh/v1alpha1"
KEDA_OPERATOR: Final = "keda-operator"
"""The chart's ``operator.name``: the operator's Deployment, Service and pod label ``app``."""
KEDA_METRICS_APISERVER: Final = f"{KEDA_OPERATOR}-metrics-apiserver"
"""The external metrics API server (``v1beta1.external.metrics.k8s.io``) the HPAs read."""
KEDA_WEBHOOKS: Final = "keda-admission-webhooks"
"""The chart's ``webhooks.name``: the admission webhook server (ScaledObject validation)."""
KEDA_POD_LABEL: Final = "app"
"""The label the chart sets on each KEDA pod to its component's name."""
KEDA_OPERATOR_METRICS_PORT: Final = 8080
"""The operator's Prometheus port (``prometheus.operator.port``), named ``metrics``."""
KEDA_METRICS_SERVICE_PORT: Final = 9666
"""The operator's gRPC metrics service, which the metrics API server asks for scaler values."""
KEDA_METRICS_APISERVER_PORT: Final = 6443
"""The metrics API server's container port (``service.portHttpsTarget``); its Service is 443."""
KEDA_WEBHOOK_PORT: Final = 9443
"""The admission webhook server's container port."""
# --- Resource and custom metrics: what the HPAs read ----------------------------------------------
METRICS_SERVER_CHART: Final = "metrics-server"
METRICS_SERVER_CHART_REPO: Final = "https://kubernetes-sigs.github.io/metrics-server/"
METRICS_SERVER_CHART_VERSION: Final = "3.13.1"
"""Pinned once; metrics-server 0.8.1 (the chart's appVersion and image tag). Serves
``v1beta1.metrics.k8s.io``: the CPU and memory of pods and nodes, what Resource metrics read."""
METRICS_SERVER_RELEASE: Final = "metrics-server"
"""Also the chart's fullname: its Deployment, Service and pod label ``app.kubernetes.io/name``."""
METRICS_SERVER_PORT: Final = 10250
"""metrics-server's secure port (the chart's ``containerPort``); its Service is 443."""
PROMETHEUS_ADAPTER_CHART: Final = "prometheus-adapter"
PROMETHEUS_ADAPTER_CHART_REPO: Final = "https://prometheus-community.github.io/helm-charts"
PROMETHEUS_ADAPTER_CHART_VERSION: Final = "5.3.0"
"""Pinned once; prometheus-adapter v0.12.0 (the chart's appVersion and image tag). Serves
``v1beta1.custom.metrics.k8s.io`` from Prometheus queries: what Pods metrics read."""
PROMETHEUS_ADAPTER_RELEASE: Final = "prometheus-adapter"
"""Also the chart's fullname: its Deployment, Service and pod label ``app.kubernetes.io/name``."""
PROMETHEUS_ADAPTER_PORT: Final = 6443
"""The adapter's secure port (the chart's ``listenPort``); its Service is 443."""

# --- KubeRay: the operator and the Ray clusters of the teams ------------------------------------
KUBERAY_CHART: Final = "kuberay-operator"
KUBERAY_CHART_REPO: Final = "https://ray-project.github.io/kuberay-helm/"
KUBERAY_CHART_VERSION: Final = "1.7.0"
"""Pinned once, chart and operator alike (the chart's image tag is ``v<version>``); serves
``ray.io/v1``."""
KUBERAY_RELEASE: Final = "kuberay-operator"
RAY_API_VERSION: Final = "ray.io/v1"
RAY_NODE_TYPE_LABEL: Final = "ray.io/node-type"
"""Set by KubeRay on every Ray pod: ``head`` or ``worker``."""
RAY_NODE_LABEL: Final = "ray.io/is-ray-node"
"""``"yes"`` on every Ray pod KubeRay creates: what the Ray PodMonitor selects."""
RAY_CLUSTER_LABEL: Final = "ray.io/cluster"
"""Set by KubeRay on every pod of a RayCluster: the cluster's name."""
RAY_METRICS_PORT: Final = 8080
"""Ray's ``metrics-export-port`` on head and workers (KubeRay names the container port
``metrics``); what Prometheus scrapes."""
RAY_DASHBOARD_PORT: Final = 8265
"""The head's dashboard and job API: the operator and the RayJob submitter call it."""

# --- Training jobs and inference services ---------------------------------------------------------
JOB_COMPLETION_INDEX_ANNOTATION: Final = "batch.kubernetes.io/job-completion-index"
"""Set by the Job controller on every pod of an Indexed Job; NODE_RANK reads it (downward API)."""
JOB_COMPLETION_INDEX_ENV: Final = "JOB_COMPLETION_INDEX"
"""The environment variable the control plane also derives from that annotation."""
DISRUPTION_TARGET_CONDITION: Final = "DisruptionTarget"
"""Pod condition of preemption, eviction and node drain: ``podFailurePolicy`` ignores those."""
TORCHRUN_MASTER_PORT: Final = 29500
"""torchrun's default ``--master-port``; the rendezvous port of a TrainingJob's worker 0."""
CLUSTER_DOMAIN: Final = "cluster.local"
"""Kubernetes' default cluster DNS domain: ``<svc>.<ns>.svc.<domain>``."""
METRICS_PORT_NAME: Final = "metrics"
"""Name of an inference Service's Prometheus port; the monitoring stack's ServiceMonitor and its
egress policy select this name."""
