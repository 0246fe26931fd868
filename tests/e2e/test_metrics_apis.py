"""The e2e's read-back of the metrics charts (tools/e2e/metrics_apis.py), against a fake API
server: what Helm would have made of the dev stack's values passes, each way it can go wrong is
named."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from tests.harness import run_stack, stack_config
from tools.e2e.metrics_apis import check_metrics_apis

PROMETHEUS_URL = "http://kps-prometheus.monitoring.svc.cluster.local:9090"


def _report(run: Any) -> dict[str, Any]:
    return {
        "resources": [
            {"type": r.type, "inputs": r.inputs}
            for r in run.by_type("kubernetes:helm.sh/v3:Release")
        ]
    }


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    return _report(run_stack(stack_config("dev")))


def _named(name: str, namespace: str | None = None, **fields: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return {"metadata": metadata, **fields}


def _api_service(name: str, namespace: str, service: str) -> dict[str, Any]:
    return _named(
        name,
        spec={"service": {"namespace": namespace, "name": service}},
        status={"conditions": [{"type": "Available", "status": "False", "reason": "x"}]},
    )


def _deployment(namespace: str, name: str, replicas: int, args: list[str]) -> dict[str, Any]:
    return _named(
        name,
        namespace,
        spec={
            "replicas": replicas,
            "template": {"spec": {"containers": [{"name": name, "args": args}]}},
        },
        status={"readyReplicas": replicas},
    )


def live_objects() -> dict[str, list[dict[str, Any]]]:
    """What Helm installs from the dev stack's values (one replica each, no budgets)."""
    rules = {
        "rules": [
            {
                "seriesQuery": 'vllm_num_requests_waiting{namespace!="",pod!=""}',
                "name": {"as": "vllm_num_requests_waiting"},
            }
        ]
    }
    return {
        "apiservices": [
            _api_service("v1beta1.metrics.k8s.io", "metrics-server", "metrics-server"),
            _api_service(
                "v1beta1.custom.metrics.k8s.io", "prometheus-adapter", "prometheus-adapter"
            ),
            _api_service(
                "v1beta1.external.metrics.k8s.io", "keda", "keda-operator-metrics-apiserver"
            ),
        ],
        "deployments metrics-server": [
            _deployment("metrics-server", "metrics-server", 1, ["--secure-port=10250"])
        ],
        "deployments prometheus-adapter": [
            _deployment(
                "prometheus-adapter",
                "prometheus-adapter",
                1,
                ["/adapter", f"--prometheus-url={PROMETHEUS_URL}"],
            )
        ],
        "poddisruptionbudgets metrics-server": [],
        "poddisruptionbudgets prometheus-adapter": [],
        "configmaps prometheus-adapter": [
            _named(
                "prometheus-adapter",
                "prometheus-adapter",
                data={"config.yaml": yaml.safe_dump(rules)},
            )
        ],
    }


class FakeCluster:
    def __init__(self, objects: dict[str, list[dict[str, Any]]]) -> None:
        self.objects = objects

    def get_json(self, *args: str) -> Any:
        kind = args[0]
        key = kind if len(args) == 1 else f"{kind} {args[2]}"
        return {"items": self.objects.get(key, [])}


def test_what_helm_makes_of_the_values_passes(report) -> None:
    problems, facts = check_metrics_apis(FakeCluster(live_objects()), report)
    assert problems == []
    assert (
        "APIService v1beta1.metrics.k8s.io -> metrics-server/metrics-server: Available=False (x)"
        in facts
    )
    assert "prometheus-adapter rules: vllm_num_requests_waiting" in facts


def _broken(change: Any) -> dict[str, list[dict[str, Any]]]:
    objects = copy.deepcopy(live_objects())
    change(objects)
    return objects


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            lambda o: o["apiservices"].pop(0),
            "APIService v1beta1.metrics.k8s.io: missing",
        ),
        (
            lambda o: o["apiservices"][2]["spec"]["service"].update(namespace="prometheus-adapter"),
            "APIService v1beta1.external.metrics.k8s.io points at the adapter",
        ),
        (
            lambda o: o["deployments metrics-server"][0]["spec"].update(replicas=2),
            "Deployment metrics-server/metrics-server: 2 replicas, not 1",
        ),
        (
            lambda o: o["poddisruptionbudgets prometheus-adapter"].append(
                _named("prometheus-adapter", "prometheus-adapter", spec={"maxUnavailable": 1})
            ),
            "prometheus-adapter/prometheus-adapter: a PodDisruptionBudget at 1 replica(s)",
        ),
        (
            lambda o: o["configmaps prometheus-adapter"][0]["data"].update(
                {"config.yaml": yaml.safe_dump({"rules": []})}
            ),
            "prometheus-adapter serves [], the stack declared ['vllm_num_requests_waiting']",
        ),
        (
            lambda o: o["deployments prometheus-adapter"][0]["spec"]["template"]["spec"][
                "containers"
            ][0].update(args=["--prometheus-url=http://prometheus.default.svc:9090"]),
            "prometheus-adapter: no --prometheus-url=" + PROMETHEUS_URL,
        ),
    ],
)
def test_each_way_it_goes_wrong_is_named(report, change, problem) -> None:
    problems, _ = check_metrics_apis(FakeCluster(_broken(change)), report)
    assert len(problems) == 1 and problems[0].startswith(problem), problems


def test_a_budget_with_both_keys_is_named(prod_run) -> None:
    objects = live_objects()
    for name in ("metrics-server", "prometheus-adapter"):
        objects[f"deployments {name}"][0]["spec"]["replicas"] = 2
    objects["poddisruptionbudgets metrics-server"] = [
        _named("metrics-server", "metrics-server", spec={"maxUnavailable": 1, "minAvailable": 1})
    ]
    objects["poddisruptionbudgets prometheus-adapter"] = [
        _named("prometheus-adapter", "prometheus-adapter", spec={"maxUnavailable": 1})
    ]
    problems, facts = check_metrics_apis(FakeCluster(objects), _report(prod_run))
    assert problems == [
        "PodDisruptionBudget metrics-server/metrics-server: sets ['maxUnavailable', 'minAvailable']"
    ]
    assert "PodDisruptionBudget prometheus-adapter/prometheus-adapter: maxUnavailable only" in facts


def test_a_stack_without_metrics_apis_has_nothing_to_check() -> None:
    problems, facts = check_metrics_apis(FakeCluster({}), {"resources": []})
    assert (problems, facts) == ([], ["the stack installs no metrics API"])
