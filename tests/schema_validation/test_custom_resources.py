"""Custom resources against the shared CRD catalog: every schema file, valid and invalid."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools import schema_validation as sv
from tools.schema_validation import FieldError, ManifestValidator

from .examples import INVALID_CUSTOM, VALID_CUSTOM, node_pool, prometheus_rule, unknown_kind


def schema_file(crd_dir: Path, api_version: str, kind: str) -> Path:
    group, version = api_version.split("/")
    return crd_dir / group / f"{kind.lower()}_{version}.json"


NOT_RENDERED_GROUPS = frozenset({"keda.sh", "eventing.keda.sh"})
NOT_RENDERED_SCHEMAS = frozenset(
    {
        ("karpenter.sh", "nodeclaim_v1"),
        ("ray.io", "raycluster_v1alpha1"),
        ("ray.io", "rayjob_v1alpha1"),
        ("ray.io", "rayservice_v1"),
        ("ray.io", "rayservice_v1alpha1"),
        ("ray.io", "raycronjob_v1"),
    }
)
"""What the shared catalog holds for kinds the platform does not render (KEDA, not yet;
Karpenter's NodeClaim, made by Karpenter itself; KubeRay's RayService, RayCronJob and the old
v1alpha1 versions): their examples come with the components that render them."""


def _rendered(group: str, stem: str) -> bool:
    return group not in NOT_RENDERED_GROUPS and (group, stem) not in NOT_RENDERED_SCHEMAS


def test_examples_cover_every_schema_in_the_catalog(crd_dir: Path) -> None:
    in_catalog = {
        (path.parent.name, path.stem)
        for path in crd_dir.glob("*/*.json")
        if _rendered(path.parent.name, path.stem)
    }
    covered = {
        (m["apiVersion"].split("/")[0], f"{m['kind'].lower()}_{m['apiVersion'].split('/')[1]}")
        for m in (build() for build in VALID_CUSTOM.values())
    }
    covered = {entry for entry in covered if _rendered(*entry)}
    assert covered == in_catalog
    assert set(INVALID_CUSTOM) == set(VALID_CUSTOM)


@pytest.mark.parametrize("kind", sorted(VALID_CUSTOM))
def test_valid_custom_resource(validator: ManifestValidator, crd_dir: Path, kind: str) -> None:
    manifest = VALID_CUSTOM[kind]()
    result = validator.validate(manifest)
    assert (result.status, result.errors, result.warnings) == ("valid", (), ())
    assert result.source == str(schema_file(crd_dir, manifest["apiVersion"], kind))
    assert (result.api_version, result.kind) == (manifest["apiVersion"], kind)
    assert result.name == manifest["metadata"]["name"]
    assert result.namespace == manifest["metadata"].get("namespace")


@pytest.mark.parametrize("kind", sorted(INVALID_CUSTOM))
def test_invalid_custom_resource(validator: ManifestValidator, kind: str) -> None:
    example = INVALID_CUSTOM[kind]
    result = validator.validate(example.build())
    assert result.status == "invalid"
    assert [error.path for error in result.errors] == [path for path, _ in example.errors]
    for error, (_, fragment) in zip(result.errors, example.errors, strict=True):
        assert fragment in error.message, error


def test_kind_without_schema_is_no_schema_never_valid(
    validator: ManifestValidator, crd_dir: Path
) -> None:
    result = validator.validate(unknown_kind())
    assert result.status == "no-schema"
    assert result.source is None
    assert result.errors == ()
    assert result.detail == f"no schema at {crd_dir / 'example.com' / 'widget_v1.json'}"


def test_known_group_at_an_unknown_version_is_no_schema(validator: ManifestValidator) -> None:
    """Kueue 0.20+ no longer serves v1beta1; the catalog has no schema for it either."""
    manifest = VALID_CUSTOM["LocalQueue"]()
    manifest["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    assert validator.validate(manifest).status == "no-schema"


def test_without_a_location_every_custom_resource_is_no_schema() -> None:
    result = ManifestValidator("1.33", None).validate(node_pool())
    assert result.status == "no-schema"
    assert result.detail == "no CRD schema location is configured"


def test_strict_closes_the_root_of_crd_schemas(validator: ManifestValidator) -> None:
    manifest = VALID_CUSTOM["ClusterQueue"]()
    manifest["specs"] = manifest.pop("spec")
    assert validator.validate(manifest).errors == (
        FieldError("specs", "unknown field (not in the schema)"),
    )


def test_non_strict_leaves_the_root_open(crd_dir: Path) -> None:
    manifest = VALID_CUSTOM["ClusterQueue"]()
    manifest["extra"] = 1
    assert ManifestValidator("1.33", crd_dir, strict=False).validate(manifest).status == "valid"


def test_custom_resource_metadata_is_checked_as_object_meta(validator: ManifestValidator) -> None:
    manifest = node_pool()
    manifest["metadata"]["lables"] = {}
    assert validator.validate(manifest).errors == (
        FieldError("metadata.lables", "unknown field (not in the schema)"),
    )


@pytest.mark.parametrize(
    ("value", "valid"),
    [("abort", True), ("Warn", True), ("WARN", True), ("", True), ("ignore", False)],
)
def test_go_inline_flags_are_enforced(
    validator: ManifestValidator, value: str, valid: bool
) -> None:
    """The catalog's ``^(?i)(abort|warn)?$`` is RE2 syntax that Python rejects as written."""
    manifest = prometheus_rule()
    manifest["spec"]["groups"][0]["partial_response_strategy"] = value
    assert (validator.validate(manifest).status == "valid") is valid


@pytest.mark.parametrize(
    ("go", "python"),
    [
        ("^(?i)(abort|warn)?$", "^(?i:(abort|warn)?$)"),
        ("a(?i)b|c", "a(?i:b)|(?i:c)"),
        ("(x(?i)y)z", "(x(?i:y))z"),
        ("[(?i)]a", "[(?i)]a"),
        ("[]a](?s).", "[]a](?s:.)"),
        (r"\(?i\)", r"\(?i\)"),
        (r"abc\z", r"abc\Z"),
    ],
)
def test_inline_flag_translation(go: str, python: str) -> None:
    assert sv._scope_inline_flags(go) == python


def write_schema(folder: Path, group: str, name: str, schema: object | str) -> Path:
    path = folder / group / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(schema if isinstance(schema, str) else json.dumps(schema), encoding="utf-8")
    return path


def widget(**spec: object) -> dict[str, object]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": spec,
    }


def test_untranslatable_pattern_is_a_warning_not_a_crash(tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "properties": {
                    "size": {"type": "string", "pattern": "(?U)a+"},
                    "name": {"type": "string", "pattern": "^[a-z]+$"},
                },
            },
        },
    }
    path = write_schema(tmp_path, "example.com", "widget_v1.json", schema)
    validator = ManifestValidator("1.33", tmp_path)
    result = validator.validate(widget(size="anything", name="ok"))
    assert result.status == "valid"
    assert result.warnings == (
        f"{path}.properties.spec.properties.size: pattern '(?U)a+' is not a Python regex;"
        " not enforced",
    )
    assert validator.validate(widget(name="NO")).errors[0].path == "spec.name"
    report = validator.validate_all([widget(name="ok"), widget(name="ok")])
    assert len(report.warnings) == 1


def test_unreadable_schema_file_is_a_setup_error(tmp_path: Path) -> None:
    write_schema(tmp_path, "example.com", "widget_v1.json", "{not json")
    with pytest.raises(sv.SchemaLocationError, match="is not valid JSON"):
        ManifestValidator("1.33", tmp_path).validate(widget())


def test_schema_file_that_is_not_a_json_schema_is_a_setup_error(tmp_path: Path) -> None:
    write_schema(tmp_path, "example.com", "widget_v1.json", {"type": "object", "minProperties": -1})
    with pytest.raises(sv.SchemaLocationError, match="is not a valid JSON schema"):
        ManifestValidator("1.33", tmp_path).validate(widget())
    write_schema(tmp_path, "example.com", "gadget_v1.json", [1, 2])
    with pytest.raises(sv.SchemaLocationError, match="is not a JSON object"):
        ManifestValidator("1.33", tmp_path).validate({**widget(), "kind": "Gadget"})


WIDGET_SCHEMA = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
    },
}


@pytest.fixture
def counted_checks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[object]]:
    """A verdict cache of the test's own and every metaschema check the validator makes."""
    monkeypatch.setenv(sv.SCHEMA_CHECK_CACHE_ENV, str(tmp_path / "checks"))
    checked: list[object] = []
    original = sv.jsonschema.Draft202012Validator.check_schema

    def check(schema: object, *args: object, **kwargs: object) -> None:
        checked.append(schema)
        original(schema, *args, **kwargs)

    monkeypatch.setattr(sv.jsonschema.Draft202012Validator, "check_schema", check)
    sv.clear_caches()
    yield checked
    sv.clear_caches()


def test_a_schema_that_passed_its_check_is_not_checked_again(
    tmp_path: Path, counted_checks: list[object]
) -> None:
    catalog = tmp_path / "catalog"
    write_schema(catalog, "example.com", "widget_v1.json", WIDGET_SCHEMA)
    assert ManifestValidator("1.33", catalog).validate(widget(size=1)).status == "valid"
    assert len(counted_checks) == 1
    sv.clear_caches()  # another process: only the verdict on disk is left
    result = ManifestValidator("1.33", catalog).validate(widget(size="one"))
    assert (result.status, len(counted_checks)) == ("invalid", 1)
    # An edited schema is another schema: checked again.
    edited = {**WIDGET_SCHEMA, "required": ["spec"]}
    write_schema(catalog, "example.com", "widget_v1.json", edited)
    sv.clear_caches()
    assert ManifestValidator("1.33", catalog).validate(widget(size=1)).status == "valid"
    assert len(counted_checks) == 2


def test_a_schema_that_failed_its_check_is_refused_every_time(
    tmp_path: Path, counted_checks: list[object]
) -> None:
    catalog = tmp_path / "catalog"
    write_schema(catalog, "example.com", "widget_v1.json", {"type": "object", "minProperties": -1})
    for attempt in (1, 2):
        sv.clear_caches()
        with pytest.raises(sv.SchemaLocationError, match="is not a valid JSON schema"):
            ManifestValidator("1.33", catalog).validate(widget())
        assert len(counted_checks) == attempt
    assert not list((tmp_path / "checks").glob("*"))


def test_an_empty_cache_setting_checks_every_process(
    tmp_path: Path, counted_checks: list[object], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(sv.SCHEMA_CHECK_CACHE_ENV, "")
    catalog = tmp_path / "catalog"
    write_schema(catalog, "example.com", "widget_v1.json", WIDGET_SCHEMA)
    for attempt in (1, 2):
        sv.clear_caches()
        assert ManifestValidator("1.33", catalog).validate(widget(size=1)).status == "valid"
        assert len(counted_checks) == attempt
    assert not (tmp_path / "checks").exists()
