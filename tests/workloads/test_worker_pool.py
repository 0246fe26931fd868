"""WorkerPool: every option, on the manifests it renders under mocks (the Celery side of the
contract runs for real in test_worker_pool_celery.py)."""

from __future__ import annotations

from typing import Any

import pytest

from components.constants import (
    GPU_RESOURCE,
    KEDA_API_VERSION,
    KUEUE_QUEUE_LABEL,
    NODE_POOL_LABEL,
    REDIS_CLIENT_LABEL,
    TEAM_LABEL,
    WORKLOAD_TYPE_LABEL,
    WORKLOAD_TYPE_WORKER,
)
from components.team_redis import (
    REDIS_PASSWORD_KEY,
    REDIS_PORT,
    REDIS_SECRET,
    REDIS_URL_KEY,
    redis_server_selector,
)
from components.workloads import (
    ComputeResources,
    EgressAllowance,
    QueueAutoscaling,
    WorkerPool,
    WorkerPoolArgs,
)
from components.workloads.worker_pool import BROKER_ENV, RESERVED_ENV
from tests.workloads.conftest import container, env_of, h100, kinds, only, pod_spec, render

CRD_KINDS = ("ScaledObject", "TriggerAuthentication")


def pool_args(**overrides: Any) -> WorkerPoolArgs:
    base: dict[str, Any] = {
        "team": "platform",
        "namespace": "platform",
        "name": "pipeline-workers",
        "image": "ghcr.io/acme-ml/pipelines:1.4.2",
        "resources": ComputeResources(cpu="500m", memory="1Gi"),
        "app": "pipelines.celery_app",
        "concurrency": 4,
    }
    base.update(overrides)
    return WorkerPoolArgs(**base)


def rendered(args: WorkerPoolArgs) -> Any:
    return render(lambda: WorkerPool("workers", args))


def custom(run: Any, kind: str) -> dict[str, Any]:
    [found] = [r for r in run.by_type(f"kubernetes:{KEDA_API_VERSION}:{kind}")]
    assert found.inputs["apiVersion"] == KEDA_API_VERSION
    return dict(found.inputs)


def test_the_worker_runs_celery_with_the_broker_from_the_team_secret() -> None:
    run = rendered(pool_args(queues=("ingest", "embed"), args=("--prefetch-multiplier=1",)))
    deployment = only(run, "Deployment")
    worker = container(deployment, "worker")
    assert worker["command"] == [
        "celery",
        "-A",
        "pipelines.celery_app",
        "worker",
        "--loglevel=info",
        "--concurrency=4",
        "-Q",
        "ingest,embed",
        "--prefetch-multiplier=1",
    ]
    env = env_of(worker)
    assert env[BROKER_ENV] == {"secretKeyRef": {"name": REDIS_SECRET, "key": REDIS_URL_KEY}}
    # Nothing but the Secret reference carries the connection: no URL in plain env.
    assert not any("redis://" in str(value) for value in env.values())
    assert env["HOME"] == env["TMPDIR"] == "/tmp"


def test_without_queues_the_worker_reads_celerys_default_queue() -> None:
    run = rendered(pool_args())
    worker = container(only(run, "Deployment"), "worker")
    assert "-Q" not in worker["command"]
    [trigger] = custom(run, "ScaledObject")["spec"]["triggers"]
    assert trigger["metadata"]["listName"] == "celery"


def test_probes_ping_this_pods_worker_through_the_broker() -> None:
    run = rendered(pool_args(probe_timeout_seconds=7, probe_period_seconds=20))
    worker = container(only(run, "Deployment"), "worker")
    command = [
        "sh",
        "-c",
        'exec celery -A pipelines.celery_app inspect ping --destination "celery@$HOSTNAME" '
        "--timeout 7",
    ]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert worker[probe]["exec"]["command"] == command, probe
        # The ping's wait plus the interpreter's start and the app's import on a busy node.
        assert worker[probe]["timeoutSeconds"] == 27, probe
    assert worker["readinessProbe"]["periodSeconds"] == 20
    assert worker["livenessProbe"]["periodSeconds"] == 40
    # A broker outage of minutes does not restart every worker at once.
    liveness = worker["livenessProbe"]
    assert liveness["periodSeconds"] * liveness["failureThreshold"] >= 180


def test_an_app_with_shell_characters_is_quoted_in_the_probe() -> None:
    run = rendered(pool_args(app="pipelines.app:celery"))
    probe = container(only(run, "Deployment"), "worker")["readinessProbe"]
    assert "-A pipelines.app:celery inspect" in probe["exec"]["command"][2]
    args = pool_args(app="x; rm -rf /")
    worker = container(only(rendered(args), "Deployment"), "worker")
    assert "-A 'x; rm -rf /' inspect" in worker["readinessProbe"]["exec"]["command"][2]


def test_sigterm_budget_is_the_grace_period_and_celery_gets_the_signal() -> None:
    run = rendered(pool_args(termination_grace_period_seconds=900))
    spec = pod_spec(only(run, "Deployment"))
    assert spec["terminationGracePeriodSeconds"] == 900
    # Exec form: celery is the container's process and receives SIGTERM itself.
    assert container(only(run, "Deployment"), "worker")["command"][0] == "celery"


def test_pods_are_restricted_team_redis_clients() -> None:
    run = rendered(pool_args())
    deployment = only(run, "Deployment")
    labels = deployment.inputs["spec"]["template"]["metadata"]["labels"]
    assert labels[REDIS_CLIENT_LABEL] == "true"
    assert labels[TEAM_LABEL] == "platform"
    assert labels[WORKLOAD_TYPE_LABEL] == WORKLOAD_TYPE_WORKER
    spec = pod_spec(deployment)
    assert spec["automountServiceAccountToken"] is False
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    security = container(deployment, "worker")["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security["readOnlyRootFilesystem"] is True


def test_network_policy_opens_the_team_redis_and_dns_only() -> None:
    run = rendered(pool_args(egress=EgressAllowance(cidrs=("52.216.0.0/15",))))
    spec = only(run, "NetworkPolicy").inputs["spec"]
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    assert "ingress" not in spec  # isolated for ingress, no rule admits anything
    redis_rule = {
        "to": [{"podSelector": {"matchLabels": redis_server_selector()}}],
        "ports": [{"protocol": "TCP", "port": REDIS_PORT}],
    }
    assert redis_rule in spec["egress"]
    ports = [p["port"] for rule in spec["egress"] for p in rule.get("ports", [])]
    assert sorted(set(ports)) == [53, 443, REDIS_PORT]


def test_autoscaling_is_a_scaled_object_on_the_queues_with_the_secrets_password() -> None:
    scaling = QueueAutoscaling(min_replicas=0, max_replicas=12, tasks_per_replica=25)
    run = rendered(pool_args(queues=("ingest", "embed"), autoscaling=scaling))
    assert kinds(run) == ["Deployment", "NetworkPolicy", *CRD_KINDS]
    # KEDA's HPA owns the replica count: the Deployment states none.
    assert "replicas" not in only(run, "Deployment").inputs["spec"]
    scaled = custom(run, "ScaledObject")["spec"]
    assert scaled["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "pipeline-workers",
    }
    assert (scaled["minReplicaCount"], scaled["maxReplicaCount"]) == (0, 12)
    assert [t["metadata"]["listName"] for t in scaled["triggers"]] == ["ingest", "embed"]
    for trigger in scaled["triggers"]:
        assert trigger["type"] == "redis"
        assert trigger["metadata"]["listLength"] == "25"
        assert trigger["metadata"]["address"] == "team-redis.platform.svc.cluster.local:6379"
        assert trigger["authenticationRef"] == {"name": "pipeline-workers-redis"}
    auth = custom(run, "TriggerAuthentication")
    assert auth["metadata"]["name"] == "pipeline-workers-redis"
    assert auth["spec"] == {
        "secretTargetRef": [
            {"parameter": "password", "name": REDIS_SECRET, "key": REDIS_PASSWORD_KEY}
        ]
    }


def test_without_autoscaling_a_fixed_count_and_no_keda_objects() -> None:
    run = rendered(pool_args(autoscaling=None, replicas=3))
    assert kinds(run) == ["Deployment", "NetworkPolicy"]
    assert only(run, "Deployment").inputs["spec"]["replicas"] == 3


def test_gpu_workers_take_the_pools_contract_and_queue() -> None:
    run = rendered(pool_args(gpus=2, scheduling=h100(), queue_name="gpu-queue"))
    deployment = only(run, "Deployment")
    spec = pod_spec(deployment)
    assert spec["nodeSelector"] == {NODE_POOL_LABEL: "h100-training"}
    assert spec["tolerations"] == h100().tolerations
    resources = container(deployment, "worker")["resources"]
    assert resources["limits"][GPU_RESOURCE] == resources["requests"][GPU_RESOURCE] == "2"
    assert deployment.inputs["metadata"]["labels"][KUEUE_QUEUE_LABEL] == "gpu-queue"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"name": "Pipeline"}, "WorkerPool name 'Pipeline' must be a DNS-1035 label"),
        ({"gpus": 1}, "GPUs need a pool's SchedulingContract"),
        ({"concurrency": 0}, "concurrency must be >= 1"),
        ({"queues": ("a", "a")}, "queues must be unique"),
        ({"queues": ("a,b",)}, "no comma"),
        ({"env": {BROKER_ENV: "redis://x"}}, f"environment variable {BROKER_ENV!r}"),
        ({"autoscaling": None, "replicas": 0}, "replicas must be >= 1"),
    ],
)
def test_bad_args_are_refused(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        pool_args(**overrides)


def test_a_worker_pool_needs_the_team_redis() -> None:
    with pytest.raises(ValueError, match="the team Redis is the broker"):
        pool_args(redis=None)


def test_reserved_env_covers_what_the_component_sets() -> None:
    run = rendered(pool_args())
    names = set(env_of(container(only(run, "Deployment"), "worker")))
    assert names <= RESERVED_ENV


def test_queue_autoscaling_bounds() -> None:
    with pytest.raises(ValueError, match="min_replicas"):
        QueueAutoscaling(min_replicas=3, max_replicas=2)
    with pytest.raises(ValueError, match="tasks_per_replica"):
        QueueAutoscaling(tasks_per_replica=0)
