"""Offline stand-in for `pulumi preview --policy-pack DIR --policy-pack-config FILE`.

There is no Pulumi CLI or engine offline, yet the project's policy pack must be exercised exactly
as the CLI would: as its own process, spoken to over the Analyzer gRPC protocol. This module does
the engine's part of that conversation for a Python policy pack and a list of resource records
(docs/resource-records.md).

How the CLI starts a Python pack (pulumi/pulumi `NewPolicyAnalyzer` in
sdk/go/common/resource/plugin/analyzer_plugin.go, and the `pulumi-analyzer-policy-python` shim in
sdk/python/dist/): python and nodejs packs still use the legacy analyzer shim, run with the pack
directory as working directory and the arguments `<engine-address> .`; the shim runs
`python3 -u -m pulumi.policy <engine-address> .` (or `<virtualenv>/bin/python` when
PulumiPolicy.yaml sets `runtime.options.virtualenv`). `pulumi/policy/__main__.py` configures the
runtime from PULUMI_PROJECT/PULUMI_STACK/PULUMI_DRY_RUN/PULUMI_ORGANIZATION/PULUMI_CONFIG (set by
`constructEnv`) and `runpy`s the pack's `__main__.py`; constructing `PolicyPack` serves the
Analyzer on 127.0.0.1:0, writes the port as the first stdout line and blocks. The engine reads
that line, dials the port, calls Handshake (UNIMPLEMENTED tolerated), ConfigureStack,
GetAnalyzerInfo, reconciles the `--policy-pack-config` file with the policies' defaults and
Configures the pack, then calls Remediate and Analyze per resource and AnalyzeStack at the end.
It stops the plugin by interrupting its process group and killing it after 5 seconds.

Known protocol limits (pulumi 3.272 / pulumi-policy 1.21): `AnalyzerResourceOptions` has no
retainOnDelete and no dependsOn, so a policy can never see those options through the CLI either;
dependsOn reaches stack policies as `dependencies` in AnalyzeStack.

Deliberate differences from the CLI, all for speed or safety: Analyze calls go out concurrently
(the engine sends them as it generates steps); Remediate is only called when some resource
policy is at the remediate level (pulumi_policy's Remediate does nothing otherwise); for 1000+
records a second copy of the pack serves AnalyzeStack while the first serves Analyze
(`processes=1` keeps the CLI's single process); a copy may be launched before its records exist
(`launch_policy_pack`, as the engine loads analyzers before it runs the program); and the config
file is checked more strictly (unknown policy names and property keys are errors, not silently
passed on).

The package follows the conversation: ``errors``, ``results`` (what a run found), ``config`` (the
``--policy-pack-config`` file), ``records`` (resource records to protobuf), ``process`` (the pack's
process), ``analyzer`` (the engine's calls: ``run_policy_pack``; ``launch_policy_pack`` starts a
pack before its records exist) and ``cli`` (``python -m tools.policy_driver``).
"""

from __future__ import annotations

from .analyzer import launch_policy_pack, run_policy_pack
from .cli import main
from .config import PolicyConfigEntry, load_policy_pack_config, reconcile_policy_config
from .errors import (
    PackLayoutError,
    PackStartError,
    PolicyConfigError,
    PolicyDriverError,
    PolicyRunError,
    RecordsError,
)
from .process import PolicyPackProcess, pack_launch_command, polite_stop_signal
from .records import (
    check_records,
    load_records,
    parse_provider_reference,
    record_to_analyze_request,
    record_to_analyzer_resource,
    urn_name,
    urn_type,
)
from .results import (
    ENFORCEMENT_LEVELS,
    AnalyzerInfo,
    NotApplicable,
    PolicyConfig,
    PolicyInfo,
    PolicyRunResult,
    Remediation,
    Violation,
    format_violations,
    group_violations,
    has_mandatory,
)

__all__ = [
    "ENFORCEMENT_LEVELS",
    "AnalyzerInfo",
    "NotApplicable",
    "PackLayoutError",
    "PackStartError",
    "PolicyConfig",
    "PolicyConfigEntry",
    "PolicyConfigError",
    "PolicyDriverError",
    "PolicyInfo",
    "PolicyPackProcess",
    "PolicyRunError",
    "PolicyRunResult",
    "RecordsError",
    "Remediation",
    "Violation",
    "check_records",
    "format_violations",
    "group_violations",
    "has_mandatory",
    "launch_policy_pack",
    "load_policy_pack_config",
    "load_records",
    "main",
    "pack_launch_command",
    "parse_provider_reference",
    "polite_stop_signal",
    "reconcile_policy_config",
    "record_to_analyze_request",
    "record_to_analyzer_resource",
    "run_policy_pack",
    "urn_name",
    "urn_type",
]
