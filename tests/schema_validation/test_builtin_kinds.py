"""Built-in kinds: strict OpenAPI validation, equivalent to kubernetes-validate's verdicts."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_validate import utils as kv_utils

from tools import schema_validation as sv
from tools.schema_validation import (
    FieldError,
    ManifestValidator,
    UnsupportedKubernetesVersionError,
    json_path,
    resolve_kubernetes_version,
)

from .examples import container, deployment, namespace, service


def paths(result: sv.ManifestResult) -> list[str]:
    return [error.path for error in result.errors]


def test_valid_deployment(validator: ManifestValidator) -> None:
    result = validator.validate(deployment())
    assert result == sv.ManifestResult(
        api_version="apps/v1",
        kind="Deployment",
        namespace="research",
        name="llm-server",
        status="valid",
        source="kubernetes 1.33.0",
    )


def test_wrong_type_is_invalid(validator: ManifestValidator) -> None:
    manifest = deployment()
    manifest["spec"]["replicas"] = "two"
    result = validator.validate(manifest)
    assert result.status == "invalid"
    assert result.errors == (FieldError("spec.replicas", "'two' is not of type 'integer', 'null'"),)


def test_unknown_field_points_at_the_field(validator: ManifestValidator) -> None:
    manifest = deployment()
    container(manifest)["resource"] = container(manifest).pop("resources")  # typo
    result = validator.validate(manifest)
    assert result.status == "invalid"
    assert result.errors == (
        FieldError(
            "spec.template.spec.containers[0].resource", "unknown field (not in the schema)"
        ),
    )


def test_all_errors_are_reported_sorted_by_path(validator: ManifestValidator) -> None:
    manifest = deployment()
    manifest["metadata"]["labels"]["aiplatform.io/team"] = 7
    manifest["spec"]["replicaz"] = 3
    del container(manifest)["name"]
    container(manifest)["ports"][0]["containerPort"] = "8080"
    container(manifest)["resources"]["limits"]["nvidia.com/gpu"] = {"count": 1}
    result = validator.validate(manifest)
    assert result.status == "invalid"
    assert paths(result) == [
        'metadata.labels["aiplatform.io/team"]',
        "spec.replicaz",
        "spec.template.spec.containers[0].name",
        "spec.template.spec.containers[0].ports[0].containerPort",
        'spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]',
    ]
    messages = {error.path: error.message for error in result.errors}
    assert messages["spec.template.spec.containers[0].name"] == "required field is missing"
    assert messages["spec.replicaz"] == "unknown field (not in the schema)"
    assert (
        "is not valid under any of the given schemas"
        in messages['spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]']
    )


def test_non_strict_accepts_unknown_fields(crd_dir: Any) -> None:
    manifest = deployment()
    manifest["spec"]["replicaz"] = 3
    assert ManifestValidator("1.33", crd_dir, strict=False).validate(manifest).status == "valid"


def test_preview_placeholders_are_not_type_errors(validator: ManifestValidator) -> None:
    """The preview writes "[secret]"/"[unknown]" where it cannot show a value."""
    manifest = deployment()
    manifest["spec"]["replicas"] = "[unknown]"
    container(manifest)["ports"][0]["containerPort"] = "[secret]"
    assert validator.validate(manifest).status == "valid"


@pytest.mark.parametrize(
    ("api_version", "kind", "path"),
    [
        ("batch/v1beta1", "CronJob", "apiVersion"),  # removed in 1.25
        ("extensions/v1beta1", "Ingress", "apiVersion"),
        ("apps/v1", "Deploymnet", "kind"),
        ("v1", "Namspace", "kind"),
    ],
)
def test_built_in_group_without_that_kind_is_invalid_not_unchecked(
    validator: ManifestValidator, api_version: str, kind: str, path: str
) -> None:
    result = validator.validate(
        {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}
    )
    assert result.status == "invalid"
    assert result.source == "kubernetes 1.33.0"
    assert result.errors == (
        FieldError(path, f"Kubernetes 1.33.0 does not serve {kind} in {api_version}"),
    )


@pytest.mark.parametrize(
    ("manifest", "errors"),
    [
        ({"kind": "Namespace"}, [("apiVersion", "required field is missing")]),
        (
            {"apiVersion": 1, "kind": ""},
            [("apiVersion", "must be a non-empty string"), ("kind", "must be a non-empty string")],
        ),
        ({"apiVersion": "apps/v1/x", "kind": "Foo"}, [("apiVersion", "'apps/v1/x' is not")]),
        ({"apiVersion": "app/v1", "kind": "Foo"}, [("apiVersion", "'app' is neither a built-in")]),
        ({"apiVersion": "example.com/one", "kind": "Foo"}, [("apiVersion", "'one' is not")]),
        ({"apiVersion": "example.com/v1", "kind": "../x"}, [("kind", "'../x' is not")]),
    ],
)
def test_malformed_type_fields_are_invalid(
    validator: ManifestValidator, manifest: dict[str, Any], errors: list[tuple[str, str]]
) -> None:
    result = validator.validate(manifest)
    assert result.status == "invalid"
    assert [error.path for error in result.errors] == [path for path, _ in errors]
    for error, (_, fragment) in zip(result.errors, errors, strict=True):
        assert fragment in error.message


def test_a_non_mapping_is_a_caller_bug(validator: ManifestValidator) -> None:
    with pytest.raises(TypeError, match="must be a mapping"):
        validator.validate(["not", "a", "manifest"])  # type: ignore[arg-type]


def test_long_messages_are_truncated(validator: ManifestValidator) -> None:
    manifest = namespace()
    manifest["spec"] = ["x" * 1000]
    (error,) = validator.validate(manifest).errors
    assert error.path == "spec"
    assert len(error.message) == sv.MAX_MESSAGE
    assert error.message.endswith("...")


# --- Equivalence with kubernetes-validate --------------------------------------------------------


def _variants() -> list[tuple[str, dict[str, Any]]]:
    wrong_type = deployment()
    wrong_type["spec"]["replicas"] = "two"
    unknown = deployment()
    container(unknown)["imagePullPolicyy"] = "Always"
    missing = deployment()
    del container(missing)["name"]
    bad_service = service()
    bad_service["spec"]["ports"][0]["port"] = "eighty"
    bad_namespace = namespace()
    bad_namespace["metadata"]["labelz"] = {}
    return [
        ("deployment", deployment()),
        ("service", service()),
        ("namespace", namespace()),
        ("wrong type", wrong_type),
        ("unknown field", unknown),
        ("missing required", missing),
        ("service port type", bad_service),
        ("metadata unknown", bad_namespace),
    ]


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("version", ["1.25", "1.33", "1.37"])
@pytest.mark.parametrize(("label", "manifest"), _variants(), ids=[v[0] for v in _variants()])
def test_same_verdict_as_kubernetes_validate(
    crd_dir: Any, version: str, strict: bool, label: str, manifest: dict[str, Any]
) -> None:
    """Building validators ourselves must not change a verdict, only the speed."""
    try:
        kv_utils.validate(manifest, version, strict)
        expected_error = None
    except kv_utils.ValidationError as error:
        expected_error = json_path(error.path)
    result = ManifestValidator(version, crd_dir, strict=strict).validate(manifest)
    assert result.status == ("valid" if expected_error is None else "invalid"), label
    if expected_error is not None:
        # Ours names the unknown or missing field; theirs names the object holding it.
        assert any(path.startswith(expected_error) for path in paths(result)), label


# --- Versions ------------------------------------------------------------------------------------


@pytest.mark.parametrize("configured", ["1.33", "1.33.2", "v1.33", " 1.33.0 "])
def test_minor_version_maps_to_the_shipped_patch(configured: str) -> None:
    assert resolve_kubernetes_version(configured) == "1.33.0"


def test_newest_shipped_patch_of_the_minor_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = ("1.32.0", "1.33.0", "1.33.4", "1.33.10", "1.34.1")
    monkeypatch.setattr(sv, "supported_kubernetes_versions", lambda: shipped)
    assert resolve_kubernetes_version("1.33") == "1.33.10"
    assert resolve_kubernetes_version("1.34.0") == "1.34.1"


@pytest.mark.parametrize("configured", ["1.20", "1.99", "2.0", "latest", "", "1"])
def test_unsupported_version_lists_the_supported_ones(configured: str) -> None:
    supported = sv.supported_kubernetes_versions()
    minors = ", ".join(v.rsplit(".", 1)[0] for v in supported)
    with pytest.raises(UnsupportedKubernetesVersionError) as raised:
        ManifestValidator(configured, None)
    message = str(raised.value)
    assert f"Kubernetes version {configured!r} is not supported" in message
    assert message.endswith(f"supported: {minors}")
    assert "1.25, 1.26" in message and "1.37" in message


def test_supported_versions_come_from_kubernetes_validate() -> None:
    assert set(sv.supported_kubernetes_versions()) == set(kv_utils.all_versions())
    assert len(set(sv.supported_kubernetes_versions())) == len(sv.supported_kubernetes_versions())


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        ([], ""),
        (
            ["spec", "template", "spec", "containers", 0, "resources"],
            "spec.template.spec.containers[0].resources",
        ),
        (
            ["metadata", "labels", "app.kubernetes.io/name"],
            'metadata.labels["app.kubernetes.io/name"]',
        ),
        (["data", "my-key"], "data.my-key"),
        ([0, "x y"], '[0]["x y"]'),
    ],
)
def test_json_path(parts: list[str | int], expected: str) -> None:
    assert json_path(parts) == expected
