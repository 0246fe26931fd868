"""The preview's policy step: the pack as its own process, driven as ``pulumi preview`` does.

Which config file: ``policies/config/<stack>.json`` when it exists, else the one named after the
stack's environment (``dev``/``staging``/``prod``), so a new stack file previews with the right
strictness before anyone writes a config for it.

The pack's process is launched before the program runs (:func:`launch_policies`): its interpreter
start and imports, most of the step on a small stack, happen on another core meanwhile; and it is
waited for only at the end of the preview, so that its exit overlaps the report.
"""

from __future__ import annotations

from pathlib import Path

from components.constants import PROJECT

from .mockrun import CapturedResource
from .policy_driver import PolicyPackProcess, PolicyRunResult, launch_policy_pack, run_policy_pack

PACK_DIR = "policies"


def policy_config_for(project_root: Path, stack: str, environment: str) -> Path | None:
    """The policy-pack config file for a stack, or None for the pack's own defaults."""
    folder = project_root / PACK_DIR / "config"
    for name in (stack, environment):
        candidate = folder / f"{name}.json"
        if candidate.is_file():
            return candidate
    return None


def launch_policies(project_root: Path, stack: str) -> PolicyPackProcess:
    """The pack's process for :func:`run_policies` of ``stack``, started now."""
    return launch_policy_pack(project_root / PACK_DIR, stack=stack, project=PROJECT)


def run_policies(
    resources: list[CapturedResource],
    *,
    stack: str,
    environment: str,
    project_root: Path,
    config_file: Path | None = None,
    launched: PolicyPackProcess | None = None,
) -> tuple[PolicyRunResult, Path | None]:
    """Analyze every captured resource and the whole stack; return results and config used.
    ``launched``: the pack from :func:`launch_policies`; asked to end here, closed by the caller."""
    config = config_file or policy_config_for(project_root, stack, environment)
    result = run_policy_pack(
        project_root / PACK_DIR,
        [resource.to_record() for resource in resources],
        config_path=config,
        stack=stack,
        project=PROJECT,
        launched=launched,
    )
    return result, config
