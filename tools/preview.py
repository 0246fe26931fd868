"""Offline preview: the real program under Pulumi's mock runtime, rendered and checked.

    python -m tools.preview --stack dev

Exit codes: 0 everything valid; 1 validation or mandatory policy failures; 2 config errors
(a stack file that is not valid YAML included). The console lists every policy violation with
its resource and stack config entry (``--quiet``: the counts and the mandatory ones only).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import ExitStack, contextmanager, nullcontext, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from infra.config import ConfigError, ConfigIssue, StackFile
from infra.config.load import project_keys

from .findings import LEVELS, Finding, config_keys, findings, format_findings
from .mockrun import CapturedResource, MockRun, heap_frozen, run_under_mocks, runs_in_process
from .netpol import Cluster, ManifestError, kube_dns, reachability_matrix
from .policy_driver import (
    PolicyConfigError,
    PolicyDriverError,
    PolicyPackProcess,
    PolicyRunResult,
)
from .policy_step import launch_policies, run_policies
from .render import write_manifests
from .schema_validation import (
    ManifestValidator,
    SchemaValidationError,
    UnsupportedKubernetesVersionError,
    default_crd_location,
    resolve_kubernetes_version,
)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
EXIT_OK, EXIT_INVALID, EXIT_CONFIG = 0, 1, 2
REACHABILITY_MAX_ENDPOINTS = 60
"""The matrix grows with the square of the workloads (2 s and 8 MB of report at 100 workloads):
above this many endpoints the preview skips it and says how to compute it."""
T = TypeVar("T")


@dataclass
class Progress:
    """One line per step on stderr, with its duration: the user sees where time goes."""

    total: int
    quiet: bool = False
    timings: dict[str, float] = field(default_factory=dict)
    _step: int = 0

    @contextmanager
    def timing(self, key: str) -> Iterator[None]:
        """The step's wall clock into ``timings``, taken in the thread that runs the step
        (``bench.steps`` adds each step's CPU seconds here)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[key] = round(time.perf_counter() - start, 4)

    def _numbered(self, label: str) -> str:
        """The next step's line, up to its duration."""
        self._step += 1
        return f"[{self._step}/{self.total}] {label} ..."

    @contextmanager
    def step(self, key: str, label: str) -> Iterator[None]:
        line = self._numbered(label)
        if not self.quiet:
            print(line, end="", flush=True, file=sys.stderr)
        try:
            with self.timing(key):
                yield
        finally:
            if not self.quiet:
                print(f" {self.timings[key]:.2f}s", file=sys.stderr, flush=True)

    @contextmanager
    def beside(self, key: str, label: str, fn: Callable[[], T]) -> Iterator[Future[T]]:
        """``fn`` as a step on a thread of its own, while the caller runs the steps that follow
        it. Why: the policy step mostly waits for the pack's process, on the other core, while
        rendering and schema validation need this one. The step is numbered and its line printed
        when the block ends (lines never interleave); the block waits for it on every path."""

        def run() -> T:
            with self.timing(key):
                return fn()

        with ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"step-{key}") as pool:
            future = pool.submit(run)
            try:
                yield future
            finally:
                wait([future])
                line = self._numbered(label)
                if not self.quiet and key in self.timings:
                    print(f"{line} {self.timings[key]:.2f}s", file=sys.stderr, flush=True)


KUBERNETES_VERSION = ("cluster", "kubernetesVersion")


def with_version_issue(error: ConfigError, stack_file: StackFile | None) -> ConfigError:
    """The config errors plus the preview's own one, an unsupported Kubernetes version (no
    schemas to validate against), so that it comes in the same run rather than the next."""
    cluster = project_keys(stack_file.values).get("cluster") if stack_file else None
    version = cluster.get("kubernetesVersion") if isinstance(cluster, dict) else None
    if not isinstance(version, str) or any(i.path == KUBERNETES_VERSION for i in error.issues):
        return error
    try:
        resolve_kubernetes_version(version)
    except UnsupportedKubernetesVersionError as exc:
        issue = ConfigIssue(KUBERNETES_VERSION, str(exc))
        return ConfigError(error.source, [*error.issues, issue], error.not_checked)
    return error


def run_stack_program(stack_file: StackFile, stack: str) -> MockRun[Any]:
    """The same entry point ``pulumi up`` runs, with the stack file's config.

    Our modules are purged only when an earlier run in this process used them: the config step
    has just imported ``infra.config``, and importing it again cost a tenth of a small stack's
    program run (docs/performance.md).
    """

    def program() -> Any:
        from infra.program import run

        return run()

    return run_under_mocks(
        program,
        stack=stack,
        config=stack_file.engine_config(),
        secret_keys=stack_file.secret_keys,
        fresh_modules=runs_in_process() > 0,
        root_directory=stack_file.path.parent.resolve(),
    )


def explicit_provider_problems(resources: list[CapturedResource]) -> list[str]:
    """Kubernetes resources must go through our provider: default providers are disabled."""
    problems = []
    for resource in resources:
        if resource.custom and resource.type.startswith("kubernetes:"):
            provider = resource.options.get("provider", "")
            if not provider or "::default" in provider:
                problems.append(f"{resource.urn}: uses the default Kubernetes provider")
    return problems


def reachability(objects: list[CapturedResource]) -> tuple[dict[str, Any], str]:
    """Who may connect to whom under the rendered NetworkPolicies (tools/netpol.py, plus the
    cluster's kube-dns), for report.json, and a one-line summary of allowed and denied pairs."""
    try:
        cluster = Cluster.from_manifests([r.inputs for r in objects], [kube_dns()])
        count = len(cluster.endpoints)
        if count > REACHABILITY_MAX_ENDPOINTS:
            reason = (
                f"{count} endpoints (more than {REACHABILITY_MAX_ENDPOINTS}); "
                "python -m tools.netpol --kube-dns report.json prints it"
            )
            return {"skipped": reason, "summary": {"endpoints": count}}, (
                f"reachability: skipped, {reason}"
            )
        matrix = reachability_matrix(cluster)
    except ManifestError as exc:
        return {"error": str(exc)}, f"reachability: not evaluated: {exc}"
    pairs: dict[tuple[str, str], bool] = {}
    for verdict in matrix.verdicts:
        key = (verdict.src, verdict.dst)
        pairs[key] = pairs.get(key, False) or verdict.allowed
    allowed = sum(pairs.values())
    counts = {"endpoints": count, "pairs": len(pairs), "allowed": allowed}
    line = (
        f"reachability: {count} endpoints, {allowed} of {len(pairs)} pairs may connect, "
        f"{len(pairs) - allowed} denied"
    )
    return {**matrix.to_json(), "summary": {**counts, "denied": len(pairs) - allowed}}, line


@contextmanager
def _early_pack(root: Path, stack: str, policies: bool) -> Iterator[PolicyPackProcess | None]:
    """The policy pack's process, launched before the program runs and stopped on the way out
    whatever happens. A pack that cannot even launch is left to the policy step, which launches
    it again and reports why it failed."""
    pack = None
    if policies:
        with suppress(PolicyDriverError):
            pack = launch_policies(root, stack)
    try:
        yield pack
    finally:
        if pack is not None:
            pack.close()


def _timed(progress: Progress, key: str, label: str, fn: Callable[[], T]) -> T:
    with progress.step(key, label):
        return fn()


def preview(args: argparse.Namespace) -> int:
    stack: str = args.stack
    root = Path(args.project_root)
    out = Path(args.out) / stack
    stack_path = Path(args.stack_file) if args.stack_file else root / f"Pulumi.{stack}.yaml"
    progress = Progress(total=5 if args.policies else 4, quiet=args.quiet)

    stack_file: StackFile | None = None
    try:
        with progress.step("config", f"config {stack_path.name}"):
            stack_file = StackFile(stack_path)
            config = stack_file.platform_config(engine_limits=args.engine_limits)
            validator = ManifestValidator(config.cluster.kubernetes_version, args.crd_schemas)
    except ConfigError as exc:
        print(with_version_issue(exc, stack_file).render(), file=sys.stderr)
        return EXIT_CONFIG
    except UnsupportedKubernetesVersionError as exc:
        issue = ConfigIssue(KUBERNETES_VERSION, str(exc))
        print(ConfigError(stack_path.name, [issue]).render(), file=sys.stderr)
        return EXIT_CONFIG
    except SchemaValidationError as exc:
        print(f"--crd-schemas: {exc}", file=sys.stderr)
        return EXIT_CONFIG

    with _early_pack(root, stack, args.policies) as pack, ExitStack() as after_program:
        run = _timed(
            progress, "program", "program under mocks", lambda: run_stack_program(stack_file, stack)
        )
        after_program.enter_context(heap_frozen())

        def policy_step() -> tuple[PolicyRunResult, Path | None]:
            return run_policies(
                run.resources,
                stack=stack,
                environment=config.cluster.environment,
                project_root=root,
                config_file=Path(args.policy_config) if args.policy_config else None,
                launched=pack,
            )

        policy_label = "policy pack over the analyzer protocol (beside render and schema)"
        beside = progress.beside("policy", policy_label, policy_step)
        with beside if args.policies else nullcontext() as policies:
            files = _timed(
                progress,
                "render",
                "render manifests",
                lambda: write_manifests(run.resources, out / "manifests"),
            )
            objects = run.kubernetes_objects()
            schema = _timed(
                progress,
                "schema",
                f"schema validation (Kubernetes {config.cluster.kubernetes_version})",
                lambda: validator.validate_all([r.inputs for r in objects]),
            )
        schema_results = schema.to_dict()

        policy_report: dict[str, Any] | None = None
        found: list[Finding] = []
        mandatory = 0
        try:
            policy_outcome = policies.result() if policies is not None else None
        except PolicyConfigError as exc:
            print(f"policy config: {exc}", file=sys.stderr)
            return EXIT_CONFIG
        except PolicyDriverError as exc:
            print(f"policy pack failed: {exc}", file=sys.stderr)
            return EXIT_INVALID
        if policy_outcome is not None:
            policy_result, policy_config = policy_outcome
            keys = config_keys(run.resources, config) if policy_result.violations else {}
            policy_report = {
                **policy_result.to_dict(),
                "configFile": str(policy_config) if policy_config else None,
            }
            for violation in policy_report["violations"]:
                violation["configKey"] = keys.get(violation["urn"])
            found = findings(policy_result.violations, run.resources, keys)
            mandatory = policy_result.mandatory_count

        provider_problems = explicit_provider_problems(run.resources)
        reachable, reachability_line = reachability(objects)
        report = {
            "stack": stack,
            "stackFile": stack_path.name,
            "kubernetesVersion": config.cluster.kubernetes_version,
            "crdSchemas": str(args.crd_schemas),
            "resources": [{**r.to_record(), "manifest": files.get(r.urn)} for r in run.resources],
            "outputs": run.value.model_dump(mode="json")
            if hasattr(run.value, "model_dump")
            else None,
            "schema": schema_results,
            "providerProblems": provider_problems,
            "policy": policy_report,
            "reachability": reachable,
            "timings": progress.timings,
        }
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.json").write_text(
            json.dumps(report, indent=2, sort_keys=False), encoding="utf-8"
        )

        print(
            summary(
                run,
                schema,
                provider_problems,
                policy_report,
                out,
                reachability_line,
                found=found,
                quiet=args.quiet,
            )
        )
        failed = (
            schema.failed(allow_missing=args.allow_missing_schemas)
            or provider_problems
            or mandatory
        )
        return EXIT_INVALID if failed else EXIT_OK


def summary(
    run: MockRun[Any],
    schema: Any,
    provider_problems: list[str],
    policy_report: dict[str, Any] | None,
    out: Path,
    reachability_line: str | None = None,
    found: list[Finding] | None = None,
    quiet: bool = False,
) -> str:
    """A readable summary: counts, then every policy violation (``quiet``: the counts and the
    mandatory violations only); report.json has the details."""
    lines = [f"{len(run.resources)} resources, {len(run.kubernetes_objects())} Kubernetes objects"]
    if not quiet:
        counts = Counter(r.type for r in run.resources)
        width = max((len(t) for t in counts), default=0)
        for type_token, count in sorted(counts.items()):
            lines.append(f"  {type_token:<{width}}  {count:>4}")
    lines.append(schema.summary_text())
    lines.extend(f"  provider: {problem}" for problem in provider_problems)
    if policy_report is not None:
        lines.append(policy_report["summaryText"])
        lines.extend(format_findings(found or [], ("mandatory",) if quiet else LEVELS))
        advisory = policy_report["summary"]["advisory"]
        if quiet and advisory:
            lines.append(f"  ({advisory} advisory: listed without --quiet and in report.json)")
    if reachability_line is not None:
        lines.append(reachability_line)
    lines.append(f"manifests and report.json in {out}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tools.preview", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--stack", default="dev", help="stack name: reads Pulumi.<stack>.yaml (default: dev)"
    )
    parser.add_argument("--project-root", default=str(PROJECT_ROOT))
    parser.add_argument(
        "--out", default=str(PROJECT_ROOT / "build"), help="output folder (default: build/)"
    )
    parser.add_argument(
        "--crd-schemas",
        default=default_crd_location(),
        help="CRD schemas: a folder or a URL template in kubeconform style "
        "(default: $AIPLATFORM_CRD_SCHEMAS or ../shared/crd-schemas)",
    )
    parser.add_argument(
        "--stack-file", help="stack file to read instead of <project root>/Pulumi.<stack>.yaml"
    )
    parser.add_argument(
        "--policy-config",
        help="policy-pack config (default: policies/config/<stack>.json, else <environment>.json)",
    )
    parser.add_argument(
        "--no-policies", dest="policies", action="store_false", help="skip the policy pack"
    )
    parser.add_argument(
        "--allow-missing-schemas", action="store_true", help="do not fail on kinds without a schema"
    )
    parser.add_argument(
        "--ignore-engine-limits",
        dest="engine_limits",
        action="store_false",
        help="accept a stack config larger than the Pulumi engine can pass to the program "
        "(benchmarks of the program only: such a stack cannot be deployed)",
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no progress lines; the counts and the mandatory policy violations only",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    return preview(parse_args(argv))


def exit_at_once(code: int) -> NoReturn:
    """End the process without tearing the interpreter down: after a prod preview, freeing the
    mock run's objects and every imported module one by one takes 0.4 s, a tenth of the run
    (docs/performance.md), for nothing. Everything is done by then: files written and closed,
    pack processes waited for; only the standard streams are left to flush."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_at_once(main())
