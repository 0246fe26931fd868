"""Throwaway policy packs for the driver's tests, written into a temporary directory.

Why: the driver must be exercised against a real pack process speaking the real protocol, but
not against the project's own pack (it changes independently). Each pack records its pid (and
the pid of a child it starts) in the file named by $TEST_POLICY_PACK_PIDS, so tests can prove
that no process outlives a run.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

PACK_NAME = "driver-test-pack"
PACK_VERSION = "1.2.3"

_PREAMBLE = '''
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence

import pulumi
import pulumi.runtime
from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyPack,
    ResourceValidationPolicy,
    Severity,
    StackValidationPolicy,
)

_pids = os.environ.get("TEST_POLICY_PACK_PIDS")
if _pids:
    # A child in the pack's process group: the driver must not leave it behind either.
    _child = subprocess.Popen(["sleep", "60"])
    with open(_pids, "a") as f:
        f.write(f"{os.getpid()}\\n{_child.pid}\\n")


def plain(value):
    """Policy props are read-only proxies; turn them into JSON-able values."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [plain(v) for v in value]
    return value
'''

MAIN_PACK = (
    _PREAMBLE
    + '''

def replica_limit(args, report_violation):
    if args.resource_type != "kubernetes:apps/v1:Deployment":
        return
    limit = args.get_config()["maxReplicas"]
    replicas = args.props["spec"]["replicas"]
    if replicas > limit:
        report_violation(f"replicas {replicas:g} exceeds maxReplicas {limit:g}")


def namespace_protected(args, report_violation):
    if args.resource_type == "kubernetes:core/v1:Namespace" and not args.opts.protect:
        report_violation(f"namespace {args.name} has protect={args.opts.protect}")


def echo(args, report_violation):
    """Report everything the policy received, so tests can see what crossed the wire."""
    if args.resource_type != "test:index:Echo":
        return
    print(f"echo saw {args.name}")
    opts = args.opts
    provider = args.provider
    seen = {
        "type": args.resource_type,
        "name": args.name,
        "urn": args.urn,
        "props": plain(args.props),
        "opts": {
            "protect": opts.protect,
            "ignore_changes": list(opts.ignore_changes),
            "delete_before_replace": opts.delete_before_replace,
            "aliases": list(opts.aliases),
            "custom_timeouts": [
                opts.custom_timeouts.create_seconds,
                opts.custom_timeouts.update_seconds,
                opts.custom_timeouts.delete_seconds,
            ],
            "additional_secret_outputs": list(opts.additional_secret_outputs),
            "parent": opts.parent,
            "has_retain_on_delete": hasattr(opts, "retain_on_delete"),
            "has_depends_on": hasattr(opts, "depends_on"),
        },
        "provider": None
        if provider is None
        else {
            "type": provider.resource_type,
            "name": provider.name,
            "urn": provider.urn,
            "props": plain(provider.props),
        },
        "config": plain(args.get_config()),
        "stack_tags": dict(args.stack_tags),
        "runtime": {
            "project": pulumi.get_project(),
            "stack": pulumi.get_stack(),
            "dry_run": pulumi.runtime.is_dry_run(),
        },
    }
    report_violation(json.dumps(seen, sort_keys=True))


def stack_topology(args, report_violation):
    namespaces = [r for r in args.resources if r.resource_type == "kubernetes:core/v1:Namespace"]
    report_violation(f"{len(namespaces)} namespaces in {len(args.resources)} resources")
    for r in args.resources:
        if r.resource_type == "test:index:Echo" and r.dependencies:
            seen = {
                "parent": r.parent.urn if r.parent is not None else None,
                "dependencies": [d.urn for d in r.dependencies],
                "property_dependencies": {
                    k: [d.urn for d in v] for k, v in r.property_dependencies.items()
                },
                "protect": r.opts.protect,
                "provider": r.provider.urn if r.provider is not None else None,
            }
            report_violation(json.dumps(seen, sort_keys=True), r.urn)


PolicyPack(
    name="driver-test-pack",
    enforcement_level=EnforcementLevel.ADVISORY,
    policies=[
        ResourceValidationPolicy(
            name="replica-limit",
            description="Deployments stay under a replica limit.",
            validate=replica_limit,
            severity=Severity.HIGH,
            config_schema=PolicyConfigSchema(
                properties={"maxReplicas": {"type": "integer", "minimum": 1, "default": 3}},
            ),
        ),
        ResourceValidationPolicy(
            name="namespace-protected",
            description="Namespaces must be protected.",
            validate=namespace_protected,
            enforcement_level=EnforcementLevel.MANDATORY,
        ),
        ResourceValidationPolicy(
            name="echo",
            description="Echo what the policy sees.",
            validate=echo,
        ),
        StackValidationPolicy(
            name="stack-topology",
            description="Report the stack's shape.",
            validate=stack_topology,
        ),
    ],
)
'''
)

CRASHING_PACK = (
    _PREAMBLE
    + """
raise RuntimeError("boom: the pack cannot start")
"""
)

CHATTY_PACK = """
print("hello from the pack, not a port")
from pulumi_policy import PolicyPack, ResourceValidationPolicy
PolicyPack("chatty", [ResourceValidationPolicy("p", "d", lambda args, report: None)])
"""

FAILING_POLICY_PACK = (
    _PREAMBLE
    + """

def explode(args, report_violation):
    if args.name == "bad":
        raise ValueError("policy bug: cannot handle " + args.name)
    if args.name == "fatal":
        print("about to die", file=sys.stderr, flush=True)
        os._exit(3)


PolicyPack(
    name="failing-pack",
    policies=[ResourceValidationPolicy(name="explode", description="d", validate=explode)],
)
"""
)

REMEDIATING_PACK = (
    _PREAMBLE
    + """

def add_label(args):
    labels = dict(args.props.get("metadata", {}).get("labels", {}))
    if "team" in labels:
        return None
    props = plain(args.props)
    props.setdefault("metadata", {})["labels"] = {**labels, "team": "unknown"}
    return props


def require_label(args, report_violation):
    labels = args.props.get("metadata", {}).get("labels", {})
    if "team" not in labels:
        report_violation("missing team label")


def see_labels(args, report_violation):
    for r in args.resources:
        report_violation(json.dumps(plain(r.props["metadata"]["labels"])), r.urn)


PolicyPack(
    name="remediating-pack",
    policies=[
        ResourceValidationPolicy(
            name="team-label",
            description="Resources carry a team label.",
            validate=require_label,
            remediate=add_label,
        ),
        StackValidationPolicy(name="labels", description="d", validate=see_labels),
    ],
)
"""
)


def write_pack(
    root: Path, main: str, *, name: str = PACK_NAME, version: str = PACK_VERSION
) -> Path:
    """Create `root` as a policy pack directory with `main` as its __main__.py."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "PulumiPolicy.yaml").write_text(
        f"runtime: python\nname: {name}\nversion: {version}\ndescription: test pack\n"
    )
    (root / "__main__.py").write_text(textwrap.dedent(main))
    return root
