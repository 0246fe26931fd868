"""What the in-cluster guardrails would refuse is a config error first: a stack that passes the
preview never has its own workloads refused by the cluster (infra/config/guardrails.py)."""

from __future__ import annotations

from typing import Any

import pytest

from components.constants import DEFAULT_QUEUE_FLAVOR
from infra.config import ConfigError, validate_platform_config


def _errors(config: dict[str, Any], stack: str = "dev") -> list[str]:
    with pytest.raises(ConfigError) as caught:
        validate_platform_config(config, f"Pulumi.{stack}.yaml")
    return [f"{issue.key_path}: {issue.message}" for issue in caught.value.issues]


def test_a_gpu_service_must_be_queued_when_kueue_is_on(dev_config):
    dev_config["workloads"][2]["inference"]["queued"] = False
    assert _errors(dev_config) == [
        "ai-platform:workloads[llm-chat].inference.queued: must be true for a GPU service: "
        "with Kueue on, the cluster refuses GPU pods outside the team's GPU queue"
    ]


def test_a_gpu_job_of_a_team_without_a_queue_is_refused(dev_config):
    dev_config["teams"][0].pop("queue")
    errors = _errors(dev_config)
    expected = (
        "ai-platform:workloads[llama-finetune].gpus: team 'research' has no GPU queue: with "
        "Kueue on, the cluster refuses GPU workloads outside the team's GPU queue; give the "
        "team one "
        "(ai-platform:teams[].queue)"
    )
    assert expected in errors
    assert expected.replace("llama-finetune", "llama-eval") in errors


def test_guardrails_need_kubernetes_1_30(dev_config):
    dev_config["cluster"]["kubernetesVersion"] = "1.29"
    assert (
        "ai-platform:cluster.kubernetesVersion: must be 1.30 or later: the tenant guardrails are "
        "ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1), got '1.29'"
    ) in _errors(dev_config)


def test_no_pool_may_take_the_default_queue_flavor(dev_config):
    dev_config["nodePools"][0]["name"] = DEFAULT_QUEUE_FLAVOR
    assert any(
        e.startswith("ai-platform:nodePools[no-gpu].name: 'no-gpu' is reserved")
        for e in _errors(dev_config)
    )


def test_reachable_from_names_other_teams(dev_config):
    dev_config["teams"][1]["reachableFrom"] = ["research", "search-serving", "nobody"]
    assert _errors(dev_config) == [
        "ai-platform:teams[search-serving].reachableFrom[1]: a team always reaches itself",
        "ai-platform:teams[search-serving].reachableFrom[2]: unknown team 'nobody'; defined: "
        "platform, research, search-serving",
    ]


def test_a_service_opened_to_another_team_needs_the_pair(dev_config):
    chat = dev_config["workloads"][2]
    chat["inference"]["allowFromNamespaces"] = ["ingress-nginx", "research"]
    assert _errors(dev_config) == [
        "ai-platform:workloads[llm-chat].inference.allowFromNamespaces[1]: namespace 'research' "
        "belongs to team 'research', which may reach team 'search-serving' only if its "
        "reachableFrom lists 'research'"
    ]
    dev_config["teams"][1]["reachableFrom"] = ["research"]
    validate_platform_config(dev_config, "Pulumi.dev.yaml")
