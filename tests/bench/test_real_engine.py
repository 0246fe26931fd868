"""The offline parts of ``bench.real_engine``: parsing, the floor's manifests, ratios, the table.
Nothing here starts a cluster or the CLI, and no timing is asserted."""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import math

import pytest

from bench.real_engine import Settings, extra_cpu_nodes, policy_args
from bench.real_engine_parts import (
    SessionCpu,
    cluster_scoped_kinds,
    config_too_large,
    decode_helm_release,
    details,
    in_namespace,
    latest_releases,
    namespace_documents,
    parse_proc_stat,
    ratio,
    reapplicable,
    release_objects,
    role_of,
    slowest_kinds,
    split_first,
    stack_ratios,
    step_times,
    table,
    unmasked,
)
from bench.real_engine_plot import series
from bench.synthetic import synthetic_config


def test_proc_stat_with_spaces_in_the_command() -> None:
    # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
    # stime cutime cstime ...
    line = "4242 (pulumi (lang) x) S 1 4242 4000 0 -1 0 0 0 0 0 150 50 30 20 20 0 1 0 99"
    stat = parse_proc_stat(4242, line)
    assert (stat.comm, stat.state, stat.session) == ("pulumi (lang) x", "S", 4000)
    assert (stat.cpu_ticks, stat.children_ticks) == (200, 50)


@pytest.mark.parametrize(
    ("command", "role"),
    [
        (["/x/path/pulumi", "up"], "engine"),
        (["/cache/plugins/pulumi-resource-kubernetes", "127.0.0.1:1"], "kubernetes provider"),
        (["pulumi-resource-random"], "random provider"),
        (["/v/bin/python", "-P", "-m", "tools.e2e.langhost", "--x"], "language host"),
        (["/v/bin/python", "/t/tools/e2e/langhost/executor.py", "--x"], "program"),
        (["/v/bin/python", "-u", "-m", "pulumi.policy", "127.0.0.1:2", "."], "policy pack"),
        (["/v/bin/python", "/t/langhost/policy_proxy.py"], "policy pack"),
        (["/bin/sh", "-c", "true"], "other"),
        ([], "other"),
    ],
)
def test_roles(command: list[str], role: str) -> None:
    assert role_of(command) == role


def test_session_cpu_keeps_each_process_peak_and_sums_per_role() -> None:
    seen = SessionCpu()
    seen.observe(1, "engine", 100)
    seen.observe(1, "engine", 250)
    seen.observe(1, "engine", 240)  # a later sample never lowers it
    seen.observe(1, "other", 260)  # exiting: an empty command line, the same process
    seen.observe(2, "policy pack", 50)
    seen.observe(3, "policy pack", 25)
    assert seen.by_role() == {"engine": 2.6, "policy pack": 0.75}


def _release_secret(release: dict, *, compress: bool = True) -> dict:
    raw = json.dumps(release).encode()
    helm = base64.b64encode(gzip.compress(raw) if compress else raw)
    return {"type": "helm.sh/release.v1", "data": {"release": base64.b64encode(helm).decode()}}


def test_helm_release_decodes_with_and_without_gzip() -> None:
    release = {"name": "kueue", "namespace": "kueue-system", "version": 1, "manifest": ""}
    for compress in (True, False):
        secret = _release_secret(release, compress=compress)
        assert decode_helm_release(secret["data"]["release"]) == release


def test_release_objects_keep_install_hooks_only() -> None:
    release = {
        "name": "stack",
        "namespace": "monitoring",
        "manifest": "---\nkind: ConfigMap\nmetadata: {name: a}\n---\n# only a comment\n",
        "hooks": [
            {
                "events": ["pre-install", "pre-upgrade"],
                "manifest": "kind: Job\nmetadata: {name: b}",
            },
            {"events": ["test"], "manifest": "kind: Pod\nmetadata: {name: c}"},
        ],
    }
    objects = release_objects(release)
    assert (objects.release, objects.namespace) == ("stack", "monitoring")
    assert [d["metadata"]["name"] for d in objects.documents] == ["a", "b"]


def test_latest_release_revision_wins_and_other_secrets_are_ignored() -> None:
    secrets = [
        _release_secret({"name": "r", "namespace": "n", "version": 2, "manifest": "v2"}),
        _release_secret({"name": "r", "namespace": "n", "version": 1, "manifest": "v1"}),
        {"type": "Opaque", "data": {}},
        _release_secret({"name": "a", "namespace": "n", "version": 1, "manifest": "a"}),
    ]
    assert [(r["name"], r["manifest"]) for r in latest_releases(secrets)] == [
        ("a", "a"),
        ("r", "v2"),
    ]


def test_reapplicable_drops_what_the_server_set() -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": "x.example.com",
            "uid": "u",
            "resourceVersion": "7",
            "managedFields": [{}],
            "creationTimestamp": "t",
            "labels": {"a": "b"},
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
        },
        "spec": {"group": "example.com"},
        "status": {"conditions": []},
    }
    assert reapplicable(crd) == {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "x.example.com", "labels": {"a": "b"}},
        "spec": {"group": "example.com"},
    }


def test_definitions_and_namespaces_go_first() -> None:
    docs = [{"kind": "ConfigMap"}, {"kind": "Namespace"}, {"kind": "CustomResourceDefinition"}]
    first, rest = split_first(docs)
    assert [d["kind"] for d in first] == ["Namespace", "CustomResourceDefinition"]
    assert rest == [{"kind": "ConfigMap"}]
    assert [d["metadata"]["name"] for d in namespace_documents(["b", "a", "b", ""])] == ["a", "b"]


def test_release_objects_land_in_the_release_namespace() -> None:
    scoped = cluster_scoped_kinds(
        "clusterroles   rbac.authorization.k8s.io/v1   false   ClusterRole\n"
        "namespaces   ns   v1   false   Namespace\n\n"
    )
    assert scoped == {"ClusterRole", "Namespace"}
    docs = [
        {"kind": "ClusterRole", "metadata": {"name": "r"}},
        {"kind": "ConfigMap", "metadata": {"name": "c"}},
        {"kind": "Service", "metadata": {"name": "s", "namespace": "kube-system"}},
    ]
    placed = in_namespace(docs, "monitoring", scoped)
    assert [d["metadata"].get("namespace") for d in placed] == [None, "monitoring", "kube-system"]
    assert "namespace" not in docs[1]["metadata"]  # the input is not changed


def _event(stamp: int, kind: str, urn: str, op: str = "create", type_: str = "k:Job") -> str:
    return json.dumps(
        {"timestamp": stamp, kind: {"metadata": {"op": op, "urn": urn, "type": type_}}}
    )


def test_step_times_per_kind() -> None:
    lines = [
        json.dumps({"timestamp": 0, "preludeEvent": {}}),
        _event(10, "resourcePreEvent", "u1"),
        _event(11, "resourcePreEvent", "u2", type_="k:Deployment"),
        _event(12, "resOutputsEvent", "u1"),
        _event(40, "resOutputsEvent", "u2", type_="k:Deployment"),
        _event(41, "resourcePreEvent", "u3", op="same"),
        _event(41, "resOutputsEvent", "u3", op="same"),
        _event(41, "resourcePreEvent", "c1", type_="aiplatform:x:Component"),
        _event(49, "resOutputsEvent", "c1", type_="aiplatform:x:Component"),
        "",
    ]
    kinds = step_times(lines)
    assert set(kinds) == {"k:Job", "k:Deployment"}
    assert (kinds["k:Deployment"].count, kinds["k:Deployment"].seconds) == (1, 29)
    assert [k["type"] for k in slowest_kinds(kinds)] == ["k:Deployment", "k:Job"]


def test_ratios() -> None:
    assert ratio(3.0, 2.0) == 1.5
    assert ratio(None, 2.0) is None
    assert ratio(1.0, 0.0) is None
    entry = {
        "up": {"wallSeconds": 30.0, "cpuSeconds": 40.0, "clusterCpuSeconds": 20.0},
        "floor": {"wallSeconds": 10.0, "cpuSeconds": 4.0, "clusterCpuSeconds": 16.0},
        "preview": {"wallSeconds": 12.0, "cpuSeconds": 9.0},
        "offlinePreview": {"wallSeconds": 3.0, "cpuSeconds": 3.0},
    }
    assert stack_ratios(entry) == {
        "upOverFloorWall": 3.0,
        "upOverFloorMachineCpu": 3.0,
        "upOverFloorCpu": 10.0,
        "previewOverOfflineWall": 4.0,
        "previewOverOfflineCpu": 3.0,
    }
    text = table({"stacks": {"dev": {"objects": 5, **entry}}})
    up = {**entry["up"], "cpuByProcess": {"engine": 30.0, "policy pack": 2.0}}
    detail = {
        "up": {**up, "clusterCpuSeconds": 12.0},
        "upSlowestKinds": [
            {
                "type": "kubernetes:apps/v1:Deployment",
                "steps": 2,
                "stepSeconds": 9,
                "longestSeconds": 5,
            }
        ],
    }
    described = details({"stacks": {"dev": detail, "none": {}}})
    assert "engine 30.0, policy pack 2.0; the cluster's 12.0 CPU-s (floor: -)" in described
    assert "apps/v1:Deployment 2 steps 9 s (longest 5 s)" in described
    assert "none" not in described
    assert "| dev | 5 | 3.0 s (3.0 s CPU) | 12.0 s (9.0 s CPU) |" in text
    assert text.rstrip().endswith("| 3.00 | 4.00 |")
    partial = {"up": {"wallSeconds": 8.0}}
    measured = {"objects": 5, **entry, "ratios": stack_ratios(entry)}
    stacks = {"dev": measured, "none": {"up": {}}, "partial": partial}
    labels, walls, over = series({"stacks": stacks})
    assert labels == ["dev\n5 objects", "partial\n? objects"]
    assert walls["floor"][0] == 10.0 and math.isnan(walls["floor"][1])
    assert over[0] == 3.0 and math.isnan(over[1])


def test_settings_parse() -> None:
    settings = Settings.parse("fast:parallel=32,skip-checkpoints,policy-pack=0,qps=200")
    assert settings == Settings("fast", 32, True, False, 200)
    assert settings.flags() == ["--parallel=32"]
    assert settings.env() == {
        "PULUMI_SKIP_CHECKPOINTS": "true",
        "PULUMI_K8S_CLIENT_QPS": "200",
        "PULUMI_K8S_CLIENT_BURST": "400",
    }
    assert Settings().env() == {} and Settings().flags() == []
    with pytest.raises(argparse.ArgumentTypeError, match="unknown setting 'para'"):
        Settings.parse("x:para=1")


def test_policy_config_falls_back_to_the_environment() -> None:
    assert policy_args("dev", "dev")[-1].endswith("policies/config/dev.json")
    assert policy_args("bench100", "prod")[-1].endswith("policies/config/prod.json")


def test_masked_secrets_get_a_stand_in_of_the_right_shape() -> None:
    secret = {"kind": "Secret", "stringData": "[secret]", "data": {"k": "dg=="}}
    assert unmasked(secret) == {
        "kind": "Secret",
        "stringData": {"masked": "bench"},
        "data": {"k": "dg=="},
    }
    config_map = {"kind": "ConfigMap", "data": "[secret]"}
    assert unmasked(config_map) is config_map


def test_a_thousand_synthetic_workloads_exceed_one_environment_string() -> None:
    assert config_too_large(synthetic_config(100)) is None
    reason = config_too_large(synthetic_config(1000))
    assert reason is not None and "131,072 (MAX_ARG_STRLEN)" in reason


def test_extra_cpu_nodes_are_system_nodes_with_names_of_their_own() -> None:
    nodes = extra_cpu_nodes(2)
    assert [n["metadata"]["name"] for n in nodes] == ["bench-cpu-1", "bench-cpu-2"]
    assert [n["metadata"]["labels"]["kubernetes.io/hostname"] for n in nodes] == [
        "bench-cpu-1",
        "bench-cpu-2",
    ]
    assert nodes[0]["spec"] == {} and nodes[0]["status"]["capacity"]["cpu"] == "32"
    assert nodes[0]["metadata"]["labels"] is not nodes[1]["metadata"]["labels"]
