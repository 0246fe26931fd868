"""Entry point of the ai-platform CrossGuard pack: constructs the PolicyPack, nothing else.

The Pulumi CLI runs this with the pack directory as working directory (via ``python -m
pulumi.policy <engine> .``); constructing ``PolicyPack`` starts the analyzer gRPC server on
127.0.0.1, prints its port on the first line of stdout and blocks. Never import this module.
"""

import os
import sys

_PACK_DIR = os.path.dirname(os.path.abspath(__file__))
for _path in (os.path.dirname(_PACK_DIR), _PACK_DIR):  # project root (components/), then the pack
    if _path not in sys.path:
        sys.path.insert(0, _path)

from aiplatform_policies import PACK_DESCRIPTION, PACK_NAME, POLICIES, speedups  # noqa: E402
from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402

speedups.install()

PolicyPack(
    name=PACK_NAME,
    policies=POLICIES,
    enforcement_level=EnforcementLevel.ADVISORY,
    description=PACK_DESCRIPTION,
)
