"""A pack with one resource and one stack policy that look at nothing: the benchmark's floor
for the policy step. Same runtime as ``policies/`` (pulumi_policy with the pack's speedups), so
what ours costs above it is what our policies do. Started by the policy driver; never import."""

from pulumi_policy import (
    EnforcementLevel,
    PolicyPack,
    ResourceValidationPolicy,
    StackValidationPolicy,
)

from aiplatform_policies import speedups  # installed with the project (make install)

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
