"""Check Loki's object storage before ``pulumi up``: buckets exist, are writable, are protected.

    python -m tools.object_storage_check --stack prod
    python -m tools.object_storage_check --stack prod --endpoint-url http://127.0.0.1:9000

Reads ``ai-platform:monitoring.loki.objectStorage`` from ``Pulumi.<stack>.yaml`` (endpoint,
region, bucket names, what protection is expected) and checks each bucket with boto3, with the
operator's own credentials from the usual ``AWS_*`` environment (or profile): the credentials
Loki will use live in a cluster Secret this tool never reads. One line per check:

    OK    chunks bucket 'gpu-prod-loki-chunks': exists
    FAIL  chunks bucket 'gpu-prod-loki-chunks': not writable: AccessDenied (put of a marker object)

Writability is proven by writing and deleting a small marker object (every version of it, so a
versioned bucket keeps nothing). Exit status: 0 all checks passed, 1 a check failed, 2 the stack
file or its monitoring config is unusable.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError
from pydantic import ValidationError

from components.constants import PROJECT
from infra.config import ConfigError, ConfigIssue, StackFile
from infra.config.errors import issues_from_validation_error
from infra.monitoring.config import LokiObjectStorageConfig, MonitoringConfig

ROOT = Path(__file__).resolve().parents[1]
MONITORING_KEY = f"{PROJECT}:monitoring"
MARKER_PREFIX = ".aiplatform-write-check/"
"""Key prefix of the marker objects, easy to find and lifecycle away if a delete ever fails."""

Status = Literal["OK", "FAIL", "INFO"]


@dataclass(frozen=True)
class CheckResult:
    """One check of one bucket."""

    status: Status
    role: str
    """``chunks`` or ``ruler``."""
    bucket: str
    message: str

    @property
    def failed(self) -> bool:
        return self.status == "FAIL"

    def line(self) -> str:
        return f"{self.status:<5} {self.role} bucket {self.bucket!r}: {self.message}"


def _error_code(exc: ClientError) -> str:
    """The S3 error code; HEAD answers carry no body, only a 404/403 status."""
    code = str(exc.response.get("Error", {}).get("Code") or "")
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if code in ("404", "NoSuchBucket") or (not code and status == 404):
        return "NoSuchBucket"
    if code == "403" or (not code and status == 403):
        return "AccessDenied"
    return code or f"HTTP {status}"


def _describe(exc: Exception) -> str:
    if isinstance(exc, ClientError):
        message = exc.response.get("Error", {}).get("Message") or ""
        code = _error_code(exc)
        return f"{code} ({message})" if message and message != code else code
    return f"{type(exc).__name__}: {exc}"


def s3_client(storage: LokiObjectStorageConfig, endpoint_url: str | None = None) -> Any:
    """A boto3 S3 client for the configured store; credentials from the environment."""
    endpoint = endpoint_url or storage.endpoint
    return boto3.client(
        "s3",
        region_name=storage.region,
        endpoint_url=endpoint,
        use_ssl=not storage.insecure if endpoint else True,
        config=Config(
            s3={"addressing_style": "path" if storage.force_path_style else "auto"},
            retries={"max_attempts": 2, "mode": "standard"},
            connect_timeout=5,
            read_timeout=10,
        ),
    )


def check_bucket(
    client: Any, role: str, bucket: str, storage: LokiObjectStorageConfig
) -> Iterator[CheckResult]:
    """Exists → writable → versioning/lifecycle as configured; stops after a missing bucket."""

    def result(status: Status, message: str) -> CheckResult:
        return CheckResult(status, role, bucket, message)

    try:
        client.head_bucket(Bucket=bucket)
    except ClientError as exc:
        code = _error_code(exc)
        if code == "NoSuchBucket":
            yield result("FAIL", "missing (NoSuchBucket); create it before pulumi up")
        else:
            yield result("FAIL", f"not accessible: {_describe(exc)}")
        return
    except (BotoCoreError, NoCredentialsError) as exc:
        yield result("FAIL", f"not reachable: {_describe(exc)}")
        return
    yield result("OK", "exists")

    key = f"{MARKER_PREFIX}{uuid.uuid4()}"
    try:
        put = client.put_object(Bucket=bucket, Key=key, Body=b"ai-platform write check\n")
    except (ClientError, BotoCoreError) as exc:
        yield result("FAIL", f"not writable: {_describe(exc)} (put of a marker object)")
    else:
        try:
            version = put.get("VersionId")
            if version and version != "null":
                client.delete_object(Bucket=bucket, Key=key, VersionId=version)
            else:
                client.delete_object(Bucket=bucket, Key=key)
        except (ClientError, BotoCoreError) as exc:
            yield result(
                "FAIL", f"writable but the marker {key!r} could not be deleted: {_describe(exc)}"
            )
        else:
            yield result("OK", "writable (marker object written and deleted)")

    try:
        versioning = client.get_bucket_versioning(Bucket=bucket).get("Status") or "Disabled"
    except (ClientError, BotoCoreError) as exc:
        yield result("FAIL", f"versioning state unreadable: {_describe(exc)}")
    else:
        if storage.versioning and versioning != "Enabled":
            yield result("FAIL", f"versioning is {versioning}, expected Enabled")
        else:
            yield result("OK" if storage.versioning else "INFO", f"versioning {versioning}")

    if storage.lifecycle_rule:
        try:
            rules = client.get_bucket_lifecycle_configuration(Bucket=bucket).get("Rules", [])
        except ClientError as exc:
            if _error_code(exc) == "NoSuchLifecycleConfiguration":
                yield result("FAIL", "no lifecycle configuration, expected an enabled rule")
            else:
                yield result("FAIL", f"lifecycle configuration unreadable: {_describe(exc)}")
        except BotoCoreError as exc:
            yield result("FAIL", f"lifecycle configuration unreadable: {_describe(exc)}")
        else:
            enabled = [r.get("ID", "<unnamed>") for r in rules if r.get("Status") == "Enabled"]
            if enabled:
                yield result("OK", f"lifecycle rule(s) enabled: {', '.join(enabled)}")
            else:
                yield result("FAIL", "lifecycle rules exist but none is enabled")


def check_object_storage(
    storage: LokiObjectStorageConfig, client: Any | None = None, endpoint_url: str | None = None
) -> list[CheckResult]:
    """Every check of both buckets (chunks first)."""
    client = client or s3_client(storage, endpoint_url)
    results: list[CheckResult] = []
    for role, bucket in (("chunks", storage.buckets.chunks), ("ruler", storage.buckets.ruler)):
        results.extend(check_bucket(client, role, bucket, storage))
    return results


def load_object_storage(stack_file: Path) -> LokiObjectStorageConfig | None:
    """The stack's Loki object storage; None when it has none (single binary or no monitoring).

    Only ``ai-platform:monitoring`` is validated, so the check works whatever else the stack
    file holds; ``ConfigError`` names the file and key path of any problem.
    """
    stack = StackFile(stack_file)
    raw = stack.values.get(MONITORING_KEY) or {}
    try:
        config = MonitoringConfig.model_validate(raw)
    except ValidationError as exc:
        issues = issues_from_validation_error(exc, MonitoringConfig)
        prefixed = [ConfigIssue(("monitoring", *i.path), i.message) for i in issues]
        raise ConfigError(stack.name, prefixed) from None
    if not config.enabled or config.loki.mode != "scalable":
        return None
    return config.loki.object_storage


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.object_storage_check",
        description="Check Loki's buckets (exist, writable, protected) before deploying.",
    )
    parser.add_argument("--stack", required=True, help="stack name: reads Pulumi.<stack>.yaml")
    parser.add_argument(
        "--stack-file", type=Path, help="path of the stack file (default: the project root's)"
    )
    parser.add_argument(
        "--endpoint-url", help="override the configured S3 endpoint (a tunnel, a local test store)"
    )
    options = parser.parse_args(argv)
    path = options.stack_file or ROOT / f"Pulumi.{options.stack}.yaml"
    try:
        storage = load_object_storage(path)
    except ConfigError as exc:
        print(exc.render(), file=sys.stderr)
        return 2
    if storage is None:
        print(
            f"{path.name}: Loki uses no object storage (mode is not 'scalable'); nothing to check"
        )
        return 0
    try:
        results = check_object_storage(storage, endpoint_url=options.endpoint_url)
    except (BotoCoreError, ClientError) as exc:
        print(f"FAIL  cannot talk to object storage: {_describe(exc)}", file=sys.stderr)
        return 1
    for item in results:
        print(item.line())
    failed = sum(item.failed for item in results)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
