"""components/predicates.py: the checks the config rules and the components share."""

from __future__ import annotations

import pytest

from components.predicates import (
    dependency_env,
    global_default,
    inference_conflicts,
    is_dns1035_label,
    is_env_name,
    opens_everything,
)
from components.priority_classes import PriorityClassesArgs, PriorityClassSpec


def test_names() -> None:
    assert is_dns1035_label("llama-eval", 40)
    assert not is_dns1035_label("1llama", 40)  # starts with a digit
    assert not is_dns1035_label("a" * 41, 40)
    assert is_env_name("_HF_HOME2") and not is_env_name("2HF") and not is_env_name("HF-HOME")


@pytest.mark.parametrize(
    ("cidr", "everything"),
    [("0.0.0.0/0", True), ("::/0", True), ("0.0.0.0/1", False), ("10.0.0.0/8", False)],
)
def test_world_open_cidrs(cidr: str, everything: bool) -> None:
    assert opens_everything(cidr) is everything


def test_the_global_default_is_the_one_class_that_claims_it() -> None:
    normal, high = PriorityClassSpec("normal", 1000, True), PriorityClassSpec("high", 10000)
    assert global_default([high, normal]) == "normal"
    assert global_default([high]) is None
    assert global_default([normal, PriorityClassSpec("low", 1, True)]) is None


def test_priority_classes_refuse_two_global_defaults() -> None:
    with pytest.raises(ValueError, match="more than one global default"):
        PriorityClassesArgs([PriorityClassSpec("a", 1, True), PriorityClassSpec("b", 2, True)])


def test_dependency_addresses() -> None:
    assert dependency_env(["model-cache"]) == {"MODEL_CACHE_HOST", "MODEL_CACHE_PORT"}


def test_inference_conflicts_in_the_order_the_config_reports_them() -> None:
    settings = {
        "port": 8080,
        "metrics_port": 9090,
        "min_replicas": 2,
        "max_replicas": 4,
        "has_metric": True,
        "min_available": None,
        "max_unavailable": 1,
    }
    assert inference_conflicts(**settings) == []  # type: ignore[arg-type]
    broken = {
        **settings,
        "metrics_port": 8080,
        "min_replicas": 5,
        "has_metric": False,
        "min_available": 1,
    }
    assert inference_conflicts(**broken) == [  # type: ignore[arg-type]
        "replicas",
        "budget-both",
        "ports",
        "no-metric",
    ]
    blocking = {**settings, "min_available": 2, "max_unavailable": None}
    assert inference_conflicts(**blocking) == ["budget-blocks-drains"]  # type: ignore[arg-type]
