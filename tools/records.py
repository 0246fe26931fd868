"""What a resource record writes where it cannot show a value (docs/resource-records.md).

The mock run writes them, the schema validation and the policy driver read them: one spelling.
"""

from __future__ import annotations

from typing import Final

SECRET_MARK: Final = "[secret]"
"""What a secret value becomes in captured inputs: secrets never reach manifests or reports.
The engine's ``pulumi preview --json`` masks secrets with the same spelling."""
UNKNOWN_MARK: Final = "[unknown]"
"""What a value unknown during preview (an Output not yet resolved) becomes."""
PLACEHOLDERS: Final = frozenset({SECRET_MARK, UNKNOWN_MARK})
"""Values the preview writes instead of secrets/unknowns; their real type cannot be checked."""
ENGINE_UNKNOWN: Final = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
"""How the engine spells an unknown value on the wire and in ``pulumi preview --json``
(``plugin.UnknownStringValue``; the SDK's ``pulumi.runtime.rpc.UNKNOWN``): the policy driver
sends a record's :data:`UNKNOWN_MARK` as it, so that pulumi_policy reports "can't run during
preview" as it does under the CLI."""
