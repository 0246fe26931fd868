"""TeamRedis: what it renders under mocks, and the team Redis as the checked-in stacks deploy it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pulumi.runtime.mocks import MockResourceArgs

from components.constants import METRICS_PORT_NAME, NAMESPACE_NAME_LABEL, REDIS_CLIENT_LABEL
from components.team_redis import (
    REDIS_METRICS_PORT,
    REDIS_PASSWORD_KEY,
    REDIS_PORT,
    REDIS_SECRET,
    REDIS_SERVICE,
    redis_client_env,
    redis_egress_rule,
    redis_server_selector,
)
from components.team_redis_server import (
    AUTH_DIR,
    CONFIG_HASH_ANNOTATION,
    PASSWORD_REVISION_ANNOTATION,
    REDIS_CLAIM,
    REDIS_SERVER_CONFIG_KEY,
    TeamRedis,
    TeamRedisArgs,
    redis_url,
    server_config,
)
from components.workloads import ComputeResources
from tests.workloads.conftest import container, env_of, mandatory_violations, only, pod_spec
from tools import mockrun
from tools.mockrun import MockRun, PlatformMocks, run_under_mocks

KNOWN_PASSWORD = "Known0Redis0Password0Value0For0Tests000"
RANDOM_PASSWORD_TYPE = "random:index/randomPassword:RandomPassword"


class KnownPasswordMocks(PlatformMocks):
    """The RandomPassword's ``result`` is known, so the tests can look for it everywhere."""

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        resource_id, state = super().new_resource(args)
        if args.typ == RANDOM_PASSWORD_TYPE:
            state = {**state, "result": KNOWN_PASSWORD}
        return resource_id, state


def redis_args(**overrides: Any) -> TeamRedisArgs:
    base: dict[str, Any] = {"team": "research", "namespace": "research", "storage_class": "fast"}
    base.update(overrides)
    return TeamRedisArgs(**base)


def render_redis(args: TeamRedisArgs) -> MockRun[Any]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(mockrun, "PlatformMocks", KnownPasswordMocks)
        return run_under_mocks(
            lambda: TeamRedis("research-redis", args), stack="test", config={}, fresh_modules=False
        )


@pytest.fixture(scope="module")
def dev_redis() -> MockRun[Any]:
    return render_redis(redis_args(service_monitor=True))


@pytest.fixture(scope="module")
def prod_redis() -> MockRun[Any]:
    return render_redis(
        redis_args(
            storage_class="checkpoints-gp3",
            protect=True,
            priority_class="high",
            password_revision=3,
        )
    )


def test_renders_the_server_and_what_it_needs(dev_redis: MockRun[Any]) -> None:
    objects = sorted((r.kind, r.metadata["name"]) for r in dev_redis.kubernetes_objects())
    assert objects == [
        ("ConfigMap", "team-redis-config"),
        ("NetworkPolicy", "team-redis-network"),
        ("PersistentVolumeClaim", REDIS_CLAIM),
        ("Secret", REDIS_SECRET),
        ("Service", REDIS_SERVICE),
        ("ServiceMonitor", REDIS_SERVICE),
        ("StatefulSet", REDIS_SERVICE),
    ]
    assert len(dev_redis.by_type(RANDOM_PASSWORD_TYPE)) == 1


def test_the_password_is_in_no_plain_input(dev_redis: MockRun[Any]) -> None:
    for resource in dev_redis.resources:
        assert KNOWN_PASSWORD not in json.dumps(resource.inputs), resource.name
    secret = only(dev_redis, "Secret")
    assert secret.inputs["stringData"] == "[secret]"
    assert {"data", "stringData"} <= set(secret.options["additionalSecretOutputs"])
    [password] = dev_redis.by_type(RANDOM_PASSWORD_TYPE)
    assert password.inputs["special"] is False  # it goes into a URL and a config line unquoted
    assert password.inputs["length"] >= 32


def test_the_url_is_the_documented_one() -> None:
    assert redis_url("pw", redis_args().host) == (
        "redis://:pw@team-redis.research.svc.cluster.local:6379/0"
    )


def test_auth_is_required_and_the_password_stays_off_command_lines(
    dev_redis: MockRun[Any],
) -> None:
    statefulset = only(dev_redis, "StatefulSet")
    redis = container(statefulset, "redis")
    assert redis["command"] == ["redis-server", "/etc/redis/redis.conf"]
    assert "args" not in redis
    config = only(dev_redis, "ConfigMap").inputs["data"]["redis.conf"]
    assert config.splitlines()[-1] == f"include {AUTH_DIR}/{REDIS_SERVER_CONFIG_KEY}"
    assert "requirepass" not in config
    [auth] = [v for v in pod_spec(statefulset)["volumes"] if v["name"] == "auth"]
    assert auth["secret"]["secretName"] == REDIS_SECRET
    assert auth["secret"]["items"] == [
        {"key": REDIS_SERVER_CONFIG_KEY, "path": REDIS_SERVER_CONFIG_KEY}
    ]
    secret_ref = {"secretKeyRef": {"name": REDIS_SECRET, "key": REDIS_PASSWORD_KEY}}
    assert env_of(redis) == {"REDISCLI_AUTH": secret_ref}
    assert env_of(container(statefulset, "exporter"))["REDIS_PASSWORD"] == secret_ref


def test_probes_authenticate(dev_redis: MockRun[Any]) -> None:
    redis = container(only(dev_redis, "StatefulSet"), "redis")
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        command = redis[probe]["exec"]["command"]
        # redis-cli exits 0 on an error reply (NOAUTH): the probe compares the answer itself.
        assert command == [
            "sh",
            "-c",
            f'test "$(redis-cli -h 127.0.0.1 -p {REDIS_PORT} ping)" = PONG',
        ]


def test_memory_limit_maxmemory_and_the_eviction_policy() -> None:
    args = redis_args(
        resources=ComputeResources(cpu="500m", memory="2Gi"),
        maxmemory_bytes=1536 * 1024 * 1024,
        eviction_policy="allkeys-lru",
    )
    lines = server_config(args).splitlines()
    assert "maxmemory 1610612736" in lines
    assert "maxmemory-policy allkeys-lru" in lines
    assert "appendonly yes" in lines
    run = render_redis(args)
    redis = container(only(run, "StatefulSet"), "redis")
    assert redis["resources"] == {
        "requests": {"cpu": "500m", "memory": "2Gi"},
        "limits": {"cpu": "500m", "memory": "2Gi"},
    }


def test_a_config_change_or_a_new_password_restarts_the_server(
    dev_redis: MockRun[Any], prod_redis: MockRun[Any]
) -> None:
    dev = only(dev_redis, "StatefulSet").inputs["spec"]["template"]["metadata"]["annotations"]
    prod = only(prod_redis, "StatefulSet").inputs["spec"]["template"]["metadata"]["annotations"]
    assert dev[PASSWORD_REVISION_ANNOTATION] == "1"
    assert prod[PASSWORD_REVISION_ANNOTATION] == "3"
    assert dev[CONFIG_HASH_ANNOTATION] == prod[CONFIG_HASH_ANNOTATION]
    other = redis_args(eviction_policy="allkeys-lfu")
    changed = only(render_redis(other), "StatefulSet").inputs["spec"]["template"]["metadata"]
    assert changed["annotations"][CONFIG_HASH_ANNOTATION] != dev[CONFIG_HASH_ANNOTATION]
    [password] = prod_redis.by_type(RANDOM_PASSWORD_TYPE)
    assert password.inputs["keepers"] == {"revision": "3"}


def test_only_the_teams_clients_reach_redis_and_only_monitoring_the_exporter(
    dev_redis: MockRun[Any],
) -> None:
    spec = only(dev_redis, "NetworkPolicy").inputs["spec"]
    assert spec["podSelector"] == {"matchLabels": redis_server_selector()}
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    clients, scrapes = spec["ingress"]
    # A bare podSelector: pods of the policy's own namespace only.
    assert clients == {
        "from": [{"podSelector": {"matchLabels": {REDIS_CLIENT_LABEL: "true"}}}],
        "ports": [{"protocol": "TCP", "port": REDIS_PORT}],
    }
    [peer] = scrapes["from"]
    assert peer["namespaceSelector"]["matchExpressions"] == [
        {"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": ["monitoring"]}
    ]
    assert scrapes["ports"] == [{"protocol": "TCP", "port": REDIS_METRICS_PORT}]
    assert "egress" not in spec  # Egress in policyTypes, no rule: nothing out


def test_the_client_contract_selects_this_server(dev_redis: MockRun[Any]) -> None:
    labels = only(dev_redis, "StatefulSet").inputs["spec"]["template"]["metadata"]["labels"]
    [peer] = redis_egress_rule()["to"]
    assert peer["podSelector"]["matchLabels"].items() <= labels.items()
    service = only(dev_redis, "Service").inputs
    assert service["metadata"]["name"] == REDIS_SERVICE
    assert service["spec"]["selector"].items() <= labels.items()
    env = {e["name"]: e for e in redis_client_env()}
    assert env["REDIS_URL"]["valueFrom"]["secretKeyRef"]["name"] == REDIS_SECRET


def test_prometheus_scrapes_the_exporter(dev_redis: MockRun[Any]) -> None:
    monitor = only(dev_redis, "ServiceMonitor").inputs["spec"]
    assert monitor["endpoints"][0]["port"] == METRICS_PORT_NAME
    ports = {p["name"]: p["port"] for p in only(dev_redis, "Service").inputs["spec"]["ports"]}
    assert ports == {"redis": REDIS_PORT, METRICS_PORT_NAME: REDIS_METRICS_PORT}
    exporter = container(only(dev_redis, "StatefulSet"), "exporter")
    assert exporter["ports"][0]["name"] == METRICS_PORT_NAME
    assert env_of(exporter)["REDIS_EXPORTER_INCLUDE_CONFIG_METRICS"] == "false"


def test_no_service_monitor_without_the_prometheus_operator() -> None:
    run = render_redis(redis_args(service_monitor=False))
    assert "ServiceMonitor" not in {r.kind for r in run.kubernetes_objects()}


def test_the_claim_is_protected_in_prod_and_waits_for_its_namespace_only(
    dev_redis: MockRun[Any], prod_redis: MockRun[Any]
) -> None:
    assert only(prod_redis, "PersistentVolumeClaim").options["protect"] is True
    assert only(dev_redis, "PersistentVolumeClaim").options["protect"] is False
    statefulset = only(prod_redis, "StatefulSet")
    assert pod_spec(statefulset)["volumes"][0] == {
        "name": "data",
        "persistentVolumeClaim": {"claimName": REDIS_CLAIM},
    }
    assert statefulset.inputs["spec"]["replicas"] == 1


def test_restricted_and_every_prod_mandatory_policy(prod_redis: MockRun[Any]) -> None:
    assert mandatory_violations(prod_redis.resources, stack_policies=False) == []
    spec = pod_spec(only(prod_redis, "StatefulSet"))
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["automountServiceAccountToken"] is False
    assert spec["priorityClassName"] == "high"
    for name in ("redis", "exporter"):
        security = container(only(prod_redis, "StatefulSet"), name)["securityContext"]
        assert security["capabilities"] == {"drop": ["ALL"]}
        assert security["readOnlyRootFilesystem"] is True


def test_bad_args_are_refused() -> None:
    with pytest.raises(ValueError, match="maxmemory_bytes must be > 0"):
        redis_args(maxmemory_bytes=0)
    with pytest.raises(ValueError, match="password_revision must be >= 1"):
        redis_args(password_revision=0)


# --- the checked-in stacks ----------------------------------------------------------------------


def test_dev_deploys_research_a_redis_and_publishes_where(dev_run: MockRun[Any]) -> None:
    statefulset = dev_run.find("StatefulSet", REDIS_SERVICE, "research")
    assert statefulset.inputs["spec"]["template"]["spec"]["containers"][0]["image"] == (
        "public.ecr.aws/docker/library/redis:7.4.2-alpine"
    )
    teams = dev_run.value.model_dump(mode="json")["teams"]
    assert teams["research"]["redis"] == {
        "service": REDIS_SERVICE,
        "host": "team-redis.research.svc.cluster.local",
        "secret": REDIS_SECRET,
    }
    assert teams["search-serving"]["redis"] is None
    claim = dev_run.find("PersistentVolumeClaim", REDIS_CLAIM, "research")
    assert claim.options["protect"] is False


def test_prod_protects_the_redis_volume(prod_run: MockRun[Any]) -> None:
    claim = prod_run.find("PersistentVolumeClaim", REDIS_CLAIM, "research")
    assert claim.options["protect"] is True
    assert claim.inputs["spec"]["storageClassName"] == "checkpoints-gp3"  # the default class
