"""Decode a resource's props once per RPC instead of once per policy.

Why: pulumi-policy's analyzer servicer converts the request's protobuf Struct to Python
(``json_format.MessageToDict`` → ``deserialize_properties`` → ``unknown_checking_proxy``) inside
its per-policy loop. With ~35 policies that conversion is >90% of the pack's run time and caps
``Analyze`` at ~330 resources/s, and ``AnalyzeStack`` redoes every resource for every stack
policy. The result of each step depends only on its input object, and policies never mutate
props, so the same converted object can be handed to every policy of one RPC.

How: :func:`install` wraps the servicer's ``Analyze`` and ``AnalyzeStack`` so that, for the
duration of one call on one thread, the three module-level functions the servicer uses return
the previous result for the *same input object* (identity, with the input kept alive so its id
cannot be reused). Outside those calls, and for ``Remediate`` (which writes to props), nothing
changes. Everything the SDK reports is identical (``policies/tests/test_policy_analyzer.py``
compares the serialized responses of both modes).

It relies on SDK internals, so it checks they exist and otherwise does nothing; set
``AIPLATFORM_POLICY_NO_SPEEDUPS=1`` to turn it off.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from typing import Any

_local = threading.local()
_originals: dict[str, Any] = {}
ENV_OFF = "AIPLATFORM_POLICY_NO_SPEEDUPS"


def rpc_cache() -> dict[Any, Any] | None:
    """The cache of the RPC running on this thread, or ``None`` outside a scoped RPC.

    Policies may memoise per-resource work in it keyed by ``(tag, id(props))``, storing the props
    object alongside the value (so the id cannot be reused while the entry lives).
    """
    cache: dict[Any, Any] | None = getattr(_local, "cache", None)
    return cache


def _memoized(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Single-argument calls reuse the result for the same input object within one RPC."""

    @functools.wraps(fn)
    def wrapper(obj: Any, *args: Any, **kwargs: Any) -> Any:
        cache = rpc_cache()
        if cache is None or args or kwargs:
            return fn(obj, *args, **kwargs)
        key = (wrapper, id(obj))
        hit = cache.get(key)
        if hit is not None and hit[0] is obj:
            return hit[1]
        result = fn(obj)
        cache[key] = (obj, result)
        return result

    return wrapper


class _JsonFormat:
    """Stands in for ``google.protobuf.json_format`` inside the SDK module only."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.MessageToDict = _memoized(real.MessageToDict)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def _scoped(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def run(self: Any, request: Any, context: Any) -> Any:
        _local.cache = {}
        try:
            return method(self, request, context)
        finally:
            _local.cache = None

    return run


def install() -> bool:
    """Install the per-RPC conversion cache into pulumi-policy; ``True`` if it is active."""
    if _originals:
        return True
    if os.environ.get(ENV_OFF):
        return False
    from pulumi_policy import policy as sdk

    servicer = getattr(sdk, "_PolicyAnalyzerServicer", None)
    needed = ("json_format", "deserialize_properties", "unknown_checking_proxy")
    if servicer is None or not all(hasattr(sdk, name) for name in needed):
        return False
    if not all(callable(getattr(servicer, m, None)) for m in ("Analyze", "AnalyzeStack")):
        return False
    _originals.update({name: getattr(sdk, name) for name in needed})
    _originals.update({"Analyze": servicer.Analyze, "AnalyzeStack": servicer.AnalyzeStack})
    sdk.json_format = _JsonFormat(sdk.json_format)
    sdk.deserialize_properties = _memoized(sdk.deserialize_properties)
    sdk.unknown_checking_proxy = _memoized(sdk.unknown_checking_proxy)
    for method in ("Analyze", "AnalyzeStack"):
        setattr(servicer, method, _scoped(getattr(servicer, method)))
    return True


def uninstall() -> None:
    """Restore the SDK as it was (tests compare both modes in one process)."""
    if not _originals:
        return
    from pulumi_policy import policy as sdk

    servicer = sdk._PolicyAnalyzerServicer
    for method in ("Analyze", "AnalyzeStack"):
        setattr(servicer, method, _originals.pop(method))
    for name, value in _originals.items():
        setattr(sdk, name, value)
    _originals.clear()
