"""Runs of the program and the preview with secrets whose values the tests know.

``KnownSecretsMocks`` gives every generated password a known ``result`` (the random provider's
output); ``run_with_known_secrets`` also hands the Alertmanager receivers known credentials as
*secret* config (``secret_keys``, as ``pulumi config set --secret`` would) and puts known AWS keys
in the environment, which the program must never copy anywhere.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi.runtime.mocks import MockResourceArgs

from components.constants import PROJECT
from tests.harness import ROOT, engine_config, stack_config
from tools import mockrun, preview
from tools.mockrun import MockRun, PlatformMocks, run_under_mocks

RANDOM_PASSWORD_TYPE = "random:index/randomPassword:RandomPassword"
KNOWN_PASSWORD = "Kn0wn-generated-P@ssw0rd-4-hardening"
SLACK_URL = "https://hooks.slack.com/services/T0000/B0000/hardening-known-slack-secret"
PAGERDUTY_KEY = "hardening-known-pagerduty-routing-key-0123456789"
AWS_ACCESS_KEY = "AKIAHARDENINGKNOWN0000"
AWS_SECRET_KEY = "hardening/known/aws+secret/access/key/0000000000"
OFFLINE_PLACEHOLDER = "offline-preview-secret"
"""What ``StackFile`` puts in place of ``secure:`` values (infra.config.load)."""


class KnownSecretsMocks(PlatformMocks):
    """PlatformMocks whose generated passwords have a known value, as the provider's would."""

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        resource_id, state = super().new_resource(args)
        if args.typ == RANDOM_PASSWORD_TYPE:
            state = {**state, "result": KNOWN_PASSWORD}
        return resource_id, state


def with_known_credentials(config: dict[str, Any]) -> dict[str, Any]:
    """The stack config with known credentials on the Slack and PagerDuty receivers (the other
    receivers keep the offline placeholder)."""
    config = copy.deepcopy(config)
    receivers = (config.get("monitoring") or {}).get("alertmanager", {}).get("receivers", [])
    for receiver in receivers:
        if receiver.get("type") == "pagerduty":
            receiver["routingKey"] = PAGERDUTY_KEY
        if receiver.get("type") == "slack":
            receiver["url"] = SLACK_URL
    return config


def run_with_known_secrets(stack: str) -> MockRun[Any]:
    """The stack with known secrets: receivers as secret config, a known generated password."""
    config = with_known_credentials(stack_config(stack))

    def program() -> Any:
        from infra.program import run

        return run()

    with pytest.MonkeyPatch.context() as env:
        env.setenv("AWS_ACCESS_KEY_ID", AWS_ACCESS_KEY)
        env.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET_KEY)
        return run_under_mocks(
            program,
            stack=stack,
            config=engine_config(config),
            secret_keys=[f"{PROJECT}:monitoring"],
            mocks=KnownSecretsMocks(),
        )


@dataclass
class Preview:
    """One in-process ``python -m tools.preview`` run: exit code, output and its files."""

    code: int
    stdout: str
    stderr: str
    folder: Path

    def report(self) -> dict[str, Any]:
        return dict(json.loads((self.folder / "report.json").read_text(encoding="utf-8")))

    def files(self) -> dict[str, str]:
        """Every file written: manifests by name, and report.json."""
        files = {
            p.name: p.read_text(encoding="utf-8") for p in (self.folder / "manifests").glob("*")
        }
        files["report.json"] = (self.folder / "report.json").read_text(encoding="utf-8")
        return files


def project(tmp_path: Path, stack: str, document: dict[str, Any] | None = None) -> Path:
    """A project root with Pulumi.yaml and the stack file (a copy, or ``document``)."""
    root = tmp_path / "project"
    root.mkdir()
    shutil.copy(ROOT / "Pulumi.yaml", root / "Pulumi.yaml")
    target = root / f"Pulumi.{stack}.yaml"
    if document is None:
        shutil.copy(ROOT / f"Pulumi.{stack}.yaml", target)
    else:
        target.write_text(yaml.safe_dump(document), encoding="utf-8")
    return root


def run_preview(root: Path, out: Path, stack: str) -> Preview:
    """The preview in-process, without policies, with known generated passwords and AWS keys."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(mockrun, "PlatformMocks", KnownSecretsMocks)
        patch.setenv("AWS_ACCESS_KEY_ID", AWS_ACCESS_KEY)
        patch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET_KEY)
        argv = ["--stack", stack, "--project-root", str(root), "--out", str(out), "--quiet"]
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = preview.main([*argv, "--no-policies"])
    return Preview(code, stdout.getvalue(), stderr.getvalue(), out / stack)
