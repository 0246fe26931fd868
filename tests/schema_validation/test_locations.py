"""CRD schema locations: folder, path/file:// templates, http(s) (faked), and bad locations."""

from __future__ import annotations

import email.message
import io
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tools import schema_validation as sv
from tools.schema_validation import CrdSchemaLocation, SchemaLocationError, validate_all

from .examples import INVALID_CUSTOM, VALID_CUSTOM, deployment, unknown_kind

LAYOUT = "{{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}.json"


def every_example() -> list[dict[str, Any]]:
    return [
        deployment(),
        unknown_kind(),
        *(build() for build in VALID_CUSTOM.values()),
        *(example.build() for example in INVALID_CUSTOM.values()),
    ]


def fill(location: str, crd_dir: Path) -> str:
    """Put the catalog into a location; str.format would eat the template's braces."""
    return location.replace("{uri}", crd_dir.as_uri()).replace("{path}", str(crd_dir))


def verdicts(report: sv.Report) -> list[tuple[str, str, str, tuple[sv.FieldError, ...]]]:
    return [(r.kind, r.api_version, r.status, r.errors) for r in report.results]


@pytest.mark.parametrize(
    "template",
    [
        "{uri}/" + LAYOUT,
        "{uri}/{{ .Group }}/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json",  # Go spacing
        "{path}/" + LAYOUT,
        "{uri}",  # a catalog root as a file:// URL
        "{path}/",
    ],
)
def test_templates_and_folder_give_the_same_verdicts(crd_dir: Path, template: str) -> None:
    location = fill(template, crd_dir)
    by_folder = validate_all(every_example(), "1.33", crd_dir)
    by_template = validate_all(every_example(), "1.33", location)
    assert verdicts(by_template) == verdicts(by_folder)
    assert by_template.summary()["byStatus"] == by_folder.summary()["byStatus"]
    assert by_template.crd_location == location


def test_sources_name_the_file_or_the_url(crd_dir: Path) -> None:
    manifest = VALID_CUSTOM["NodePool"]()
    by_folder = validate_all([manifest], "1.33", crd_dir).results[0]
    by_url = validate_all([manifest], "1.33", f"{crd_dir.as_uri()}/{LAYOUT}").results[0]
    expected = crd_dir / "karpenter.sh" / "nodepool_v1.json"
    assert by_folder.source == str(expected)
    assert by_url.source == expected.as_uri()


def test_file_url_no_schema_names_the_url(crd_dir: Path) -> None:
    (result,) = validate_all([unknown_kind()], "1.33", f"{crd_dir.as_uri()}/{LAYOUT}").results
    assert result.status == "no-schema"
    assert result.detail == f"no schema at {crd_dir.as_uri()}/example.com/widget_v1.json"


def test_template_variables_follow_kubeconform(crd_dir: Path) -> None:
    location = CrdSchemaLocation(
        "https://example.test/{{.NormalizedKubernetesVersion}}{{.StrictSuffix}}/"
        "{{.ResourceKind}}{{.KindSuffix}}/{{.Group}}/{{.ResourceAPIVersion}}.json"
    )
    rendered = location.render("kueue.x-k8s.io", "v1beta2", "ClusterQueue", "1.33.0", True)
    assert rendered == (
        "https://example.test/v1.33.0-strict/clusterqueue-kueue-v1beta2/kueue.x-k8s.io/v1beta2.json"
    )


@pytest.mark.parametrize(
    ("location", "message"),
    [
        ("", "is empty"),
        ("{path}/does-not-exist", "folder does not exist"),
        ("{path}/karpenter.sh/nodepool_v1.json", "folder does not exist"),
        ("{uri}/nowhere/" + LAYOUT, "does not exist"),
        ("{path}/nowhere/" + LAYOUT, "does not exist"),
        ("ftp://example.test/" + LAYOUT, "unsupported CRD schema location"),
        ("s3://bucket/schemas", "unsupported CRD schema location"),
        ("{uri}/{{.Group}}/{{.Kind}}.json", "unknown variable(s) ['Kind']"),
        ("{uri}/{{.Group}}/{{.ResourceKind}.json", "unbalanced braces"),
        ("{uri}/{{.Group}}/all.json", "lacks {{.ResourceKind}}"),
        ("https:///" + LAYOUT, "has no host"),
        ("file://remote-host/schemas/" + LAYOUT, "remote host"),
    ],
)
def test_bad_location_fails_up_front(crd_dir: Path, location: str, message: str) -> None:
    location = fill(location, crd_dir)
    with pytest.raises(SchemaLocationError) as raised:
        validate_all([deployment()], "1.33", location)
    assert message in str(raised.value)
    assert isinstance(raised.value, ValueError)


def test_default_location_is_the_shared_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(sv.CRD_SCHEMAS_ENV, raising=False)
    assert Path(sv.default_crd_location()) == sv.PROJECT_ROOT.parent / "shared" / "crd-schemas"
    monkeypatch.setenv(sv.CRD_SCHEMAS_ENV, "https://schemas.example.test/" + LAYOUT)
    assert sv.default_crd_location() == "https://schemas.example.test/" + LAYOUT


# --- http(s), with urlopen faked: tests make no network traffic ----------------------------------


class FakeCatalogServer:
    """Serves the shared catalog under https://schemas.example.test/ and counts requests."""

    host = "https://schemas.example.test/"

    def __init__(self, root: Path, fail_with: int | None = None) -> None:
        self.root = root
        self.fail_with = fail_with
        self.requests: list[str] = []
        self.timeouts: set[float] = set()

    def urlopen(self, request: urllib.request.Request, timeout: float) -> io.BytesIO:
        url = request.full_url
        self.requests.append(url)
        self.timeouts.add(timeout)
        assert url.startswith(self.host), url
        path = self.root / url.removeprefix(self.host)
        if self.fail_with is not None:
            raise urllib.error.HTTPError(url, self.fail_with, "boom", email.message.Message(), None)
        if not path.is_file():
            raise urllib.error.HTTPError(url, 404, "Not Found", email.message.Message(), None)
        return io.BytesIO(path.read_bytes())


@pytest.fixture
def fresh_caches() -> Iterator[None]:
    """Downloads are cached per process; start and end these tests with empty caches."""
    sv.clear_caches()
    yield
    sv.clear_caches()


def test_http_template_fetches_each_schema_once(
    crd_dir: Path, monkeypatch: pytest.MonkeyPatch, fresh_caches: None
) -> None:
    server = FakeCatalogServer(crd_dir)
    monkeypatch.setattr(urllib.request, "urlopen", server.urlopen)
    location = server.host + LAYOUT
    pools = [VALID_CUSTOM["NodePool"]() for _ in range(5)]
    report = validate_all([*pools, unknown_kind(), unknown_kind()], "1.33", location, timeout=3.5)
    assert [r.status for r in report.results] == ["valid"] * 5 + ["no-schema"] * 2
    assert report.results[0].source == server.host + "karpenter.sh/nodepool_v1.json"
    assert sorted(server.requests) == [
        server.host + "example.com/widget_v1.json",
        server.host + "karpenter.sh/nodepool_v1.json",
    ]
    assert server.timeouts == {3.5}
    folder = validate_all([*pools, unknown_kind()], "1.33", crd_dir)
    assert [r.status for r in folder.results] == ["valid"] * 5 + ["no-schema"]


def test_http_failure_other_than_404_is_a_setup_error(
    crd_dir: Path, monkeypatch: pytest.MonkeyPatch, fresh_caches: None
) -> None:
    server = FakeCatalogServer(crd_dir, fail_with=503)
    monkeypatch.setattr(urllib.request, "urlopen", server.urlopen)
    with pytest.raises(SchemaLocationError, match="HTTP 503"):
        validate_all([VALID_CUSTOM["NodePool"]()], "1.33", server.host + LAYOUT)


def test_unreachable_host_is_a_setup_error(
    monkeypatch: pytest.MonkeyPatch, fresh_caches: None
) -> None:
    def refuse(request: urllib.request.Request, timeout: float) -> io.BytesIO:
        raise urllib.error.URLError(ConnectionRefusedError("refused"))

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    with pytest.raises(SchemaLocationError, match="refused"):
        validate_all([VALID_CUSTOM["NodePool"]()], "1.33", "https://schemas.example.test/" + LAYOUT)
