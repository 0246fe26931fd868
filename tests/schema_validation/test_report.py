"""The report: per-manifest results, JSON-able summary, fail decision, and speed."""

from __future__ import annotations

import json
from pathlib import Path

from tools import schema_validation as sv
from tools.schema_validation import ManifestValidator, validate_all

from .examples import (
    INVALID_CUSTOM,
    VALID_CUSTOM,
    deployment,
    namespace,
    service,
    unknown_kind,
)


def mixed() -> list[dict[str, object]]:
    bad = deployment()
    bad["spec"]["replicas"] = "two"
    return [
        deployment(),
        bad,
        service(),
        namespace(),
        unknown_kind(),
        VALID_CUSTOM["LocalQueue"](),
        INVALID_CUSTOM["LocalQueue"].build(),
        VALID_CUSTOM["ClusterQueue"](),
    ]


def test_summary_counts_by_status_and_kind(crd_dir: Path) -> None:
    report = validate_all(mixed(), "1.33", crd_dir)
    none = {"valid": 0, "invalid": 0, "no-schema": 0}
    assert report.summary() == {
        "kubernetesVersion": "1.33.0",
        "strict": True,
        "crdLocation": str(crd_dir),
        "total": 8,
        "byStatus": {"valid": 5, "invalid": 2, "no-schema": 1},
        "byKind": {
            "apps/v1/Deployment": {**none, "valid": 1, "invalid": 1},
            "kueue.x-k8s.io/v1beta2/ClusterQueue": {**none, "valid": 1},
            "kueue.x-k8s.io/v1beta2/LocalQueue": {**none, "valid": 1, "invalid": 1},
            "example.com/v1/Widget": {**none, "no-schema": 1},
            "v1/Namespace": {**none, "valid": 1},
            "v1/Service": {**none, "valid": 1},
        },
        "warnings": [],
    }
    assert [r.status for r in report.with_status("invalid")] == ["invalid", "invalid"]


def test_report_is_json_and_keeps_input_order(crd_dir: Path) -> None:
    report = validate_all(mixed(), "1.33", crd_dir)
    data = json.loads(json.dumps(report.to_dict()))
    assert [r["kind"] for r in data["results"]] == [m["kind"] for m in mixed()]
    assert data["results"][1] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "namespace": "research",
        "name": "llm-server",
        "status": "invalid",
        "source": "kubernetes 1.33.0",
        "errors": [{"path": "spec.replicas", "message": "'two' is not of type 'integer', 'null'"}],
        "detail": None,
        "warnings": [],
    }
    assert data["results"][4]["status"] == "no-schema"
    assert data["results"][4]["source"] is None


def test_failed_decides_on_invalid_and_optionally_on_no_schema(crd_dir: Path) -> None:
    only_valid = validate_all([deployment()], "1.33", crd_dir)
    assert not only_valid.failed()
    unchecked = validate_all([deployment(), unknown_kind()], "1.33", crd_dir)
    assert unchecked.failed()
    assert not unchecked.failed(allow_missing=True)
    invalid = validate_all(mixed(), "1.33", crd_dir)
    assert invalid.failed(allow_missing=True)
    assert not validate_all([], "1.33", crd_dir).failed()


def test_summary_text_lists_what_is_not_valid(crd_dir: Path) -> None:
    text = validate_all(mixed(), "1.33", crd_dir).summary_text()
    lines = text.splitlines()
    assert lines[0] == (
        "schema validation (Kubernetes 1.33.0, strict): 5 valid, 2 invalid, 1 no-schema"
    )
    assert "  invalid: apps/v1 Deployment research/llm-server" in lines
    assert "    spec.replicas: 'two' is not of type 'integer', 'null'" in lines
    assert "  no-schema: example.com/v1 Widget research/tune" in lines
    short = validate_all(mixed(), "1.33", crd_dir).summary_text(max_lines=2)
    assert short.splitlines()[-1].endswith("more lines in the JSON report")


def test_validators_are_built_once_per_kind(crd_dir: Path) -> None:
    first = ManifestValidator("1.33", crd_dir)
    second = ManifestValidator("1.33.0", str(crd_dir))
    first.validate(deployment())
    before = sv._kubernetes_validator.cache_info()
    second.validate(deployment())
    after = sv._kubernetes_validator.cache_info()
    assert (after.hits, after.misses) == (before.hits + 1, before.misses)
