"""A pack with one resource and one stack policy that look at nothing: the benchmark's floor
for the policy step. Same runtime as ``policies/`` (pulumi_policy with the pack's speedups), so
what ours costs above it is what our policies do. Started by the policy driver; never import."""

import sys
from pathlib import Path

from pulumi_policy import (
    EnforcementLevel,
    PolicyPack,
    ResourceValidationPolicy,
    StackValidationPolicy,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "policies"))
from aiplatform_policies import speedups

speedups.install()

PolicyPack(
    name="bench-noop",
    policies=[
        ResourceValidationPolicy(
            name="noop-resource",
            description="Looks at nothing.",
            validate=lambda args, report_violation: None,
        ),
        StackValidationPolicy(
            name="noop-stack",
            description="Looks at nothing.",
            validate=lambda args, report_violation: None,
        ),
    ],
    enforcement_level=EnforcementLevel.ADVISORY,
)
