"""A malformed policy-pack config file is a ``PolicyConfigError`` naming the file, never a crash.

Random JSON and random text go through ``load_policy_pack_config``; what loads goes through
``reconcile_policy_config`` against the real pack's self-description (built in-process by the
SDK's analyzer servicer, exactly what ``GetAnalyzerInfo`` returns over gRPC).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from tests.hardening.pack import pack_info
from tools import policy_driver as pd

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
CONFIG_DIR = Path(__file__).resolve().parents[2] / "policies" / "config"


INFO = pack_info()
NAMES = sorted(p.name for p in INFO.policies)
PROPERTIES = sorted(
    {key for p in INFO.policies for key in ((p.config_schema or {}).get("properties") or {})}
)

json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(),
        st.text(max_size=12),
        st.sampled_from(pd.ENFORCEMENT_LEVELS),
    ),
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4)
    ),
    max_leaves=12,
)
entries = st.one_of(
    st.sampled_from(pd.ENFORCEMENT_LEVELS),
    st.dictionaries(
        st.one_of(st.just("enforcementLevel"), st.sampled_from(PROPERTIES), st.text(max_size=8)),
        st.one_of(st.sampled_from(pd.ENFORCEMENT_LEVELS), json_values),
        max_size=3,
    ),
    json_values,
)
plausible_configs = st.dictionaries(
    st.one_of(st.sampled_from([*NAMES, "all"]), st.text(max_size=10)), entries, max_size=6
)
"""Mostly real policy names and property names, with values right, wrong or absent."""


def check_file(text: str | bytes) -> str:
    """Load (and, when it loads, reconcile) one file; only PolicyConfigError may escape."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "policy-config.json"
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        try:
            entries = pd.load_policy_pack_config(path)
            pd.reconcile_policy_config(INFO, entries, path)
        except pd.PolicyConfigError as error:
            message = str(error)
            assert message.startswith(f"{path}: "), message
            return "error"
        return "loaded"


@SETTINGS
@given(plausible_configs)
def test_plausible_configs_load_or_name_the_file(config: dict[str, Any]) -> None:
    note(json.dumps(config))
    check_file(json.dumps(config))


@SETTINGS
@given(json_values)
def test_any_json_document_loads_or_names_the_file(document: Any) -> None:
    check_file(json.dumps(document))


@SETTINGS
@given(st.text(max_size=80))
def test_any_text_loads_or_names_the_file(text: str) -> None:
    check_file(text)


@pytest.mark.parametrize("config", sorted(CONFIG_DIR.glob("*.json")), ids=lambda p: p.name)
def test_checked_in_configs_load_and_reconcile(config: Path) -> None:
    """The fuzz is anchored: the real files load, and both outcomes are reachable."""
    assert check_file(config.read_text()) == "loaded"
    broken = json.loads(config.read_text())
    broken["pss-restricted"] = {"enforcementLevel": "mandatory", "exemptNamespaces": "kube-system"}
    assert check_file(json.dumps(broken)) == "error"


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b"\xff\xfe{}", id="not-utf8"),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, id="deep"),
        pytest.param(b'{"x": ' + b"9" * 5000 + b"}", id="huge-int"),
    ],
)
def test_hostile_files_name_the_file(content: bytes) -> None:
    assert check_file(content) == "error"
