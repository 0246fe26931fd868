"""Does the offline preview tell the truth? Its resources against the real CLI's preview.

    python -m tools.e2e compare build/e2e/dev/preview.json build/e2e/dev/offline/dev/report.json

Resources are matched by URN; type, parent and inputs must be equal. The real preview cannot know
values that exist only after creation (a generated password, say): those are unknown there and
are listed apart, never silently counted as equal. Every other difference is printed.
"""

from __future__ import annotations

import argparse
import base64
import json
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.records import ENGINE_UNKNOWN, SECRET_MARK

ENGINE_INPUTS = {"pulumi:providers:kubernetes": {"version", "__internal"}}
"""Inputs the engine adds to a provider resource that the program never sent (the plugin version
it was registered with, the engine's own bookkeeping)."""
RELEASE = "kubernetes:helm.sh/v3:Release"
PROVIDER_DEFAULTS: dict[str, dict[str, Any]] = {
    RELEASE: {
        **dict.fromkeys(
            (
                "allowNullValues", "dependencyUpdate", "devel", "disableCRDHooks",
                "disableOpenapiValidation", "disableWebhooks", "forceUpdate", "lint",
                "recreatePods", "renderSubchartNotes", "replace", "resetValues", "reuseValues",
                "skipCrds", "verify", "waitForJobs",
            ),
            False,
        ),
        **dict.fromkeys(("description", "keyring", "postrender"), ""),
    },
}  # fmt: skip
"""What the Kubernetes provider's Check fills in when the program leaves a field unset: the
real preview shows these; they count as equal only at exactly these values."""
SDK_MARKERS = {RELEASE: {"compat"}}
"""Inputs the SDK sends for the provider's own use, which its Check removes."""
SECRET_TYPE = "kubernetes:core/v1:Secret"
PROVIDER_DEFAULT_NAMESPACE = "default"
"""The provider's default namespace (the kubeconfig context names none)."""


@dataclass
class Comparison:
    """Every way the two previews differ; empty lists mean they agree."""

    only_real: list[str] = field(default_factory=list)
    only_offline: list[str] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)
    unknown_in_real: list[str] = field(default_factory=list)
    assumed_namespaced: list[str] = field(default_factory=list)
    compared: int = 0

    @property
    def agree(self) -> bool:
        return not (self.only_real or self.only_offline or self.differences)

    def lines(self) -> list[str]:
        out = [f"{self.compared} resources compared"]
        out += [f"only in the real preview: {urn}" for urn in self.only_real]
        out += [f"only in the offline preview: {urn}" for urn in self.only_offline]
        out += self.differences
        if self.assumed_namespaced:
            out.append(
                f"{len(self.assumed_namespaced)} custom resources of kinds whose CRD a chart of "
                "the same update installs: the provider assumed them namespaced"
            )
        if self.unknown_in_real:
            out.append(
                f"{len(self.unknown_in_real)} values unknown to the real preview until creation:"
            )
            out += [f"  {entry}" for entry in self.unknown_in_real]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "agree": self.agree,
            "compared": self.compared,
            "onlyReal": self.only_real,
            "onlyOffline": self.only_offline,
            "differences": self.differences,
            "unknownInReal": self.unknown_in_real,
            "assumedNamespaced": self.assumed_namespaced,
        }


def _diff(real: Any, offline: Any, path: str) -> Iterator[tuple[str, str]]:
    """``(kind, text)`` for each leaf that differs; kind is ``unknown`` or ``diff``."""
    if real == ENGINE_UNKNOWN:
        yield "unknown", path or "(whole value)"
        return
    if isinstance(real, dict) and isinstance(offline, dict):
        for key in sorted(set(real) | set(offline)):
            sub = f"{path}.{key}" if path else str(key)
            if key not in real:
                yield "diff", f"{sub}: offline {_short(offline[key])}, absent in real"
            elif key not in offline:
                yield "diff", f"{sub}: real {_short(real[key])}, absent offline"
            else:
                yield from _diff(real[key], offline[key], sub)
        return
    if isinstance(real, list) and isinstance(offline, list) and len(real) == len(offline):
        for index, (a, b) in enumerate(zip(real, offline, strict=True)):
            yield from _diff(a, b, f"{path}[{index}]")
        return
    if real != offline and not _same_number(real, offline):
        yield "diff", f"{path}: real {_short(real)}, offline {_short(offline)}"


def _same_number(a: Any, b: Any) -> bool:
    numbers = (int, float)
    return (
        isinstance(a, numbers)
        and isinstance(b, numbers)
        and not isinstance(a, bool)
        and not isinstance(b, bool)
        and float(a) == float(b)
    )


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 120 else text[:117] + "..."


def real_resources(preview: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """URN -> new state of every step of ``pulumi preview --json`` (the stack itself excluded)."""
    out = {}
    for step in preview.get("steps", []):
        state = step.get("newState") or {}
        if state.get("type") == "pulumi:pulumi:Stack":
            continue
        out[step["urn"]] = state
    return out


def provider_view(
    type_token: str, real: dict[str, Any], offline: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both sides as the provider's Check leaves them, so only real differences remain: the
    engine's additions dropped, the provider's defaults filled in offline, the SDK's markers
    dropped offline, and a Secret's ``stringData`` folded into ``data`` as the provider does
    with known values (with secret values the whole field is secret; values unknown until
    creation stay in ``stringData``)."""
    real = {k: v for k, v in real.items() if k not in ENGINE_INPUTS.get(type_token, set())}
    offline = {k: v for k, v in offline.items() if k not in SDK_MARKERS.get(type_token, set())}
    for key, default in PROVIDER_DEFAULTS.get(type_token, {}).items():
        offline.setdefault(key, default)
    if type_token == SECRET_TYPE and "stringData" in offline and "stringData" not in real:
        string_data = offline.pop("stringData")
        if real.get("data") == SECRET_MARK or string_data == SECRET_MARK:
            offline["data"] = SECRET_MARK
        elif isinstance(string_data, dict):
            encoded = {k: _base64(v) for k, v in string_data.items()}
            offline["data"] = {**(offline.get("data") or {}), **encoded}
    return real, offline


def _base64(value: Any) -> str:
    return base64.b64encode(str(value).encode()).decode()


def assumed_namespaced(
    real: dict[str, Any], offline: dict[str, Any], unknown_kinds: Collection[str]
) -> bool:
    """The provider cannot tell the scope of a kind whose CRD the cluster does not have yet (a
    chart installs it later in the same update): it assumes namespaced, fills in its default
    namespace, and corrects that when it creates the object. Only then is a namespace that the
    program did not set not a difference."""
    kind = f"{offline.get('apiVersion')}/{offline.get('kind')}"
    real_namespace = (real.get("metadata") or {}).get("namespace")
    return (
        kind in unknown_kinds
        and real_namespace == PROVIDER_DEFAULT_NAMESPACE
        and "namespace" not in (offline.get("metadata") or {})
    )


def compare(
    preview: dict[str, Any], report: dict[str, Any], unknown_kinds: Collection[str] = ()
) -> Comparison:
    """``unknown_kinds``: ``apiVersion/kind`` of custom resources the cluster did not serve when
    the real preview ran (see :func:`assumed_namespaced`)."""
    real = real_resources(preview)
    offline = {r["urn"]: r for r in report["resources"]}
    result = Comparison(
        only_real=sorted(set(real) - set(offline)), only_offline=sorted(set(offline) - set(real))
    )
    for urn in sorted(set(real) & set(offline)):
        result.compared += 1
        mine, theirs = offline[urn], real[urn]
        if mine["type"] != theirs.get("type"):
            result.differences.append(
                f"{urn}: type real {theirs.get('type')}, offline {mine['type']}"
            )
        if (mine.get("parent") or "") != (theirs.get("parent") or ""):
            result.differences.append(
                f"{urn}: parent real {theirs.get('parent')}, offline {mine.get('parent')}"
            )
        real_inputs, offline_inputs = provider_view(
            mine["type"], theirs.get("inputs") or {}, mine.get("inputs") or {}
        )
        if assumed_namespaced(real_inputs, offline_inputs, unknown_kinds):
            real_inputs = {
                **real_inputs,
                "metadata": {k: v for k, v in real_inputs["metadata"].items() if k != "namespace"},
            }
            result.assumed_namespaced.append(urn)
        for kind, text in _diff(real_inputs, offline_inputs, ""):
            target = result.unknown_in_real if kind == "unknown" else result.differences
            target.append(f"{urn}: {text}")
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.e2e compare", description=__doc__)
    parser.add_argument("preview", type=Path, help="output of pulumi preview --json")
    parser.add_argument("report", type=Path, help="the offline preview's report.json")
    args = parser.parse_args(argv)
    result = compare(json.loads(args.preview.read_text()), json.loads(args.report.read_text()))
    print("\n".join(result.lines()))
    return 0 if result.agree else 1
