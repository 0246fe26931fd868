"""Workloads of a team with a Redis are its clients: the connection from the Secret, the label its
NetworkPolicy admits and the egress rule to it, from the shared pod base; a training job that
publishes status runs its trainer under the status publisher shipped beside the preflight."""

from __future__ import annotations

from typing import Any

import pytest

from components.constants import REDIS_CLIENT_LABEL
from components.team_redis import (
    REDIS_SECRET,
    REDIS_URL_KEY,
    RedisClient,
    redis_egress_rule,
)
from components.workloads import InferenceService, PreflightSpec, TrainingJob
from components.workloads.preflight import (
    CONTAINER_SCRIPT_DIR,
    SCRIPT_FILENAME,
    STATUS_SCRIPT_FILENAME,
    status_script_text,
)
from tests.workloads.conftest import container, env_of, only, pod_spec, render
from tests.workloads.test_inference_service import service_args
from tests.workloads.test_training_job import job_args

URL_FROM_SECRET = {"secretKeyRef": {"name": REDIS_SECRET, "key": REDIS_URL_KEY}}


def template_labels(resource: Any) -> dict[str, str]:
    return dict(resource.inputs["spec"]["template"]["metadata"]["labels"])


def test_a_job_of_a_team_with_a_redis_is_its_client() -> None:
    run = render(lambda: TrainingJob("t", job_args(redis=RedisClient("finetune_status"))))
    job = only(run, "Job")
    env = env_of(container(job, "trainer"))
    assert env["REDIS_URL"] == URL_FROM_SECRET
    assert env["STATUS_CHANNEL"] == "finetune_status"
    assert template_labels(job)[REDIS_CLIENT_LABEL] == "true"
    assert REDIS_CLIENT_LABEL not in job.metadata["labels"]  # the pods are clients, not the Job
    egress = only(run, "NetworkPolicy").inputs["spec"]["egress"]
    assert redis_egress_rule() in egress
    # Not publishing: the trainer's command is its own.
    assert container(job, "trainer")["command"] == ["torchrun"]
    assert "REDIS_URL" not in env_of(container(job, "preflight", "initContainers"))


def test_a_job_of_a_team_without_a_redis_is_no_client() -> None:
    run = render(lambda: TrainingJob("t", job_args()))
    job = only(run, "Job")
    assert not {"REDIS_URL", "STATUS_CHANNEL"} & set(env_of(container(job, "trainer")))
    assert REDIS_CLIENT_LABEL not in template_labels(job)
    assert redis_egress_rule() not in only(run, "NetworkPolicy").inputs["spec"]["egress"]


def test_a_service_of_a_team_with_a_redis_is_its_client() -> None:
    run = render(lambda: InferenceService("s", service_args(redis=RedisClient())))
    deployment = only(run, "Deployment")
    env = env_of(container(deployment, "server"))
    assert env["REDIS_URL"] == URL_FROM_SECRET
    assert env["STATUS_CHANNEL"] == "training_status"
    assert template_labels(deployment)[REDIS_CLIENT_LABEL] == "true"
    # The selector stays as it was: labels added to the template only.
    assert REDIS_CLIENT_LABEL not in deployment.inputs["spec"]["selector"]["matchLabels"]
    policies = {
        r.metadata["name"]: r for r in run.kubernetes_objects() if r.kind == "NetworkPolicy"
    }
    assert redis_egress_rule() in policies["llm-network"].inputs["spec"]["egress"]


def test_a_client_may_not_set_the_connection_itself() -> None:
    with pytest.raises(ValueError, match="'REDIS_URL' is set by the component"):
        job_args(redis=RedisClient(), env={"REDIS_URL": "redis://elsewhere"})
    with pytest.raises(ValueError, match="'STATUS_CHANNEL' is set by the component"):
        service_args(redis=RedisClient(), env={"STATUS_CHANNEL": "x"})
    job_args(env={"REDIS_URL": "redis://elsewhere"})  # no team Redis: the workload's own


def test_a_publishing_job_runs_its_trainer_under_the_status_publisher() -> None:
    args = job_args(redis=RedisClient(), publish_status=True)
    run = render(lambda: TrainingJob("t", args))
    trainer = container(only(run, "Job"), "trainer")
    assert trainer["command"] == [
        "python3",
        f"{CONTAINER_SCRIPT_DIR}/{STATUS_SCRIPT_FILENAME}",
        "--status-channel",
        "training_status",
        "--job",
        "finetune",
        "--",
        "torchrun",
    ]
    assert trainer["args"] == ["train.py"]
    assert {"name": "preflight", "mountPath": CONTAINER_SCRIPT_DIR, "readOnly": True} in trainer[
        "volumeMounts"
    ]
    scripts = only(run, "ConfigMap").inputs["data"]
    assert set(scripts) == {SCRIPT_FILENAME, STATUS_SCRIPT_FILENAME}
    assert scripts[STATUS_SCRIPT_FILENAME] == status_script_text()


def test_publishing_ships_the_publisher_even_without_the_preflight() -> None:
    args = job_args(
        redis=RedisClient(), publish_status=True, preflight=PreflightSpec(enabled=False)
    )
    run = render(lambda: TrainingJob("t", args))
    job = only(run, "Job")
    assert "initContainers" not in pod_spec(job)
    assert {v["name"] for v in pod_spec(job)["volumes"]} >= {"preflight"}
    assert set(only(run, "ConfigMap").inputs["data"]) == {SCRIPT_FILENAME, STATUS_SCRIPT_FILENAME}
    without = render(lambda: TrainingJob("t", job_args(preflight=PreflightSpec(enabled=False))))
    assert [r for r in without.kubernetes_objects() if r.kind == "ConfigMap"] == []


def test_publishing_needs_the_team_redis_and_a_command() -> None:
    with pytest.raises(ValueError, match="publish_status needs the team Redis"):
        job_args(publish_status=True)
    with pytest.raises(ValueError, match="publish_status wraps the command; set command"):
        job_args(redis=RedisClient(), publish_status=True, command=())
