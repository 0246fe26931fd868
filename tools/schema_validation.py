"""Schema validation of the manifests the offline preview renders.

Why: a typo or a wrong type in a manifest otherwise surfaces only when the API server rejects it
mid-deployment. Built-in kinds are checked against the OpenAPI schema of the cluster's Kubernetes
version that ``kubernetes-validate`` ships, in strict mode (unknown fields are errors). Custom
resources are checked against a CRD schema catalog laid out as kubeconform expects (a folder or a
URL template). A kind without a schema is reported as ``no-schema``, never as valid.

``kubernetes_validate.validate`` re-reads a 1.4 MB definitions file on every call and stops at the
first error, so this module loads the same schema files once, builds one ``jsonschema`` validator
per kind and reports every error; a manifest is valid here exactly when it is valid there.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Final, Literal

import jsonschema
import jsonschema.validators
from jsonschema.protocols import Validator
from kubernetes_validate import utils as kv_utils
from kubernetes_validate.version import __version__ as KV_VERSION  # noqa: N812
from referencing import Registry, Resource

from .records import PLACEHOLDERS

Status = Literal["valid", "invalid", "no-schema"]
STATUSES: Final[tuple[Status, ...]] = ("valid", "invalid", "no-schema")

CRD_SCHEMAS_ENV: Final = "AIPLATFORM_CRD_SCHEMAS"
"""Overrides where :func:`default_crd_location` points (a folder or a URL template)."""
PROJECT_ROOT: Final = Path(__file__).resolve().parents[1]

SCHEMA_CHECK_CACHE_ENV: Final = "AIPLATFORM_SCHEMA_CHECK_CACHE"
"""Where :func:`check_crd_schema` keeps its verdicts (a folder; empty: keep none)."""
_JSONSCHEMA_RELEASE: Final = importlib.metadata.version("jsonschema")

CATALOG_LAYOUT: Final = "{{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}.json"
"""Layout of the public CRDs catalog, appended to a location given without a template."""
TEMPLATE_VARIABLES: Final = frozenset(
    {
        "Group",
        "ResourceKind",
        "ResourceAPIVersion",
        "NormalizedKubernetesVersion",
        "StrictSuffix",
        "KindSuffix",
    }
)
"""The variables kubeconform substitutes, so its users' templates work unchanged."""


MAX_MESSAGE: Final = 240
_DEFINITIONS_URI: Final = "https://kubernetes.io/api/_definitions.json"
_OBJECT_META: Final = f"{_DEFINITIONS_URI}#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_NOT_RESOURCES: Final = frozenset({"DeleteOptions", "WatchEvent"})
"""Carry a group-version-kind for every API group but are not objects one can create."""

_TEMPLATE_VAR = re.compile(r"\{\{\s*\.(\w+)\s*\}\}")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_API_VERSION = re.compile(r"v\d+((alpha|beta)\d+)?")
_KIND = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]*")
_GO_PATTERN: Final = "x-aiplatform-go-pattern"
_INLINE_FLAGS = re.compile(r"\(\?([imsU]*(?:-[imsU]+)?)\)")


class SchemaValidationError(Exception):
    """A setup problem (version, schema location, schema file), as opposed to a bad manifest."""


class UnsupportedKubernetesVersionError(SchemaValidationError, ValueError):
    """The configured Kubernetes version has no schema in the installed kubernetes-validate."""


class SchemaLocationError(SchemaValidationError, ValueError):
    """The CRD schema location is unusable, or a schema in it cannot be read or parsed."""


@dataclass(frozen=True)
class FieldError:
    """One schema violation; ``path`` is like ``spec.template.spec.containers[0].resources``."""

    path: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


@dataclass(frozen=True)
class ManifestResult:
    """The verdict for one manifest and which schema it was judged against."""

    api_version: str
    kind: str
    namespace: str | None
    name: str | None
    status: Status
    source: str | None
    """``kubernetes <version>``, or the path/URL of the CRD schema; None when there is none."""
    errors: tuple[FieldError, ...] = ()
    detail: str | None = None
    """For ``no-schema``: where the schema was looked for, so users know what to add."""
    warnings: tuple[str, ...] = ()
    """Parts of the schema that could not be enforced (e.g. a Go-only regular expression)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "status": self.status,
            "source": self.source,
            "errors": [error.to_dict() for error in self.errors],
            "detail": self.detail,
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class Report:
    """All verdicts of one run, with the settings they depend on."""

    kubernetes_version: str
    strict: bool
    crd_location: str | None
    results: tuple[ManifestResult, ...]

    def with_status(self, status: Status) -> tuple[ManifestResult, ...]:
        return tuple(result for result in self.results if result.status == status)

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(sorted({w for result in self.results for w in result.warnings}))

    def summary(self) -> dict[str, Any]:
        """Counts by status and by ``<apiVersion>/<kind>``; JSON-able and key-sorted."""
        by_status = dict.fromkeys(STATUSES, 0)
        by_kind: dict[str, dict[str, int]] = {}
        for result in self.results:
            by_status[result.status] += 1
            key = f"{result.api_version}/{result.kind}"
            by_kind.setdefault(key, dict.fromkeys(STATUSES, 0))[result.status] += 1
        return {
            "kubernetesVersion": self.kubernetes_version,
            "strict": self.strict,
            "crdLocation": self.crd_location,
            "total": len(self.results),
            "byStatus": by_status,
            "byKind": {key: by_kind[key] for key in sorted(by_kind)},
            "warnings": list(self.warnings),
        }

    def to_dict(self) -> dict[str, Any]:
        return {**self.summary(), "results": [result.to_dict() for result in self.results]}

    def failed(self, *, allow_missing: bool = False) -> bool:
        """Whether a run should fail: anything invalid, or unchecked unless that is allowed."""
        statuses = {result.status for result in self.results}
        return "invalid" in statuses or ("no-schema" in statuses and not allow_missing)

    def summary_text(self, *, max_lines: int = 40) -> str:
        """A few readable lines for a terminal; ``to_dict`` has everything."""
        counts = self.summary()["byStatus"]
        lines = [
            f"schema validation (Kubernetes {self.kubernetes_version}"
            f"{', strict' if self.strict else ''}): "
            + ", ".join(f"{counts[status]} {status}" for status in STATUSES)
        ]
        details: list[str] = []
        for result in self.results:
            if result.status == "valid":
                continue
            where = "/".join(part for part in (result.namespace, result.name) if part)
            details.append(
                f"  {result.status}: {result.api_version} {result.kind} {where}".rstrip()
            )
            details.extend(
                f"    {error.path or '(root)'}: {error.message}" for error in result.errors
            )
            if result.detail:
                details.append(f"    {result.detail}")
        details.extend(f"  warning: {warning}" for warning in self.warnings)
        if len(details) > max_lines:
            hidden = len(details) - max_lines
            details = [*details[:max_lines], f"  ... {hidden} more lines in the JSON report"]
        return "\n".join(lines + details)


# --- Kubernetes versions -------------------------------------------------------------------------


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


@functools.cache
def supported_kubernetes_versions() -> tuple[str, ...]:
    """Versions (``major.minor.patch``) kubernetes-validate ships schemas for, oldest first."""
    # all_versions() lists each version twice (strict and non-strict folders).
    return tuple(sorted(set(kv_utils.all_versions()), key=_version_key))


def resolve_kubernetes_version(version: str) -> str:
    """Map ``1.33``, ``1.33.2`` or ``v1.33`` to the newest shipped patch of that minor.

    Schemas only change between minors; an unshipped minor is an error rather than a silent
    fallback to another version's schema (which is what kubernetes-validate itself does).
    """
    supported = supported_kubernetes_versions()
    match = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+)?", version.strip())
    same_minor = [
        candidate
        for candidate in supported
        if match and _version_key(candidate)[:2] == (int(match[1]), int(match[2]))
    ]
    if not same_minor:
        minors = sorted({".".join(v.split(".")[:2]) for v in supported}, key=_version_key)
        raise UnsupportedKubernetesVersionError(
            f"Kubernetes version {version!r} is not supported by kubernetes-validate "
            f"{KV_VERSION}; supported: {', '.join(minors)}"
        )
    return max(same_minor, key=_version_key)


@dataclass(frozen=True)
class _KubernetesSchemas:
    """The definitions of one Kubernetes version, loaded once and shared by every validator."""

    directory: Traversable
    registry: Registry[Any]
    kinds: frozenset[tuple[str, str, str]]
    groups: frozenset[str]
    group_versions: frozenset[tuple[str, str]]


@functools.cache
def _kubernetes_schemas(version: str, strict: bool) -> _KubernetesSchemas:
    suffix = "-strict" if strict else ""
    directory = resources.files("kubernetes_validate").joinpath(
        "kubernetes-json-schema", f"v{version}-local{suffix}"
    )
    definitions = json.loads(directory.joinpath("_definitions.json").read_text(encoding="utf-8"))
    kinds: set[tuple[str, str, str]] = set()
    groups: set[str] = {""}
    for definition in definitions["$defs"].values():
        for gvk in definition.get("x-kubernetes-group-version-kind", ()):
            groups.add(gvk["group"])
            if gvk["kind"] not in _NOT_RESOURCES:
                kinds.add((gvk["group"], gvk["version"], gvk["kind"]))
    registry: Registry[Any] = (Resource.from_contents(definitions) @ Registry()).crawl()
    return _KubernetesSchemas(
        directory=directory,
        registry=registry,
        kinds=frozenset(kinds),
        groups=frozenset(groups),
        group_versions=frozenset((group, ver) for group, ver, _ in kinds),
    )


@functools.cache
def _kubernetes_validator(version: str, strict: bool, group: str, ver: str, kind: str) -> Validator:
    """The validator kubernetes-validate would build for this kind, built once."""
    schemas = _kubernetes_schemas(version, strict)
    # kubernetes-validate's file naming: first label of the group, e.g. rbac.authorization -> rbac.
    stem = "-".join(part for part in (kind.lower(), group.split(".")[0], ver) if part)
    schema = json.loads(schemas.directory.joinpath(f"{stem}.json").read_text(encoding="utf-8"))
    declared = {
        (gvk["group"], gvk["version"], gvk["kind"])
        for gvk in schema.get("x-kubernetes-group-version-kind", ())
    }
    if (group, ver, kind) not in declared:
        raise SchemaValidationError(f"kubernetes-validate schema {stem}.json is not for {kind}")
    return jsonschema.Draft202012Validator(schema, registry=schemas.registry)


# --- CRD schema locations ------------------------------------------------------------------------


def default_crd_location() -> str:
    """``$AIPLATFORM_CRD_SCHEMAS``, else the shared catalog beside the checkout."""
    configured = os.environ.get(CRD_SCHEMAS_ENV)
    if not configured:
        return str(PROJECT_ROOT.parent / "shared" / "crd-schemas")
    # A relative folder is relative to where the user ran the command, not to the code.
    return configured if "://" in configured else os.path.abspath(configured)


def _file_url_to_path(url: str) -> Path:
    parsed = urllib.parse.urlparse(url)
    if parsed.netloc not in ("", "localhost"):
        raise SchemaLocationError(f"file:// URL with a remote host is not supported: {url}")
    return Path(urllib.request.url2pathname(parsed.path))


class CrdSchemaLocation:
    """Where custom resource schemas live: a folder, a path template or a URL template.

    Checked up front so a typo in the location fails the run instead of turning every custom
    resource into ``no-schema``. Templates use kubeconform's variables (``{{.Group}}``,
    ``{{.ResourceKind}}``, ``{{.ResourceAPIVersion}}``, ...); a location without one is the
    root of a catalog laid out as ``<group>/<kind>_<version>.json``.
    """

    def __init__(self, location: str | os.PathLike[str], *, timeout: float = 10.0) -> None:
        text = os.fspath(location).strip()
        if not text:
            raise SchemaLocationError("the CRD schema location is empty")
        scheme = urllib.parse.urlparse(text).scheme.lower() if "://" in text else ""
        if scheme not in ("", "file", "http", "https"):
            raise SchemaLocationError(
                f"unsupported CRD schema location {text!r}: use a folder, a file:// or "
                "http(s):// URL template"
            )
        self.location = text
        self.scheme = scheme
        self.timeout = timeout
        if "{{" not in text:
            if scheme == "":
                folder = Path(text).expanduser().absolute()
                if not folder.is_dir():
                    raise SchemaLocationError(f"CRD schema folder does not exist: {folder}")
                text = folder.as_posix()
            text = f"{text.rstrip('/')}/{CATALOG_LAYOUT}"
        self.template = text
        self._check_template()

    def _check_template(self) -> None:
        names = _TEMPLATE_VAR.findall(self.template)
        unknown = sorted(set(names) - TEMPLATE_VARIABLES)
        if unknown or "{{" in _TEMPLATE_VAR.sub("", self.template):
            raise SchemaLocationError(
                f"bad CRD schema location template {self.location!r}: unknown variable(s) "
                f"{unknown or 'or unbalanced braces'}; known: {sorted(TEMPLATE_VARIABLES)}"
            )
        if "ResourceKind" not in names:
            raise SchemaLocationError(
                f"CRD schema location template {self.location!r} lacks {{{{.ResourceKind}}}}"
            )
        if self.scheme in ("http", "https"):
            if not urllib.parse.urlparse(self.template).netloc:
                raise SchemaLocationError(f"CRD schema location {self.location!r} has no host")
            return  # Nothing more to check without a request; fetch errors surface when used.
        head, slash, _ = self.template[: self.template.index("{{")].rpartition("/")
        base = (head or "/") if slash else "."
        folder = _file_url_to_path(base) if self.scheme == "file" else Path(base).expanduser()
        if not folder.is_dir():
            raise SchemaLocationError(
                f"CRD schema location {self.location!r}: folder {folder} does not exist"
            )

    def render(self, group: str, version: str, kind: str, k8s_version: str, strict: bool) -> str:
        """The path or URL of one kind's schema, as kubeconform would compute it."""
        values = {
            "Group": group.lower(),
            "ResourceKind": kind.lower(),
            "ResourceAPIVersion": version,
            "NormalizedKubernetesVersion": f"v{k8s_version}",
            "StrictSuffix": "-strict" if strict else "",
            "KindSuffix": "-" + "-".join(p for p in (group.split(".")[0].lower(), version) if p),
        }
        rendered = _TEMPLATE_VAR.sub(lambda m: values[m[1]], self.template)
        if self.scheme == "":
            return str(Path(rendered).expanduser())
        return rendered

    def validator(
        self, target: str, k8s_version: str, strict: bool
    ) -> tuple[Validator, tuple[str, ...]] | None:
        """Validator for the schema at ``target`` (from :meth:`render`); None if there is none."""
        return _crd_validator(self.scheme, target, self.timeout, k8s_version, strict)


@functools.cache
def _load_document(scheme: str, target: str, timeout: float) -> dict[str, Any] | None:
    """Read (or download) one schema document once per process; None means not found."""
    if scheme in ("http", "https"):
        request = urllib.request.Request(target, headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                raw: bytes = response.read()
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return None
            raise SchemaLocationError(f"fetching {target} failed: HTTP {error.code}") from error
        except (urllib.error.URLError, TimeoutError, OSError) as error:
            raise SchemaLocationError(f"fetching {target} failed: {error}") from error
    else:
        path = _file_url_to_path(target) if scheme == "file" else Path(target)
        if not path.is_file():
            return None
        raw = path.read_bytes()
    try:
        document = json.loads(raw)
    except ValueError as error:
        raise SchemaLocationError(f"CRD schema {target} is not valid JSON: {error}") from error
    if not isinstance(document, dict):
        raise SchemaLocationError(f"CRD schema {target} is not a JSON object")
    return document


def _scope_inline_flags(pattern: str) -> str:
    """Rewrite Go/RE2 inline flags ``(?i)`` into Python's scoped ``(?i:...)`` groups.

    RE2 lets flags start anywhere and last to the end of the enclosing group; Python only
    accepts them at the very start. Alternation splits the scope, as in RE2.
    """
    out: list[str] = []
    open_flags: list[list[str]] = [[]]  # flag scopes opened at each group depth
    i, in_class = 0, False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            escaped = pattern[i : i + 2]
            out.append("\\Z" if escaped == "\\z" and not in_class else escaped)
            i += 2
            continue
        if in_class:
            in_class = char != "]"
            out.append(char)
            i += 1
            continue
        flags = _INLINE_FLAGS.match(pattern, i)
        if flags and flags[1]:
            out.append(f"(?{flags[1]}:")
            open_flags[-1].append(flags[1])
            i = flags.end()
            continue
        if char == "[":
            in_class = True
            start = i + (2 if pattern.startswith("[^", i) else 1)
            out.append(pattern[i:start])
            if pattern.startswith("]", start):  # a leading ] is a literal
                out.append("]")
                start += 1
            i = start
            continue
        if char == "(":
            open_flags.append([])
        elif char == "|":
            scopes = open_flags[-1]
            out.append(")" * len(scopes) + "|" + "".join(f"(?{f}:" for f in scopes))
            i += 1
            continue
        elif char == ")" and len(open_flags) > 1:
            out.append(")" * len(open_flags.pop()))
        out.append(char)
        i += 1
    out.append(")" * len(open_flags[0]))
    return "".join(out)


def _python_patterns(node: Any, where: str, warnings: list[str]) -> Any:
    """Copy of a schema whose ``pattern`` keywords all compile with Python's ``re``.

    Catalog schemas come from Go CRDs; a pattern that cannot be translated is dropped and
    reported as a warning rather than crashing validation of every manifest of that kind.
    """
    if isinstance(node, list):
        return [_python_patterns(item, f"{where}[{i}]", warnings) for i, item in enumerate(node)]
    if not isinstance(node, dict):
        return node
    copied: dict[str, Any] = {}
    for key, value in node.items():
        if key == "pattern" and isinstance(value, str):
            for candidate in (value, _scope_inline_flags(value)):
                try:
                    re.compile(candidate)
                except re.error:
                    continue
                copied[key] = candidate
                if candidate != value:
                    copied[_GO_PATTERN] = value  # so error messages quote the schema's own text
                break
            else:
                warnings.append(f"{where}: pattern {value!r} is not a Python regex; not enforced")
            continue
        copied[key] = _python_patterns(value, f"{where}.{key}", warnings)
    return copied


def schema_check_cache() -> Path | None:
    """``$AIPLATFORM_SCHEMA_CHECK_CACHE`` (empty: none), else the XDG cache folder: outside git,
    shared by every checkout and process on the machine."""
    configured = os.environ.get(SCHEMA_CHECK_CACHE_ENV)
    if configured is not None:
        return Path(configured).expanduser() if configured else None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ai-platform" / "schema-checks"


def check_crd_schema(cls: type[Validator], schema: Mapping[str, Any], target: str) -> None:
    """Check ``schema`` against its metaschema, or find that this exact schema passed before.

    Why: the check walks the whole schema through the 2020-12 metaschema's dynamic references,
    1-3.5 CPU-s for each of KubeRay's schemas (0.6-1 MB: every pod template spelled out), which
    was most of a preview's schema step; validating manifests against them costs a fraction of
    that. A verdict is kept only for a schema that passed, under the digest of its content (as
    validated, after pattern translation), the validator class and the jsonschema release, so
    an edited schema or another release is checked again, and a schema that fails is refused
    every time.
    """
    cache = schema_check_cache()
    marker: Path | None = None
    if cache is not None:
        digest = hashlib.sha256(
            json.dumps(
                [cls.__name__, _JSONSCHEMA_RELEASE, schema], sort_keys=True, separators=(",", ":")
            ).encode()
        ).hexdigest()
        marker = cache / digest
        if marker.is_file():
            return
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as error:
        raise SchemaLocationError(
            f"CRD schema {target} is not a valid JSON schema: {error.message}"
        ) from error
    if marker is not None:
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(f"{target}\n", encoding="utf-8")
        except OSError:
            pass  # a read-only cache only costs the next process the check again


@functools.cache
def _crd_validator(
    scheme: str, target: str, timeout: float, k8s_version: str, strict: bool
) -> tuple[Validator, tuple[str, ...]] | None:
    """Validator (and unenforceable-pattern warnings) for one CRD schema, built once."""
    document = _load_document(scheme, target, timeout)
    if document is None:
        return None
    warnings: list[str] = []
    schema = _python_patterns(document, target, warnings)
    properties = schema.get("properties")
    if isinstance(properties, dict):
        # The catalog leaves metadata a bare object; the API server checks it as ObjectMeta.
        if properties.get("metadata") == {"type": "object"}:
            properties["metadata"] = {"$ref": _OBJECT_META}
        # The catalog closes every nested object but not the root: strict means closed.
        if strict and "additionalProperties" not in schema:
            schema["additionalProperties"] = False
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    check_crd_schema(cls, schema, target)
    registry = _kubernetes_schemas(k8s_version, strict).registry
    return cls(schema, registry=registry), tuple(warnings)


def clear_caches() -> None:
    """Forget loaded schemas and validators, e.g. when a long-lived process sees a new catalog."""
    for cached in (
        _load_document,
        _crd_validator,
        _kubernetes_validator,
        _kubernetes_schemas,
        supported_kubernetes_versions,
    ):
        cached.cache_clear()


# --- Validation ----------------------------------------------------------------------------------


def json_path(parts: Iterable[str | int]) -> str:
    """``spec.containers[0].resources.limits["nvidia.com/gpu"]``: readable and unambiguous."""
    path = ""
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        elif _IDENTIFIER.fullmatch(part):
            path += f".{part}" if path else part
        else:
            path += f"[{json.dumps(part)}]"
    return path


def _field_errors(error: jsonschema.ValidationError) -> list[FieldError]:
    """One entry per offending field: unknown and missing fields point at the field itself."""
    base = list(error.absolute_path)
    instance = error.instance
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    if isinstance(instance, str) and instance in PLACEHOLDERS:
        return []
    fields: list[FieldError] = []
    if error.validator == "required" and isinstance(instance, Mapping):
        fields = [
            FieldError(json_path([*base, prop]), "required field is missing")
            for prop in error.validator_value
            if prop not in instance
        ]
    elif error.validator == "additionalProperties" and isinstance(instance, Mapping):
        known = schema.get("properties", {})
        patterns = schema.get("patternProperties", {})
        fields = [
            FieldError(json_path([*base, key]), "unknown field (not in the schema)")
            for key in instance
            if key not in known and not any(re.search(p, key) for p in patterns)
        ]
    if fields:
        return fields
    # Everything else, and a safety net should the field-level rewrite above find nothing.
    message = error.message
    if error.validator == "pattern" and _GO_PATTERN in schema:
        message = f"{instance!r} does not match {schema[_GO_PATTERN]!r}"
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 3] + "..."
    return [FieldError(json_path(base), message)]


def _schema_errors(validator: Validator, manifest: Mapping[str, Any]) -> tuple[FieldError, ...]:
    found = {entry for error in validator.iter_errors(manifest) for entry in _field_errors(error)}
    return tuple(sorted(found, key=lambda entry: (entry.path, entry.message)))


class ManifestValidator:
    """Validates manifests for one Kubernetes version and CRD schema location.

    Resolves the version and checks the location once, up front; loaded schemas and built
    validators are cached per process, so validating thousands of manifests stays cheap.
    """

    def __init__(
        self,
        kubernetes_version: str,
        crd_location: str | os.PathLike[str] | CrdSchemaLocation | None,
        *,
        strict: bool = True,
        timeout: float = 10.0,
    ) -> None:
        self.kubernetes_version = resolve_kubernetes_version(kubernetes_version)
        self.strict = strict
        self._kubernetes = _kubernetes_schemas(self.kubernetes_version, strict)
        if crd_location is None or isinstance(crd_location, CrdSchemaLocation):
            self.crd_location = crd_location
        else:
            self.crd_location = CrdSchemaLocation(crd_location, timeout=timeout)

    @property
    def source(self) -> str:
        return f"kubernetes {self.kubernetes_version}"

    def validate(self, manifest: Mapping[str, Any]) -> ManifestResult:
        """Verdict for one manifest (a dict in wire format: camelCase keys)."""
        if not isinstance(manifest, Mapping):
            raise TypeError(f"a manifest must be a mapping, got {type(manifest).__name__}")
        api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
        metadata = manifest.get("metadata")
        metadata = metadata if isinstance(metadata, Mapping) else {}
        namespace, name = metadata.get("namespace"), metadata.get("name")

        def result(
            status: Status, source: str | None, *errors: FieldError, **extra: Any
        ) -> ManifestResult:
            return ManifestResult(
                api_version=api_version if isinstance(api_version, str) else "",
                kind=kind if isinstance(kind, str) else "",
                namespace=namespace if isinstance(namespace, str) else None,
                name=name if isinstance(name, str) else None,
                status=status,
                source=source,
                errors=errors,
                **extra,
            )

        if not (isinstance(api_version, str) and api_version and isinstance(kind, str) and kind):
            return result(
                "invalid",
                None,
                *(
                    FieldError(
                        field,
                        "required field is missing"
                        if value is None
                        else "must be a non-empty string",
                    )
                    for field, value in (("apiVersion", api_version), ("kind", kind))
                    if not (isinstance(value, str) and value)
                ),
            )
        group, _, version = api_version.rpartition("/")

        if group in self._kubernetes.groups:
            if (group, version, kind) not in self._kubernetes.kinds:
                served = (group, version) in self._kubernetes.group_versions
                message = (
                    f"Kubernetes {self.kubernetes_version} does not serve {kind} in {api_version}"
                )
                return result(
                    "invalid", self.source, FieldError("kind" if served else "apiVersion", message)
                )
            validator = _kubernetes_validator(
                self.kubernetes_version, self.strict, group, version, kind
            )
            errors = _schema_errors(validator, manifest)
            return result("invalid" if errors else "valid", self.source, *errors)

        # Custom resource groups always contain a dot (the API server enforces it); checking
        # the names also keeps them from steering schema paths outside the location.
        if "/" in group:
            checks = [(False, f"{api_version!r} is not <group>/<version>")]
        else:
            checks = [
                (
                    bool(_DNS_SUBDOMAIN.fullmatch(group)) and "." in group,
                    f"{group!r} is neither a built-in API group nor a custom resource group",
                ),
                (bool(_API_VERSION.fullmatch(version)), f"{version!r} is not an API version"),
            ]
        malformed = [FieldError("apiVersion", message) for ok, message in checks if not ok]
        if not _KIND.fullmatch(kind):
            malformed.append(FieldError("kind", f"{kind!r} is not a kind name"))
        if malformed:
            return result("invalid", None, *malformed)
        if self.crd_location is None:
            return result("no-schema", None, detail="no CRD schema location is configured")
        target = self.crd_location.render(
            group, version, kind, self.kubernetes_version, self.strict
        )
        built = self.crd_location.validator(target, self.kubernetes_version, self.strict)
        if built is None:
            return result("no-schema", None, detail=f"no schema at {target}")
        crd_validator, warnings = built
        errors = _schema_errors(crd_validator, manifest)
        return result("invalid" if errors else "valid", target, *errors, warnings=warnings)

    def validate_all(self, manifests: Iterable[Mapping[str, Any]]) -> Report:
        """Verdicts for every manifest, in input order."""
        return Report(
            kubernetes_version=self.kubernetes_version,
            strict=self.strict,
            crd_location=None if self.crd_location is None else self.crd_location.location,
            results=tuple(self.validate(manifest) for manifest in manifests),
        )


def validate_all(
    manifests: Iterable[Mapping[str, Any]],
    kubernetes_version: str,
    crd_location: str | os.PathLike[str] | None,
    *,
    strict: bool = True,
    timeout: float = 10.0,
) -> Report:
    """Validate a stack's manifests; ``crd_location=None`` makes every custom resource no-schema.

    Raises :class:`UnsupportedKubernetesVersionError` or :class:`SchemaLocationError` for a bad
    setup, so that a misconfiguration never reads as a report full of ``no-schema``.
    """
    validator = ManifestValidator(kubernetes_version, crd_location, strict=strict, timeout=timeout)
    return validator.validate_all(manifests)
