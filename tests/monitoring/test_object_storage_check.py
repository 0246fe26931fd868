"""tools/object_storage_check.py against a real S3 HTTP endpoint: moto in server mode on 127.0.0.1.

Unwritable buckets are covered with a bucket policy denying ``s3:PutObject``, which moto's server
enforces (checked by the test asserting the denial actually happens).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml

from infra.monitoring.config import LokiObjectStorageConfig
from tools import object_storage_check
from tools.object_storage_check import MARKER_PREFIX, CheckResult, check_object_storage, main

REGION = "eu-central-1"
CHUNKS = "test-loki-chunks"
RULER = "test-loki-ruler"


def storage(endpoint: str, **extra: Any) -> LokiObjectStorageConfig:
    return LokiObjectStorageConfig.model_validate(
        {
            "region": REGION,
            "endpoint": endpoint,
            "forcePathStyle": True,
            "insecure": True,
            "buckets": {"chunks": CHUNKS, "ruler": RULER},
            **extra,
        }
    )


def client(endpoint: str) -> Any:
    return boto3.client("s3", endpoint_url=endpoint, region_name=REGION)


def create(endpoint: str, *buckets: str) -> None:
    s3 = client(endpoint)
    for bucket in buckets:
        s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})


def lines(results: list[CheckResult]) -> list[str]:
    return [r.line() for r in results]


def by_bucket(results: list[CheckResult], bucket: str) -> list[CheckResult]:
    return [r for r in results if r.bucket == bucket]


def test_present_writable_buckets_pass(s3_endpoint: str) -> None:
    create(s3_endpoint, CHUNKS, RULER)
    results = check_object_storage(storage(s3_endpoint))
    assert not any(r.failed for r in results), lines(results)
    assert lines(by_bucket(results, CHUNKS)) == [
        f"OK    chunks bucket '{CHUNKS}': exists",
        f"OK    chunks bucket '{CHUNKS}': writable (marker object written and deleted)",
        f"INFO  chunks bucket '{CHUNKS}': versioning Disabled",
    ]
    # The marker is gone again.
    listed = client(s3_endpoint).list_objects_v2(Bucket=CHUNKS, Prefix=MARKER_PREFIX)
    assert listed.get("KeyCount", 0) == 0


def test_missing_bucket_fails_with_a_clear_line(s3_endpoint: str) -> None:
    create(s3_endpoint, CHUNKS)
    results = check_object_storage(storage(s3_endpoint))
    ruler = by_bucket(results, RULER)
    assert lines(ruler) == [
        f"FAIL  ruler bucket '{RULER}': missing (NoSuchBucket); create it before pulumi up"
    ]
    assert not any(r.failed for r in by_bucket(results, CHUNKS))


def test_bucket_denying_puts_is_unwritable(s3_endpoint: str) -> None:
    create(s3_endpoint, CHUNKS, RULER)
    deny = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:PutObject",
                "Resource": f"arn:aws:s3:::{CHUNKS}/*",
            }
        ],
    }
    client(s3_endpoint).put_bucket_policy(Bucket=CHUNKS, Policy=json.dumps(deny))
    results = by_bucket(check_object_storage(storage(s3_endpoint)), CHUNKS)
    [failure] = [r for r in results if r.failed]
    assert failure.message.startswith("not writable: AccessDenied")
    assert failure.message.endswith("(put of a marker object)")
    assert results[0].line() == f"OK    chunks bucket '{CHUNKS}': exists"


def test_versioning_is_checked_when_configured(s3_endpoint: str) -> None:
    create(s3_endpoint, CHUNKS, RULER)
    client(s3_endpoint).put_bucket_versioning(
        Bucket=CHUNKS, VersioningConfiguration={"Status": "Enabled"}
    )
    results = check_object_storage(storage(s3_endpoint, versioning=True))
    assert f"OK    chunks bucket '{CHUNKS}': versioning Enabled" in lines(results)
    assert f"FAIL  ruler bucket '{RULER}': versioning is Disabled, expected Enabled" in lines(
        results
    )
    # A versioned bucket keeps no version of the marker either.
    versions = client(s3_endpoint).list_object_versions(Bucket=CHUNKS, Prefix=MARKER_PREFIX)
    assert versions.get("Versions", []) == [] and versions.get("DeleteMarkers", []) == []


def test_lifecycle_rule_is_checked_when_configured(s3_endpoint: str) -> None:
    create(s3_endpoint, CHUNKS, RULER)
    client(s3_endpoint).put_bucket_lifecycle_configuration(
        Bucket=CHUNKS,
        LifecycleConfiguration={
            "Rules": [
                {
                    "ID": "expire-noncurrent",
                    "Status": "Enabled",
                    "Filter": {"Prefix": ""},
                    "NoncurrentVersionExpiration": {"NoncurrentDays": 7},
                }
            ]
        },
    )
    results = check_object_storage(storage(s3_endpoint, lifecycleRule=True))
    assert f"OK    chunks bucket '{CHUNKS}': lifecycle rule(s) enabled: expire-noncurrent" in lines(
        results
    )
    assert (
        f"FAIL  ruler bucket '{RULER}': no lifecycle configuration, expected an enabled rule"
        in lines(results)
    )


# --- CLI ------------------------------------------------------------------------------------------


def stack_file(tmp_path: Path, monitoring: dict[str, Any] | None) -> Path:
    config: dict[str, Any] = {"ai-platform:cluster": {"name": "test"}}
    if monitoring is not None:
        config["ai-platform:monitoring"] = monitoring
    path = tmp_path / "Pulumi.s3test.yaml"
    path.write_text(yaml.safe_dump({"config": config}), encoding="utf-8")
    return path


def scalable(endpoint: str) -> dict[str, Any]:
    return {
        "loki": {
            "mode": "scalable",
            "objectStorage": {
                "region": REGION,
                "endpoint": endpoint,
                "forcePathStyle": True,
                "insecure": True,
                "buckets": {"chunks": CHUNKS, "ruler": RULER},
            },
        }
    }


def test_cli_reads_the_stack_file_and_reports_one_line_per_check(
    s3_endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    create(s3_endpoint, CHUNKS, RULER)
    path = stack_file(tmp_path, scalable(s3_endpoint))
    assert main(["--stack", "s3test", "--stack-file", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"OK    chunks bucket '{CHUNKS}': exists"
    assert out[-1] == "6 passed, 0 failed"


def test_cli_fails_on_a_missing_bucket(
    s3_endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = stack_file(tmp_path, scalable(s3_endpoint))
    assert main(["--stack", "s3test", "--stack-file", str(path)]) == 1
    out = capsys.readouterr().out
    assert "FAIL  chunks bucket" in out and "missing (NoSuchBucket)" in out
    assert out.splitlines()[-1] == "0 passed, 2 failed"


def test_cli_endpoint_override_wins(
    s3_endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    create(s3_endpoint, CHUNKS, RULER)
    path = stack_file(tmp_path, scalable("http://127.0.0.1:9"))
    assert (
        main(["--stack", "s3test", "--stack-file", str(path), "--endpoint-url", s3_endpoint]) == 0
    )
    capsys.readouterr()


def test_cli_without_object_storage_has_nothing_to_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--stack", "s3test", "--stack-file", str(stack_file(tmp_path, None))]) == 0
    assert "nothing to check" in capsys.readouterr().out


def test_cli_reports_config_errors_with_key_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = stack_file(tmp_path, {"loki": {"mode": "scalable", "objectStorage": {"region": ""}}})
    assert main(["--stack", "s3test", "--stack-file", str(path)]) == 2
    err = capsys.readouterr().err
    assert "ai-platform:monitoring.loki.objectStorage.region" in err
    assert "ai-platform:monitoring.loki.objectStorage.buckets: required key is missing" in err


def test_default_stack_file_is_the_project_root_one() -> None:
    assert Path(__file__).resolve().parents[2] == object_storage_check.ROOT
