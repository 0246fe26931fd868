"""Entry point of the ai-platform CrossGuard pack: constructs the PolicyPack, nothing else.

The Pulumi CLI runs this with the pack directory as working directory (via ``python -m
pulumi.policy <engine> .``); constructing ``PolicyPack`` starts the analyzer gRPC server on
127.0.0.1, prints its port on the first line of stdout and blocks. Never import this module.
"""

from pulumi_policy import EnforcementLevel, PolicyPack

from aiplatform_policies import PACK_DESCRIPTION, PACK_NAME, POLICIES, speedups

speedups.install()

PolicyPack(
    name=PACK_NAME,
    policies=POLICIES,
    enforcement_level=EnforcementLevel.ADVISORY,
    description=PACK_DESCRIPTION,
)
