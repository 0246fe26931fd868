"""The day-two Kueue section's arithmetic: what the rendered queues and quotas let Kueue admit.

Pure: no cluster. The scenarios' jobs are computed from the objects the platform renders (here
under mocks, as the offline preview renders them), so these tests pin the numbers the section
submits on the dev stack and the rules that pick them.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, cast

import pytest

from components.constants import KUEUE_QUEUE_LABEL, NODE_POOL_LABEL
from infra.config import ConfigError, validate_platform_config
from tools.e2e import day2_kueue as k
from tools.e2e.cluster import HOLD_ANNOTATION, LocalCluster, hold_stage, load_stack

GI = Decimal(2**30)


@pytest.fixture(scope="module")
def dev_rendered(dev_run: Any) -> k.Rendered:
    return k.Rendered.from_manifests(r.inputs for r in dev_run.kubernetes_objects())


@pytest.fixture(scope="module")
def dev_contracts() -> dict[str, Any]:
    return k.contracts_of(load_stack("dev"))


def _pools(contracts: dict[str, Any]) -> tuple[dict[str, str], dict[str, int]]:
    return (
        {name: c.gpu_resource for name, c in contracts.items()},
        {name: c.resources_per_node for name, c in contracts.items()},
    )


def _queue(
    name: str,
    namespace: str,
    flavors: dict[str, dict[str, k.Limits]],
    cohort: str | None = "all",
    reclaim: str = "Any",
) -> dict[str, Any]:
    """A ClusterQueue manifest as the platform renders one."""
    return {
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            **({"cohortName": cohort} if cohort else {}),
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
            "preemption": {
                "withinClusterQueue": "LowerPriority",
                "reclaimWithinCohort": reclaim,
                "borrowWithinCohort": {"policy": "Never"},
            },
            "resourceGroups": [
                {
                    "coveredResources": sorted({r for f in flavors.values() for r in f}),
                    "flavors": [
                        {
                            "name": flavor,
                            "resources": [
                                {
                                    "name": resource,
                                    "nominalQuota": str(limits.nominal),
                                    **(
                                        {"borrowingLimit": str(limits.borrowing_limit)}
                                        if limits.borrowing_limit is not None
                                        else {}
                                    ),
                                    **(
                                        {"lendingLimit": str(limits.lending_limit)}
                                        if limits.lending_limit is not None
                                        else {}
                                    ),
                                }
                                for resource, limits in resources.items()
                            ],
                        }
                        for flavor, resources in flavors.items()
                    ],
                }
            ],
        },
    }


def _limits(nominal: int, borrow: int | None = 0, lend: int | None = None) -> k.Limits:
    return k.Limits(
        Decimal(nominal),
        None if borrow is None else Decimal(borrow),
        None if lend is None else Decimal(lend),
    )


def _gib(nominal: int, borrow: int = 0) -> k.Limits:
    return k.Limits(nominal * GI, borrow * GI)


def _gpu_flavor(gpus: k.Limits, cpu: k.Limits, memory: k.Limits) -> dict[str, k.Limits]:
    return {"cpu": cpu, "memory": memory, "nvidia.com/gpu": gpus}


# --- the dev stack's numbers --------------------------------------------------------------------


def test_dev_research_borrows_two_gpus_of_search_servings_idle_quota(dev_rendered, dev_contracts):
    plan = k.plan_borrowing(dev_rendered, *_pools(dev_contracts))
    assert (plan.queue.name, plan.lender.name, plan.flavor) == (
        "team-research",
        "team-search-serving",
        "lab-a100",
    )
    assert (plan.nominal, plan.borrow, plan.admissible, plan.per_node) == (6, 2, 8, 4)
    # 48 cpu + the 8 search-serving lends = 56 for 8 GPUs: 7 a GPU binds before 8 (nominal's).
    assert plan.worker == k.Worker(4, Decimal(28), 208 * GI)
    assert plan.first == k.Demand(plan.worker, 1)
    assert plan.lender_job == k.Worker(2, Decimal(8), 32 * GI)
    assert plan.largest == k.Demand(k.Worker(4, Decimal(28), 208 * GI), 2)
    # The first job fits nominal, the second needs the borrowed 2, a third never fits.
    assert plan.first.total("nvidia.com/gpu", "nvidia.com/gpu") <= plan.nominal < plan.full
    assert plan.full == plan.admissible == 8


def test_dev_largest_admissible_job_is_exactly_nominal_plus_what_the_cohort_lends(dev_rendered):
    queue = dev_rendered.queues["team-research"]
    assert dev_rendered.admissible(queue, "lab-a100", "nvidia.com/gpu") == 8
    assert dev_rendered.admissible(queue, "lab-a100", "cpu") == 56  # borrowing limit 16, lent 8
    assert dev_rendered.admissible(queue, "lab-a100", "memory") == 416 * GI  # limit 128Gi, lent 32
    busy = dev_rendered.admissible(queue, "lab-a100", "nvidia.com/gpu", ["team-search-serving"])
    assert busy == 6


def test_dev_priorities_of_research(dev_rendered):
    plan = k.plan_priorities(dev_rendered, "research")
    assert (plan.low.name, plan.low.value) == ("normal", 1000)
    assert plan.high is not None and (plan.high.name, plan.high.value) == ("high", 10000)
    assert [c.name for c in plan.never] == ["batch-low"]


def test_dev_batch_low_has_nothing_to_reclaim(dev_rendered, dev_contracts):
    """research may use batch-low, but nobody may borrow its A100s (borrowing limits are 0);
    the platform team, which lends its MIG slices to search-serving, may not use it (the config
    refuses it: Kueue would reclaim the slices for a batch-low job by preemption)."""
    assert k.reclaim_cases(dev_rendered, _pools(dev_contracts)[0]) == []
    assert "batch-low" not in dev_rendered.allowed["platform"]


def test_dev_with_batch_low_for_the_platform_team_it_would_reclaim(dev_config):
    """The stack as it was before the rule: what the section showed on the real controller
    (a batch-low job of 7 slices preempting search-serving's critical 19-slice borrower)."""
    del dev_config["teams"][2]["priorityClasses"]
    dev_config["queueing"] = {"reclaimWithinCohort": "Any"}
    with pytest.raises(ConfigError, match="team 'platform' may use 'batch-low'"):
        validate_platform_config(dev_config, "Pulumi.dev.yaml")


def test_dev_research_queues_admit_no_more_than_its_namespace_quota(dev_rendered, dev_contracts):
    """The GPU queue may take 64 cpu and 512Gi of research's 66 and 514Gi (nominal plus
    borrowing limit), so its default queue may admit the rest, what the team Redis needs: the
    two never admit what the quota refuses."""
    plan = k.plan_quota(dev_rendered, k.plan_borrowing(dev_rendered, *_pools(dev_contracts)))
    assert plan.hard == {"cpu": 66, "memory": 514 * GI, "nvidia.com/gpu": 8}
    assert plan.gpu_queue == {"cpu": 64, "memory": 512 * GI, "nvidia.com/gpu": 8}
    assert plan.default_queue == {"cpu": 2, "memory": 2 * GI}
    assert plan.conflicts() == []
    # 66 - the largest job's 56 + 1: the smallest CPU-only job the quota could not hold beside it.
    assert plan.overflow == k.Demand(k.Worker(0, Decimal(11), GI), 1)


@pytest.mark.parametrize("namespace", ["research", "search-serving", "platform"])
def test_dev_every_team_quota_covers_both_its_queues(dev_rendered, namespace):
    hard = dev_rendered.quotas[namespace]
    for resource in ("cpu", "memory"):
        total = Decimal(0)
        for queue in (dev_rendered.team_queue(namespace), dev_rendered.default_queue(namespace)):
            if queue is None:
                continue
            for flavor in queue.flavors.values():
                limits = flavor.get(resource)
                if limits is not None:
                    total += limits.nominal + (limits.borrowing_limit or 0)
        quota = k.quota_hard(hard, resource)
        assert quota is not None and total <= quota, (namespace, resource)


def test_prod_has_a_borrowing_plan_too(prod_run):
    rendered = k.Rendered.from_manifests(r.inputs for r in prod_run.kubernetes_objects())
    plan = k.plan_borrowing(rendered, *_pools(k.contracts_of(load_stack("prod"))))
    assert (plan.queue.name, plan.flavor, plan.nominal, plan.borrow) == (
        "team-research",
        "h100-training",
        56,
        8,
    )
    assert (plan.first.workers, plan.worker.gpus, plan.full) == (7, 8, 64)


# --- the rules, on small cohorts -----------------------------------------------------------------


def _rendered(*queues: dict[str, Any], allowed: dict[str, str] | None = None) -> k.Rendered:
    extra: list[dict[str, Any]] = [
        {"kind": "PriorityClass", "metadata": {"name": name}, "value": value, **more}
        for name, value, more in (
            ("normal", 1000, {"globalDefault": True}),
            ("batch", 10, {"preemptionPolicy": "Never"}),
            ("urgent", 5000, {}),
        )
    ]
    for namespace, classes in (allowed or {}).items():
        extra.append(
            {
                "kind": "Namespace",
                "metadata": {
                    "name": namespace,
                    "annotations": {k.TENANT_PRIORITY_CLASSES_ANNOTATION: classes},
                },
            }
        )
    return k.Rendered.from_manifests([*queues, *extra])


POOL = {"a": "nvidia.com/gpu"}
PER_NODE = {"a": 4}


def test_borrowable_is_the_peers_lendable_quota_capped_by_the_borrowing_limit():
    rendered = _rendered(
        _queue("q1", "n1", {"a": _gpu_flavor(_limits(4, None), _limits(16, None), _limits(64))}),
        _queue("q2", "n2", {"a": _gpu_flavor(_limits(8, 0, 3), _limits(8), _limits(64))}),
        _queue("q3", "n3", {"a": _gpu_flavor(_limits(2), _limits(8), _limits(64))}),
        _queue("alone", "n4", {"a": _gpu_flavor(_limits(2, None), _limits(8), _limits(64))}, None),
    )
    q1 = rendered.queues["q1"]
    assert rendered.borrowable(q1, "a", "nvidia.com/gpu") == 5  # lending limit 3, then all 2
    assert rendered.borrowable(q1, "a", "nvidia.com/gpu", ["q3"]) == 3
    assert rendered.borrowable(q1, "a", "cpu") == 16  # no limit: all the peers have
    assert rendered.borrowable(q1, "a", "memory") == 0  # limit 0
    assert rendered.borrowable(q1, "b", "nvidia.com/gpu") == 0  # a flavour it does not have
    assert rendered.borrowable(rendered.queues["alone"], "a", "nvidia.com/gpu") == 0
    assert rendered.admissible(q1, "a", "nvidia.com/gpu") == 9


def test_no_borrowing_plan_without_a_borrowing_limit_says_why():
    rendered = _rendered(
        _queue("q1", "n1", {"a": _gpu_flavor(_limits(4), _limits(16), _limits(64))}),
        _queue("q2", "n2", {"a": _gpu_flavor(_limits(4), _limits(16), _limits(64))}),
    )
    with pytest.raises(k.PlanError, match="q1 on a: nominal 4, borrowing 0 from q2"):
        k.plan_borrowing(rendered, POOL, PER_NODE)


def test_a_plan_needs_a_job_that_fits_nominal_once_and_exceeds_it_twice():
    """Nominal 3 with 1 to borrow on 4-GPU nodes: 2 GPUs fit once (2 <= 3) and twice only by
    borrowing (4 > 3, 4 <= 4)."""
    rendered = _rendered(
        _queue("q1", "n1", {"a": _gpu_flavor(_limits(3, 1), _limits(12, 4), _gib(48, 16))}),
        _queue("q2", "n2", {"a": _gpu_flavor(_limits(1), _limits(4), _gib(16))}),
    )
    plan = k.plan_borrowing(rendered, POOL, PER_NODE)
    assert (plan.nominal, plan.borrow, plan.worker.gpus, plan.first.workers) == (3, 1, 2, 1)
    assert plan.worker == k.Worker(2, Decimal(8), 32 * GI)
    assert plan.largest == k.Demand(k.Worker(4, Decimal(16), 64 * GI), 1)


@pytest.mark.parametrize(
    ("nominal", "admissible", "per_node", "expected"),
    [
        (6, 8, 4, 4),  # dev: 1 x 4 within 6, + 4 = 8, + 4 more = 12 > 8
        (56, 64, 8, 8),  # prod: 7 x 8 = 56, + 8 = 64
        (3, 4, 4, 2),
        (4, 4, 4, None),  # nothing to borrow
        (8, 20, 4, None),  # 2 x 4 + 4 = 12, and 16 <= 20 still fits: no limit to show
    ],
)
def test_worker_size_fills_nominal_borrows_with_one_more_and_no_further(
    nominal, admissible, per_node, expected
):
    assert k.worker_gpus(nominal, admissible, per_node) == expected


@pytest.mark.parametrize(
    ("policy", "preemptor", "candidate", "expected"),
    [
        ("LowerPriority", 10000, 1000, True),
        ("LowerPriority", 1000, 1000, False),
        ("LowerPriority", 100, 1000, False),
        ("LowerOrNewerEqualPriority", 1000, 1000, True),
        ("Any", 100, 100000, True),
        ("Never", 100000, 100, False),
    ],
)
def test_may_preempt_follows_kueues_policies(policy, preemptor, candidate, expected):
    """Kueue reads the priority value only; what batch-low did on the real controller (100
    preempting 100000 under reclaimWithinCohort Any) is the ``Any`` row."""
    assert k.may_preempt(policy, preemptor, candidate) is expected


def test_reclaim_cases_need_a_never_class_and_a_peer_borrowing_on_its_pool():
    borrows = {"a": _gpu_flavor(_limits(4, 2), _limits(8), _limits(64))}
    lends_nothing = {"a": _gpu_flavor(_limits(4, 0, 0), _limits(8), _limits(64))}
    no_borrowing = {"a": _gpu_flavor(_limits(4, 0), _limits(8), _limits(64))}
    allowed = {"n1": "normal,batch", "n2": "normal", "n3": "normal"}

    def cases(*queues: dict[str, Any]) -> list[tuple[str, str, int]]:
        found = k.reclaim_cases(_rendered(*queues, allowed=allowed), POOL)
        return [(c.lender.name, c.borrower.name, c.borrowable) for c in found]

    assert cases(_queue("q1", "n1", borrows), _queue("q2", "n2", borrows)) == [("q1", "q2", 2)]
    # q2 borrows what q3 lends, not q1's: Kueue would still reclaim from it for q1's batch job.
    assert cases(
        _queue("q1", "n1", lends_nothing),
        _queue("q2", "n2", borrows),
        _queue("q3", "n3", no_borrowing),
    ) == [("q1", "q2", 2)]
    assert cases(_queue("q1", "n1", lends_nothing), _queue("q2", "n2", borrows)) == []
    assert cases(_queue("q1", "n1", borrows), _queue("q2", "n2", no_borrowing)) == []


def test_priority_plan_picks_the_default_one_above_it_and_the_never_classes():
    rendered = _rendered(allowed={"n1": "batch,normal,urgent", "n2": "batch"})
    plan = k.plan_priorities(rendered, "n1")
    assert (plan.low.name, plan.high and plan.high.name) == ("normal", "urgent")
    assert [c.name for c in plan.never] == ["batch"]
    only = k.plan_priorities(rendered, "n2")
    assert (only.low.name, only.high) == ("batch", None)
    with pytest.raises(k.PlanError):
        k.plan_priorities(rendered, "n3")


def test_quota_conflicts_name_each_resource_both_queues_overcommit():
    plan = k.QuotaPlan(
        "n1",
        {"cpu": Decimal(64), "memory": 512 * GI},
        {"cpu": Decimal(64), "memory": 256 * GI},
        {"cpu": Decimal(64), "memory": 256 * GI},
        k.Demand(k.Worker(4, Decimal(28), 128 * GI), 2),
        "nvidia.com/gpu",
        None,
    )
    assert plan.conflicts() == [
        "cpu: the GPU queue admits up to 64 and the default queue 64, 128 together, above the "
        "namespace's 64"
    ]


@pytest.mark.parametrize(
    ("value", "cpu", "memory"),
    [(Decimal(28), "28", "28"), (Decimal("0.5"), "500m", "0"), (208 * GI, None, "208Gi")],
)
def test_quantities_are_written_as_kubernetes_writes_them(value, cpu, memory):
    if cpu is not None:
        assert k.cpu_text(value) == cpu
    if value > 1024:
        assert k.memory_text(value) == memory
    assert k.memory_text(Decimal(1536 * 2**20)) == "1536Mi"


# --- what the section submits --------------------------------------------------------------------


def _live(dev_rendered: k.Rendered, dev_contracts: dict[str, Any]) -> k.Day2Kueue:
    # Only rendering: nothing here talks to a cluster.
    return k.Day2Kueue(cast(LocalCluster, None), load_stack("dev"), dev_rendered, dev_contracts)


def test_a_gpu_job_is_the_platforms_training_job_through_the_teams_local_queue(
    dev_rendered, dev_contracts
):
    live = _live(dev_rendered, dev_contracts)
    job = k.Submitted(
        "e2e-kueue-x", "research", k.Demand(k.Worker(4, Decimal(28), 208 * GI), 2), "high",
        "lab-a100", "gpu-queue",
    )  # fmt: skip
    config_map, manifest = live.manifests(job)
    assert (
        config_map["kind"] == "ConfigMap"
        and config_map["metadata"]["name"] == "e2e-kueue-x-preflight"
    )
    assert manifest["metadata"]["labels"][KUEUE_QUEUE_LABEL] == "gpu-queue"
    assert manifest["metadata"]["labels"][k.SECTION_LABEL] == k.SECTION_VALUE
    spec = manifest["spec"]
    assert spec["suspend"] is True  # as the TrainingJob renders a queued job
    assert (spec["completions"], spec["parallelism"], spec["completionMode"]) == (2, 2, "Indexed")
    template = spec["template"]
    assert template["metadata"]["annotations"][HOLD_ANNOTATION] == "true"
    pod = template["spec"]
    assert pod["priorityClassName"] == "high"
    assert pod["nodeSelector"] == {NODE_POOL_LABEL: "lab-a100"}
    [trainer] = pod["containers"]
    assert trainer["resources"]["requests"] == {
        "cpu": "28",
        "memory": "208Gi",
        "nvidia.com/gpu": "4",
    }
    assert trainer["resources"]["limits"] == trainer["resources"]["requests"]
    # The preflight init container asks for the same: Kueue and the quota count it once.
    assert pod["initContainers"][0]["resources"] == trainer["resources"]


def test_a_cpu_only_job_names_no_queue_and_steers_nowhere(dev_rendered, dev_contracts):
    live = _live(dev_rendered, dev_contracts)
    job = k.Submitted(
        "e2e-kueue-cpu", "research", k.Demand(k.Worker(0, Decimal(9), GI)), "normal", None, None
    )
    manifest = live.manifests(job)[-1]
    assert KUEUE_QUEUE_LABEL not in manifest["metadata"]["labels"]
    assert "suspend" not in manifest["spec"]  # Kueue's webhook suspends it (default queue)
    pod = manifest["spec"]["template"]["spec"]
    assert "nodeSelector" not in pod and "tolerations" not in pod
    assert pod["containers"][0]["resources"]["requests"] == {"cpu": "9", "memory": "1Gi"}


def test_the_hold_stage_outweighs_pod_complete_and_changes_nothing():
    stage = hold_stage()
    assert stage["spec"]["weight"] == 1
    assert stage["spec"]["next"] == {}
    keys = {e["key"]: e for e in stage["spec"]["selector"]["matchExpressions"]}
    assert keys[f'.metadata.annotations["{HOLD_ANNOTATION}"]']["values"] == ["true"]
    assert keys[".metadata.deletionTimestamp"]["operator"] == "DoesNotExist"
    assert keys[".status.phase"]["values"] == ["Running"]
