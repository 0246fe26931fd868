"""The tenant guardrails as the stack renders them: policies, bindings, what each namespace allows,
the priority-class quota, and the default queues that keep CPU-only work running under
``manageJobsWithoutQueueName``. The CEL itself is proved on a real API server in
tests/e2e/test_guardrails.py."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from components.constants import (
    DEFAULT_QUEUE_FLAVOR,
    KUEUE_DEFAULT_LOCAL_QUEUE,
    TEAM_LABEL,
    TEAM_LOCAL_QUEUE_NAME,
    TENANT_GPU_QUEUE_ANNOTATION,
    TENANT_NODE_POOLS_ANNOTATION,
    TENANT_PRIORITY_CLASSES_ANNOTATION,
)
from components.guardrails import (
    MONITOR_POLICIES,
    POLICY_PREFIX,
    PRIORITY_QUOTA_NAME,
    RULES,
    SHAPES,
    Message,
    TenantLimits,
    binding_spec,
    policy_name,
    policy_spec,
    priority_quota_spec,
)
from infra.config.quantity import parse_quantity
from infra.field_ownership import PATCH_FORCE_ANNOTATION
from tests.harness import run_stack, stack_config
from tools.mockrun import MockRun

QUEUE_RULES = {r.name for r in RULES if r.queueing}


def _policies(run: MockRun[Any]) -> dict[str, dict[str, Any]]:
    return {
        r.name: r.inputs
        for r in run.kubernetes_objects()
        if r.kind in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
    }


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_shape_has_a_policy_and_a_binding_over_team_namespaces(stack, dev_run, prod_run):
    run = dev_run if stack == "dev" else prod_run
    for shape in SHAPES:
        name = policy_name(shape)
        policy = run.find("ValidatingAdmissionPolicy", name).inputs["spec"]
        binding = run.find("ValidatingAdmissionPolicyBinding", name).inputs["spec"]
        assert policy["failurePolicy"] == "Fail"
        assert len(policy["validations"]) == len(RULES)
        assert binding["policyName"] == name and binding["validationActions"] == ["Deny"]
        selector = binding["matchResources"]["namespaceSelector"]
        assert selector == {"matchExpressions": [{"key": TEAM_LABEL, "operator": "Exists"}]}
    kinds = {r for shape in SHAPES for _, resources in shape.resources for r in resources}
    assert kinds == {
        "pods",
        "deployments",
        "statefulsets",
        "daemonsets",
        "replicasets",
        "replicationcontrollers",
        "jobs",
        "cronjobs",
    }


def test_teams_monitors_and_rules_have_their_policies(prod_run):
    for monitors in MONITOR_POLICIES:
        name = f"{POLICY_PREFIX}{monitors.name}"
        policy = prod_run.find("ValidatingAdmissionPolicy", name).inputs["spec"]
        binding = prod_run.find("ValidatingAdmissionPolicyBinding", name).inputs["spec"]
        (rule,) = policy["matchConstraints"]["resourceRules"]
        assert rule["apiGroups"] == ["monitoring.coreos.com"]
        assert rule["resources"] == [monitors.resource]
        assert len(policy["validations"]) == len(monitors.rules)
        assert binding == binding_spec(name)


def test_without_kueue_no_rule_asks_for_a_queue(dev_config):
    dev_config["queueing"] = {"enabled": False}
    for team in dev_config["teams"]:
        team.pop("queue", None)
    for workload in dev_config["workloads"]:
        (workload.get("inference") or {}).pop("queued", None)
    run = run_stack(dev_config)
    policy = run.find("ValidatingAdmissionPolicy", policy_name(SHAPES[0])).inputs["spec"]
    messages = {v["messageExpression"] for v in policy["validations"]}
    assert len(messages) == len(RULES) - len(QUEUE_RULES)
    kept = {r.message.cel() for r in RULES if not r.queueing}
    assert messages == kept
    research = run.find("Namespace", "research").metadata["annotations"]
    assert TENANT_GPU_QUEUE_ANNOTATION not in research
    assert research[TENANT_NODE_POOLS_ANNOTATION] == "lab-a100,lab-a100-mig"  # any pool


def test_the_change_condition_skips_updates_that_run_nothing_new():
    condition = policy_spec(SHAPES[0], True)["matchConditions"][0]["expression"]
    assert condition.startswith("request.operation == 'CREATE' || object.spec != oldObject.spec")


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_each_namespace_says_what_its_team_may_use(stack, dev_run, prod_run):
    run = dev_run if stack == "dev" else prod_run
    config = stack_config(stack)
    all_classes = [pc["name"] for pc in config.get("priorityClasses") or []] or [
        "critical",
        "high",
        "normal",
        "batch-low",
    ]
    for team in config["teams"]:
        namespace = team.get("namespace") or team["name"]
        found = run.find("Namespace", namespace).metadata["annotations"]
        classes = team.get("priorityClasses") or all_classes
        pools = list(dict.fromkeys(entry["pool"] for entry in team["queue"]["pools"]))
        assert found == {
            PATCH_FORCE_ANNOTATION: "true",
            TENANT_PRIORITY_CLASSES_ANNOTATION: ",".join(classes),
            TENANT_NODE_POOLS_ANNOTATION: ",".join(pools),
            TENANT_GPU_QUEUE_ANNOTATION: TEAM_LOCAL_QUEUE_NAME,
        }
        quota = run.find("ResourceQuota", PRIORITY_QUOTA_NAME, namespace).inputs["spec"]
        assert quota == {
            "hard": {"pods": "0"},
            "scopeSelector": {
                "matchExpressions": [
                    {"scopeName": "PriorityClass", "operator": "NotIn", "values": sorted(classes)}
                ]
            },
        }


def test_a_team_without_a_queue_has_no_pools_and_no_queue(dev_config):
    team = dev_config["teams"][2]
    team.pop("queue")
    team["quota"]["gpus"] = 0
    team["quota"]["migSlices"] = {}
    run = run_stack(dev_config)
    annotations = run.find("Namespace", "platform").metadata["annotations"]
    assert annotations[TENANT_NODE_POOLS_ANNOTATION] == ""
    assert TENANT_GPU_QUEUE_ANNOTATION not in annotations
    assert TenantLimits(["normal"]).annotations() == {
        TENANT_PRIORITY_CLASSES_ANNOTATION: "normal",
        TENANT_NODE_POOLS_ANNOTATION: "",
    }


def test_a_team_allowed_no_class_admits_no_pod_with_one():
    assert priority_quota_spec(TenantLimits([])) == {
        "hard": {"pods": "0"},
        "scopeSelector": {
            "matchExpressions": [{"scopeName": "PriorityClass", "operator": "Exists"}]
        },
    }


def test_messages_render_as_cel_and_as_text_from_one_template():
    message = Message('queue {q} in {ns}: it\'s "x"', {"q": "variables.gpuQueue", "ns": "a.b"})
    assert message.cel() == '"queue " + (variables.gpuQueue) + " in " + (a.b) + ": it\'s \\"x\\""'
    assert message.text(q="gpu-queue", ns="research") == 'queue gpu-queue in research: it\'s "x"'
    for rule in RULES:  # every placeholder has its CEL
        rule.message.cel()


# --- default queues: what names no queue still runs -------------------------------------------
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_team_has_a_default_queue_within_its_quota(stack, dev_run, prod_run):
    run = dev_run if stack == "dev" else prod_run
    config = stack_config(stack)
    flavor = run.find("ResourceFlavor", DEFAULT_QUEUE_FLAVOR).inputs["spec"]
    assert flavor == {}
    for team in config["teams"]:
        namespace = team.get("namespace") or team["name"]
        local = run.find("LocalQueue", KUEUE_DEFAULT_LOCAL_QUEUE, namespace).inputs["spec"]
        queue = run.find("ClusterQueue", local["clusterQueue"]).inputs["spec"]
        assert local["clusterQueue"] == f"default-{team['name']}"
        assert "cohortName" not in queue
        (group,) = queue["resourceGroups"]
        assert group["coveredResources"] == ["cpu", "memory"]
        (flavor,) = group["flavors"]
        assert flavor["name"] == DEFAULT_QUEUE_FLAVOR
        # Within the quota: what the team's GPU queue may take is not the default queue's
        # (tests/queueing/test_kueue.py has the numbers).
        for resource in flavor["resources"]:
            taken = sum(
                parse_quantity(pool.get(resource["name"], "0"))
                + parse_quantity(pool.get("borrowingLimit", {}).get(resource["name"], "0"))
                for pool in (team.get("queue") or {}).get("pools", [])
            )
            assert parse_quantity(resource["nominalQuota"]) == max(
                0, parse_quantity(team["quota"][resource["name"]]) - taken
            )


def test_kueue_holds_what_names_no_queue_outside_platform_namespaces(prod_run):
    release = next(r for r in prod_run.resources if r.type == "kubernetes:helm.sh/v3:Release"
                   and r.inputs.get("name") == "kueue")  # fmt: skip
    config = yaml.safe_load(
        release.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"]
    )
    assert config["manageJobsWithoutQueueName"] is True
    selector = config["managedJobsNamespaceSelector"]["matchExpressions"]
    assert {"key": TEAM_LABEL, "operator": "Exists"} in selector


def test_cpu_only_workloads_wait_for_their_default_queue(prod_run):
    """Under manageJobsWithoutQueueName a workload created before its namespace's default
    LocalQueue would be held for good: the embeddings service is ordered after it."""
    embeddings = next(
        r
        for r in prod_run.resources
        if r.type == "aiplatform:workloads:InferenceService" and r.name.endswith("embeddings")
    )
    local = prod_run.find("LocalQueue", KUEUE_DEFAULT_LOCAL_QUEUE, "search-serving")
    assert local.urn in embeddings.options["dependsOn"]
