"""What the driver raises: bad input (config file, records, pack layout) apart from a pack
that failed (crash, RPC error, timeout)."""

from __future__ import annotations


class PolicyDriverError(Exception):
    """Base class: anything that stops a policy run from producing a result."""


class PolicyConfigError(PolicyDriverError):
    """The policy-pack-config file is malformed or names unknown policies/levels/properties."""


class RecordsError(PolicyDriverError):
    """The resource records are not in the documented format."""


class PackStartError(PolicyDriverError):
    """The pack process did not come up (crashed before serving, bad port line, timeout)."""


class PackLayoutError(PackStartError):
    """The pack directory is not a runnable Python policy pack (nothing was started)."""


class PolicyRunError(PolicyDriverError):
    """The pack failed while being driven (RPC error, crash, timeout)."""
