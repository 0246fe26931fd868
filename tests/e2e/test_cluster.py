"""The local cluster: PKI, process handling, and real ``up``/``status``/``down`` runs.

The runs need the binaries ``python -m tools.e2e build kubernetes etcd kwok`` makes; without
them those tests are skipped, saying so. Every process a test starts is stopped by the test
(``finally``), and every wait is on a condition with a deadline.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.gpu_node_pool import (
    KarpenterBackend,
    node_labels,
    nodepool_spec,
    pool_field_manager,
    scheduling_contract,
)
from infra.gpu.build import pool_args as _pool_args
from tools.e2e import cluster as clusters
from tools.e2e import pki as pkis
from tools.e2e.cluster import ClusterError, Component, LocalCluster, State

ROOT = Path(__file__).resolve().parents[2]
BINARIES, MISSING = clusters.find_binaries()
needs_binaries = pytest.mark.skipif(
    bool(MISSING),
    reason=f"not built: {', '.join(MISSING)} (python -m tools.e2e build kubernetes etcd kwok)",
)
GPU_TOLERATION = {
    "key": "nvidia.com/gpu",
    "operator": "Equal",
    "value": "present",
    "effect": "NoSchedule",
}
RESTRICTED_POD_SECURITY = {
    "securityContext": {
        "runAsNonRoot": True,
        "runAsUser": 1000,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
}
RESTRICTED_CONTAINER = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
}
WAIT_S = 90.0


def wait_for(what: str, check: Callable[[], Any], timeout_s: float = WAIT_S) -> Any:
    """Poll until ``check`` returns something truthy; fail naming ``what`` after the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout_s:.0f} s (last: {result!r})")
        time.sleep(0.2)


def openssl(*args: str) -> str:
    return subprocess.run(["openssl", *args], capture_output=True, text=True, check=True).stdout


# --- PKI ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> pkis.Pki:
    return pkis.generate(tmp_path_factory.mktemp("pki"))


def test_every_certificate_is_signed_by_its_ca(pki):
    for identity in pkis.IDENTITIES:
        out = openssl("verify", "-CAfile", str(pki.cert(identity.ca)), str(pki.cert(identity.name)))
        assert out.strip().endswith(": OK")
    # The front-proxy client must not pass as a cluster client, nor the reverse.
    refused = subprocess.run(
        ["openssl", "verify", "-CAfile", str(pki.ca_cert), str(pki.cert("front-proxy-client"))],
        capture_output=True,
        text=True,
        check=False,
    )
    assert refused.returncode != 0


def test_identities_are_those_rbac_expects(pki):
    subjects = {
        identity.name: openssl("x509", "-in", str(pki.cert(identity.name)), "-noout", "-subject")
        for identity in pkis.IDENTITIES
    }
    assert subjects["admin"].strip() == "subject=O = system:masters, CN = kubernetes-admin"
    assert "CN = system:kube-controller-manager" in subjects["kube-controller-manager"]
    assert "O =" not in subjects["kube-controller-manager"]
    assert "CN = system:kube-scheduler" in subjects["kube-scheduler"]
    assert "O = system:masters" in subjects["kwok"]


def test_api_server_certificate_names_loopback_and_the_service(pki):
    text = openssl("x509", "-in", str(pki.cert("apiserver")), "-noout", "-text")
    for name in (*pkis.API_SERVER_NAMES, "IP Address:127.0.0.1", "IP Address:127.96.0.1"):
        assert name in text
    assert "TLS Web Server Authentication" in text
    assert "TLS Web Client Authentication" not in text
    ca = openssl("x509", "-in", str(pki.ca_cert), "-noout", "-text")
    assert "CA:TRUE" in ca


def test_service_account_keys_are_a_pair(pki):
    derived = openssl("pkey", "-in", str(pki.sa_key), "-pubout")
    assert derived == pki.sa_pub.read_text()
    assert oct(pki.folder.stat().st_mode & 0o777) == "0o700"


def test_kubeconfig_embeds_identity_and_context(pki):
    document = yaml.safe_load(
        pkis.kubeconfig(pki, "admin", "https://127.0.0.1:6443", context="lab-admin")
    )
    assert document["current-context"] == "lab-admin"
    assert document["contexts"] == [
        {"name": "lab-admin", "context": {"cluster": "e2e", "user": "admin"}}
    ]
    assert document["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:6443"
    assert set(document["users"][0]["user"]) == {"client-certificate-data", "client-key-data"}


# --- config-derived pieces and process handling (no binaries) --------------------------------


def test_crds_preinstalled_only_for_karpenter_stacks():
    assert clusters.preinstalled_crds(clusters.load_stack("dev")) == []
    prod = clusters.preinstalled_crds(clusters.load_stack("prod"))
    assert prod == [
        "karpenter.sh/karpenter.sh_nodepools.yaml",
        "karpenter.sh/karpenter.sh_nodeclaims.yaml",
        "karpenter.k8s.aws/karpenter.k8s.aws_ec2nodeclasses.yaml",
    ]


def test_shared_folder_is_overridable(monkeypatch, tmp_path):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (tmp_path / "shared").mkdir()
    monkeypatch.setenv("AIPLATFORM_SHARED", str(tmp_path / "elsewhere"))
    assert clusters.shared_dir(checkout) == tmp_path / "elsewhere"
    monkeypatch.delenv("AIPLATFORM_SHARED")
    assert clusters.shared_dir(checkout) == tmp_path / "shared"


def test_a_scratch_clone_finds_the_shared_folder_beside_its_origin(monkeypatch, tmp_path):
    monkeypatch.delenv("AIPLATFORM_SHARED", raising=False)
    clone = tmp_path / "clone"
    clone.mkdir()
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "config", "remote.origin.url", str(ROOT)], check=True)
    expected = (ROOT / ".." / "shared").resolve()
    assert clusters.shared_dir(clone) == (
        expected if expected.is_dir() else clone.parent / "shared"
    )


def test_free_ports_are_distinct_loopback_ports():
    ports = clusters.free_ports(6)
    assert len(set(ports)) == 6 and all(1024 < p < 65536 for p in ports)


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A long-lived process in a group of its own, standing for a component left running."""
    process = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()


def _leftover_state(work: Path, pid: int, ticks: int | None) -> None:
    work.mkdir(parents=True, exist_ok=True)
    state = State(stack="dev", context="lab-admin", server="https://127.0.0.1:1", ports={})
    state.components["etcd"] = Component("etcd", pid, ticks, str(work / "etcd.log"), ["sleep"])
    (work / "state.json").write_text(state.to_json())


def test_a_previous_runs_processes_are_stopped_before_starting(tmp_path, sleeper):
    _leftover_state(tmp_path, sleeper.pid, clusters._start_ticks(sleeper.pid))
    LocalCluster("dev", work_dir=tmp_path, log=lambda _: None).stop_strays()
    assert sleeper.wait(timeout=20) == -signal.SIGTERM


def test_a_reused_pid_is_never_signalled(tmp_path, sleeper):
    ticks = clusters._start_ticks(sleeper.pid)
    assert ticks is not None
    _leftover_state(tmp_path, sleeper.pid, ticks + 1)  # same pid, another process
    assert LocalCluster("dev", work_dir=tmp_path, log=lambda _: None).down(quiet=True) == {
        "etcd": "not running"
    }
    assert sleeper.poll() is None


# --- real runs ----------------------------------------------------------------------------


def _pids(state_file: Path) -> list[tuple[int, int | None]]:
    data = json.loads(state_file.read_text())
    return [(c["pid"], c["start_ticks"]) for c in data["components"].values()]


def _none_alive(pids: list[tuple[int, int | None]]) -> bool:
    return not any(clusters.process_alive(pid, ticks) for pid, ticks in pids)


def _apply(cluster: LocalCluster, *documents: dict[str, Any]) -> None:
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(documents))


def _gpu_pod_spec(pool: str, resource: str, count: int) -> dict[str, Any]:
    return {
        **RESTRICTED_POD_SECURITY,
        "nodeSelector": {"aiplatform.io/node-pool": pool},
        "tolerations": [GPU_TOLERATION],
        "containers": [
            {
                "name": "main",
                "image": "registry.invalid/e2e:1",
                "resources": {"limits": {resource: str(count)}},
                "securityContext": RESTRICTED_CONTAINER,
            }
        ],
    }


def _platform_node_patches(cluster: LocalCluster) -> None:
    """What the platform's NodePatch resources apply to the static pools' nodes: the pool's
    labels and taints, server-side, with the pool's field manager, not forced."""
    for pool in cluster.config.node_pools:
        if pool.backend != "static":
            continue
        args = _pool_args(pool)
        taints = [t.manifest() for t in scheduling_contract(args).taints]
        for node in pool.nodes:
            patch = {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": node, "labels": node_labels(args)},
                "spec": {"taints": taints},
            }
            cluster.kubectl(
                "apply",
                "--server-side",
                f"--field-manager={pool_field_manager(pool.name)}",
                "-f",
                "-",
                input=yaml.safe_dump(patch),
            )


@pytest.fixture(scope="class")
def dev_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = LocalCluster("dev", work_dir=tmp_path_factory.mktemp("dev-cluster"))
    with cluster.running():
        yield cluster


@pytest.mark.real
@needs_binaries
class TestDevCluster:
    """One cluster for the dev stack, through the Python API the e2e runner uses."""

    def test_kubeconfig_context_and_server_version(self, dev_cluster):
        kubeconfig = yaml.safe_load(dev_cluster.kubeconfig.read_text())
        assert kubeconfig["current-context"] == dev_cluster.context == "lab-admin"
        assert kubeconfig["clusters"][0]["cluster"]["server"] == dev_cluster.server
        assert dev_cluster.server.startswith("https://127.0.0.1:")
        version = json.loads(dev_cluster.kubectl("version", "-o", "json").stdout)
        assert version["serverVersion"]["gitVersion"] == "v1.33.13"
        assert (version["serverVersion"]["major"], version["serverVersion"]["minor"]) == (
            "1",
            "33",
        )

    def test_every_component_runs_and_listens_on_loopback_only(self, dev_cluster):
        status = dev_cluster.status()
        assert status["apiserver"] == "ready"
        assert set(status["components"]) == set(clusters.COMPONENTS)
        for name, component in status["components"].items():
            assert component["running"], name
            if name in clusters.CLIENT_ONLY:
                assert not component["listening"], name
                continue
            assert component["listening"], name
            assert all(a.startswith("127.0.0.1:") for a in component["listening"]), (
                name,
                component,
            )

    def test_admission_and_authorization_are_a_real_clusters(self, dev_cluster):
        log = Path(dev_cluster.status()["components"]["kube-apiserver"]["log"]).read_text()
        loaded = {
            plugin
            for order in re.findall(
                r"admission controller\(s\) successfully in the following "
                r"order: ([\w,]+)",
                log,
            )
            for plugin in order.split(",")
        }
        assert loaded == set(clusters.ADMISSION_PLUGINS)
        assert {"PodSecurity", "LimitRanger", "ResourceQuota", "Priority"} <= loaded
        can = dev_cluster.kubectl(
            "auth",
            "can-i",
            "create",
            "pods",
            "--as=system:serviceaccount:default:default",
            check=False,
        )
        assert can.stdout.strip() == "no"  # RBAC: a service account has no rights by default

    def test_fake_nodes_are_ready_with_the_stack_pools_resources(self, dev_cluster):
        nodes = {n["metadata"]["name"]: n for n in dev_cluster.get_json("nodes")["items"]}
        assert set(nodes) == {"gpu-node-01", "gpu-node-02", "gpu-node-03"} | {
            f"system-{i}" for i in range(1, 4)
        }
        for node in nodes.values():
            ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
            assert ready[0]["status"] == "True"
        assert nodes["gpu-node-01"]["status"]["allocatable"]["nvidia.com/gpu"] == "4"
        assert nodes["gpu-node-03"]["status"]["allocatable"]["nvidia.com/mig-1g.10gb"] == "28"
        assert "nvidia.com/gpu" not in nodes["gpu-node-03"]["status"]["allocatable"]

    def test_fake_nodes_keep_slow_leases_that_the_controller_waits_long_for(self, dev_cluster):
        leases = dev_cluster.get_json("leases", "-n", "kube-node-lease")["items"]
        assert {lease["metadata"]["name"] for lease in leases} >= {"gpu-node-01", "system-1"}
        assert {lease["spec"]["leaseDurationSeconds"] for lease in leases} == {
            clusters.NODE_LEASE_SECONDS
        }
        state = dev_cluster.state
        assert state is not None
        status, body = dev_cluster.https_get(
            state.ports["controller_manager"], "/configz", timeout=10
        )
        assert status == 200, body[-300:]
        configz = json.loads(body)  # the configuration in effect
        lifecycle = configz["kubecontrollermanager.config.k8s.io"]["NodeLifecycleController"]
        assert lifecycle["NodeMonitorGracePeriod"] == "5m0s"  # NODE_MONITOR_GRACE, as Go prints it

    def test_workloads_land_on_their_pool_and_become_ready(self, dev_cluster):
        _platform_node_patches(dev_cluster)
        namespace = "team-e2e"
        _apply(
            dev_cluster,
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": namespace,
                    "labels": {"pod-security.kubernetes.io/enforce": "restricted"},
                },
            },
        )
        wait_for(
            "the namespace's default service account",
            lambda: (
                dev_cluster.kubectl(
                    "get", "serviceaccount", "default", "-n", namespace, check=False
                ).returncode
                == 0
            ),
        )
        _apply(
            dev_cluster,
            {
                "apiVersion": "v1",
                "kind": "LimitRange",
                "metadata": {"name": "defaults", "namespace": namespace},
                "spec": {
                    "limits": [
                        {
                            "type": "Container",
                            "defaultRequest": {"cpu": "500m", "memory": "512Mi"},
                            "default": {"cpu": "1", "memory": "1Gi"},
                        }
                    ]
                },
            },
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {"name": "quota", "namespace": namespace},
                "spec": {
                    "hard": {
                        "requests.cpu": "16",
                        "requests.memory": "64Gi",
                        "requests.nvidia.com/gpu": "8",
                    }
                },
            },
        )
        wait_for(
            "the quota controller to compute the quota's usage",
            lambda: (
                dev_cluster.get_json("resourcequota", "quota", "-n", namespace)
                .get("status", {})
                .get("used")
            ),
        )
        job_spec = _gpu_pod_spec("lab-a100", "nvidia.com/gpu", 4)
        deployment_spec = _gpu_pod_spec("lab-a100-mig", "nvidia.com/mig-1g.10gb", 1)
        _apply(
            dev_cluster,
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": "train", "namespace": namespace},
                "spec": {
                    "completions": 2,
                    "parallelism": 2,
                    "completionMode": "Indexed",
                    "template": {"spec": {**job_spec, "restartPolicy": "Never"}},
                },
            },
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "serve", "namespace": namespace},
                "spec": {
                    "replicas": 2,
                    "selector": {"matchLabels": {"app": "serve"}},
                    "template": {"metadata": {"labels": {"app": "serve"}}, "spec": deployment_spec},
                },
            },
        )
        dev_cluster.kubectl(
            "wait", "--for=condition=Complete", "job/train", "-n", namespace, "--timeout=90s"
        )
        dev_cluster.kubectl(
            "rollout", "status", "deployment/serve", "-n", namespace, "--timeout=90s"
        )
        pods = dev_cluster.get_json("pods", "-n", namespace)["items"]
        placed = [
            (p["metadata"]["labels"].get("app") or "train", p["spec"]["nodeName"]) for p in pods
        ]
        # Each training pod takes all 4 GPUs of an A100 node (the second may land where the
        # first has already completed: KWOK completes a Job's pod at once); serving goes to the
        # MIG node.
        assert sorted(app for app, _ in placed) == ["serve", "serve", "train", "train"]
        assert {node for app, node in placed if app == "train"} <= {"gpu-node-01", "gpu-node-02"}
        assert {node for app, node in placed if app == "serve"} == {"gpu-node-03"}
        # LimitRanger filled in the requests the quota needs.
        container = pods[0]["spec"]["containers"][0]
        assert container["resources"]["requests"]["cpu"] == "500m"

    def test_a_pod_without_the_toleration_is_not_scheduled(self, dev_cluster):
        spec = _gpu_pod_spec("lab-a100", "nvidia.com/gpu", 1)
        spec["tolerations"] = []
        _apply(
            dev_cluster,
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "untolerated", "namespace": "team-e2e"},
                "spec": spec,
            },
        )

        def unschedulable() -> str:
            pod = dev_cluster.get_json("pod", "untolerated", "-n", "team-e2e")
            for condition in pod["status"].get("conditions", []):
                if condition["type"] == "PodScheduled" and condition.get("reason") == (
                    "Unschedulable"
                ):
                    return str(condition["message"])
            return ""

        message = wait_for("the scheduler to refuse the pod", unschedulable)
        assert "untolerated taint" in message and "nvidia.com/gpu" in message
        dev_cluster.kubectl("delete", "pod", "untolerated", "-n", "team-e2e", "--wait=false")

    def test_restricted_pod_security_refuses_a_privileged_pod(self, dev_cluster):
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "privileged", "namespace": "team-e2e"},
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "image": "registry.invalid/e2e:1",
                        "securityContext": {"privileged": True},
                    }
                ]
            },
        }
        done = dev_cluster.kubectl("create", "-f", "-", input=yaml.safe_dump(pod), check=False)
        assert done.returncode != 0
        assert 'violates PodSecurity "restricted:latest"' in done.stderr

    def test_resource_quota_refuses_more_gpus_than_the_namespace_has(self, dev_cluster):
        spec = _gpu_pod_spec("lab-a100", "nvidia.com/gpu", 12)
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "greedy", "namespace": "team-e2e"},
            "spec": spec,
        }
        done = dev_cluster.kubectl("create", "-f", "-", input=yaml.safe_dump(pod), check=False)
        assert done.returncode != 0
        assert "exceeded quota" in done.stderr and "requests.nvidia.com/gpu" in done.stderr

    def test_down_leaves_no_process(self, dev_cluster):
        pids = _pids(dev_cluster.state_file)
        assert len(pids) == len(clusters.COMPONENTS)
        outcome = dev_cluster.down()
        assert set(outcome.values()) <= {"stopped", "killed"}
        assert _none_alive(pids)
        assert dev_cluster.status()["apiserver"] == "down"


def _cli(*args: str, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools.e2e", "cluster", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


@pytest.mark.real
@needs_binaries
def test_cli_up_status_down_for_a_karpenter_stack(tmp_path):
    """``up`` returns with the cluster running in the background; ``status`` and ``down`` are
    other processes. The prod stack's Karpenter pools become nodes; Karpenter's CRDs are there
    and accept the platform's NodePool."""
    work = str(tmp_path / "prod")
    try:
        up = _cli("up", "--stack", "prod", "--work-dir", work)
        assert up.returncode == 0, up.stdout + up.stderr
        status = json.loads(_cli("status", "--stack", "prod", "--work-dir", work, "--json").stdout)
        assert status["apiserver"] == "ready" and status["context"] == "gpu-prod-deployer"
        assert all(c["running"] for c in status["components"].values())
        cluster = LocalCluster("prod", work_dir=Path(work))
        nodes = cluster.get_json("nodes")["items"]
        nodes = [n for n in nodes if not n["metadata"]["name"].startswith("system-")]
        pools = {n["metadata"]["labels"]["karpenter.sh/nodepool"] for n in nodes}
        assert len(nodes) == 8 + 16 + 6 and pools == {"h100-training", "l4-inference", "spot-batch"}
        pool = next(p for p in cluster.config.node_pools if p.name == "h100-training")
        args = _pool_args(pool)
        assert isinstance(args.backend, KarpenterBackend)
        nodepool = {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": pool.name},
            "spec": nodepool_spec(args, args.backend),
        }
        cluster.kubectl("create", "--dry-run=server", "-f", "-", input=yaml.safe_dump(nodepool))
        # A pod tolerating only the GPU taint cannot use the spot pool (preemptible taint).
        spec = _gpu_pod_spec("spot-batch", "nvidia.com/gpu", 1)
        spec.pop("securityContext")
        spec["tolerations"].append(
            {
                "key": "aiplatform.io/preemptible",
                "operator": "Equal",
                "value": "true",
                "effect": "NoSchedule",
            }
        )
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "batch"}, "spec": spec}
        wait_for(
            "the default service account",
            lambda: cluster.kubectl("get", "sa", "default", check=False).returncode == 0,
        )
        cluster.kubectl("create", "-f", "-", input=yaml.safe_dump(pod))
        cluster.kubectl("wait", "--for=condition=Ready", "pod/batch", "--timeout=90s")
        node = cluster.get_json("pod", "batch")["spec"]["nodeName"]
        assert node.startswith("spot-batch-")
        pids = _pids(Path(work) / "state.json")
        down = _cli("down", "--stack", "prod", "--work-dir", work)
        assert down.returncode == 0, down.stderr
        assert _none_alive(pids)
    finally:
        LocalCluster("prod", work_dir=Path(work), log=lambda _: None).down(quiet=True)


@pytest.mark.real
@needs_binaries
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupting_up_stops_what_it_started(tmp_path, signum):
    work = tmp_path / "interrupted"
    state_file = work / "state.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "tools.e2e", "cluster", "up", "--work-dir", str(work)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def apiserver_started() -> bool:
            state = State.read(state_file)
            return state is not None and "kube-apiserver" in state.components

        wait_for("up to start the API server", apiserver_started)
        pids = _pids(state_file)
        os.kill(process.pid, signum)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 130, stderr
        assert "every process of the cluster was stopped" in stderr
        assert _none_alive(pids)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        LocalCluster("dev", work_dir=work, log=lambda _: None).down(quiet=True)


@pytest.mark.real
@needs_binaries
def test_a_component_that_dies_fails_up_with_its_log_and_stops_the_rest(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for path in BINARIES.values():
        (bin_dir / path.name).symlink_to(path)
    (bin_dir / "kube-apiserver").unlink()
    (bin_dir / "kube-apiserver").write_text("#!/bin/sh\necho 'cannot start: no luck' >&2\nexit 3\n")
    (bin_dir / "kube-apiserver").chmod(0o755)
    cluster = LocalCluster("dev", work_dir=tmp_path / "work", bin_dir=bin_dir, log=lambda _: None)
    try:
        with pytest.raises(ClusterError) as failure:
            cluster.up()
        message = str(failure.value)
        assert "kube-apiserver exited (code 3)" in message
        assert "cannot start: no luck" in message
        assert _none_alive(_pids(cluster.state_file))
    finally:
        cluster.down(quiet=True)
