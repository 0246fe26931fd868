"""TeamNamespace renders a tenant: restricted PSA, GPU quota, defaults, RBAC, default deny."""

from __future__ import annotations

from components.constants import (
    ALLOW_DNS_POLICY_NAME,
    DEFAULT_DENY_POLICY_NAME,
    GPU_QUOTA_KEY,
    PSA_ENFORCE_LABEL,
    TEAM_ADMIN_ROLE,
    TEAM_ENV_CONFIGMAP,
    TEAM_LABEL,
    TEAM_LIMIT_RANGE_NAME,
    TEAM_QUOTA_NAME,
    TEAM_VIEWER_ROLE,
    TEAM_WORKLOAD_SERVICE_ACCOUNT,
)
from tests.harness import run_stack


def test_namespace_enforces_restricted_pod_security(dev_run):
    labels = dev_run.find("Namespace", "research").metadata["labels"]
    assert labels[PSA_ENFORCE_LABEL] == "restricted"
    assert labels[TEAM_LABEL] == "research"


def test_quota_carries_gpu_key_and_storage(dev_run):
    hard = dev_run.find("ResourceQuota", TEAM_QUOTA_NAME, "research").inputs["spec"]["hard"]
    assert hard[GPU_QUOTA_KEY] == "8"
    assert hard["requests.cpu"] == "66"
    assert hard["requests.memory"] == hard["limits.memory"] == "514Gi"
    assert hard["requests.storage"] == "4Ti"
    assert hard["persistentvolumeclaims"] == "20"


def test_limit_range_uses_seed_defaults_unless_overridden(dev_run):
    research = dev_run.find("LimitRange", TEAM_LIMIT_RANGE_NAME, "research").inputs["spec"]
    assert research["limits"] == [
        {
            "type": "Container",
            "defaultRequest": {"cpu": "2", "memory": "8Gi"},
            "default": {"cpu": "4", "memory": "16Gi"},
        }
    ]
    serving = dev_run.find("LimitRange", TEAM_LIMIT_RANGE_NAME, "search-serving").inputs["spec"]
    assert serving["limits"][0]["default"] == {"cpu": "2", "memory": "8Gi"}


def test_default_deny_blocks_both_directions(dev_run):
    spec = dev_run.find("NetworkPolicy", DEFAULT_DENY_POLICY_NAME, "platform").inputs["spec"]
    assert spec["podSelector"] == {}
    assert sorted(spec["policyTypes"]) == ["Egress", "Ingress"]
    assert "ingress" not in spec and "egress" not in spec


def test_dns_egress_reaches_only_kube_dns_on_port_53(dev_run):
    spec = dev_run.find("NetworkPolicy", ALLOW_DNS_POLICY_NAME, "research").inputs["spec"]
    assert spec["policyTypes"] == ["Egress"]
    [rule] = spec["egress"]
    assert rule["to"] == [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
        }
    ]
    assert {(p["protocol"], p["port"]) for p in rule["ports"]} == {("UDP", 53), ("TCP", 53)}


def test_rbac_binds_groups_and_keeps_isolation_out_of_tenant_hands(dev_run):
    binding = dev_run.find("RoleBinding", TEAM_ADMIN_ROLE, "research").inputs
    assert [s["name"] for s in binding["subjects"]] == ["ml-research-leads"]
    assert binding["roleRef"]["name"] == TEAM_ADMIN_ROLE
    admin_rules = dev_run.find("Role", TEAM_ADMIN_ROLE, "research").inputs["rules"]
    granted = {r for rule in admin_rules for r in rule["resources"]}
    assert "jobs" in granted and "secrets" in granted
    assert not granted & {
        "resourcequotas",
        "limitranges",
        "networkpolicies",
        "roles",
        "rolebindings",
    }
    viewer_rules = dev_run.find("Role", TEAM_VIEWER_ROLE, "research").inputs["rules"]
    assert all(set(rule["verbs"]) <= {"get", "list", "watch"} for rule in viewer_rules)
    assert "secrets" not in {r for rule in viewer_rules for r in rule["resources"]}


def test_no_binding_for_a_role_without_groups(dev_run):
    bindings = [
        r
        for r in dev_run.kubernetes_objects()
        if r.kind == "RoleBinding" and r.metadata["namespace"] == "platform"
    ]
    assert [b.metadata["name"] for b in bindings] == [TEAM_ADMIN_ROLE]


def test_workload_service_account_does_not_mount_tokens(dev_run):
    sa = dev_run.find("ServiceAccount", TEAM_WORKLOAD_SERVICE_ACCOUNT, "research").inputs
    assert sa["automountServiceAccountToken"] is False


def test_env_config_map_carries_training_env(dev_run, prod_run):
    dev_env = dev_run.find("ConfigMap", TEAM_ENV_CONFIGMAP, "research").inputs["data"]
    assert dev_env == {"HF_HUB_OFFLINE": "1", "WANDB_MODE": "offline", "TRAINING_ENV": "dev"}
    prod_env = prod_run.find("ConfigMap", TEAM_ENV_CONFIGMAP, "research").inputs["data"]
    assert prod_env["TRAINING_ENV"] == "prod"


def test_namespace_is_retained_in_prod_only(dev_run, prod_run):
    assert dev_run.find("Namespace", "research").options["retainOnDelete"] is False
    assert prod_run.find("Namespace", "research").options["retainOnDelete"] is True


def test_namespaced_children_wait_for_the_namespace(dev_run):
    namespace = dev_run.find("Namespace", "research")
    quota = dev_run.find("ResourceQuota", TEAM_QUOTA_NAME, "research")
    assert namespace.urn in quota.options["dependsOn"]
    assert quota.parent.endswith("aiplatform:tenancy:TeamNamespace::research")


def test_custom_namespace_name_is_used_everywhere(dev_config):
    dev_config["teams"][2]["namespace"] = "platform-tools"
    run = run_stack(dev_config)
    namespaces = {r.metadata.get("namespace") for r in run.kubernetes_objects()} - {None}
    assert "platform-tools" in namespaces and "platform" not in namespaces
    assert run.value.teams["platform"].namespace == "platform-tools"
