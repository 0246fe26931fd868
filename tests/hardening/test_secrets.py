"""No secret value reaches a manifest, report.json or the stack outputs in plaintext.

The values are known, so the tests search for them: the generated Grafana password (mocked to a
known ``result``), the Alertmanager receiver credentials (the ``offline-preview-secret`` the
preview puts in place of ``secure:`` values, and known values passed as secret config), and AWS
keys present in the environment while the program runs (object storage credentials must stay in
the Secret Loki reads, never be copied).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.hardening.stacks import (
    AWS_ACCESS_KEY,
    AWS_SECRET_KEY,
    KNOWN_PASSWORD,
    OFFLINE_PLACEHOLDER,
    PAGERDUTY_KEY,
    RANDOM_PASSWORD_TYPE,
    SLACK_URL,
    Preview,
    project,
    run_preview,
)
from tests.harness import ROOT
from tools.mockrun import MockRun
from tools.render import write_manifests

PREVIEW_SECRETS = (KNOWN_PASSWORD, OFFLINE_PLACEHOLDER, AWS_ACCESS_KEY, AWS_SECRET_KEY)
RUN_SECRETS = (KNOWN_PASSWORD, PAGERDUTY_KEY, SLACK_URL, AWS_ACCESS_KEY, AWS_SECRET_KEY)


def leaks(text: str, secrets: tuple[str, ...]) -> list[str]:
    """The secrets found in ``text``, also JSON- and YAML-escaped forms of them."""
    found = []
    for secret in secrets:
        forms = {secret, json.dumps(secret)[1:-1], secret.replace("/", "\\/")}
        if any(form in text for form in forms):
            found.append(secret)
    return found


def test_the_searches_are_not_vacuous(
    prod_preview: Preview, prod_secrets_run: MockRun[Any]
) -> None:
    """The secrets exist where they should: secure values in the stack file, a generated
    password resource, a Secret whose data the capture marks secret."""
    assert "secure:" in (ROOT / "Pulumi.prod.yaml").read_text()
    assert prod_secrets_run.by_type(RANDOM_PASSWORD_TYPE)
    secrets = [r for r in prod_secrets_run.kubernetes_objects() if r.kind == "Secret"]
    assert secrets and all(r.secret_paths for r in secrets), [r.name for r in secrets]
    assert any(name.startswith("Secret_") for name in prod_preview.files())
    assert leaks(f"x{KNOWN_PASSWORD}x", PREVIEW_SECRETS) == [KNOWN_PASSWORD]


def test_preview_files_hold_no_secret(prod_preview: Preview) -> None:
    assert prod_preview.code == 0
    found = {name: leaks(text, PREVIEW_SECRETS) for name, text in prod_preview.files().items()}
    assert not {name: hits for name, hits in found.items() if hits}


def test_known_secret_config_reaches_no_input_manifest_or_output(
    prod_secrets_run: MockRun[Any], tmp_path: Path
) -> None:
    records = json.dumps([r.to_record() for r in prod_secrets_run.resources])
    assert not leaks(records, RUN_SECRETS), "in resource inputs"
    write_manifests(prod_secrets_run.resources, tmp_path)
    for manifest in tmp_path.glob("*.yaml"):
        assert not leaks(manifest.read_text(encoding="utf-8"), RUN_SECRETS), manifest.name
    outputs = json.dumps(prod_secrets_run.value.model_dump(mode="json"))
    assert not leaks(outputs, RUN_SECRETS), "in the stack outputs"


def test_secret_inputs_are_marked_secret(prod_secrets_run: MockRun[Any]) -> None:
    """The Secrets carrying credentials reach the engine as secrets (encrypted in state)."""
    for resource in prod_secrets_run.kubernetes_objects():
        if resource.kind == "Secret":
            assert "stringData" in resource.secret_paths or any(
                p.startswith("stringData") for p in resource.secret_paths
            ), resource.name


def test_secure_values_elsewhere_never_render_in_plaintext(tmp_path: Path) -> None:
    """A ``secure:`` value in a key the program renders as-is (here a team's env, which lands in
    a ConfigMap) is refused before anything renders: exit 2 naming the key, no manifests."""
    document = yaml.safe_load((ROOT / "Pulumi.prod.yaml").read_text())
    document["config"]["ai-platform:teams"][0]["env"]["HF_TOKEN"] = {"secure": "v1:abc"}
    result = run_preview(project(tmp_path, "prod", document), tmp_path / "out", "prod")
    assert result.code == 2
    assert "ai-platform:teams[research].env.HF_TOKEN: secure values" in result.stderr
    written = tmp_path / "out" / "prod"
    assert not written.exists() or not any(written.rglob("*.yaml"))


def test_a_plain_text_credential_is_a_config_error_naming_the_command(tmp_path: Path) -> None:
    """A receiver URL written out (not ``secure:``) would sit in git and in preview logs: the
    preview refuses it before anything renders and says how to set it as a secret."""
    document = yaml.safe_load((ROOT / "Pulumi.prod.yaml").read_text())
    receivers = document["config"]["ai-platform:monitoring"]["alertmanager"]["receivers"]
    assert receivers[1]["type"] == "slack"
    receivers[1]["url"] = SLACK_URL
    result = run_preview(project(tmp_path, "prod", document), tmp_path / "out", "prod")
    assert result.code == 2
    assert (
        "ai-platform:monitoring.alertmanager.receivers[platform-slack].url: a credential must be a "
        "Pulumi secret, not plain text: pulumi config set --secret --path "
        "'ai-platform:monitoring.alertmanager.receivers[1].url' <value>"
    ) in " ".join(result.stderr.split())
    assert SLACK_URL not in result.stderr + result.stdout
    written = tmp_path / "out" / "prod"
    assert not written.exists() or not any(written.rglob("*.yaml"))


def test_the_program_refuses_credentials_the_engine_does_not_hold_as_secrets() -> None:
    """``pulumi up`` path: a key with a credential that the engine does not mark secret was set
    without --secret; the run fails with the same message before anything registers."""
    import pulumi
    import pytest

    from tests.harness import engine_config, stack_config
    from tools.mockrun import run_under_mocks

    config = stack_config("prod")

    def program() -> Any:
        from infra.program import run

        return run()

    with pytest.raises(pulumi.RunError) as error:
        run_under_mocks(program, stack="prod", config=engine_config(config), secret_keys=[])
    text = str(error.value)
    assert "alertmanager.receivers[platform-pager].routingKey: a credential" in text
    assert "alertmanager.receivers[platform-slack].url: a credential" in text
    run = run_under_mocks(
        program, stack="prod", config=engine_config(config), secret_keys=["ai-platform:monitoring"]
    )
    assert run.kubernetes_objects()
