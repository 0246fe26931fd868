"""Typed stack config: the only way data enters the program."""

from .errors import ConfigError, ConfigIssue
from .load import StackFile, load_from_pulumi_runtime, validate_platform_config
from .root import PlatformConfig

__all__ = [
    "ConfigError",
    "ConfigIssue",
    "PlatformConfig",
    "StackFile",
    "load_from_pulumi_runtime",
    "validate_platform_config",
]
