"""The mocks harness: run the whole program fresh, with a given stack config, and capture it.

run = run_stack("prod")                       # the checked-in Pulumi.prod.yaml
run = run_stack(config_dict, stack="prod")    # ai-platform keys, prefix stripped
run.find("ResourceQuota", "team-quota", "research").inputs["spec"]["hard"]
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from components.constants import PROJECT
from infra.config import StackFile
from infra.config.load import SECRET_FIELD_PATHS
from tools.mockrun import MockRun, run_under_mocks

ROOT = Path(__file__).resolve().parent.parent


def stack_config(stack: str) -> dict[str, Any]:
    """The ``ai-platform:`` keys of ``Pulumi.<stack>.yaml``, prefix stripped, safe to mutate."""
    values = StackFile(ROOT / f"Pulumi.{stack}.yaml").values
    prefix = f"{PROJECT}:"
    return copy.deepcopy({k[len(prefix) :]: v for k, v in values.items() if k.startswith(prefix)})


def config_error_lines(stack: str, mutation: Callable[[dict[str, Any]], None]) -> list[str]:
    """``Pulumi.<stack>.yaml: <key path>: <message>`` per issue of the stack once ``mutation``
    changed it: what a user reads. Fails if the mutated config is valid."""
    from infra.config import ConfigError, validate_platform_config

    config = stack_config(stack)
    mutation(config)
    try:
        validate_platform_config(config, f"Pulumi.{stack}.yaml")
    except ConfigError as caught:
        return [f"{caught.source}: {issue.key_path}: {issue.message}" for issue in caught.issues]
    raise AssertionError("the mutated config is valid")


def engine_config(config: dict[str, Any]) -> dict[str, str]:
    """``{"teams": [...]}`` → ``{"ai-platform:teams": "<json>"}``, as the engine passes it."""
    return {f"{PROJECT}:{key}": json.dumps(value) for key, value in config.items()}


def engine_secret_keys(config: dict[str, Any]) -> list[str]:
    """The keys the engine marks secret for ``config`` written as it should be: every key that
    holds credentials (``pulumi config set --secret`` makes the whole key secret)."""
    return sorted(
        f"{PROJECT}:{key}" for key in {path[0] for path in SECRET_FIELD_PATHS} if key in config
    )


def run_stack(config: str | dict[str, Any], stack: str = "dev") -> MockRun[Any]:
    """Run ``infra.program.run`` under mocks: real entry point, fresh modules, fresh loop."""
    if isinstance(config, str):
        stack = config
        config = stack_config(config)

    def program() -> Any:
        from infra.program import run

        return run()

    return run_under_mocks(
        program, stack=stack, config=engine_config(config), secret_keys=engine_secret_keys(config)
    )
