"""tools/capacity_check.py: the queue arithmetic, checked on rendered resource records."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tools.capacity_check import check_queue_capacity


def _records(run) -> list[dict[str, Any]]:
    return copy.deepcopy([resource.to_record() for resource in run.resources])


def _find(records, kind: str, name: str) -> dict[str, Any]:
    [record] = [
        r
        for r in records
        if r["type"].endswith(f":{kind}") and r["inputs"].get("metadata", {}).get("name") == name
    ]
    return record


def _flavor(cluster_queue: dict[str, Any], name: str) -> dict[str, Any]:
    [group] = cluster_queue["inputs"]["spec"]["resourceGroups"]
    [flavor] = [f for f in group["flavors"] if f["name"] == name]
    return flavor


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_checked_in_stacks_pass(stack, dev_run, prod_run):
    run = {"dev": dev_run, "prod": prod_run}[stack]
    assert check_queue_capacity(_records(run)) == []


def test_nominal_quotas_above_pool_capacity(prod_run):
    records = _records(prod_run)
    research = _find(records, "ClusterQueue", "team-research")
    _flavor(research, "h100-training")["resources"][2]["nominalQuota"] = "60"
    assert check_queue_capacity(records) == [
        "ClusterQueue 'team-research' admits up to 92 nvidia.com/gpu (nominal + borrowing) into "
        "namespace 'research', above its ResourceQuota of 88",
        "ClusterQueues' nominal quotas on flavor 'h100-training' add up to 68 nvidia.com/gpu, "
        "above the pool's capacity x overcommit of 64 (team-platform: 8, team-research: 60)",
    ]


def test_overcommit_annotation_raises_the_bound(prod_run):
    records = _records(prod_run)
    _flavor(_find(records, "ClusterQueue", "team-platform"), "h100-training")["resources"][2][
        "nominalQuota"
    ] = "12"
    quota = next(
        r
        for r in records
        if r["type"].endswith(":ResourceQuota")
        and r["inputs"]["metadata"]["namespace"] == "platform"
    )
    quota["inputs"]["spec"]["hard"]["requests.nvidia.com/gpu"] = "20"
    flavor = _find(records, "ResourceFlavor", "h100-training")
    assert len(check_queue_capacity(records)) == 1
    flavor["inputs"]["metadata"]["annotations"]["aiplatform.io/quota-overcommit"] = "1.25"
    assert check_queue_capacity(records) == []


def test_mig_slices_are_checked_against_the_mig_quota(dev_run):
    records = _records(dev_run)
    quota = next(
        r
        for r in records
        if r["type"].endswith(":ResourceQuota")
        and r["inputs"]["metadata"]["namespace"] == "platform"
    )
    del quota["inputs"]["spec"]["hard"]["requests.nvidia.com/mig-1g.10gb"]
    assert check_queue_capacity(records) == [
        "ClusterQueue 'team-platform' admits 7 nvidia.com/mig-1g.10gb into namespace 'platform', "
        "which has no ResourceQuota on requests.nvidia.com/mig-1g.10gb"
    ]


def test_every_flavor_maps_to_a_pool_and_every_queue_exists(dev_run):
    records = _records(dev_run)
    records = [
        r
        for r in records
        if not (
            r["type"] == "kubernetes:core/v1:NodePatch"
            and r["inputs"]["metadata"]["name"] == "gpu-node-03"
        )
    ]
    local = next(r for r in records if r["type"].endswith(":LocalQueue"))
    local["inputs"]["spec"]["clusterQueue"] = "team-nobody"
    research = _find(records, "ClusterQueue", "team-research")
    _flavor(research, "lab-a100")["name"] = "lab-h100"
    namespace = local["inputs"]["metadata"]["namespace"]
    assert check_queue_capacity(records) == [
        "ResourceFlavor 'lab-a100-mig' selects node pool 'lab-a100-mig', which no Karpenter "
        "NodePool or labelled node provides",
        "ClusterQueue 'team-research' uses flavor 'lab-h100', which no ResourceFlavor defines",
        f"LocalQueue {namespace}/gpu-queue points at ClusterQueue 'team-nobody', which does not "
        "exist",
    ]


def test_unbounded_borrowing_is_a_violation(prod_run):
    records = _records(prod_run)
    resources = _flavor(_find(records, "ClusterQueue", "team-platform"), "l4-inference")[
        "resources"
    ]
    del resources[2]["borrowingLimit"]
    assert check_queue_capacity(records) == [
        "ClusterQueue 'team-platform' may borrow nvidia.com/gpu in flavor 'l4-inference' without "
        "limit; set borrowingLimit so the namespace quota bounds it"
    ]
