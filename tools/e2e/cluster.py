"""A local Kubernetes control plane with fake GPU nodes, on loopback only.

    python -m tools.e2e cluster up|down|status [--stack dev] [--work-dir DIR] [--bin-dir DIR]

etcd, kube-apiserver, kube-controller-manager, kube-scheduler and KWOK run as processes of their
own (each in its own process group) from the binaries ``tools/e2e/build.py`` builds. The API
server runs with TLS, Node+RBAC authorization, service-account token signing and the admission
plugins of a real cluster, so what the platform deploys is admitted, defaulted, scheduled and
(by KWOK's stages) run as on a real cluster. The stack's node pools become fake nodes
(``tools/e2e/nodes.py``). ``up`` returns once everything is ready; ``down`` (from any process)
stops what the state file lists; the Python API, :meth:`LocalCluster.running`, always stops
everything on exit. The folder layout and the ports are in docs/e2e.md.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import ipaddress
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from infra.config import ConfigError, PlatformConfig, StackFile
from infra.config.load import stack_file_name

from . import build as builder
from . import pki as pkis
from .nodes import KWOK_NODE_ANNOTATION, KWOK_NODE_VALUE, fake_nodes

PROJECT_ROOT: Final = builder.PROJECT_ROOT
LOOPBACK: Final = "127.0.0.1"
POD_CIDR: Final = "10.244.0.0/16"
"""Pod IPs KWOK hands out. Nothing routes them: there is no CNI."""
SERVICE_ACCOUNT_ISSUER: Final = f"https://kubernetes.default.svc.{pkis.CLUSTER_DOMAIN}"
NODE_LEASE_SECONDS: Final = 120
"""KWOK renews each fake node's Lease every quarter of this, as a kubelet does: every 30 s, so
500 fake nodes cost the API server 17 Lease writes a second rather than the 50 of the 40 s
default."""
NODE_MONITOR_GRACE: Final = "5m"
"""How long the node lifecycle controller waits for a Lease before it marks the node unreachable
and every pod on it not Ready (default 50 s). A fake node is never really gone, but on two
cores in the middle of a 7,000-resource ``pulumi up`` KWOK's renewals fall that far behind: the
pods of 500 nodes then flip between Ready and not, and a DaemonSet's Helm release never becomes
ready within its timeout."""

ADMISSION_PLUGINS: Final = (
    # kube-apiserver 1.33's default-enabled set, as its ``--help`` lists it (PodTopologyLabels
    # and MutatingAdmissionPolicy act only behind feature gates that are off in 1.33) ...
    "NamespaceLifecycle",
    "LimitRanger",
    "ServiceAccount",
    "TaintNodesByCondition",
    "PodSecurity",
    "Priority",
    "DefaultTolerationSeconds",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "PodTopologyLabels",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
    # ... plus what kubeadm enables on top: kubelets (here KWOK) may only touch their own node.
    "NodeRestriction",
)
"""Named explicitly so a change of defaults in a newer release cannot silently drop one."""

COMPONENTS: Final = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "provisioner",
)
CLIENT_ONLY: Final = ("provisioner",)
"""Components that only talk to the API server and listen nowhere."""
"""In start order; ``down`` stops them in reverse."""
BINARIES: Final = {
    "etcd": ("etcd", "etcd"),
    "kube-apiserver": ("kubernetes", "kube-apiserver"),
    "kube-controller-manager": ("kubernetes", "kube-controller-manager"),
    "kube-scheduler": ("kubernetes", "kube-scheduler"),
    "kwok": ("kwok", "kwok"),
    "kubectl": ("kubernetes", "kubectl"),
}
"""Binary → (the ``tools/e2e/build.py`` tool that builds it, file name)."""

KWOK_STAGES: Final = (
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
    "kustomize/stage/pod/fast/pod-complete.yaml",
    "kustomize/stage/pod/fast/pod-delete.yaml",
)
"""KWOK's "fast" stages (what kwokctl configures): nodes become Ready and keep a Lease; pods
become Running and Ready at once; pods owned by a Job complete; deleted pods go away. KWOK
v0.8.0 has no built-in stages, so these are read from its module at start."""

HOLD_ANNOTATION: Final = "e2e.aiplatform.io/hold"
"""A pod annotated ``"true"`` stays Running (``pod-complete`` would end a Job's pod at once) until
the annotation changes or the pod is deleted: a trainer still at work, which keeps holding its
queue's quota. Only a test sets it (:func:`hold_stage`)."""

POD_READY_AGAIN_STAGE: Final = """\
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready-again
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  weight: 1
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['Running']
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'NotIn'
      values: ['True']
    - key: '.status.conditions.[] | select( .type == "ContainersReady" ) | .status'
      operator: 'In'
      values: ['True']
    - key: '.metadata.namespace + "/" + (.metadata.labels["app.kubernetes.io/name"] // "")'
      operator: 'NotIn'
      values: ['kueue-system/kueue']
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - type: Ready
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
"""
"""What a kubelet does once its node is back: the node lifecycle controller marks the pods of a
node whose Lease lapsed not Ready (after an API server outage, its informers catch up late), and
the kubelet reports them Ready again. KWOK's fast stages only make Pending pods Ready, so without
this a Running pod would stay not Ready, and every Deployment and Helm wait with it. Its
containers must be ready: Kueue's controller pod, whose readiness is the real process's
(tools/e2e/kueue.py), is left to its own stages."""

PREINSTALLED_CRDS: Final = {
    "karpenter": (
        "karpenter.sh/karpenter.sh_nodepools.yaml",
        "karpenter.sh/karpenter.sh_nodeclaims.yaml",
        "karpenter.k8s.aws/karpenter.k8s.aws_ec2nodeclasses.yaml",
    ),
}
"""CRDs a real cluster has before the platform, under ``<shared>/crds``. Karpenter runs with the
cluster (it launches the nodes everything else runs on), so a stack with Karpenter pools finds
its NodePool, NodeClaim and EC2NodeClass CRDs installed. Nothing else is preinstalled: the
platform's own Helm releases bring Kueue's, the GPU operator's (and NFD's) and the Prometheus
operator's CRDs; KEDA and KubeRay are not used by the platform."""

STOP_GRACE_S: Final = 15.0
READY_TIMEOUT_S: Final = 180.0
"""Per component. A cold API server on two busy cores takes tens of seconds."""
POLL_S: Final = 0.25
RESTART_ATTEMPTS: Final = 3
LOG_TAIL_LINES: Final = 40


class ClusterError(RuntimeError):
    """The cluster did not come up (or a command failed); the message says where and shows
    the tail of the component's log."""


class Terminated(BaseException):
    """SIGTERM while the cluster starts or runs in the foreground: stop it, as on Ctrl-C."""


def shared_dir(project_root: Path = PROJECT_ROOT) -> Path:
    """``$AIPLATFORM_SHARED``, else ``../shared`` beside the checkout, else beside the checkout
    it was cloned from (a scratch clone in /tmp of a local checkout), as the Makefile does."""
    explicit = os.environ.get("AIPLATFORM_SHARED")
    if explicit:
        return Path(explicit).expanduser().resolve()
    beside = (project_root / ".." / "shared").resolve()
    if beside.is_dir():
        return beside
    origin = subprocess.run(
        ["git", "config", "--get", "remote.origin.url"],
        cwd=project_root,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if origin.startswith("/"):
        candidate = (Path(origin) / ".." / "shared").resolve()
        if candidate.is_dir():
            return candidate
    return beside


def preinstalled_crds(config: PlatformConfig) -> list[str]:
    """CRD files (relative to ``<shared>/crds``) the stack's cluster would already have."""
    files: list[str] = []
    if any(pool.backend == "karpenter" for pool in config.node_pools):
        files += PREINSTALLED_CRDS["karpenter"]
    return files


def load_stack(stack: str, project_root: Path = PROJECT_ROOT) -> PlatformConfig:
    """The validated config of ``Pulumi.<stack>.yaml``, through the project's one loader."""
    return StackFile(project_root / stack_file_name(stack)).platform_config()


def _tool_folder(tool: str, build_missing: bool) -> Path | None:
    go_tool = builder.TOOLS[tool]
    if build_missing:
        return builder.build(go_tool)
    try:
        folder = go_tool.out_dir()
    except builder.BuildError:
        return None
    return folder if (folder / ".complete").exists() else None


def find_binaries(
    bin_dir: Path | None = None, *, build_missing: bool = False
) -> tuple[dict[str, Path], list[str]]:
    """Paths of every binary the cluster runs, and the names of those not found.

    With ``bin_dir`` only that folder is searched. Otherwise the build cache (the folders of the
    current build keys, built first if ``build_missing``), then ``build/e2e/bin``.
    """
    found: dict[str, Path] = {}
    missing: list[str] = []
    folders: dict[str, Path | None] = {}
    for name, (tool, file_name) in BINARIES.items():
        candidates: list[Path] = []
        if bin_dir is not None:
            candidates.append(bin_dir / file_name)
        else:
            if tool not in folders:
                folders[tool] = _tool_folder(tool, build_missing)
            folder = folders[tool]
            if folder is not None:
                candidates.append(folder / file_name)
            candidates.append(builder.BIN_LINKS / file_name)
        path = next((c for c in candidates if c.is_file() and os.access(c, os.X_OK)), None)
        if path is None:
            missing.append(name)
        else:
            found[name] = path
    return found, missing


def kwok_stage_documents(module_dir: Path | None = None) -> str:
    """KWOK's stage YAMLs, from the module the kwok binary was built from, and Kueue's."""
    if module_dir is None:
        tool = builder.TOOLS["kwok"]
        module_dir = builder.module_dir_of(tool.module_dir, "sigs.k8s.io/kwok")
    parts = []
    for relative in KWOK_STAGES:
        path = module_dir / relative
        if not path.is_file():
            raise ClusterError(f"KWOK stage {relative} is not in {module_dir}")
        parts.append(path.read_text().strip())
    # Kueue's controller pod is Ready only while the real, out-of-cluster controller is
    # (tools/e2e/kueue.py): imported here, since kueue.py imports this module.
    from .kueue import kwok_stages

    parts.append(kwok_stages().strip())
    parts.append(yaml.safe_dump(hold_stage(), sort_keys=False).strip())
    parts.append(POD_READY_AGAIN_STAGE.strip())
    return "\n---\n".join(parts) + "\n"


def hold_stage() -> dict[str, Any]:
    """The KWOK Stage that keeps a Running pod annotated :data:`HOLD_ANNOTATION` ``"true"`` as it
    is. Why: a Job's pods would otherwise succeed at once and give their quota back, and no queue
    could be seen full. It wins over ``pod-complete`` by its weight (KWOK picks among the stages
    with a positive weight only) and does nothing, so the pod stays until the annotation changes
    (then ``pod-complete`` finishes it) or it is deleted (``pod-delete``)."""
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "Stage",
        "metadata": {"name": "pod-hold"},
        "spec": {
            "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
            "weight": 1,
            "selector": {
                "matchExpressions": [
                    {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
                    {"key": ".status.phase", "operator": "In", "values": ["Running"]},
                    {
                        "key": f'.metadata.annotations["{HOLD_ANNOTATION}"]',
                        "operator": "In",
                        "values": ["true"],
                    },
                ]
            },
            "next": {},
        },
    }


def free_ports(count: int) -> list[int]:
    """Distinct free loopback ports (all held open until every one is chosen)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((LOOPBACK, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


# --- processes --------------------------------------------------------------------------------


def _start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks (``/proc/<pid>/stat`` field 22), or ``None`` if
    it is gone or a zombie. With the pid it identifies a process: pids are reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def process_alive(pid: int, start_ticks: int | None = None) -> bool:
    """Whether ``pid`` runs and, given its start time, is still the same process."""
    ticks = _start_ticks(pid)
    return ticks is not None and (start_ticks is None or ticks == start_ticks)


_STAT_PGRP: Final = 2
_STAT_SESSION: Final = 3
"""Fields of ``/proc/<pid>/stat`` after the command name (``state`` is 0)."""


def _live_with(field_index: int, value: int) -> list[int]:
    """Live (not zombie) processes whose ``/proc/<pid>/stat`` field ``field_index`` is ``value``."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] not in ("Z", "X") and int(fields[field_index]) == value:
            members.append(int(entry.name))
    return members


def group_members(pgid: int) -> list[int]:
    """Live processes of a process group (a component may have children)."""
    return _live_with(_STAT_PGRP, pgid)


def session_members(sid: int) -> list[int]:
    """Live processes of the session ``sid``: a CLI started with ``start_new_session`` and every
    plugin it started. The CLI gives each plugin a process group of its own, so its group alone
    misses them; the session does not, even once they are orphaned."""
    return _live_with(_STAT_SESSION, sid)


def listening_addresses(pid: int) -> list[tuple[str, int]]:
    """TCP addresses the process listens on (from /proc: no tools needed)."""
    inodes = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
    except OSError:
        return []
    found = []
    for table, v6 in (("tcp", False), ("tcp6", True)):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            local, state, inode = parts[1], parts[3], parts[9]
            if state != "0A" or inode not in inodes:  # 0A: LISTEN
                continue
            address, port = local.split(":")
            found.append((_ip_from_proc(address, v6), int(port, 16)))
    return found


def _ip_from_proc(hex_address: str, v6: bool) -> str:
    raw = bytes.fromhex(hex_address)
    if not v6:
        return str(ipaddress.IPv4Address(raw[::-1]))
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
    return str(ipaddress.IPv6Address(words))


def _tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


@dataclass
class Component:
    """One running process as the state file records it."""

    name: str
    pid: int
    start_ticks: int | None
    log: str
    command: list[str]

    def alive(self) -> bool:
        return process_alive(self.pid, self.start_ticks)


def stop_group(
    pid: int,
    start_ticks: int | None,
    grace_s: float = STOP_GRACE_S,
    popen: subprocess.Popen[bytes] | None = None,
) -> str:
    """SIGTERM the process group of ``pid`` (its leader), wait, then SIGKILL; returns how it
    ended. Never signals a pid that is no longer the process that was started."""
    if not process_alive(pid, start_ticks):
        if popen is not None:
            popen.wait()
        return "not running"
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if popen is not None:
            popen.poll()
        if not group_members(pid) and not process_alive(pid, start_ticks):
            return "stopped"
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    if popen is not None:
        popen.wait()
    deadline = time.monotonic() + 5
    while group_members(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return "killed"


# --- the cluster --------------------------------------------------------------------------------


@dataclass
class Ports:
    etcd: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    scheduler: int
    kwok: int

    @classmethod
    def choose(cls) -> Ports:
        return cls(*free_ports(6))


@dataclass
class State:
    """``state.json`` of a work folder: enough for another process to find and stop it."""

    stack: str
    context: str
    server: str
    ports: dict[str, int]
    components: dict[str, Component] = field(default_factory=dict)
    ready: bool = False

    def to_json(self) -> str:
        data = {
            "stack": self.stack,
            "context": self.context,
            "server": self.server,
            "ports": self.ports,
            "ready": self.ready,
            "components": {name: vars(c) for name, c in self.components.items()},
        }
        return json.dumps(data, indent=2) + "\n"

    @classmethod
    def read(cls, path: Path) -> State | None:
        try:
            data = json.loads(path.read_text())
            return cls(
                stack=data["stack"],
                context=data["context"],
                server=data["server"],
                ports=data["ports"],
                ready=data.get("ready", False),
                components={n: Component(**c) for n, c in data["components"].items()},
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None


def default_work_dir(stack: str) -> Path:
    return PROJECT_ROOT / "build" / "e2e" / stack / "cluster"


_WORK_ENTRIES: Final = (
    "pki",
    "etcd-data",
    "flexvolume",
    "kubectl-cache",
    "logs",
    "kwok.yaml",
    "nodes.yaml",
    "state.json",
    "admin.kubeconfig",
    "kube-controller-manager.kubeconfig",
    "kube-scheduler.kubeconfig",
    "kwok.kubeconfig",
)
"""What ``up`` writes, and all it deletes when it starts afresh (never the whole folder)."""


class LocalCluster:
    """The local cluster of one stack, in one work folder.

    ``with LocalCluster("dev").running() as cluster:`` starts it and always stops it;
    ``up``/``down``/``status`` are the same steps for the CLI, where ``down`` may run in
    another process than ``up`` (it reads the state file).
    """

    def __init__(
        self,
        stack: str = "dev",
        *,
        work_dir: Path | None = None,
        bin_dir: Path | None = None,
        build_missing: bool = False,
        project_root: Path = PROJECT_ROOT,
        shared: Path | None = None,
        config: PlatformConfig | None = None,
        ready_timeout_s: float = READY_TIMEOUT_S,
        log: Callable[[str], None] = print,
    ) -> None:
        self.stack = stack
        self.work_dir = (work_dir or default_work_dir(stack)).resolve()
        self.bin_dir = bin_dir
        self.build_missing = build_missing
        self.project_root = project_root
        self.shared = shared
        self._config = config
        self.ready_timeout_s = ready_timeout_s
        self.log = log
        self._binaries: dict[str, Path] | None = None
        self._popens: dict[str, subprocess.Popen[bytes]] = {}
        self._state: State | None = None

    # --- what the runner reads ---

    @property
    def config(self) -> PlatformConfig:
        if self._config is None:
            self._config = load_stack(self.stack, self.project_root)
        return self._config

    @property
    def context(self) -> str:
        """The kubeconfig context: the stack's ``cluster.kubeconfigContext``."""
        return self.config.cluster.kubeconfig_context

    @property
    def kubeconfig(self) -> Path:
        return self.work_dir / "admin.kubeconfig"

    @property
    def state_file(self) -> Path:
        return self.work_dir / "state.json"

    @property
    def logs_dir(self) -> Path:
        return self.work_dir / "logs"

    @property
    def pki(self) -> pkis.Pki:
        return pkis.Pki(self.work_dir / "pki")

    @property
    def state(self) -> State | None:
        """This run's state, else the state file's (a cluster another process started)."""
        return self._state or State.read(self.state_file)

    @property
    def server(self) -> str:
        """The API server's URL (``https://127.0.0.1:<port>``); known once started."""
        state = self.state
        if state is None:
            raise ClusterError(f"no cluster state in {self.work_dir}: run `cluster up` first")
        return state.server

    def env(self) -> dict[str, str]:
        """Environment for tools that read ``KUBECONFIG`` (the Pulumi provider, kubectl)."""
        return {"KUBECONFIG": str(self.kubeconfig)}

    def binaries(self) -> dict[str, Path]:
        if self._binaries is None:
            found, missing = find_binaries(self.bin_dir, build_missing=self.build_missing)
            if missing:
                where = self.bin_dir or "the build cache or build/e2e/bin"
                raise ClusterError(
                    f"not built: {', '.join(missing)} (looked in {where}); run "
                    "`python -m tools.e2e build kubernetes etcd kwok`"
                )
            self._binaries = found
        return self._binaries

    def kubectl(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        timeout_s: float = 120.0,
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl against this cluster (its kubeconfig and context)."""
        command = [
            str(self.binaries()["kubectl"]),
            f"--kubeconfig={self.kubeconfig}",
            f"--context={self.context}",
            # Its default, ~/.kube/cache, would collect one folder per port ever used.
            f"--cache-dir={self.work_dir / 'kubectl-cache'}",
            *args,
        ]
        try:
            done = subprocess.run(
                command,
                input=input,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise ClusterError(f"kubectl {' '.join(args)}: no answer in {timeout_s:.0f} s") from exc
        if check and done.returncode != 0:
            raise ClusterError(
                f"kubectl {' '.join(args)} failed ({done.returncode}):\n{done.stderr.strip()}"
            )
        return done

    def get_json(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    # --- lifecycle ---

    @contextlib.contextmanager
    def running(self) -> Iterator[LocalCluster]:
        """Start the cluster and stop every process it started on exit, on an exception, on
        Ctrl-C and on SIGTERM."""
        with _sigterm_raises():
            self.up()  # on failure it has stopped what it started
            try:
                yield self
            finally:
                self.down()

    def up(self) -> None:
        """Start everything and return once it is ready; on any failure (Ctrl-C included)
        stop what was started and raise."""
        binaries = self.binaries()
        config = self.config
        self.stop_strays()
        started = time.monotonic()
        try:
            self._prepare(config)
            self._start_etcd(binaries["etcd"])
            self._start_apiserver(binaries["kube-apiserver"])
            self._start_controllers(binaries)
            self._install_crds(config)
            self._create_nodes(config)
            self._start_provisioner(binaries["kubectl"])
            self._wait_default_service_account()
        except BaseException:
            self.log("cluster: start failed, stopping what was started")
            self.down(quiet=True)
            raise
        assert self._state is not None
        self._state.ready = True
        self._write_state()
        self.log(
            f"cluster: ready in {time.monotonic() - started:.0f} s at {self._state.server}, "
            f"kubeconfig {self.kubeconfig} (context {self.context})"
        )

    def stop_strays(self) -> None:
        """Stop what a previous ``up`` of this work folder left running (it crashed, or nobody
        ran ``down``)."""
        previous = State.read(self.state_file)
        if previous and any(c.alive() for c in previous.components.values()):
            self.log(f"cluster: stopping the processes a previous run left ({self.state_file})")
            self._stop(previous)

    def down(self, *, quiet: bool = False) -> dict[str, str]:
        """Stop every process of this work folder's cluster; returns how each one ended."""
        state = self._state or State.read(self.state_file)
        if state is None:
            if not quiet:
                self.log(f"cluster: nothing to stop (no state in {self.work_dir})")
            return {}
        outcome = self._stop(state, quiet=quiet)
        state.ready = False
        if self.state_file.parent.is_dir():
            self.state_file.write_text(state.to_json())
        self._state = None
        return outcome

    def _stop(self, state: State, *, quiet: bool = False) -> dict[str, str]:
        outcome = {}
        for name in reversed(COMPONENTS):
            component = state.components.get(name)
            if component is None:
                continue
            outcome[name] = stop_group(
                component.pid, component.start_ticks, popen=self._popens.pop(name, None)
            )
            if not quiet:
                self.log(f"cluster: {name} (pid {component.pid}) {outcome[name]}")
        return outcome

    def restart(self, name: str) -> str:
        """Stop one component's process group (if it still runs) and start it again with the
        command, and so the ports, the state recorded; returns once it is ready again. For
        faults: a control-plane component that crashed or was killed comes back as it was. Call
        it on the object that started the cluster: that one's ``down`` stops the new process."""
        state = self._state or State.read(self.state_file)
        component = state.components.get(name) if state else None
        if state is None or component is None:
            raise ClusterError(f"{name}: not started in {self.work_dir}")
        self._state = state
        outcome = stop_group(
            component.pid, component.start_ticks, popen=self._popens.pop(name, None)
        )
        ports = state.ports
        ready: dict[str, tuple[str, Callable[[], tuple[bool, str]]]] = {
            "etcd": ("healthy", lambda: self._http_ok(ports["etcd"], "/health")),
            "kube-apiserver": ("ready", lambda: self._https_ok(ports["apiserver"], "/readyz")),
            "kube-controller-manager": (
                "healthy",
                lambda: self._https_ok(ports["controller_manager"], "/healthz"),
            ),
            "kube-scheduler": ("ready", lambda: self._https_ok(ports["scheduler"], "/readyz")),
            "kwok": ("healthy", lambda: self._https_ok(ports["kwok"], "/healthz")),
        }
        what, check = ready.get(name, ("running", lambda: (True, "")))
        for attempt in range(RESTART_ATTEMPTS):
            self._spawn(name, component.command)
            try:
                self._wait(name, what, check)
                break
            except ClusterError as exc:
                # Clients retrying a loopback port in the ephemeral range can connect to
                # themselves (TCP simultaneous open) and hold it for a moment: try again.
                if "address already in use" not in str(exc) or attempt == RESTART_ATTEMPTS - 1:
                    raise
                self.log(f"cluster: {name}: its port was taken for a moment, starting it again")
        self.log(f"cluster: {name} restarted ({outcome} before)")
        return outcome

    def status(self) -> dict[str, Any]:
        """Each component's process state, the ports, and whether the API server is ready."""
        state = self.state
        if state is None:
            return {"work_dir": str(self.work_dir), "state": "no cluster", "components": {}}
        components = {
            name: {
                "pid": c.pid,
                "running": c.alive(),
                "listening": [f"{a}:{p}" for a, p in listening_addresses(c.pid)]
                if c.alive()
                else [],
                "log": c.log,
            }
            for name, c in state.components.items()
        }
        apiserver = "down"
        if components.get("kube-apiserver", {}).get("running"):
            ok, detail = self._https_ok(state.ports["apiserver"], "/readyz")
            apiserver = "ready" if ok else f"not ready: {detail}"
        return {
            "work_dir": str(self.work_dir),
            "stack": state.stack,
            "server": state.server,
            "context": state.context,
            "kubeconfig": str(self.kubeconfig),
            "ports": state.ports,
            "apiserver": apiserver,
            "components": components,
        }

    # --- steps of up ---

    def _prepare(self, config: PlatformConfig) -> None:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        for entry in _WORK_ENTRIES:
            path = self.work_dir / entry
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
        self.logs_dir.mkdir()
        (self.work_dir / "etcd-data").mkdir(mode=0o700)
        self.log(f"cluster: certificates and keys in {self.pki.folder}")
        pki = pkis.generate(self.pki.folder)
        ports = Ports.choose()
        server = f"https://{LOOPBACK}:{ports.apiserver}"
        self._state = State(
            stack=self.stack, context=self.context, server=server, ports=vars(ports)
        )
        self.kubeconfig.write_text(pkis.kubeconfig(pki, "admin", server, context=self.context))
        self.kubeconfig.chmod(0o600)
        for identity in ("kube-controller-manager", "kube-scheduler", "kwok"):
            path = self.work_dir / f"{identity}.kubeconfig"
            path.write_text(pkis.kubeconfig(pki, identity, server, context=identity))
            path.chmod(0o600)
        (self.work_dir / "kwok.yaml").write_text(kwok_stage_documents())
        self._write_state()

    def _write_state(self) -> None:
        assert self._state is not None
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(self._state.to_json())
        tmp.replace(self.state_file)

    def _spawn(self, name: str, command: list[str]) -> None:
        """Start a component in a session (and process group) of its own, so Ctrl-C in a
        terminal reaches only us, and ``down`` can signal the whole group."""
        assert self._state is not None
        log_path = self.logs_dir / f"{name}.log"
        with open(log_path, "ab") as log_file:
            popen = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                cwd=self.work_dir,
                start_new_session=True,
            )
        self._popens[name] = popen
        self._state.components[name] = Component(
            name=name,
            pid=popen.pid,
            start_ticks=_start_ticks(popen.pid),
            log=str(log_path),
            command=command,
        )
        self._write_state()
        self.log(f"cluster: {name} started (pid {popen.pid})")

    def _wait(self, name: str, what: str, check: Callable[[], tuple[bool, str]]) -> None:
        """Poll ``check`` until it passes; fail early if the component died, and after the
        timeout with the component's last log lines."""
        assert self._state is not None
        component = self._state.components.get(name)
        deadline = time.monotonic() + self.ready_timeout_s
        detail = ""
        while True:
            if component is not None and not component.alive():
                popen = self._popens.get(name)
                code = popen.poll() if popen else None
                raise ClusterError(
                    f"{name} exited (code {code}) before {what}; last lines of "
                    f"{component.log}:\n{_tail(Path(component.log))}"
                )
            ok, detail = check()
            if ok:
                return
            if time.monotonic() > deadline:
                log = f"{component.log}:\n{_tail(Path(component.log))}" if component else ""
                raise ClusterError(
                    f"{name}: not {what} after {self.ready_timeout_s:.0f} s ({detail}); "
                    f"last lines of {log}"
                )
            time.sleep(POLL_S)

    def https_get(
        self, port: int, path: str, identity: str = "admin", timeout: float = 5
    ) -> tuple[int, bytes]:
        """GET from a component over TLS verified against the cluster CA, as ``identity``:
        the status and the body."""
        pki = self.pki
        context = ssl.create_default_context(cafile=str(pki.ca_cert))
        context.load_cert_chain(str(pki.cert(identity)), str(pki.key(identity)))
        connection = http.client.HTTPSConnection(LOOPBACK, port, context=context, timeout=timeout)
        try:
            connection.request("GET", path)
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def _https_ok(self, port: int, path: str, identity: str = "admin") -> tuple[bool, str]:
        try:
            status, body = self.https_get(port, path, identity)
        except (OSError, http.client.HTTPException) as exc:
            return False, str(exc)
        text = body.decode(errors="replace").strip()
        return status == 200, f"HTTP {status}: {text[-300:]}"

    def _http_ok(self, port: int, path: str) -> tuple[bool, str]:
        connection = http.client.HTTPConnection(LOOPBACK, port, timeout=5)
        try:
            connection.request("GET", path)
            response = connection.getresponse()
            body = response.read().decode(errors="replace").strip()
            return response.status == 200, f"HTTP {response.status}: {body[-300:]}"
        except (OSError, http.client.HTTPException) as exc:
            return False, str(exc)
        finally:
            connection.close()

    def _start_etcd(self, binary: Path) -> None:
        assert self._state is not None
        ports = self._state.ports
        client = f"http://{LOOPBACK}:{ports['etcd']}"
        peer = f"http://{LOOPBACK}:{ports['etcd_peer']}"
        self._spawn(
            "etcd",
            [
                str(binary),
                "--name=e2e",
                f"--data-dir={self.work_dir / 'etcd-data'}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=e2e={peer}",
                "--initial-cluster-state=new",
                "--auto-compaction-retention=1",
                "--quota-backend-bytes=8589934592",
                # A throwaway cluster: losing writes on a host crash costs nothing, and fsync
                # on a busy CI disk slows every API write.
                "--unsafe-no-fsync",
            ],
        )
        self._wait("etcd", "healthy", lambda: self._http_ok(ports["etcd"], "/health"))

    def _start_apiserver(self, binary: Path) -> None:
        assert self._state is not None
        ports = self._state.ports
        pki = self.pki
        self._spawn(
            "kube-apiserver",
            [
                str(binary),
                f"--etcd-servers=http://{LOOPBACK}:{ports['etcd']}",
                f"--bind-address={LOOPBACK}",
                f"--advertise-address={LOOPBACK}",
                f"--secure-port={ports['apiserver']}",
                f"--tls-cert-file={pki.cert('apiserver')}",
                f"--tls-private-key-file={pki.key('apiserver')}",
                f"--client-ca-file={pki.ca_cert}",
                "--authorization-mode=Node,RBAC",
                f"--enable-admission-plugins={','.join(ADMISSION_PLUGINS)}",
                "--allow-privileged=true",
                "--enable-bootstrap-token-auth=true",
                f"--service-cluster-ip-range={pkis.SERVICE_CIDR}",
                f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
                f"--service-account-key-file={pki.sa_pub}",
                f"--service-account-signing-key-file={pki.sa_key}",
                f"--kubelet-client-certificate={pki.cert('apiserver-kubelet-client')}",
                f"--kubelet-client-key={pki.key('apiserver-kubelet-client')}",
                "--kubelet-preferred-address-types=InternalIP,Hostname",
                f"--proxy-client-cert-file={pki.cert('front-proxy-client')}",
                f"--proxy-client-key-file={pki.key('front-proxy-client')}",
                f"--requestheader-client-ca-file={pki.cert('front-proxy-ca')}",
                "--requestheader-allowed-names=front-proxy-client",
                "--requestheader-username-headers=X-Remote-User",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                # The "kubernetes" Service's endpoints would be 127.0.0.1, which EndpointSlice
                # validation refuses (loopback); nothing in the cluster dials it anyway.
                "--endpoint-reconciler-type=none",
            ],
        )
        self._wait("kube-apiserver", "ready", lambda: self._https_ok(ports["apiserver"], "/readyz"))

    def _component_flags(self, identity: str, port: int) -> list[str]:
        """Flags the controller manager and the scheduler share (kubeadm's set)."""
        pki = self.pki
        kubeconfig = self.work_dir / f"{identity}.kubeconfig"
        return [
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            f"--bind-address={LOOPBACK}",
            f"--secure-port={port}",
            f"--tls-cert-file={pki.cert(identity)}",
            f"--tls-private-key-file={pki.key(identity)}",
            f"--client-ca-file={pki.ca_cert}",
            f"--requestheader-client-ca-file={pki.cert('front-proxy-ca')}",
            "--leader-elect=false",
        ]

    def _start_controllers(self, binaries: dict[str, Path]) -> None:
        assert self._state is not None
        ports = self._state.ports
        pki = self.pki
        self._spawn(
            "kube-controller-manager",
            [
                str(binaries["kube-controller-manager"]),
                *self._component_flags("kube-controller-manager", ports["controller_manager"]),
                f"--cluster-name={self.config.cluster.name}",
                f"--root-ca-file={pki.ca_cert}",
                f"--service-account-private-key-file={pki.sa_key}",
                f"--cluster-signing-cert-file={pki.ca_cert}",
                f"--cluster-signing-key-file={pki.key('ca')}",
                "--use-service-account-credentials=true",
                "--controllers=*,bootstrapsigner,tokencleaner",
                f"--node-monitor-grace-period={NODE_MONITOR_GRACE}",
                # Its default, /usr/libexec/kubernetes/..., would be created on the host.
                f"--flex-volume-plugin-dir={self.work_dir / 'flexvolume'}",
            ],
        )
        self._spawn(
            "kube-scheduler",
            [
                str(binaries["kube-scheduler"]),
                *self._component_flags("kube-scheduler", ports["scheduler"]),
            ],
        )
        self._spawn(
            "kwok",
            [
                str(binaries["kwok"]),
                f"--kubeconfig={self.work_dir / 'kwok.kubeconfig'}",
                f"--config={self.work_dir / 'kwok.yaml'}",
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}={KWOK_NODE_VALUE}",
                f"--cidr={POD_CIDR}",
                f"--node-ip={LOOPBACK}",
                f"--node-port={ports['kwok']}",
                f"--server-address={LOOPBACK}:{ports['kwok']}",
                f"--tls-cert-file={pki.cert('kwok')}",
                f"--tls-private-key-file={pki.key('kwok')}",
                f"--node-lease-duration-seconds={NODE_LEASE_SECONDS}",
            ],
        )
        self._wait(
            "kube-controller-manager",
            "healthy",
            lambda: self._https_ok(ports["controller_manager"], "/healthz"),
        )
        self._wait("kube-scheduler", "ready", lambda: self._https_ok(ports["scheduler"], "/readyz"))
        self._wait("kwok", "healthy", lambda: self._https_ok(ports["kwok"], "/healthz"))

    def _start_provisioner(self, kubectl: Path) -> None:
        """The volume provisioner standing in for the CSI drivers (tools/e2e/provisioner.py);
        run as a script: it needs nothing of the project."""
        self._spawn(
            "provisioner",
            [
                sys.executable,
                str(Path(__file__).resolve().parent / "provisioner.py"),
                f"--kubectl={kubectl}",
                f"--kubeconfig={self.kubeconfig}",
                f"--context={self.context}",
            ],
        )

    def _install_crds(self, config: PlatformConfig) -> None:
        files = preinstalled_crds(config)
        if not files:
            return
        crds = (self.shared or shared_dir(self.project_root)) / "crds"
        paths = [crds / f for f in files]
        absent = [str(p) for p in paths if not p.is_file()]
        if absent:
            raise ClusterError(
                f"CRDs not found: {', '.join(absent)} (set AIPLATFORM_SHARED to the shared folder)"
            )
        args = [a for p in paths for a in ("-f", str(p))]
        self.kubectl("apply", "--server-side", "--field-manager=e2e-preinstalled", *args)
        self.kubectl("wait", "--for=condition=Established", "--timeout=60s", *args)
        self.log(f"cluster: preinstalled CRDs {', '.join(files)}")

    def _create_nodes(self, config: PlatformConfig) -> None:
        nodes = fake_nodes(config)
        if not nodes:
            return
        path = self.work_dir / "nodes.yaml"
        path.write_text(yaml.safe_dump_all(nodes, sort_keys=False))
        self.kubectl("create", "-f", str(path))
        names = {node["metadata"]["name"] for node in nodes}
        self.log(f"cluster: {len(names)} fake nodes created, waiting for them to be Ready")
        self._wait("kwok", "making every fake node Ready", lambda: self._nodes_ready(names))

    def _nodes_ready(self, names: set[str]) -> tuple[bool, str]:
        """Ready, and without the not-ready taint the node lifecycle controller puts on (the
        scheduler would keep pods off such a node)."""
        items = self.get_json("nodes")["items"]
        waiting = []
        for node in items:
            name = node["metadata"]["name"]
            if name not in names:
                continue
            conditions = {c["type"]: c["status"] for c in node["status"].get("conditions", [])}
            taints = {t["key"] for t in node["spec"].get("taints", [])}
            if conditions.get("Ready") != "True" or any(
                t.startswith("node.kubernetes.io/") for t in taints
            ):
                waiting.append(name)
        waiting += sorted(names - {node["metadata"]["name"] for node in items})
        return not waiting, f"waiting for {', '.join(sorted(waiting)[:5])}"

    def _wait_default_service_account(self) -> None:
        """Pods need their namespace's ``default`` ServiceAccount, which the controller
        manager creates; until then the ServiceAccount admission refuses them."""

        def exists() -> tuple[bool, str]:
            done = self.kubectl("get", "serviceaccount", "default", "-n", "default", check=False)
            return done.returncode == 0, done.stderr.strip()

        self._wait("kube-controller-manager", "creating service accounts", exists)


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """Turn SIGTERM into an exception while the block runs, so cleanup runs as on Ctrl-C."""
    try:
        previous = signal.getsignal(signal.SIGTERM)
    except ValueError:
        previous = None

    def handler(signum: int, frame: object) -> None:
        raise Terminated(f"signal {signum}")

    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


# --- CLI --------------------------------------------------------------------------------------


def _print_status(status: dict[str, Any]) -> None:
    if status.get("state") == "no cluster":
        print(f"no cluster in {status['work_dir']}")
        return
    print(f"stack {status['stack']}: {status['server']} (API server {status['apiserver']})")
    print(f"kubeconfig {status['kubeconfig']} context {status['context']}")
    for name in COMPONENTS:
        component = status["components"].get(name)
        if component is None:
            print(f"  {name:<24} not started")
            continue
        state = "running" if component["running"] else "stopped"
        listening = ", ".join(component["listening"])
        print(f"  {name:<24} {state:<8} pid {component['pid']:<8} {listening}")
        if not component["running"]:
            print(f"  {'':<24} log {component['log']}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.e2e cluster", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("action", choices=("up", "down", "status"))
    parser.add_argument("--stack", default="dev", help="Pulumi.<stack>.yaml (default: dev)")
    parser.add_argument(
        "--work-dir", type=Path, help="default: build/e2e/<stack>/cluster in the checkout"
    )
    parser.add_argument("--bin-dir", type=Path, help="take every binary from this folder")
    parser.add_argument("--build", action="store_true", help="build missing binaries first")
    parser.add_argument("--json", action="store_true", help="status as JSON")
    parser.add_argument(
        "--ready-timeout",
        type=float,
        default=READY_TIMEOUT_S,
        metavar="SECONDS",
        help=f"longest wait for each component (default {READY_TIMEOUT_S:.0f})",
    )
    args = parser.parse_args(argv)
    cluster = LocalCluster(
        args.stack,
        work_dir=args.work_dir,
        bin_dir=args.bin_dir,
        build_missing=args.build,
        ready_timeout_s=args.ready_timeout,
        log=lambda line: print(line, flush=True),
    )
    try:
        if args.action == "up":
            with _sigterm_raises():
                cluster.up()
        elif args.action == "down":
            cluster.down()
        else:
            status = cluster.status()
            if args.json:
                print(json.dumps(status, indent=2))
            else:
                _print_status(status)
    except (ClusterError, ConfigError, pkis.PkiError, builder.BuildError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, Terminated):
        print("interrupted: every process of the cluster was stopped", file=sys.stderr)
        return 130
    return 0
