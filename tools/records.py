"""What a resource record writes where it cannot show a value (docs/resource-records.md).

The mock run writes them, the schema validation and the policy driver read them: one spelling.
"""

from __future__ import annotations

from typing import Final

SECRET_MARK: Final = "[secret]"
"""What a secret value becomes in captured inputs: secrets never reach manifests or reports."""
UNKNOWN_MARK: Final = "[unknown]"
"""What a value unknown during preview (an Output not yet resolved) becomes."""
PLACEHOLDERS: Final = frozenset({SECRET_MARK, UNKNOWN_MARK})
"""Values the preview writes instead of secrets/unknowns; their real type cannot be checked."""
