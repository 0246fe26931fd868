"""The Pulumi program: validate config first, then build; a bad config registers nothing."""

from __future__ import annotations

import pulumi

from . import field_ownership
from .config import ConfigError, load_from_pulumi_runtime
from .outputs import StackOutputs, export_outputs
from .stack import build_platform


def run() -> StackOutputs:
    """What ``__main__`` calls. Config errors end the run cleanly, without a traceback."""
    try:
        config = load_from_pulumi_runtime(pulumi.get_stack())
    except ConfigError as exc:
        raise pulumi.RunError(exc.render()) from None
    field_ownership.register()
    outputs = build_platform(config)
    export_outputs(outputs)
    return outputs
