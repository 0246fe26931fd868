"""``make e2e``: the real CLI and providers deploy a stack to a local cluster, and say if it held.

    python -m tools.e2e run --stack dev

Steps (each with its verdict and time in the console report and ``build/e2e/<stack>/report.json``):
the tools are built, the e2e stack is derived and previewed offline, the cluster starts, then
the real ``pulumi preview`` with the policy pack (its resources must equal the offline
preview's), ``pulumi up``, every object read back, workloads admitted and placed, the metrics
charts as Helm installed them, a second ``up`` and a ``refresh`` with no changes, a bad manifest
refused by the pack, and the team consumer example reading the stack through a StackReference.
Exit 0 only if every step passes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from components.constants import PROJECT
from infra.config import PlatformConfig, StackFile

from . import build as builds
from . import kueue
from .charts import assemble_mirror
from .cluster import LocalCluster, Terminated, shared_dir
from .compare import compare
from .guardrails import check_guardrails
from .metrics_apis import check_metrics_apis
from .pulumi_cli import ORGANIZATION, CliError, PulumiCli
from .readback import check_objects, check_workloads
from .report import Report, StepFailedError, fail
from .stack import PROJECT_ROOT, E2EStack, derive

WORK_ROOT = PROJECT_ROOT / "build" / "e2e"


def bad_manifest(namespace: str) -> dict[str, Any]:
    """A GPU pod that requests a GPU without the equal limit, in a team namespace: refused by
    ``gpu-limits-match-requests``, which is mandatory in every stack's policy config."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "e2e-gpu-without-limits", "namespace": namespace},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                    "resources": {"requests": {"nvidia.com/gpu": "1"}},
                }
            ]
        },
    }


BAD_MANIFEST_POLICY = "gpu-limits-match-requests"


def cluster_overrides(
    charts: Path, kubeconfig: Path, config: PlatformConfig | None
) -> dict[str, Any]:
    """What the e2e stack changes, and why: the local cluster's kubeconfig (named in the stack,
    so nothing depends on the environment), charts from a local mirror (the fake cluster has no
    way out), and for a stack with KEDA its webhooks' failure policy (its processes are KWOK
    pods here: nothing serves the webhooks, docs/e2e.md); nothing else. ``config`` is the
    stack's, required so that no caller forgets what it decides."""
    overrides: dict[str, Any] = {
        "cluster": ({"kubeconfig": str(kubeconfig)}, "the local cluster's kubeconfig"),
        "charts": (
            {"source": "directory", "directory": str(charts)},
            "charts from a local mirror (no traffic beyond loopback)",
        ),
    }
    if config is not None and config.autoscaling.keda.enabled:
        overrides["autoscaling"] = (
            {"keda": {"webhookFailurePolicy": "Ignore"}},
            "KEDA's webhooks run as KWOK pods here: nothing serves them",
        )
    return overrides


def policy_config(stack: str, pack: Path = PROJECT_ROOT / "policies") -> Path:
    return pack / "config" / f"{stack}.json"


@contextlib.contextmanager
def policy_pack_copy() -> Iterator[Path]:
    """The policy pack copied outside the checkout, for the real ``pulumi preview``: the folder
    is the whole pack (docs/policies.md, "The pack on its own"), and the real CLI proves it."""
    with tempfile.TemporaryDirectory(prefix="ai-platform-policies-") as parent:
        pack = Path(parent) / "policies"
        ignore = shutil.ignore_patterns("__pycache__", "tests")
        shutil.copytree(PROJECT_ROOT / "policies", pack, ignore=ignore)
        yield pack


class E2E:
    """One stack's run: its work folder, its CLI, its cluster and its report."""

    def __init__(self, stack: str, *, work_dir: Path | None = None) -> None:
        self.stack = stack
        self.work_dir = (work_dir or WORK_ROOT / stack).resolve()
        self.report = Report(stack, self.work_dir / "report.json")
        self.e2e_stack: E2EStack | None = None
        self.cli: PulumiCli | None = None
        self.cluster: LocalCluster | None = None
        self.policy_pack = PROJECT_ROOT / "policies"
        """The pack the real previews run: a copy outside the checkout during a session."""

    # --- helpers ---

    @property
    def cluster_dir(self) -> Path:
        return self.work_dir / "cluster"

    @property
    def project(self) -> Path:
        assert self.e2e_stack is not None
        return self.e2e_stack.project_dir

    def pulumi(self, *args: str, cwd: Path | None = None, **kwargs: Any) -> Any:
        assert self.cli is not None
        return self.cli.run(list(args), cwd=cwd or self.project, **kwargs)

    def step(self, name: str, action: Callable[[list[str]], None]) -> bool:
        """Run one step; a failure (a check, the CLI, the cluster) is recorded and the run goes
        on to the next step. Interrupts end the run."""
        try:
            with self.report.step(name) as step:
                action(step.detail)
        except Exception:  # the report has it; the other steps still run
            return False
        return True

    # --- the run ---

    def fresh_work_dir(self) -> None:
        """Empty the work folder, except the cluster folder: its state file is how a crashed
        earlier run's processes are found and stopped."""
        self.work_dir.mkdir(parents=True, exist_ok=True)
        for entry in self.work_dir.iterdir():
            if entry == self.cluster_dir:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()

    def prepare(self) -> None:
        """Everything before the cluster: the tools, the e2e stack, its secrets, and its
        offline preview (which the real one must equal)."""
        with self.report.step("build the real parts") as step:
            bin_dir = builds.build_all(log=lambda line: print(f"    {line}", flush=True))
            step.detail.append(f"binaries in {bin_dir}")
            self.report.facts["versions"] = builds.versions()
        cluster = self.cluster = LocalCluster(
            self.stack,
            work_dir=self.cluster_dir,
            bin_dir=bin_dir,
            log=lambda line: print(f"    {line}", flush=True),
        )
        with self.report.step("derive the e2e stack") as step:
            self.e2e_stack = derive(
                self.stack,
                work_dir=self.work_dir,
                overrides=cluster_overrides(
                    assemble_mirror(self.work_dir / "charts", shared_dir() / "charts"),
                    cluster.kubeconfig,
                    cluster.config,
                ),
            )
            step.detail += [c.describe() for c in self.e2e_stack.changes]
            self.report.facts["changes"] = [c.describe() for c in self.e2e_stack.changes]
        self.cli = PulumiCli(bin_dir, self.work_dir, kubeconfig=cluster.kubeconfig)
        # Secrets first: the offline preview then reads the same (encrypted) stack file.
        with self.report.step("stack init and test secrets") as step:
            self.init_stack(step.detail)
        with self.report.step("offline preview of the e2e stack") as step:
            self.offline_preview(step.detail)

    @contextlib.contextmanager
    def session(self) -> Iterator[LocalCluster]:
        """The prepared stack with its cluster and the Kueue controller running; everything
        they started is stopped on exit, on failure and on interrupts."""
        self.fresh_work_dir()
        self.prepare()
        assert self.cluster is not None
        with (
            policy_pack_copy() as self.policy_pack,
            self.cluster.running(),
            kueue.running_for(self.cluster),
        ):
            yield self.cluster

    def checks(self) -> None:
        """The steps of ``make e2e``, in order, after :meth:`session` started."""
        self.step("pulumi preview with the policy pack equals the offline preview",
                  self.real_preview)  # fmt: skip
        if self.step("pulumi up", self.up):
            self.step("objects read back as declared", self.read_back)
            self.step("workloads admitted and placed", self.workloads)
            self.step("metrics APIs installed as declared", self.metrics_apis)
            self.step("tenant guardrails refuse a team admin", self.guardrails)
            self.step("second pulumi up changes nothing", self.second_up)
            self.step("pulumi refresh finds no drift", self.refresh)
            self.step("team consumer through a StackReference", self.team_consumer)
        self.step("a bad manifest fails the policy pack", self.bad_manifest)

    def run(self, checks: Callable[[], None] | None = None) -> int:
        """A session with ``checks`` (default: :meth:`checks`); the exit code of the run."""
        try:
            with self.session():
                (checks or self.checks)()
        except (StepFailedError, CliError):
            pass
        except (KeyboardInterrupt, Terminated):
            print("interrupted: the cluster was stopped", file=sys.stderr)
            self.report.write()
            return 130
        self.report.write()
        self.report.summary()
        return 0 if self.report.passed else 1

    # --- steps ---

    def offline_preview(self, detail: list[str]) -> None:
        assert self.e2e_stack is not None
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "tools.preview",
                "--stack",
                self.stack,
                "--stack-file",
                str(self.e2e_stack.stack_file),
                "--out",
                str(self.work_dir / "offline"),
                "--quiet",
            ],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        detail += done.stdout.strip().splitlines()[-4:]
        if done.returncode != 0:
            fail(f"offline preview exited {done.returncode}:\n{done.stdout}{done.stderr}")

    @property
    def offline_report(self) -> dict[str, Any]:
        path = self.work_dir / "offline" / self.stack / "report.json"
        return json.loads(path.read_text(encoding="utf-8"))

    def init_stack(self, detail: list[str]) -> None:
        assert self.e2e_stack is not None and self.cli is not None
        detail += [f"plugin installed: {p}" for p in self.cli.install_plugins()]
        self.pulumi("stack", "init", self.stack, "--secrets-provider", "passphrase")
        for change in self.e2e_stack.secrets:
            self.pulumi("config", "set", "--secret", "--path", change.key, str(change.value))
            detail.append(f"set secret {change.key}")

    def real_preview(self, detail: list[str]) -> None:
        assert self.cluster is not None
        unknown = self.kinds_not_served()
        done = self.pulumi(*self.preview_args("--json"), check=False)
        (self.work_dir / "preview.json").write_text(done.stdout, encoding="utf-8")
        if done.code != 0:
            # --json leaves out the policy report: the console form says what failed.
            printed = self.pulumi(*self.preview_args(), check=False)
            fail(f"pulumi preview exited {done.code}:\n{_after(printed.stdout, 'Policies:')}")
        result = compare(done.json(), self.offline_report, unknown)
        self.report.facts["previewComparison"] = result.to_dict()
        if not result.agree:
            fail("\n".join(result.lines()))
        detail += result.lines()

    def preview_args(self, *extra: str) -> list[str]:
        return [
            "preview",
            *extra,
            "--policy-pack",
            str(self.policy_pack),
            "--policy-pack-config",
            str(policy_config(self.stack, self.policy_pack)),
        ]

    def kinds_not_served(self) -> set[str]:
        """``apiVersion/kind`` of every custom resource of the offline report that the cluster
        does not serve yet (its CRD comes with a chart of the same update)."""
        assert self.cluster is not None
        served = set(
            self.cluster.kubectl("api-resources", "-o", "name", "--cached=false").stdout.split()
        )
        unknown = set()
        for resource in self.offline_report["resources"]:
            inputs = resource.get("inputs") or {}
            api_version, kind = inputs.get("apiVersion", ""), inputs.get("kind", "")
            group = api_version.rpartition("/")[0]
            if group and "." in group and not any(n.endswith(f".{group}") for n in served):
                unknown.add(f"{api_version}/{kind}")
        return unknown

    def up(self, detail: list[str]) -> None:
        done = self.pulumi("up", "--yes", "--skip-preview", timeout=1800)
        detail += [
            line for line in done.stdout.splitlines() if "Resources:" in line or "+" in line
        ][-3:]

    def read_back(self, detail: list[str]) -> None:
        assert self.cluster is not None
        problems, checked = check_objects(self.cluster, self.offline_report)
        detail.append(f"{checked} objects read back")
        if problems:
            fail("\n".join(problems))

    def workloads(self, detail: list[str]) -> None:
        assert self.cluster is not None
        problems, facts = check_workloads(self.cluster, self.offline_report)
        detail += facts
        if problems:
            fail("\n".join(problems))

    def metrics_apis(self, detail: list[str]) -> None:
        """What Helm made of the metrics charts' values (tools/e2e/metrics_apis.py); their
        processes are KWOK pods, so no metric is read."""
        assert self.cluster is not None
        problems, facts = check_metrics_apis(self.cluster, self.offline_report)
        detail += facts
        if problems:
            fail("\n".join(problems))

    def guardrails(self, detail: list[str]) -> None:
        """As a member of each team's admin group (``--as``), what the admission policies forbid
        is refused with their message and what they allow passes (server-side dry runs)."""
        assert self.cluster is not None
        problems, facts = check_guardrails(self.cluster, self.offline_report)
        detail += facts
        if problems:
            fail("\n".join(problems))

    def second_up(self, detail: list[str]) -> None:
        self.pulumi("up", "--yes", "--expect-no-changes", timeout=1800)
        detail.append("no changes")

    def refresh(self, detail: list[str]) -> None:
        """Drift is only what a component declares another controller owns (its
        ``ignoreChanges``, e.g. a queued Job's ``spec.suspend``, Kueue's); after the refresh,
        ``pulumi up`` is still a no-op."""
        done = self.pulumi("refresh", "--preview-only", "--json", timeout=1800)
        declared = {
            r["urn"]: r["options"].get("ignoreChanges") or []
            for r in self.offline_report["resources"]
        }
        problems, owned = drift(done.json(), declared)
        detail += owned or ["no drift"]
        if problems:
            fail("\n".join(problems))
        self.pulumi("refresh", "--yes", timeout=1800)
        self.pulumi("up", "--yes", "--expect-no-changes", timeout=1800)
        detail.append("refreshed; pulumi up after it changes nothing")

    def bad_manifest(self, detail: list[str]) -> None:
        """A pull request that adds a bad manifest: the real CLI refuses it with the mandatory
        violation, printed as it prints it."""
        assert self.e2e_stack is not None
        bad = self.work_dir / "bad" / "project"
        shutil.copytree(self.project, bad, symlinks=True, dirs_exist_ok=True)
        stack_file = bad / self.e2e_stack.stack_file.name
        document = yaml.safe_load(stack_file.read_text(encoding="utf-8"))
        manifests = document["config"].setdefault(f"{PROJECT}:extraManifests", [])
        team = next(iter(sorted((self.offline_report.get("outputs") or {}).get("teams") or {})))
        namespace = self.offline_report["outputs"]["teams"][team]["namespace"]
        manifests.append(bad_manifest(namespace))
        stack_file.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
        done = self.pulumi(*self.preview_args("--stack", self.stack), cwd=bad, check=False)
        printed = done.stdout + done.stderr
        lines = [line.strip() for line in printed.splitlines() if BAD_MANIFEST_POLICY in line]
        detail += lines[:4]
        if done.code == 0:
            fail("pulumi preview passed a GPU pod without limits")
        if not lines or "mandatory" not in printed:
            fail(f"pulumi preview failed, but not with {BAD_MANIFEST_POLICY}:\n{printed[-3000:]}")

    def team_consumer(self, detail: list[str]) -> None:
        assert self.cluster is not None
        source = PROJECT_ROOT / "examples" / "team-consumer"
        consumer = self.work_dir / "team-consumer"
        shutil.copytree(source, consumer, dirs_exist_ok=True)
        # Its Pulumi.yaml names the venv relative to the checkout: point it at the same one.
        project_file = consumer / "Pulumi.yaml"
        project_file.write_text(
            project_file.read_text().replace(
                "virtualenv: ../../.venv", f"virtualenv: {PROJECT_ROOT / '.venv'}"
            )
        )
        self.pulumi("stack", "init", "consumer", cwd=consumer)
        outputs = self.pulumi("stack", "output", "--json").json()
        assert self.e2e_stack is not None
        config = StackFile(self.e2e_stack.stack_file).platform_config()
        team, pool = consumer_targets(config, outputs)
        for key, value in {
            "platformStack": f"{ORGANIZATION}/{PROJECT}/{self.stack}",
            "team": team,
            "pool": pool,
            "kubeconfigContext": self.cluster.context,
        }.items():
            self.pulumi("config", "set", key, value, cwd=consumer)
        # The example imports the platform's components as the project venv installed them.
        self.pulumi("up", "--yes", "--skip-preview", cwd=consumer, timeout=1200)
        detail.append(f"team {team} on pool {pool}: deployed through the StackReference")
        self.pulumi("destroy", "--yes", "--skip-preview", cwd=consumer, timeout=1200)
        detail.append("consumer stack destroyed")


def _after(text: str, marker: str, limit: int = 6000) -> str:
    """The part of ``text`` from ``marker`` on (all of it when absent), at most ``limit`` chars."""
    index = text.find(marker)
    return (text[index:] if index >= 0 else text)[:limit]


def drift(preview: dict[str, Any], declared: dict[str, list[str]]) -> tuple[list[str], list[str]]:
    """``(undeclared drift, declared drift)`` of a refresh preview: each changed property of each
    step, allowed only under a path the resource ignores."""
    problems: list[str] = []
    owned: list[str] = []
    for step in preview.get("steps", []):
        if step.get("op") in (None, "same", "refresh") and not step.get("detailedDiff"):
            continue
        urn = step["urn"]
        for path in sorted(step.get("detailedDiff") or {}) or ["(whole resource)"]:
            allowed = any(path == p or path.startswith(f"{p}.") for p in declared.get(urn, []))
            (owned if allowed else problems).append(f"{urn}: {path} ({step.get('op')})")
    return problems, owned


def consumer_targets(config: PlatformConfig, outputs: dict[str, Any]) -> tuple[str, str]:
    """A training team and a pool its queue may use (the pools a team may select are its
    queue's: the admission guardrails refuse any other), as the stack's outputs publish them."""
    pools = outputs.get("gpuPools") or {}
    for team in sorted(config.teams, key=lambda t: (t.purpose != "training", t.name)):
        for quota in team.queue.pools if team.queue else []:
            if team.name in (outputs.get("teams") or {}) and quota.pool in pools:
                return team.name, quota.pool
    fail(f"no team with a queued GPU pool in the outputs: pools {sorted(pools)}")
    raise AssertionError  # unreachable


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.e2e run", description=__doc__)
    parser.add_argument("--stack", default="dev", help="reads Pulumi.<stack>.yaml (default: dev)")
    args = parser.parse_args(argv)
    return E2E(args.stack).run()
