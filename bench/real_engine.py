"""``python -m bench.real_engine`` (``make bench-real``): what the real engine costs.

For each stack (dev, prod and synthetic stacks of 100 and 1,000 workloads by default), on the
local cluster of ``tools.e2e`` (``LocalCluster``, the real Kueue beside it) and the e2e's own
stack derivation (``tools.e2e.stack.derive``), one run measures:

- the offline preview of the derived stack file (``python -m tools.preview``);
- the real ``pulumi preview`` and ``pulumi up`` with the policy pack, into a fresh cluster: wall
  time, and CPU time of the CLI and every process it reaped (engine, providers, language host,
  program, policy pack), split per process by sampling its session; the cluster's own CPU
  (API server, etcd, controllers, Kueue) beside it;
- the floor: ``kubectl apply --server-side`` of the same objects into a fresh cluster state
  (a new etcd): the offline preview's rendered manifests and the Helm releases' objects as Helm
  stored them in the cluster ``pulumi up`` made, with the CRDs read back from it;
- the ratios ``pulumi up`` / floor and real preview / offline preview, and, from ``pulumi up
  --event-log``, which resource kinds the update spent its time on.

Writes ``build/bench-real/results.json`` and ``results.md`` and, with ``--plot``, the plot of
docs/performance.md. Never part of ``make test``: it starts clusters and takes minutes.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from infra.config import PlatformConfig, StackFile
from tools.e2e import build as builds
from tools.e2e import kueue
from tools.e2e.charts import assemble_mirror
from tools.e2e.cluster import ClusterError, LocalCluster, shared_dir
from tools.e2e.nodes import HOSTNAME_LABEL, system_nodes
from tools.e2e.pulumi_cli import PulumiCli, kill_session
from tools.e2e.run import cluster_overrides
from tools.e2e.stack import PROJECT_ROOT, E2EStack, derive

from .real_engine_parts import (
    ChartObjects,
    SessionCpu,
    cluster_scoped_kinds,
    config_too_large,
    details,
    in_namespace,
    latest_releases,
    namespace_documents,
    parse_proc_stat,
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
from .synthetic import synthetic_config, write_stack_file

WORK_ROOT = PROJECT_ROOT / "build" / "bench-real"
SAMPLE_S = 0.25
"""How often the processes of a CLI session are sampled for the per-process CPU split."""
CLI_TIMEOUT_S = 3600.0
KUBECTL_TIMEOUT_S = 1800.0
FIELD_MANAGER = "bench-floor"
SERVER_TIMEOUT = "request did not complete within requested timeout"


class BenchError(Exception):
    """A measurement could not be taken."""


@dataclass
class Measured:
    """One timed command: wall time, CPU of it and what it reaped, the cluster's CPU meanwhile."""

    wall_s: float
    cpu_s: float
    code: int
    log: Path
    roles: dict[str, float] = field(default_factory=dict)
    server_cpu: dict[str, float] = field(default_factory=dict)
    leftover: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "wallSeconds": round(self.wall_s, 2),
            "cpuSeconds": round(self.cpu_s, 2),
            "cpuByProcess": self.roles,
            "clusterCpuSeconds": round(sum(self.server_cpu.values()), 2),
            "clusterCpuByComponent": self.server_cpu,
            "exitCode": self.code,
            "log": str(self.log),
        }


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _session_sample(sid: int, seen: SessionCpu) -> None:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        text = _read(entry / "stat")
        if text is None:
            continue
        stat = parse_proc_stat(int(entry.name), text)
        if stat.session != sid or stat.state in ("Z", "X"):
            continue
        raw = _read(entry / "cmdline") or ""
        seen.observe(stat.pid, role_of([p for p in raw.split("\0") if p]), stat.cpu_ticks)


def cluster_cpu(cluster: LocalCluster, run: kueue.KueueRun | None) -> dict[str, float]:
    """CPU seconds so far of each process of the cluster (and of Kueue)."""
    pids: dict[str, int] = {}
    state = cluster.state
    if state is not None:
        pids = {name: component.pid for name, component in state.components.items()}
    if run is not None and run.controller.status.pid:
        pids["kueue"] = run.controller.status.pid
    figures = {}
    for name, pid in pids.items():
        text = _read(Path(f"/proc/{pid}/stat"))
        if text is not None:
            figures[name] = parse_proc_stat(pid, text).cpu_ticks / 100
    return figures


def run_measured(
    command: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None,
    log: Path,
    timeout_s: float,
    cluster: LocalCluster | None = None,
    kueue_run: kueue.KueueRun | None = None,
) -> Measured:
    """Run ``command`` in a session of its own to its end; wall time, CPU from ``wait4`` (it and
    every descendant it reaped), the session's processes sampled per role, the cluster's CPU.
    On a timeout or an interrupt the whole session is killed."""
    log.parent.mkdir(parents=True, exist_ok=True)
    server_before = cluster_cpu(cluster, kueue_run) if cluster else {}
    with log.open("w") as out:
        out.write(f"$ {' '.join(command)}  (in {cwd})\n")
        out.flush()
        started = time.perf_counter()
        process = subprocess.Popen(
            list(command),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        seen = SessionCpu()
        stop = threading.Event()
        timed_out = threading.Event()

        def sample() -> None:
            deadline = time.monotonic() + timeout_s
            while not stop.wait(SAMPLE_S):
                _session_sample(process.pid, seen)
                if time.monotonic() > deadline:
                    timed_out.set()
                    kill_session(process.pid)
                    return

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        except BaseException:
            kill_session(process.pid)
            process.wait()
            raise
        finally:
            stop.set()
            sampler.join()
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        leftover = kill_session(process.pid)  # plugins that outlived the CLI
    server_after = cluster_cpu(cluster, kueue_run) if cluster else {}
    if timed_out.is_set():
        raise BenchError(f"{' '.join(command[:3])} timed out after {timeout_s:.0f} s (log: {log})")
    return Measured(
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        code=process.returncode,
        log=log,
        roles=seen.by_role(),
        server_cpu={
            name: round(server_after[name] - server_before.get(name, 0.0), 2)
            for name in server_after
        },
        leftover=len(leftover),
    )


def _tail(path: Path, lines: int = 30) -> str:
    return "\n".join(path.read_text(errors="replace").strip().splitlines()[-lines:])


def _checked(measured: Measured, what: str) -> Measured:
    if measured.code != 0:
        raise BenchError(f"{what} exited {measured.code}:\n{_tail(measured.log)}")
    return measured


@dataclass(frozen=True)
class Settings:
    """What the engine runs with: a user's knobs, varied by ``--variant``."""

    name: str = "default"
    parallel: int | None = None
    """``pulumi up --parallel``; ``None``: the CLI's default."""
    skip_checkpoints: bool = False
    """``PULUMI_SKIP_CHECKPOINTS``: the file backend writes the state once, at the end."""
    policy_pack: bool = True
    client_qps: int | None = None
    """``PULUMI_K8S_CLIENT_QPS``/``_BURST`` (burst twice the QPS): the provider's rate limit."""

    def env(self) -> dict[str, str]:
        env: dict[str, str] = {}
        if self.skip_checkpoints:
            env["PULUMI_SKIP_CHECKPOINTS"] = "true"
        if self.client_qps:
            env["PULUMI_K8S_CLIENT_QPS"] = str(self.client_qps)
            env["PULUMI_K8S_CLIENT_BURST"] = str(2 * self.client_qps)
        return env

    def flags(self) -> list[str]:
        return [f"--parallel={self.parallel}"] if self.parallel else []

    @classmethod
    def parse(cls, text: str) -> Settings:
        """``name:key=value,...`` with keys parallel, skip-checkpoints, policy-pack, qps."""
        name, _, spec = text.partition(":")
        values: dict[str, Any] = {"name": name}
        for item in filter(None, spec.split(",")):
            key, _, value = item.partition("=")
            if key == "parallel":
                values["parallel"] = int(value)
            elif key == "skip-checkpoints":
                values["skip_checkpoints"] = value in ("", "1", "true", "yes")
            elif key == "policy-pack":
                values["policy_pack"] = value in ("", "1", "true", "yes")
            elif key == "qps":
                values["client_qps"] = int(value)
            else:
                raise argparse.ArgumentTypeError(f"unknown setting {key!r} in {text!r}")
        return cls(**values)


def policy_args(stack: str, environment: str) -> list[str]:
    config_dir = PROJECT_ROOT / "policies" / "config"
    config = config_dir / f"{stack}.json"
    if not config.is_file():
        config = config_dir / f"{environment}.json"
    return ["--policy-pack", str(PROJECT_ROOT / "policies"), "--policy-pack-config", str(config)]


MEASUREMENT_ERRORS = (BenchError, ClusterError, kueue.KueueError)
"""What ends one stack's measurement (recorded with it) but not the run."""


EXTRA_CPU_NODES_PER_TEAM = 3
"""General-purpose nodes the benchmark adds per team of a synthetic stack: the e2e's three
system nodes hold the CPU-only services of dev and prod, not those of ten teams and more (their
pods would stay Pending and ``pulumi up`` would wait for them until its timeout)."""


def extra_cpu_nodes(count: int) -> list[dict[str, Any]]:
    """``count`` fake nodes shaped, labelled and placed like the e2e's system nodes."""
    nodes = []
    for index in range(count):
        node = copy.deepcopy(system_nodes([])[0])
        name = f"bench-cpu-{index + 1}"
        node["metadata"]["name"] = name
        node["metadata"]["labels"][HOSTNAME_LABEL] = name
        nodes.append(node)
    return nodes


class BenchCluster(LocalCluster):
    """The e2e's local cluster, with patience for large stacks (creating the 500 fake nodes of
    the 1,000-workload stack takes longer than the e2e's bound for one kubectl call on a busy
    machine), and ``extra_cpu_nodes`` general-purpose nodes beside the stack's."""

    extra_cpu_nodes = 0

    def _create_nodes(self, config: PlatformConfig) -> None:
        super()._create_nodes(config)
        if not self.extra_cpu_nodes:
            return
        extra = extra_cpu_nodes(self.extra_cpu_nodes)
        path = self.work_dir / "bench-nodes.yaml"
        path.write_text(yaml.safe_dump_all(extra, sort_keys=False))
        self.kubectl("create", "-f", str(path))
        names = {node["metadata"]["name"] for node in extra}
        self._wait("kwok", "making the extra CPU nodes Ready", lambda: self._nodes_ready(names))

    def kubectl(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        timeout_s: float = KUBECTL_TIMEOUT_S,
    ) -> subprocess.CompletedProcess[str]:
        return super().kubectl(
            *args, input=input, check=check, timeout_s=max(timeout_s, KUBECTL_TIMEOUT_S)
        )


class StackBench:
    """One stack's measurements, in its folder under the benchmark's work folder."""

    def __init__(
        self,
        name: str,
        source: Path,
        *,
        work_root: Path,
        bin_dir: Path,
        log: Any = print,
    ) -> None:
        self.name = name
        self.source = source
        self.work = (work_root / name).resolve()
        self.bin_dir = bin_dir
        self.log = log
        self.config = StackFile(source).platform_config()
        self.cluster = BenchCluster(
            name,
            work_dir=work_root / "cluster",
            bin_dir=bin_dir,
            config=self.config,
            ready_timeout_s=KUBECTL_TIMEOUT_S,
            log=lambda line: log(f"    {line}"),
        )
        if source.parent != PROJECT_ROOT:  # a synthetic stack
            self.cluster.extra_cpu_nodes = EXTRA_CPU_NODES_PER_TEAM * len(self.config.teams)
        self.e2e_stack: E2EStack | None = None
        self.cli: PulumiCli | None = None

    def prepare(self) -> Path:
        """A fresh work folder, the derived stack and its secrets, like ``make e2e``'s."""
        if self.work.exists():
            shutil.rmtree(self.work)
        self.work.mkdir(parents=True)
        charts = assemble_mirror(self.work / "charts", shared_dir() / "charts")
        self.e2e_stack = derive(
            self.name,
            work_dir=self.work,
            overrides=cluster_overrides(charts, self.cluster.kubeconfig, self.config),
            source=self.source,
        )
        self.cli = PulumiCli(self.bin_dir, self.work, kubeconfig=self.cluster.kubeconfig)
        self.cli.install_plugins()
        project = self.e2e_stack.project_dir
        self.cli.run(["stack", "init", self.name, "--secrets-provider", "passphrase"], cwd=project)
        for change in self.e2e_stack.secrets:
            self.cli.run(
                ["config", "set", "--secret", "--path", change.key, str(change.value)], cwd=project
            )
        return self.e2e_stack.stack_file

    def offline_preview(self) -> Measured:
        assert self.e2e_stack is not None
        command = [
            sys.executable,
            "-m",
            "tools.preview",
            "--stack",
            self.name,
            "--stack-file",
            str(self.e2e_stack.stack_file),
            "--out",
            str(self.work / "offline"),
            "--quiet",
        ]
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        return _checked(
            run_measured(
                command,
                cwd=PROJECT_ROOT,
                env=env,
                log=self.work / "logs" / "offline-preview.log",
                timeout_s=CLI_TIMEOUT_S,
            ),
            "offline preview",
        )

    @property
    def offline_report(self) -> dict[str, Any]:
        path = self.work / "offline" / self.name / "report.json"
        report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return report

    def pulumi(
        self,
        args: Sequence[str],
        settings: Settings,
        what: str,
        kueue_run: kueue.KueueRun | None,
    ) -> Measured:
        assert self.cli is not None and self.e2e_stack is not None
        # PULUMI_DEBUG_COMMANDS: what makes the CLI offer --event-log.
        env = {**self.cli.env(), **settings.env(), "PULUMI_DEBUG_COMMANDS": "true"}
        command = ["pulumi", *args, "--non-interactive", "--suppress-progress"]
        if settings.policy_pack:
            command += policy_args(self.name, self.config.cluster.environment)
        return _checked(
            run_measured(
                command,
                cwd=self.e2e_stack.project_dir,
                env=env,
                log=self.work / "logs" / f"{what}.log",
                timeout_s=CLI_TIMEOUT_S,
                cluster=self.cluster,
                kueue_run=kueue_run,
            ),
            f"pulumi {what}",
        )

    def engine(self, settings: Settings, results: dict[str, Any], *, no_change_up: bool) -> None:
        """Preview and up into a fresh cluster, each figure into ``results`` as it is taken (a
        later failure keeps the earlier ones); what the floor needs is read back before the
        cluster stops."""
        with self.cluster.running(), kueue.running_for(self.cluster) as run:
            self.log(f"  {self.name}: pulumi preview")
            results["preview"] = self.pulumi(["preview"], settings, "preview", run).to_dict()
            self.log(f"  {self.name}: pulumi up ({settings.name})")
            events = self.work / "logs" / "up-events.jsonl"
            up = self.pulumi(
                ["up", "--yes", "--skip-preview", f"--event-log={events}", *settings.flags()],
                settings,
                "up",
                run,
            )
            results["up"] = up.to_dict()
            results["upSlowestKinds"] = slowest_kinds(
                step_times(events.read_text(encoding="utf-8").splitlines())
            )
            if no_change_up:
                self.log(f"  {self.name}: pulumi up with no changes")
                results["upNoChanges"] = self.pulumi(
                    ["up", "--yes", "--skip-preview", "--expect-no-changes", *settings.flags()],
                    settings,
                    "up-no-changes",
                    run,
                ).to_dict()
            self.save_floor_inputs()

    # --- the floor ---

    def save_floor_inputs(self) -> None:
        """The CRDs and the Helm releases' objects as the cluster holds them after ``up``."""
        crds = self.cluster.get_json("customresourcedefinitions")["items"]
        secrets = self.cluster.get_json(
            "secrets", "-A", "--field-selector", "type=helm.sh/release.v1"
        )["items"]
        charts = [release_objects(r) for r in latest_releases(secrets)]
        floor = self.work / "floor"
        floor.mkdir(parents=True, exist_ok=True)
        (floor / "crds.yaml").write_text(yaml.safe_dump_all([reapplicable(c) for c in crds]))
        (floor / "charts.json").write_text(
            json.dumps([c.__dict__ for c in charts], indent=None), encoding="utf-8"
        )

    def floor_documents(
        self,
    ) -> tuple[list[dict[str, Any]], list[ChartObjects], list[dict[str, Any]]]:
        """``(CRDs and namespaces, the charts' objects, the other rendered objects)``."""
        floor = self.work / "floor"
        crds = [d for d in yaml.safe_load_all((floor / "crds.yaml").read_text()) if d]
        charts = [ChartObjects(**c) for c in json.loads((floor / "charts.json").read_text())]
        rendered = []
        for path in sorted((self.work / "offline" / self.name / "manifests").glob("*.yaml")):
            rendered += [unmasked(d) for d in yaml.safe_load_all(path.read_text()) if d]
        first, rest = split_first(rendered)
        chart_first: list[dict[str, Any]] = []
        kept_charts = []
        for chart in charts:
            defs, objects = split_first(chart.documents)
            chart_first += defs
            kept_charts.append(ChartObjects(chart.release, chart.namespace, objects))
        names = {d["metadata"]["name"] for d in first if d.get("kind") == "Namespace"}
        extra = namespace_documents(c.namespace for c in charts if c.namespace not in names)
        return [*crds, *chart_first, *first, *extra], kept_charts, rest

    def kubectl(self, what: str, *args: str) -> Measured:
        """One timed kubectl call against the cluster; its output in ``logs/floor-<what>.log``."""
        command = [
            str(self.cluster.binaries()["kubectl"]),
            f"--kubeconfig={self.cluster.kubeconfig}",
            f"--context={self.cluster.context}",
            f"--cache-dir={self.work / 'kubectl-cache'}",
            *args,
        ]
        log = self.work / "logs" / f"floor-{what}.log"
        measured = run_measured(
            command, cwd=self.work, env=None, log=log, timeout_s=KUBECTL_TIMEOUT_S,
            cluster=self.cluster,
        )  # fmt: skip
        if measured.code != 0 and SERVER_TIMEOUT in log.read_text(errors="replace"):
            # An API server this busy times out a request: apply is idempotent, go again and
            # count both (the floor only grows by it).
            again = run_measured(
                command, cwd=self.work, env=None, log=log.with_suffix(".retry.log"),
                timeout_s=KUBECTL_TIMEOUT_S, cluster=self.cluster,
            )  # fmt: skip
            again.wall_s += measured.wall_s
            again.cpu_s += measured.cpu_s
            measured = again
        return _checked(measured, f"kubectl {args[0]} ({what})")

    def kubectl_apply(self, documents: list[dict[str, Any]], what: str) -> Measured:
        path = self.work / "floor" / f"{what}.yaml"
        path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
        return self.kubectl(what, "apply", "--server-side", "--force-conflicts",
                            f"--field-manager={FIELD_MANAGER}", "-f", str(path))  # fmt: skip

    def floor(self) -> dict[str, Any]:
        """``kubectl apply --server-side`` of the same objects into a fresh cluster: first the
        definitions and namespaces (waiting for the CRDs to be established, as any client
        must), then the releases' objects, then, once Kueue serves its webhooks (its objects
        are refused before), everything else. Each step is one kubectl process."""
        first, charts, rest = self.floor_documents()
        parts: list[tuple[str, Measured]] = []
        with self.cluster.running(), kueue.running_for(self.cluster) as run:
            self.log(f"  {self.name}: kubectl floor")
            started = time.perf_counter()
            parts.append(("definitions", self.kubectl_apply(first, "definitions")))
            established = self.kubectl(
                "established", "wait", "--for=condition=Established", "--timeout=300s", "crd",
                "--all",
            )  # fmt: skip
            parts.append(("established", established))
            asked = time.perf_counter()
            scoped = cluster_scoped_kinds(
                self.cluster.kubectl("api-resources", "--namespaced=false", "--no-headers").stdout
            )
            asked = time.perf_counter() - asked  # the benchmark's question, not the floor's work
            placed = [d for c in charts for d in in_namespace(c.documents, c.namespace, scoped)]
            parts.append(("charts", self.kubectl_apply(placed, "charts")))
            waited = time.perf_counter()
            with contextlib.suppress(kueue.KueueError):
                run.wait_serving()
            kueue_wait = time.perf_counter() - waited
            parts.append(("objects", self.kubectl_apply(rest, "objects")))
            wall = time.perf_counter() - started - asked
        return {
            "wallSeconds": round(wall, 2),
            "cpuSeconds": round(sum(m.cpu_s for _, m in parts), 2),
            "clusterCpuSeconds": round(sum(sum(m.server_cpu.values()) for _, m in parts), 2),
            "kueueWaitSeconds": round(kueue_wait, 2),
            "objects": len(first) + sum(len(c.documents) for c in charts) + len(rest),
            "parts": {name: m.to_dict() for name, m in parts},
        }


def stack_sources(
    names: Sequence[str], sizes: Sequence[int], work_root: Path
) -> list[tuple[str, Path]]:
    """``(stack, stack file)`` for each named stack and each synthetic size. A synthetic stack's
    workloads are in workload files (a folder per stack), as a user must write a stack past the
    engine's config limit (docs/operations.md, "How large one stack can be")."""
    sources = [(name, PROJECT_ROOT / f"Pulumi.{name}.yaml") for name in names]
    for size in sizes:
        name = f"bench{size}"
        folder = work_root / "stacks" / name
        path = write_stack_file(folder, name, synthetic_config(size), workload_files=True)
        sources.append((name, path))
    return sources


def measure(
    name: str,
    source: Path,
    *,
    work_root: Path,
    bin_dir: Path,
    settings: Settings,
    no_change_up: bool,
    previous: dict[str, Any] | None = None,
    skip_floor: bool = False,
) -> dict[str, Any]:
    bench = StackBench(name, source, work_root=work_root, bin_dir=bin_dir)
    print(f"stack {name}", file=sys.stderr, flush=True)
    document = yaml.safe_load(source.read_text(encoding="utf-8")) or {}
    too_large = config_too_large(document.get("config") or {})
    if too_large:
        print(f"  {name}: not measured: {too_large}", file=sys.stderr, flush=True)
        return {"error": f"not measured: {too_large}"}
    if previous is not None:  # --floor-only: the engine's figures and floor inputs of a run
        entry = {k: v for k, v in previous.items() if k != "error"}
    else:
        entry = {"settings": settings.__dict__}
        try:
            _engine_figures(bench, entry, settings, no_change_up=no_change_up)
        except MEASUREMENT_ERRORS as exc:
            entry["error"] = str(exc)[-4000:]
            return entry
    if skip_floor:
        return entry
    try:
        entry["floor"] = bench.floor()
    except MEASUREMENT_ERRORS as exc:
        entry["error"] = str(exc)[-4000:]
    entry["ratios"] = stack_ratios(entry)
    return entry


def _engine_figures(
    bench: StackBench, entry: dict[str, Any], settings: Settings, *, no_change_up: bool
) -> None:
    bench.prepare()
    entry["offlinePreview"] = bench.offline_preview().to_dict()
    report = bench.offline_report
    entry["resources"] = len(report["resources"])
    entry["objects"] = sum(1 for r in report["resources"] if r.get("manifest"))
    entry["workloads"] = len(bench.config.workloads)
    bench.engine(settings, entry, no_change_up=no_change_up)


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.real_engine", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--stacks", default="dev,prod", help="stack files of the project (comma list)"
    )
    parser.add_argument("--sizes", default="100,1000", help="synthetic stack sizes in workloads")
    parser.add_argument(
        "--variant",
        type=Settings.parse,
        action="append",
        default=[],
        help="engine settings, name:parallel=N,skip-checkpoints,policy-pack=0,qps=N "
        "(repeatable; default: the CLI's defaults)",
    )
    parser.add_argument("--no-change-up", action="store_true", help="also time a second up")
    parser.add_argument(
        "--skip-floor", action="store_true", help="the engine only (a variant of a measured stack)"
    )
    parser.add_argument(
        "--floor-only",
        action="store_true",
        help="measure the floor again from the last run's results and floor inputs",
    )
    parser.add_argument(
        "--report",
        nargs="+",
        metavar="RESULTS_JSON",
        help="measure nothing: the table and plot of these runs' results.json",
    )
    parser.add_argument("--out", default=str(WORK_ROOT))
    parser.add_argument("--plot", help="write the plot (SVG) here")
    return parser.parse_args(argv)


def report(paths: Sequence[Path], out: Path, plot_path: str | None) -> int:
    """The table, details and plot of earlier runs' ``results.json`` (stacks of later files
    replace those of earlier ones of the same name)."""
    merged: dict[str, Any] = {"stacks": {}}
    for path in paths:
        merged["stacks"].update(json.loads(path.read_text())["stacks"])
    for key, entry in merged["stacks"].items():
        # A variant measured with --skip-floor is judged against its stack's floor.
        base = merged["stacks"].get(key.split(" (")[0]) or {}
        if "floor" not in entry and "floor" in base and "up" in entry:
            entry["floor"] = base["floor"]
        entry["ratios"] = stack_ratios(entry)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.md").write_text(f"{table(merged)}\n\n{details(merged)}\n")
    print(table(merged))
    print(details(merged))
    if plot_path:
        from .real_engine_plot import plot

        plot(merged, Path(plot_path))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.report:
        return report([Path(p) for p in args.report], Path(args.out), args.plot)
    work_root = Path(args.out).resolve()
    work_root.mkdir(parents=True, exist_ok=True)
    variants = args.variant or [Settings()]
    names = [s for s in args.stacks.split(",") if s]
    sizes = [int(s) for s in args.sizes.split(",") if s]
    out = work_root / "results.json"
    # Earlier runs' stacks stay (a variant or --floor-only run adds to them).
    earlier: dict[str, Any] = json.loads(out.read_text())["stacks"] if out.is_file() else {}
    results: dict[str, Any] = {"stacks": dict(earlier), "load": os.getloadavg()}
    failed = False
    try:
        with _sigterm_raises():
            bin_dir = builds.build_all(log=lambda line: print(f"    {line}", file=sys.stderr))
            results["versions"] = builds.versions()
            for name, source in stack_sources(names, sizes, work_root):
                for settings in variants:
                    key = name if settings.name == "default" else f"{name} ({settings.name})"
                    results["stacks"][key] = measure(
                        name,
                        source,
                        work_root=work_root,
                        bin_dir=bin_dir,
                        settings=settings,
                        no_change_up=args.no_change_up,
                        previous=earlier.get(key) if args.floor_only else None,
                        skip_floor=args.skip_floor,
                    )
                    out.write_text(json.dumps(results, indent=2) + "\n")
                    if "error" in results["stacks"][key]:
                        failed = True
                        print(f"{key}: {results['stacks'][key]['error']}", file=sys.stderr)
                    print(table({"stacks": {key: results["stacks"][key]}}), file=sys.stderr)
    except MEASUREMENT_ERRORS as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        out.write_text(json.dumps(results, indent=2) + "\n")
        return 2
    except KeyboardInterrupt:
        print("interrupted: the clusters were stopped", file=sys.stderr)
        out.write_text(json.dumps(results, indent=2) + "\n")
        return 130
    (work_root / "results.md").write_text(f"{table(results)}\n\n{details(results)}\n")
    print(table(results))
    if args.plot:
        from .real_engine_plot import plot

        plot(results, Path(args.plot))
    print(f"\nresults in {out}")
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
