"""The preview reports who may connect to whom: report.json ``reachability`` and one summary line.

The section is tools/netpol.py's matrix of the rendered objects plus the cluster's kube-dns, with
allowed/denied pair counts; above ``REACHABILITY_MAX_ENDPOINTS`` it is skipped (it grows with the
square of the workloads) and says so; a policy netpol cannot parse is reported, not fatal.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.hardening.stacks import Preview
from tools import preview
from tools.mockrun import CapturedResource

SUMMARY = re.compile(
    r"^reachability: (\d+) endpoints, (\d+) of (\d+) pairs may connect, (\d+) denied$", re.M
)


def test_report_has_the_matrix(prod_preview: Preview) -> None:
    section = prod_preview.report()["reachability"]
    assert set(section) >= {"endpoints", "flows", "reachable", "warnings", "summary"}
    ids = {e["id"] for e in section["endpoints"]}
    assert {"research/llama-finetune", "search-serving/llm-chat", "kube-system/kube-dns"} <= ids
    assert "29500/TCP" in section["reachable"]["research/llama-finetune"]["research/llama-finetune"]
    assert "53/UDP" in section["reachable"]["search-serving/llm-chat"]["kube-system/kube-dns"]


def test_report_shows_no_cross_team_flow(prod_preview: Preview) -> None:
    reachable: dict[str, dict[str, list[str]]] = prod_preview.report()["reachability"]["reachable"]
    crossing = [
        (src, dst)
        for src, targets in reachable.items()
        for dst in targets
        if src.split("/")[0] != dst.split("/")[0] and not dst.startswith("kube-system/")
    ]
    assert not crossing


def test_summary_line_matches_the_report(prod_preview: Preview) -> None:
    match = SUMMARY.search(prod_preview.stdout)
    assert match, prod_preview.stdout
    endpoints, allowed, pairs, denied = (int(g) for g in match.groups())
    summary = prod_preview.report()["reachability"]["summary"]
    assert summary == {"endpoints": endpoints, "pairs": pairs, "allowed": allowed, "denied": denied}
    flows = prod_preview.report()["reachability"]["flows"]
    by_pair: dict[tuple[str, str], bool] = {}
    for flow in flows:
        key = (flow["src"], flow["dst"])
        by_pair[key] = by_pair.get(key, False) or flow["allowed"]
    assert (len(by_pair), sum(by_pair.values())) == (pairs, allowed)
    assert allowed + denied == pairs and 0 < allowed < pairs


def _objects(prod_run: Any) -> list[CapturedResource]:
    return list(prod_run.kubernetes_objects())


def test_large_stacks_skip_the_matrix(prod_run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preview, "REACHABILITY_MAX_ENDPOINTS", 2)
    section, line = preview.reachability(_objects(prod_run))
    assert "flows" not in section and section["summary"]["endpoints"] > 2
    assert line.startswith("reachability: skipped, ") and "tools.netpol" in line


def test_unparseable_policies_are_reported_not_fatal(prod_run) -> None:
    objects = _objects(prod_run)
    bad = CapturedResource(
        urn="urn:pulumi:prod::ai-platform::kubernetes:networking.k8s.io/v1:NetworkPolicy::bad",
        type="kubernetes:networking.k8s.io/v1:NetworkPolicy",
        name="bad",
        custom=True,
        parent="",
        inputs={
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "bad", "namespace": "research"},
            "spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 0}]}]},
        },
        options={},
    )
    section, line = preview.reachability([*objects, bad])
    assert "port must be an integer" in section["error"]
    assert line.startswith("reachability: not evaluated: ")
