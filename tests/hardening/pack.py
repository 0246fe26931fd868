"""The policy pack in-process: its self-description and its checks, without a server."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel
from pulumi_policy.policy import _PolicyAnalyzerServicer

from aiplatform_policies import PACK_NAME, POLICIES
from tools import policy_driver as pd
from tools.policy_driver.analyzer import _analyzer_info


def pack_info() -> pd.AnalyzerInfo:
    """The pack as the driver sees it after GetAnalyzerInfo: the same SDK servicer the pack's
    gRPC server wraps, converted by the driver's own code, but no process."""
    servicer = _PolicyAnalyzerServicer(PACK_NAME, "0.1.0", POLICIES, EnforcementLevel.ADVISORY)
    return _analyzer_info(servicer.GetAnalyzerInfo(None, None), {}, "")
