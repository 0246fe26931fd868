"""TrainingJob: every option, on the manifests it renders under mocks."""

from __future__ import annotations

import dataclasses
from typing import Any

import pulumi_kubernetes as k8s
import pytest

from components.constants import (
    APP_COMPONENT_LABEL,
    APP_INSTANCE_LABEL,
    APP_MANAGED_BY_LABEL,
    APP_NAME_LABEL,
    APP_PART_OF_LABEL,
    GPU_RESOURCE,
    JOB_COMPLETION_INDEX_ANNOTATION,
    KARPENTER_DO_NOT_DISRUPT_ANNOTATION,
    KUEUE_QUEUE_LABEL,
    NODE_POOL_LABEL,
    SKIP_AWAIT_ANNOTATION,
    TEAM_ENV_CONFIGMAP,
    TEAM_LABEL,
    TEAM_WORKLOAD_SERVICE_ACCOUNT,
    VOLUME_PURPOSE_LABEL,
    WORKLOAD_TYPE_LABEL,
)
from components.workloads import (
    CheckpointVolume,
    ComputeResources,
    EgressAllowance,
    PreflightSpec,
    TrainingJob,
    TrainingJobArgs,
)
from components.workloads.preflight import EXIT_CODES, NON_RETRYABLE_EXIT_CODES, script_text
from tests.workloads.conftest import container, env_of, h100, mig_slices, only, pod_spec, render

INDEX_REF = {
    "fieldRef": {"fieldPath": f"metadata.annotations['{JOB_COMPLETION_INDEX_ANNOTATION}']"}
}


def job_args(**overrides: Any) -> TrainingJobArgs:
    base: dict[str, Any] = {
        "team": "research",
        "namespace": "research",
        "name": "finetune",
        "image": "nvcr.io/nvidia/pytorch:25.01-py3",
        "resources": ComputeResources(cpu="96", memory="960Gi"),
        "command": ("torchrun",),
        "args": ("train.py",),
        "nodes": 2,
        "gpus": 8,
        "scheduling": h100(),
        "priority_class": "high",
        "queue_name": "gpu-queue",
        "dataset_claim": "datasets",
        "checkpoints": CheckpointVolume(
            storage_class="shared-fs", size="4Ti", access_modes=("ReadWriteMany",), protect=True
        ),
    }
    base.update(overrides)
    return TrainingJobArgs(**base)


def rendered(args: TrainingJobArgs):
    return render(lambda: TrainingJob("t", args))


@pytest.fixture(scope="module")
def multi_node():
    return rendered(job_args())


@pytest.fixture(scope="module")
def single_cpu():
    return rendered(
        job_args(
            name="tokenize",
            nodes=1,
            gpus=0,
            scheduling=None,
            queue_name=None,
            checkpoints=None,
            preflight=PreflightSpec(enabled=False),
        )
    )


# --- Indexed Job, headless Service, torchrun environment ------------------------------------------
def test_indexed_job_with_one_pod_per_node(multi_node):
    spec = only(multi_node, "Job").inputs["spec"]
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == 2


def test_headless_service_gives_workers_stable_names(multi_node):
    service = only(multi_node, "Service").inputs
    job = only(multi_node, "Job")
    assert service["metadata"]["name"] == "finetune"
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["publishNotReadyAddresses"] is True
    template_labels = job.inputs["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= template_labels.items()
    assert pod_spec(job)["subdomain"] == "finetune"
    assert service["spec"]["ports"] == [
        {"name": "rendezvous", "port": 29500, "targetPort": 29500, "protocol": "TCP"}
    ]


def test_torchrun_environment(multi_node):
    env = env_of(container(only(multi_node, "Job"), "trainer"))
    assert env["MASTER_ADDR"] == env["PET_MASTER_ADDR"] == "finetune-0.finetune"
    assert env["MASTER_PORT"] == env["PET_MASTER_PORT"] == "29500"
    assert env["NNODES"] == env["PET_NNODES"] == "2"
    assert env["NPROC_PER_NODE"] == env["PET_NPROC_PER_NODE"] == "8"
    assert env["WORLD_SIZE"] == "16"
    assert env["NODE_RANK"] == env["PET_NODE_RANK"] == env["JOB_COMPLETION_INDEX"] == INDEX_REF
    assert env["LOG_LEVEL"] == "info"
    assert env["DATASET_DIR"] == "/datasets"
    assert env["CHECKPOINT_DIR"] == "/checkpoints/finetune"


def test_single_node_job_has_no_service_and_a_local_master(single_cpu):
    assert [r for r in single_cpu.kubernetes_objects() if r.kind == "Service"] == []
    job = only(single_cpu, "Job")
    assert "subdomain" not in pod_spec(job)
    env = env_of(container(job, "trainer"))
    assert env["MASTER_ADDR"] == "localhost"
    assert env["NPROC_PER_NODE"] == "1" and env["WORLD_SIZE"] == "1"
    assert single_cpu.value.service_name is None


# --- GPUs, priority, Kueue, Karpenter -------------------------------------------------------------
def test_gpus_come_from_the_pool_contract(multi_node):
    job = only(multi_node, "Job")
    spec = pod_spec(job)
    contract = h100()
    assert spec["nodeSelector"] == {NODE_POOL_LABEL: "h100-training"}
    assert spec["tolerations"] == contract.tolerations
    resources = container(job, "trainer")["resources"]
    assert resources["requests"][GPU_RESOURCE] == resources["limits"][GPU_RESOURCE] == "8"
    assert spec["priorityClassName"] == "high"


def test_without_a_priority_class_the_clusters_default_applies():
    """No opinion, no field: the API server gives the pods the global default class."""
    spec = pod_spec(only(rendered(job_args(priority_class=None)), "Job"))
    assert "priorityClassName" not in spec


def test_mig_slices_use_the_contracts_resource_and_every_taint():
    run = rendered(job_args(nodes=1, gpus=1, scheduling=mig_slices()))
    job = only(run, "Job")
    resources = container(job, "trainer")["resources"]
    assert resources["limits"] == {
        "cpu": "96",
        "memory": "960Gi",
        "nvidia.com/mig-1g.10gb": "1",
    }
    assert GPU_RESOURCE not in resources["limits"]
    assert len(pod_spec(job)["tolerations"]) == 2


def test_queued_job_is_labelled_and_created_suspended(multi_node):
    job = only(multi_node, "Job").inputs
    assert job["metadata"]["labels"][KUEUE_QUEUE_LABEL] == "gpu-queue"
    assert job["spec"]["suspend"] is True
    assert KUEUE_QUEUE_LABEL not in job["spec"]["template"]["metadata"]["labels"]


def test_kueue_owns_a_queued_jobs_suspend_flag(multi_node, single_cpu):
    """Kueue unsuspends a Job it admits (and suspends it to preempt it): after a refresh,
    re-applying ``suspend: true`` would stop the run, and ``spec`` being a replace trigger,
    replace it (make e2e checks a refresh then an up change nothing)."""
    queued = only(multi_node, "Job").options
    assert queued["ignoreChanges"] == ["spec.suspend"]
    assert queued["replaceOnChanges"] == ["spec"] and queued["deleteBeforeReplace"]
    assert only(single_cpu, "Job").options["ignoreChanges"] == []


def test_unqueued_job_starts_at_once(single_cpu):
    job = only(single_cpu, "Job").inputs
    assert KUEUE_QUEUE_LABEL not in job["metadata"]["labels"]
    assert "suspend" not in job["spec"]
    assert "nodeSelector" not in pod_spec(only(single_cpu, "Job"))


def test_karpenter_never_disrupts_training_pods(multi_node, single_cpu):
    annotations = only(multi_node, "Job").inputs["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {KARPENTER_DO_NOT_DISRUPT_ANNOTATION: "true"}
    off = rendered(job_args(do_not_disrupt=False))
    assert only(off, "Job").inputs["spec"]["template"]["metadata"]["annotations"] == {}


# --- Data -----------------------------------------------------------------------------------------
def test_dataset_is_read_only_and_checkpoints_writable(multi_node):
    job = only(multi_node, "Job")
    volumes = {v["name"]: v for v in pod_spec(job)["volumes"]}
    assert volumes["dataset"]["persistentVolumeClaim"] == {
        "claimName": "datasets",
        "readOnly": True,
    }
    assert volumes["checkpoints"]["persistentVolumeClaim"] == {"claimName": "finetune-checkpoints"}
    assert volumes["dshm"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "16Gi"}
    assert volumes["tmp"]["emptyDir"] == {"sizeLimit": "8Gi"}
    mounts = {m["mountPath"]: m for m in container(job, "trainer")["volumeMounts"]}
    assert mounts["/datasets"]["readOnly"] is True
    assert "readOnly" not in mounts["/checkpoints"]
    assert set(mounts) == {"/tmp", "/dev/shm", "/datasets", "/checkpoints"}


def test_created_checkpoint_claim_is_protected_and_not_awaited(multi_node):
    claim = only(multi_node, "PersistentVolumeClaim")
    assert claim.options["protect"] is True
    assert claim.inputs["metadata"]["annotations"] == {SKIP_AWAIT_ANNOTATION: "true"}
    assert claim.inputs["metadata"]["labels"][VOLUME_PURPOSE_LABEL] == "checkpoints"
    assert claim.inputs["spec"] == {
        "accessModes": ["ReadWriteMany"],
        "storageClassName": "shared-fs",
        "resources": {"requests": {"storage": "4Ti"}},
    }
    assert multi_node.value.checkpoint_claim == "finetune-checkpoints"


def test_existing_checkpoint_claim_creates_nothing():
    run = rendered(job_args(nodes=1, checkpoints=CheckpointVolume(claim="checkpoints")))
    assert [r for r in run.kubernetes_objects() if r.kind == "PersistentVolumeClaim"] == []
    volumes = {v["name"]: v for v in pod_spec(only(run, "Job"))["volumes"]}
    assert volumes["checkpoints"]["persistentVolumeClaim"] == {"claimName": "checkpoints"}


def test_shm_size_is_configurable():
    run = rendered(job_args(shm_size="64Gi"))
    volumes = {v["name"]: v for v in pod_spec(only(run, "Job"))["volumes"]}
    assert volumes["dshm"]["emptyDir"]["sizeLimit"] == "64Gi"


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"claim": "a", "storage_class": "b", "size": "1Gi"}, {"storage_class": "b"}],
    ids=["neither", "both", "class without size"],
)
def test_checkpoint_volume_needs_exactly_one_source(kwargs):
    with pytest.raises(ValueError, match="existing claim, or storage_class and size"):
        CheckpointVolume(**kwargs)


# --- Preflight ------------------------------------------------------------------------------------
def test_preflight_runs_the_shipped_script_with_the_trainers_resources(multi_node):
    job = only(multi_node, "Job")
    config_map = only(multi_node, "ConfigMap").inputs
    assert config_map["metadata"]["name"] == "finetune-preflight"
    assert config_map["data"] == {"start_check.py": script_text()}
    preflight = container(job, "preflight", "initContainers")
    trainer = container(job, "trainer")
    assert preflight["resources"] == trainer["resources"]
    assert preflight["image"] == trainer["image"]
    assert preflight["command"] == [
        "python3",
        "/preflight/start_check.py",
        "--start-check",
        "--all",
        "--min-memory",
        "960Gi",
        "--min-cpus",
        "96",
        "--expect-gpus",
        "8",
        "--dataset-path",
        "/datasets",
        "--dataset-min-files",
        "1",
        "--checkpoint-path",
        "/checkpoints/finetune",
        "--checkpoint-create",
    ]
    mounts = {m["mountPath"]: m["name"] for m in preflight["volumeMounts"]}
    assert mounts == {
        "/tmp": "tmp",
        "/datasets": "dataset",
        "/checkpoints": "checkpoints",
        "/preflight": "preflight",
    }
    volumes = {v["name"]: v for v in pod_spec(job)["volumes"]}
    assert volumes["preflight"]["configMap"] == {"name": "finetune-preflight", "defaultMode": 0o444}


def test_preflight_options_reach_its_command():
    spec = PreflightSpec(image="nvcr.io/nvidia/cuda:12.8.0-base-ubuntu24.04", dataset_min_files=100)
    run = rendered(job_args(preflight=dataclasses.replace(spec, checkpoint_min_free="500Gi")))
    preflight = container(only(run, "Job"), "preflight", "initContainers")
    assert preflight["image"] == "nvcr.io/nvidia/cuda:12.8.0-base-ubuntu24.04"
    command = preflight["command"]
    assert command[command.index("--dataset-min-files") + 1] == "100"
    assert command[command.index("--checkpoint-min-free") + 1] == "500Gi"


def test_preflight_can_be_turned_off(single_cpu):
    assert "initContainers" not in pod_spec(only(single_cpu, "Job"))
    assert [r for r in single_cpu.kubernetes_objects() if r.kind == "ConfigMap"] == []
    rules = only(single_cpu, "Job").inputs["spec"]["podFailurePolicy"]["rules"]
    assert [r["action"] for r in rules] == ["Ignore"]


# --- Failure handling -----------------------------------------------------------------------------
def test_restart_never_with_bounded_retries_and_lifetime(multi_node):
    spec = only(multi_node, "Job").inputs["spec"]
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    assert spec["backoffLimit"] == 3
    assert spec["activeDeadlineSeconds"] == 3 * 86400
    assert spec["ttlSecondsAfterFinished"] == 7 * 86400
    assert spec["podReplacementPolicy"] == "Failed"


def test_failure_policy_ignores_disruptions_then_fails_on_config_errors(multi_node):
    rules = only(multi_node, "Job").inputs["spec"]["podFailurePolicy"]["rules"]
    assert rules[0] == {
        "action": "Ignore",
        "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
    }
    preflight_rule = rules[1]
    assert preflight_rule["action"] == "FailJob"
    assert preflight_rule["onExitCodes"]["containerName"] == "preflight"
    codes = preflight_rule["onExitCodes"]["values"]
    assert codes == sorted(codes) and 0 not in codes
    assert EXIT_CODES["gpu"] not in codes, "a wrong GPU count is a node fault: retried"
    assert set(codes) == set(NON_RETRYABLE_EXIT_CODES) - {EXIT_CODES["gpu"]}
    assert len(rules) == 2  # no trainer codes configured


def test_gpu_mismatch_can_fail_the_job_and_trainer_codes_are_sorted():
    run = rendered(
        job_args(
            preflight=PreflightSpec(fail_job_on_gpu_mismatch=True),
            non_retryable_exit_codes=(78, 3, 78),
            backoff_limit=6,
            active_deadline_seconds=3600,
            ttl_seconds_after_finished=60,
        )
    )
    spec = only(run, "Job").inputs["spec"]
    rules = spec["podFailurePolicy"]["rules"]
    assert rules[1]["onExitCodes"]["values"] == list(NON_RETRYABLE_EXIT_CODES)
    assert rules[2] == {
        "action": "FailJob",
        "onExitCodes": {"containerName": "trainer", "operator": "In", "values": [3, 78]},
    }
    assert (spec["backoffLimit"], spec["activeDeadlineSeconds"]) == (6, 3600)
    assert spec["ttlSecondsAfterFinished"] == 60


# --- Environment, security, labels, identity ------------------------------------------------------
def test_environment_from_the_team_configmap_and_the_job(multi_node):
    trainer = container(only(multi_node, "Job"), "trainer")
    assert trainer["envFrom"] == [{"configMapRef": {"name": TEAM_ENV_CONFIGMAP}}]
    run = rendered(job_args(env={"NCCL_DEBUG": "WARN"}, log_level="debug", env_config_map=None))
    trainer = container(only(run, "Job"), "trainer")
    env = env_of(trainer)
    assert env["NCCL_DEBUG"] == "WARN" and env["LOG_LEVEL"] == "debug"
    assert trainer["envFrom"] == []


@pytest.mark.parametrize("key", ["MASTER_ADDR", "NODE_RANK", "LOG_LEVEL", "TRAINING_ENV"])
def test_user_env_cannot_shadow_what_the_component_sets(key):
    with pytest.raises(ValueError, match=f"{key!r} is set by the component"):
        job_args(env={key: "x"})


def test_restricted_security_context(multi_node):
    job = only(multi_node, "Job")
    assert pod_spec(job)["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 1000,
        "runAsGroup": 1000,
        "fsGroup": 1000,
        "fsGroupChangePolicy": "OnRootMismatch",
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    for name, section in (("trainer", "containers"), ("preflight", "initContainers")):
        context = container(job, name, section)["securityContext"]
        assert context["allowPrivilegeEscalation"] is False
        assert context["capabilities"] == {"drop": ["ALL"]}
        assert context["readOnlyRootFilesystem"] is True
        assert context["runAsNonRoot"] is True
    writable = rendered(job_args(read_only_root_filesystem=False, run_as_user=2000))
    job = only(writable, "Job")
    assert container(job, "trainer")["securityContext"]["readOnlyRootFilesystem"] is False
    assert pod_spec(job)["securityContext"]["runAsUser"] == 2000


def test_cpu_and_memory_limits_are_always_explicit(multi_node):
    resources = container(only(multi_node, "Job"), "trainer")["resources"]
    assert resources["limits"]["cpu"] == "96" and resources["limits"]["memory"] == "960Gi"
    run = rendered(job_args(resources=ComputeResources("8", "64Gi", "16", "96Gi")))
    resources = container(only(run, "Job"), "trainer")["resources"]
    assert resources["requests"] == {"cpu": "8", "memory": "64Gi", GPU_RESOURCE: "8"}
    assert resources["limits"] == {"cpu": "16", "memory": "96Gi", GPU_RESOURCE: "8"}


def test_standard_labels_on_every_object_and_pod(multi_node):
    for resource in multi_node.kubernetes_objects():
        labels = resource.metadata["labels"]
        assert labels[TEAM_LABEL] == "research", resource.kind
        assert labels[APP_NAME_LABEL] == "finetune"
        assert labels[APP_INSTANCE_LABEL] == "finetune"
        assert labels[APP_COMPONENT_LABEL] == "trainer"
        assert labels[APP_PART_OF_LABEL] == "ai-platform"
        assert labels[APP_MANAGED_BY_LABEL] == "pulumi"
        assert labels[WORKLOAD_TYPE_LABEL] == "training"
    pod_labels = only(multi_node, "Job").inputs["spec"]["template"]["metadata"]["labels"]
    assert pod_labels[WORKLOAD_TYPE_LABEL] == "training" and pod_labels[TEAM_LABEL] == "research"


def test_evaluation_jobs_are_labelled_so():
    run = rendered(job_args(workload_type="evaluation", nodes=1))
    assert only(run, "Job").metadata["labels"][WORKLOAD_TYPE_LABEL] == "evaluation"
    with pytest.raises(ValueError, match="workload_type"):
        job_args(workload_type="inference")


def test_team_service_account_without_token(multi_node):
    spec = pod_spec(only(multi_node, "Job"))
    assert spec["serviceAccountName"] == TEAM_WORKLOAD_SERVICE_ACCOUNT
    assert spec["automountServiceAccountToken"] is False
    assert spec["enableServiceLinks"] is False


# --- Real-engine behaviour ------------------------------------------------------------------------
def test_deploys_do_not_wait_for_the_job_and_changes_replace_it(multi_node):
    job = only(multi_node, "Job")
    assert job.inputs["metadata"]["annotations"] == {SKIP_AWAIT_ANNOTATION: "true"}
    assert job.options["replaceOnChanges"] == ["spec"]
    assert job.options["deleteBeforeReplace"] is True


def test_job_waits_for_what_its_pods_need(multi_node):
    job = only(multi_node, "Job")
    needed = {
        r.urn
        for r in multi_node.kubernetes_objects()
        if r.kind in ("ConfigMap", "PersistentVolumeClaim", "Service", "NetworkPolicy")
    }
    assert needed == set(job.options["dependsOn"])


def test_children_are_parented_and_named_after_the_component(multi_node):
    component = next(r for r in multi_node.resources if r.type.endswith("TrainingJob"))
    assert component.type == "aiplatform:workloads:TrainingJob"
    for resource in multi_node.kubernetes_objects():
        assert resource.parent == component.urn
        assert resource.name.startswith("t-")


# --- Argument checks ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"name": "Finetune"}, "DNS-1035 label"),
        ({"name": "x" * 41}, "at most 40 characters"),
        ({"nodes": 0}, "nodes must be >= 1"),
        ({"scheduling": None}, "GPUs need a pool's SchedulingContract"),
        ({"gpus": 9}, "9 nvidia.com/gpu per worker, but a node of pool h100-training"),
        ({"non_retryable_exit_codes": (0,)}, "exit code 0 is not in 1..255"),
    ],
)
def test_bad_arguments_fail_before_any_resource(overrides, message):
    with pytest.raises(ValueError, match=message):
        job_args(**overrides)


def test_egress_rejects_the_whole_internet():
    with pytest.raises(ValueError, match="opens the whole internet"):
        EgressAllowance(cidrs=("0.0.0.0/0",))


def test_port_identity_grace_and_scratch_are_configurable():
    run = rendered(
        job_args(
            master_port=29400,
            service_account="trainer",
            termination_grace_period_seconds=600,
            tmp_size="32Gi",
        )
    )
    job = only(run, "Job")
    spec = pod_spec(job)
    assert env_of(container(job, "trainer"))["MASTER_PORT"] == "29400"
    assert only(run, "Service").inputs["spec"]["ports"][0]["port"] == 29400
    assert container(job, "trainer")["ports"][0]["containerPort"] == 29400
    assert spec["serviceAccountName"] == "trainer"
    assert spec["terminationGracePeriodSeconds"] == 600
    assert {v["name"]: v for v in spec["volumes"]}["tmp"]["emptyDir"]["sizeLimit"] == "32Gi"
    assert pod_spec(only(rendered(job_args()), "Job"))["terminationGracePeriodSeconds"] == 120


def test_network_policy_allows_own_pods_dns_and_configured_ranges_only():
    egress = EgressAllowance(cidrs=("52.216.0.0/15", "3.5.0.0/19"), ports=(443, 9000))
    spec = only(rendered(job_args(egress=egress)), "NetworkPolicy").inputs["spec"]
    own = {
        "podSelector": {"matchLabels": {APP_NAME_LABEL: "finetune", APP_COMPONENT_LABEL: "trainer"}}
    }
    assert spec["podSelector"] == own["podSelector"]
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    assert spec["ingress"] == [{"from": [own]}]
    assert spec["egress"][0] == {"to": [own]}
    assert [p["port"] for p in spec["egress"][1]["ports"]] == [53, 53]
    assert spec["egress"][2] == {
        "to": [{"ipBlock": {"cidr": "52.216.0.0/15"}}, {"ipBlock": {"cidr": "3.5.0.0/19"}}],
        "ports": [{"protocol": "TCP", "port": 443}, {"protocol": "TCP", "port": 9000}],
    }
    no_egress = only(rendered(job_args()), "NetworkPolicy").inputs["spec"]["egress"]
    assert len(no_egress) == 2  # own pods and DNS: no external range configured


def test_depends_on_orders_the_objects_and_a_created_claim_waits_for_its_namespace_only():
    """The component itself depends on nothing: the engine counts a parent's dependencies as its
    children's, and a protected claim must not depend on the job's queue (a destroy would then
    neither reach nor name it)."""

    def build() -> None:
        namespace = k8s.core.v1.Namespace("ns", metadata={"name": "research"})
        queue = k8s.core.v1.ConfigMap("queue", metadata={"name": "q", "namespace": "research"})
        args = job_args(
            depends_on=(queue,),
            claim_namespace=namespace.metadata.apply(lambda meta: meta.name or "research"),
        )
        TrainingJob("t", args)

    run = render(build)
    queue = next(r.urn for r in run.resources if r.name == "queue")
    namespace = next(r.urn for r in run.resources if r.name == "ns")
    component = next(r for r in run.resources if r.type == "aiplatform:workloads:TrainingJob")
    assert component.options["dependsOn"] == []
    claim = only(run, "PersistentVolumeClaim")
    assert claim.options["dependsOn"] == [namespace]
    assert claim.metadata["namespace"] == "research"
    for kind in ("ConfigMap", "Service", "NetworkPolicy"):
        waiting = [r for r in run.kubernetes_objects() if r.kind == kind]
        waiting = [r for r in waiting if r.parent == component.urn]
        assert waiting and all(queue in r.options["dependsOn"] for r in waiting), kind
    job = only(run, "Job")
    assert claim.urn in job.options["dependsOn"]


def test_without_claim_namespace_a_created_claim_waits_like_the_other_objects():
    def build() -> None:
        queue = k8s.core.v1.ConfigMap("queue", metadata={"name": "q", "namespace": "research"})
        TrainingJob("t", job_args(depends_on=(queue,)))

    run = render(build)
    queue = next(r.urn for r in run.resources if r.name == "queue")
    assert only(run, "PersistentVolumeClaim").options["dependsOn"] == [queue]
