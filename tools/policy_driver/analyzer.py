"""The engine's side of the Analyzer conversation: boot and configure the pack, Remediate and
Analyze every resource, AnalyzeStack at the end."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from .config import PolicyConfigEntry, load_policy_pack_config, reconcile_policy_config
from .errors import PolicyConfigError, PolicyRunError
from .process import _NO_ENGINE_ADDRESS, PolicyPackProcess
from .records import (
    _analyze_request,
    _urn_stack_project,
    _wire_value,
    check_records,
    record_to_analyzer_resource,
    urn_name,
    urn_type,
)
from .results import (
    AnalyzerInfo,
    NotApplicable,
    PolicyConfig,
    PolicyInfo,
    PolicyRunResult,
    Remediation,
    Violation,
)

_LEVEL_TO_PROTO = {
    "advisory": analyzer_pb2.ADVISORY,
    "mandatory": analyzer_pb2.MANDATORY,
    "remediate": analyzer_pb2.REMEDIATE,
    "disabled": analyzer_pb2.DISABLED,
}
_PROTO_TO_LEVEL = {v: k for k, v in _LEVEL_TO_PROTO.items()}
_SEVERITIES = {
    analyzer_pb2.POLICY_SEVERITY_LOW: "low",
    analyzer_pb2.POLICY_SEVERITY_MEDIUM: "medium",
    analyzer_pb2.POLICY_SEVERITY_HIGH: "high",
    analyzer_pb2.POLICY_SEVERITY_CRITICAL: "critical",
}
_POLICY_TYPES = {
    analyzer_pb2.POLICY_TYPE_RESOURCE: "resource",
    analyzer_pb2.POLICY_TYPE_STACK: "stack",
}


def _analyzer_info(
    info: analyzer_pb2.AnalyzerInfo, project: Mapping[str, Any], plugin_version: str
) -> AnalyzerInfo:
    policies = []
    for p in info.policies:
        schema: dict[str, Any] | None = None
        if p.HasField("configSchema"):
            schema = {"properties": json_format.MessageToDict(p.configSchema.properties)}
            if p.configSchema.required:
                schema["required"] = list(p.configSchema.required)
        policies.append(
            PolicyInfo(
                name=p.name,
                description=p.description,
                enforcement_level=_PROTO_TO_LEVEL.get(p.enforcementLevel, "advisory"),
                display_name=p.displayName,
                policy_type=_POLICY_TYPES.get(p.policy_type, "unknown"),
                severity=_SEVERITIES.get(p.severity),
                config_schema=schema,
            )
        )
    initial = {
        k: PolicyConfig(
            _PROTO_TO_LEVEL.get(v.enforcementLevel, "advisory"),
            json_format.MessageToDict(v.properties),
        )
        for k, v in info.initialConfig.items()
    }
    # As in the CLI, the version in PulumiPolicy.yaml wins over the one the pack reports.
    version = str(project.get("version") or info.version)
    return AnalyzerInfo(
        name=info.name,
        version=version,
        policies=tuple(sorted(policies, key=lambda p: p.name)),
        display_name=info.displayName,
        description=info.description or str(project.get("description") or ""),
        supports_config=info.supportsConfig,
        initial_config=initial,
        plugin_version=plugin_version,
    )


def _rpc_error(pack: PolicyPackProcess, what: str, err: grpc.RpcError) -> PolicyRunError:
    code = err.code() if hasattr(err, "code") else None
    details = err.details() if hasattr(err, "details") else str(err)
    name = code.name if code is not None else "ERROR"
    # A lost connection usually means the pack is dying: give it a moment to report a status.
    wait = 1.0 if code == grpc.StatusCode.UNAVAILABLE else 0.0
    return PolicyRunError(pack.describe_failure(f"{what} failed: {name}: {details}", wait))


def _call(
    pack: PolicyPackProcess,
    what: str,
    method: Any,
    request: Any,
    timeout: float,
    *,
    tolerate_unimplemented: bool = False,
) -> Any:
    try:
        return method(request, timeout=timeout)
    except grpc.RpcError as e:
        if tolerate_unimplemented and e.code() == grpc.StatusCode.UNIMPLEMENTED:
            return None
        raise _rpc_error(pack, what, e) from None


def _handshake(pack: PolicyPackProcess, stub: Any, timeout: float) -> None:
    """Handshake like the engine: retry while UNAVAILABLE, accept UNIMPLEMENTED."""
    pdir = str(pack.pack_dir.resolve())
    req = analyzer_pb2.AnalyzerHandshakeRequest(
        engine_address=_NO_ENGINE_ADDRESS, root_directory=pdir, program_directory=pdir
    )
    deadline = time.monotonic() + timeout
    while True:
        try:
            stub.Handshake(req, timeout=max(0.1, deadline - time.monotonic()))
            return
        except grpc.RpcError as e:
            code = e.code()
            if code == grpc.StatusCode.UNIMPLEMENTED:
                return
            if code == grpc.StatusCode.UNAVAILABLE and time.monotonic() < deadline and pack.alive():
                time.sleep(0.01)
                continue
            raise _rpc_error(pack, "Handshake", e) from None


def _violation(
    d: analyzer_pb2.AnalyzeDiagnostic,
    analyzer: AnalyzerInfo,
    urn: str,
    record: Mapping[str, Any] | None,
    *,
    stack_policy: bool = False,
    level: str | None = None,
) -> Violation:
    if level is None:
        level = _PROTO_TO_LEVEL.get(d.enforcementLevel, "advisory")
        # Like the engine: a remediate-level finding that survives remediation (and any
        # stack-policy finding at that level) is reported as mandatory.
        if level == "remediate":
            level = "mandatory"
    try:
        policy_severity = analyzer.policy(d.policyName).severity
    except KeyError:
        policy_severity = None
    rec = record or {}
    return Violation(
        policy_name=d.policyName,
        policy_pack_name=d.policyPackName or analyzer.name,
        policy_pack_version=analyzer.version or d.policyPackVersion,
        message=d.message,
        enforcement_level=level,
        urn=urn,
        resource_type=rec.get("type") or (urn_type(urn) if urn else ""),
        resource_name=rec.get("name") or (urn_name(urn) if urn else ""),
        description=d.description,
        severity=_SEVERITIES.get(d.severity) or policy_severity,
        stack_policy=stack_policy,
    )


@dataclass
class _ResourceOutcome:
    violations: list[Violation] = field(default_factory=list)
    remediations: list[Remediation] = field(default_factory=list)
    not_applicable: list[NotApplicable] = field(default_factory=list)
    remediated: struct_pb2.Struct | None = None


class _Fanout:
    """Remediate (when needed) and Analyze every resource with bounded in-flight RPCs.

    grpc futures on one channel per pack process; requests are built while earlier ones are
    being served, and resources are spread round-robin over the pack processes.
    """

    def __init__(
        self,
        packs: Sequence[PolicyPackProcess],
        analyzer: AnalyzerInfo,
        remediate: bool,
        max_in_flight: int,
        timeout: float,
    ) -> None:
        self.stubs = [analyzer_pb2_grpc.AnalyzerStub(p.channel) for p in packs]
        self.packs = packs
        self.analyzer = analyzer
        self.remediate = remediate
        self.max_in_flight = max(1, max_in_flight)
        self.slots = threading.BoundedSemaphore(self.max_in_flight)
        self.timeout = timeout
        self.error: BaseException | None = None
        self.error_lock = threading.Lock()

    def run(
        self,
        records: Sequence[Mapping[str, Any]],
        resources: Iterable[analyzer_pb2.AnalyzerResource],
    ) -> list[_ResourceOutcome]:
        outcomes = [_ResourceOutcome() for _ in records]
        for i, res in enumerate(resources):
            self.slots.acquire()
            if self.error is not None:
                self.slots.release()
                break
            k = i % len(self.stubs)
            try:
                self._start(k, records[i], _analyze_request(res), outcomes[i])
            except BaseException as e:
                self._fail(e)
                self.slots.release()
                break
        for _ in range(self.max_in_flight):  # wait for everything in flight
            self.slots.acquire()
        if self.error is not None:
            raise self.error
        return outcomes

    def _fail(self, e: BaseException) -> None:
        with self.error_lock:
            if self.error is None:
                self.error = e

    def _start(
        self,
        k: int,
        record: Mapping[str, Any],
        req: analyzer_pb2.AnalyzeRequest,
        out: _ResourceOutcome,
    ) -> None:
        stub = self.stubs[k]
        if self.remediate:
            fut = stub.Remediate.future(req, timeout=self.timeout)
            fut.add_done_callback(lambda f: self._remediated(f, k, record, req, out))
        else:
            self._analyze(k, record, req, out)

    def _analyze(
        self,
        k: int,
        record: Mapping[str, Any],
        req: analyzer_pb2.AnalyzeRequest,
        out: _ResourceOutcome,
    ) -> None:
        fut = self.stubs[k].Analyze.future(req, timeout=self.timeout)
        fut.add_done_callback(lambda f: self._analyzed(f, k, record, out))

    def _remediated(
        self,
        fut: Any,
        k: int,
        record: Mapping[str, Any],
        req: analyzer_pb2.AnalyzeRequest,
        out: _ResourceOutcome,
    ) -> None:
        urn = record["urn"]
        try:
            try:
                resp = fut.result()
            except grpc.RpcError as e:
                raise _rpc_error(self.packs[k], f"Remediate({urn})", e) from None
            for rem in resp.remediations:
                if rem.diagnostic:
                    # The engine reports a failed remediation as an advisory violation.
                    d = analyzer_pb2.AnalyzeDiagnostic(
                        policyName=rem.policyName,
                        policyPackName=rem.policyPackName,
                        policyPackVersion=rem.policyPackVersion,
                        description=rem.description,
                        message=rem.diagnostic,
                    )
                    out.violations.append(
                        _violation(d, self.analyzer, urn, record, level="advisory")
                    )
                elif rem.HasField("properties"):
                    out.remediations.append(
                        Remediation(
                            policy_name=rem.policyName,
                            policy_pack_name=rem.policyPackName,
                            urn=urn,
                            description=rem.description,
                            properties=json_format.MessageToDict(rem.properties),
                        )
                    )
                    # Analyze (and AnalyzeStack) see the remediated inputs, as in the engine.
                    req.properties.CopyFrom(rem.properties)
                    out.remediated = req.properties
            out.not_applicable += [
                NotApplicable(n.policy_name, urn, n.reason) for n in resp.not_applicable
            ]
            if self.error is None:
                self._analyze(k, record, req, out)
                return
        except BaseException as e:
            self._fail(e)
        self.slots.release()

    def _analyzed(self, fut: Any, k: int, record: Mapping[str, Any], out: _ResourceOutcome) -> None:
        urn = record["urn"]
        try:
            try:
                resp = fut.result()
            except grpc.RpcError as e:
                raise _rpc_error(self.packs[k], f"Analyze({urn})", e) from None
            # The engine reports resource diagnostics against its own URN, not the diagnostic's.
            out.violations += [_violation(d, self.analyzer, urn, record) for d in resp.diagnostics]
            out.not_applicable += [
                NotApplicable(n.policy_name, urn, n.reason) for n in resp.not_applicable
            ]
        except BaseException as e:
            self._fail(e)
        finally:
            self.slots.release()


def _with_config(info: AnalyzerInfo, effective: Mapping[str, PolicyConfig]) -> AnalyzerInfo:
    policies = tuple(
        replace(
            p,
            configured_level=effective[p.name].enforcement_level,
            config=dict(effective[p.name].properties),
        )
        if p.name in effective
        else p
        for p in info.policies
    )
    return replace(info, policies=policies)


def _boot(
    pack: PolicyPackProcess,
    stack_req: analyzer_pb2.AnalyzerStackConfigureRequest,
    startup_timeout: float,
    rpc_timeout: float,
) -> AnalyzerInfo:
    """Start one pack (or wait for one launched earlier) and take it through the engine's calls
    up to GetPluginInfo."""
    pack.connect()
    stub = analyzer_pb2_grpc.AnalyzerStub(pack.channel)
    _handshake(pack, stub, startup_timeout)
    _call(
        pack,
        "ConfigureStack",
        stub.ConfigureStack,
        stack_req,
        rpc_timeout,
        tolerate_unimplemented=True,
    )
    raw = _call(pack, "GetAnalyzerInfo", stub.GetAnalyzerInfo, empty_pb2.Empty(), rpc_timeout)
    plugin = _call(
        pack,
        "GetPluginInfo",
        stub.GetPluginInfo,
        empty_pb2.Empty(),
        rpc_timeout,
        tolerate_unimplemented=True,
    )
    return _analyzer_info(raw, pack.project, getattr(plugin, "version", "") or "")


def _default_processes(n_records: int) -> int:
    # A pack serves on one core (the GIL). On big stacks a second copy takes AnalyzeStack
    # while the first serves Analyze; its ~0.3 s boot overlaps the records' conversion.
    return 1 if n_records < 1000 else max(1, min(2, os.cpu_count() or 1))


def _pack_env(
    project: str,
    stack: str,
    dry_run: bool,
    organization: str,
    stack_config: Mapping[str, str] | None,
) -> dict[str, str]:
    """What the CLI's constructEnv adds to the pack's environment."""
    env = {
        "PULUMI_PROJECT": project,
        "PULUMI_STACK": stack,
        "PULUMI_DRY_RUN": "true" if dry_run else "false",
    }
    if organization:
        env["PULUMI_ORGANIZATION"] = organization
    if stack_config:
        env["PULUMI_CONFIG"] = json.dumps(dict(stack_config))
    return env


def _boot_all(
    packs: Sequence[PolicyPackProcess],
    stack_req: analyzer_pb2.AnalyzerStackConfigureRequest,
    records: Sequence[Mapping[str, Any]],
    startup_timeout: float,
    rpc_timeout: float,
) -> tuple[AnalyzerInfo, dict[str, Mapping[str, Any]], list[analyzer_pb2.AnalyzerResource]]:
    """Boot every copy of the pack and convert the records meanwhile: the first copy's
    self-description, the records by URN, and the resources the engine would send."""
    with ThreadPoolExecutor(max_workers=len(packs), thread_name_prefix="pack-boot") as boot:
        booting = [boot.submit(_boot, p, stack_req, startup_timeout, rpc_timeout) for p in packs]
        by_urn = {r["urn"]: r for r in records}
        cache: dict[str, analyzer_pb2.AnalyzerProviderResource] = {}
        resources = [record_to_analyzer_resource(r, by_urn, provider_cache=cache) for r in records]
        infos = [f.result() for f in booting]  # every copy must come up
    return infos[0], by_urn, resources


def _configure(
    packs: Sequence[PolicyPackProcess],
    info: AnalyzerInfo,
    file_config: Mapping[str, PolicyConfigEntry],
    config_path: str | os.PathLike[str] | None,
    pack_dir: str | os.PathLike[str],
    rpc_timeout: float,
) -> AnalyzerInfo:
    """Reconcile the config file with the pack's policies and Configure every copy with the
    result, as the CLI does; ``info`` with each policy's effective level and properties."""
    if not info.supports_config:
        if file_config:
            raise PolicyConfigError(
                f"{config_path}: policy pack {info.name!r} at {pack_dir} does not support config"
            )
        return info
    effective = reconcile_policy_config(info, file_config, config_path or "<defaults>")
    req = analyzer_pb2.ConfigureAnalyzerRequest()
    for name, cfg in effective.items():
        req.policyConfig[name].enforcementLevel = _LEVEL_TO_PROTO[cfg.enforcement_level]
        req.policyConfig[name].properties.update(_wire_value(cfg.properties))
    if effective:
        for p in packs:
            stub = analyzer_pb2_grpc.AnalyzerStub(p.channel)
            _call(p, "Configure", stub.Configure, req, rpc_timeout)
    return _with_config(info, effective)


def _remediates(info: AnalyzerInfo) -> bool:
    """Remediate only does anything for resource policies at the remediate level."""
    return any(
        p.policy_type != "stack" and (p.configured_level or p.enforcement_level) == "remediate"
        for p in info.policies
    )


def _analyze_stack(
    pack: PolicyPackProcess, resources: Sequence[analyzer_pb2.AnalyzerResource], timeout: float
) -> Any:
    """AnalyzeStack on ``pack``, in flight (a grpc future)."""
    stub = analyzer_pb2_grpc.AnalyzerStub(pack.channel)
    return stub.AnalyzeStack.future(
        analyzer_pb2.AnalyzeStackRequest(resources=resources), timeout=timeout
    )


@dataclass
class _Findings:
    violations: list[Violation] = field(default_factory=list)
    remediations: list[Remediation] = field(default_factory=list)
    not_applicable: list[NotApplicable] = field(default_factory=list)


def _resource_findings(
    resources: Sequence[analyzer_pb2.AnalyzerResource], outcomes: Sequence[_ResourceOutcome]
) -> _Findings:
    """Every resource's findings in record order; each resource takes its remediated inputs,
    which AnalyzeStack then sees, as in the engine."""
    findings = _Findings()
    for res, out in zip(resources, outcomes, strict=True):
        findings.violations += out.violations
        findings.remediations += out.remediations
        findings.not_applicable += out.not_applicable
        if out.remediated is not None:
            res.properties.CopyFrom(out.remediated)
    return findings


def _stack_findings(
    pack: PolicyPackProcess,
    future: Any,
    info: AnalyzerInfo,
    by_urn: Mapping[str, Mapping[str, Any]],
    findings: _Findings,
) -> None:
    """Add what AnalyzeStack reported (a pack without stack policies may not implement it)."""
    try:
        stack_resp = future.result()
    except grpc.RpcError as e:
        if e.code() != grpc.StatusCode.UNIMPLEMENTED:
            raise _rpc_error(pack, "AnalyzeStack", e) from None
        return
    for d in stack_resp.diagnostics:
        findings.violations.append(_violation(d, info, d.urn, by_urn.get(d.urn), stack_policy=True))
    findings.not_applicable += [
        NotApplicable(n.policy_name, "", n.reason) for n in stack_resp.not_applicable
    ]


def _matching(
    launched: PolicyPackProcess,
    pack_dir: str | os.PathLike[str],
    python: str | None,
    env: Mapping[str, str],
) -> PolicyPackProcess:
    """``launched``, if it was started for this run: the same pack, interpreter and stack."""
    if launched.pack_dir != Path(pack_dir) or launched.python != python or launched.env != env:
        raise ValueError(
            f"the launched policy pack runs {launched.pack_dir} with {launched.env}; "
            f"this run needs {pack_dir} with {dict(env)}"
        )
    return launched


def launch_policy_pack(
    pack_dir: str | os.PathLike[str],
    *,
    stack: str,
    project: str,
    organization: str = "",
    dry_run: bool = True,
    stack_config: Mapping[str, str] | None = None,
    python: str | None = None,
    startup_timeout: float = 30.0,
) -> PolicyPackProcess:
    """A copy of the pack started now, for a :func:`run_policy_pack` with the same stack,
    project and settings later (its ``launched``): the pack's interpreter start and imports, most
    of what the policy step costs on a small stack, overlap whatever the caller does meanwhile.
    The caller closes it, whether that run came or not."""
    pack = PolicyPackProcess(
        pack_dir,
        python=python,
        env=_pack_env(project, stack, dry_run, organization, stack_config),
        startup_timeout=startup_timeout,
    )
    pack.launch()
    return pack


def run_policy_pack(
    pack_dir: str | os.PathLike[str],
    records: Sequence[Mapping[str, Any]],
    *,
    config_path: str | os.PathLike[str] | None = None,
    stack: str | None = None,
    project: str | None = None,
    organization: str = "",
    dry_run: bool = True,
    stack_config: Mapping[str, str] | None = None,
    stack_tags: Mapping[str, str] | None = None,
    python: str | None = None,
    max_in_flight: int = 16,
    processes: int | None = None,
    startup_timeout: float = 30.0,
    rpc_timeout: float = 120.0,
    launched: PolicyPackProcess | None = None,
) -> PolicyRunResult:
    """Run `pack_dir` against `records` as `pulumi preview --policy-pack` would.

    The config file is syntax-checked before the pack starts, and checked against the pack's
    policies (names, property schemas) before any Analyze. `stack`/`project` default to the
    values in the records' URNs. Analyze calls go out concurrently (at most `max_in_flight`
    per run) over one channel per pack process.

    `processes` (default: 1, or 2 for 1000+ records on a multi-core machine) runs that many
    copies of the pack, identically configured: with 2+, AnalyzeStack goes to the last copy
    while the others serve Analyze (unless a policy remediates, as AnalyzeStack must then see
    the remediated inputs). Results are the same as with one process for any pack that keeps
    no state between RPCs (pulumi_policy hands every call fresh arguments); use
    `processes=1` for the CLI's exact single-process order.

    `launched`: a copy from :func:`launch_policy_pack`, used as the first process; it must have
    been launched for this run's pack, stack, project and settings. It stays the caller's, who
    closes it: once the run has started this asks it to end (:meth:`PolicyPackProcess.stop`),
    and what the caller does until its ``close()`` overlaps the pack's exit.

    Every other pack process is stopped and waited for before this returns or raises.
    """
    records = list(records)
    check_records(records)
    file_config = load_policy_pack_config(config_path) if config_path else {}
    urn_stack, urn_project = _urn_stack_project(records[0]["urn"]) if records else ("", "")
    stack = stack or urn_stack or "dev"
    project = project or urn_project or "project"
    n_proc = processes if processes is not None else _default_processes(len(records))
    if n_proc < 1:
        raise ValueError("processes must be >= 1")
    env = _pack_env(project, stack, dry_run, organization, stack_config)
    stack_req = analyzer_pb2.AnalyzerStackConfigureRequest(
        stack=stack,
        project=project,
        organization=organization,
        dry_run=dry_run,
        config=dict(stack_config or {}),
        tags=dict(stack_tags or {}),
    )
    first = [] if launched is None else [_matching(launched, pack_dir, python, env)]
    more = [
        PolicyPackProcess(pack_dir, python=python, env=env, startup_timeout=startup_timeout)
        for _ in range(max(0, n_proc - len(first)))
    ]
    packs = first + more
    with contextlib.ExitStack() as cleanup:
        for p in more:
            cleanup.callback(p.close)
        for p in packs:  # asked to end together; then each of ours is waited for
            cleanup.callback(p.stop)
        info, by_urn, resources = _boot_all(packs, stack_req, records, startup_timeout, rpc_timeout)
        info = _configure(packs, info, file_config, config_path, pack_dir, rpc_timeout)
        remediate = _remediates(info)
        # With two copies or more the last serves AnalyzeStack while the others serve Analyze,
        # unless AnalyzeStack must see remediated inputs.
        split = n_proc > 1 and not remediate
        analyze_packs, stack_pack = (packs[:-1], packs[-1]) if split else (packs, packs[0])
        stack_future = _analyze_stack(stack_pack, resources, rpc_timeout) if split else None
        fanout = _Fanout(analyze_packs, info, remediate, max_in_flight, rpc_timeout)
        findings = _resource_findings(resources, fanout.run(records, resources))
        if stack_future is None:
            stack_future = _analyze_stack(stack_pack, resources, rpc_timeout)
        _stack_findings(stack_pack, stack_future, info, by_urn, findings)

    return PolicyRunResult(
        analyzer=info,
        violations=findings.violations,
        stack=stack,
        project=project,
        resources_analyzed=len(records),
        remediations=findings.remediations,
        not_applicable=findings.not_applicable,
        pack_output="".join(p.stdout_text + p.stderr_text for p in packs),
    )
