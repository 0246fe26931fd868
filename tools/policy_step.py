"""The preview's policy step: the pack as its own process, driven as ``pulumi preview`` does.

Which config file: ``policies/config/<stack>.json`` when it exists, else the one named after the
stack's environment (``dev``/``staging``/``prod``), so a new stack file previews with the right
strictness before anyone writes a config for it.
"""

from __future__ import annotations

from pathlib import Path

from .mockrun import CapturedResource
from .policy_driver import PolicyRunResult, run_policy_pack

PACK_DIR = "policies"


def policy_config_for(project_root: Path, stack: str, environment: str) -> Path | None:
    """The policy-pack config file for a stack, or None for the pack's own defaults."""
    folder = project_root / PACK_DIR / "config"
    for name in (stack, environment):
        candidate = folder / f"{name}.json"
        if candidate.is_file():
            return candidate
    return None


def run_policies(
    resources: list[CapturedResource],
    *,
    stack: str,
    environment: str,
    project_root: Path,
    config_file: Path | None = None,
) -> tuple[PolicyRunResult, Path | None]:
    """Analyze every captured resource and the whole stack; return results and config used."""
    config = config_file or policy_config_for(project_root, stack, environment)
    result = run_policy_pack(
        project_root / PACK_DIR,
        [resource.to_record() for resource in resources],
        config_path=config,
        stack=stack,
    )
    return result, config
