"""The PromQL tokenizer the rule and dashboard tests rely on finds metrics and nothing else."""

from __future__ import annotations

import pytest

from tests.monitoring_rules.promql import (
    PromQLSyntaxError,
    grafana_variables,
    ksm_labels,
    label_matcher_values,
    metric_names,
)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("up", {"up"}),
        ('up{job=~".*dcgm.*"} == 0', {"up"}),
        ("sum by (node, gpu) (DCGM_FI_DEV_GPU_TEMP) > 85", {"DCGM_FI_DEV_GPU_TEMP"}),
        ("sum(rate(node_cpu_seconds_total[5m])) without (cpu, mode)", {"node_cpu_seconds_total"}),
        (
            "a_total / on (namespace) group_left (team) b_info * ignoring (x) c",
            {"a_total", "b_info", "c"},
        ),
        ("a * on (pod) group_left b", {"a", "b"}),
        ("max_over_time(count by (node) (x)[6h:5m])", {"x"}),
        ("rate(x[$__rate_interval]) * 60 / 1e3 + 0x1F - .5", {"x"}),
        ("x offset 1h30m and y @ 1609746000", {"x", "y"}),
        ('{__name__="some_metric", job="a"}', {"some_metric"}),
        ('label_replace(kube_pod_labels, "team", "$1", "label_a_b", "(.*)")', {"kube_pod_labels"}),
        ('count_values("version", build_info)', {"build_info"}),
        ("histogram_quantile(0.9, sum by (le) (rate(h_bucket[1h]))) > Inf", {"h_bucket"}),
        ('x{team=~"$team", ns="${namespace}"} unless [[y]]', {"x"}),
        ("sum(a) BY (b) OR c", {"a", "c"}),
        ("vector(0) or time() - process_start_time_seconds", {"process_start_time_seconds"}),
        ("recorded:rule:rate5m > bool 0", {"recorded:rule:rate5m"}),
    ],
)
def test_metric_names(expr: str, expected: set[str]) -> None:
    assert metric_names(expr) == expected


@pytest.mark.parametrize("expr", ["up{job='a'", "rate(x[5m)", "x ~ y"])
def test_metric_names_rejects_garbage(expr: str) -> None:
    with pytest.raises(PromQLSyntaxError):
        metric_names(expr)


def test_ksm_labels_ignore_functions() -> None:
    expr = 'label_replace(kube_pod_labels{label_x_y="a"}, "t", "$1", "label_x_z", "(.*)")'
    assert ksm_labels(expr) == {"label_x_y", "label_x_z"}


def test_label_matcher_values_split_alternations() -> None:
    expr = 'kube_job_labels{wt=~"training|evaluation"} or kube_pod_labels{wt="inference"}'
    assert label_matcher_values(expr, "wt") == {"training", "evaluation", "inference"}


def test_grafana_variables() -> None:
    expr = (
        'label_replace(x{a=~"$team", b="${namespace:regex}"}[$__range], "t", "$1", "a", "(.*)")'
        " [[service]]"
    )
    assert grafana_variables(expr) == {"team", "namespace", "__range", "service"}
