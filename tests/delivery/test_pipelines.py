"""The CI pipelines we ship to users: schema-valid, shellcheck-clean and shaped as promised.

There is no GitLab or GitHub here, so the pipelines are checked the way their platforms would
read them: against the vendored JSON schemas of check-jsonschema (no network), every shell step
through shellcheck, and their rules evaluated for each kind of pipeline (merge request, push to
the default branch, schedule). docs/delivery.md describes what they do.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness import ROOT

GITLAB_CI = ROOT / ".gitlab-ci.yml"
WORKFLOWS = ROOT / ".github" / "workflows"
WORKFLOW_FILES = sorted(WORKFLOWS.glob("*.yml"))
SHELL_SCRIPTS = [ROOT / ".ci" / "run", *sorted((ROOT / "tools").glob("*.sh"))]
GITLAB_RESERVED = {
    "default",
    "include",
    "stages",
    "variables",
    "workflow",
    "image",
    "services",
    "cache",
    "before_script",
    "after_script",
}
GHA_EXPRESSION = re.compile(r"\$\{\{.*?\}\}", re.DOTALL)
POLICY_FLAGS = '--policy-pack policies --policy-pack-config "policies/config/$STACK.json"'


def repo_stacks() -> list[str]:
    """Stacks with a stack file; CI must preview, deploy and drift-check each of them."""
    files = ROOT.glob("Pulumi.*.yaml")
    return sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in files)


# --- GitLab: loading, `extends` and `default`, rules ---------------------------------------------


def gitlab() -> dict[str, Any]:
    return yaml.safe_load(GITLAB_CI.read_text())


def _merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """GitLab's ``extends``: hashes merge deeply, everything else is replaced."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def resolve(config: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A job as GitLab runs it: ``extends`` applied, then the ``default`` keys it lacks."""
    job = config[name]
    parents = job.get("extends", [])
    merged: dict[str, Any] = {}
    for parent in [parents] if isinstance(parents, str) else parents:
        merged = _merge(merged, resolve(config, parent))
    merged = _merge(merged, {k: v for k, v in job.items() if k != "extends"})
    if not name.startswith("."):
        for key, value in config.get("default", {}).items():
            merged.setdefault(key, value)
    return merged


def jobs(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: resolve(config, name)
        for name in config
        if name not in GITLAB_RESERVED and not name.startswith(".")
    }


def _flatten(lines: Any) -> list[str]:
    """Script lines; GitLab flattens nested lists (YAML anchors)."""
    if lines is None:
        return []
    if isinstance(lines, str):
        return [lines]
    return [line for item in lines for line in _flatten(item)]


_TOKEN = re.compile(r'\s*(\(|\)|&&|\|\||==|!=|"[^"]*"|\'[^\']*\'|\$\w+|null)')


def rule_matches(expression: str, env: Mapping[str, str]) -> bool:
    """The subset of GitLab's ``rules:if`` this file uses: ==, !=, &&, ||, (), $VAR, strings."""
    tokens, position = [], 0
    while position < len(expression.rstrip()):
        match = _TOKEN.match(expression, position)
        assert match, f"unsupported rules:if syntax at {expression[position:]!r}"
        tokens.append(match[1])
        position = match.end()

    def value(token: str) -> str | None:
        if token.startswith("$"):
            return env.get(token[1:])
        return None if token == "null" else token[1:-1]

    def either() -> bool:
        result = both()
        while tokens and tokens[0] == "||":
            tokens.pop(0)
            result = both() or result
        return result

    def both() -> bool:
        result = atom()
        while tokens and tokens[0] == "&&":
            tokens.pop(0)
            result = atom() and result
        return result

    def atom() -> bool:
        token = tokens.pop(0)
        if token == "(":
            result = either()
            assert tokens.pop(0) == ")"
            return result
        if tokens and tokens[0] in ("==", "!="):
            operator, right = tokens.pop(0), value(tokens.pop(0))
            return (value(token) == right) == (operator == "==")
        return bool(value(token))

    result = either()
    assert not tokens, f"unparsed rest of {expression!r}: {tokens}"
    return result


def when(job: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
    """``on_success``, ``manual``, ... or None when the job is not in the pipeline."""
    default = job.get("when", "on_success")
    if "rules" not in job:
        return str(default)
    for rule in job["rules"]:
        if "if" not in rule or rule_matches(rule["if"], env):
            decided = rule.get("when", default)
            return None if decided == "never" else str(decided)
    return None


def pipeline(env: Mapping[str, str]) -> dict[str, str]:
    """Job name → when, for a pipeline with these predefined variables."""
    config = gitlab()
    if when(config["workflow"], env) is None:
        return {}
    planned = {name: when(job, env) for name, job in jobs(config).items()}
    return {name: decided for name, decided in planned.items() if decided is not None}


MAIN = {"CI_DEFAULT_BRANCH": "main"}
MERGE_REQUEST = {**MAIN, "CI_PIPELINE_SOURCE": "merge_request_event", "CI_MERGE_REQUEST_IID": "7"}
PUSH_MAIN = {**MAIN, "CI_PIPELINE_SOURCE": "push", "CI_COMMIT_BRANCH": "main"}
PUSH_MAIN_PROTECTED = {**PUSH_MAIN, "CI_COMMIT_REF_PROTECTED": "true"}
SCHEDULE = {**PUSH_MAIN_PROTECTED, "CI_PIPELINE_SOURCE": "schedule"}


# --- GitHub: loading ------------------------------------------------------------------------------


def workflow(name: str) -> dict[str, Any]:
    document = yaml.safe_load((WORKFLOWS / name).read_text())
    if True in document:  # YAML 1.1 reads the key `on` as a boolean
        document["on"] = document.pop(True)
    return document


def steps_using(document: Mapping[str, Any], action: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for job_name, job in document["jobs"].items():
        for step in job.get("steps", []):
            if str(step.get("uses", "")).split("@")[0] == action:
                yield job_name, step


# --- Schema validation (check-jsonschema's vendored schemas: no network) -------------------------


def _check_jsonschema(schema: str, *files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
    )


def test_gitlab_ci_matches_gitlabs_schema():
    result = _check_jsonschema("vendor.gitlab-ci", GITLAB_CI)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_workflow_matches_githubs_schema_and_sets_timeouts(path):
    for schema in ("vendor.github-workflows", "custom.github-workflows-require-timeout"):
        result = _check_jsonschema(schema, path)
        assert result.returncode == 0, result.stdout + result.stderr


def test_the_three_workflows_exist():
    assert {"deploy.yml", "drift.yml", "pull-request.yml"} <= {p.name for p in WORKFLOW_FILES}


# --- shellcheck on every shell step ---------------------------------------------------------------


def shell_steps() -> dict[str, str]:
    """Every shell snippet the pipelines run, as a bash script, by a readable name."""
    scripts: dict[str, str] = {}
    for name, job in jobs(gitlab()).items():
        # before_script and script run in one shell; after_script in a new one.
        main = _flatten(job.get("before_script")) + _flatten(job.get("script"))
        scripts[f"gitlab-{name}"] = "\n".join(main)
        if job.get("after_script"):
            scripts[f"gitlab-{name}-after"] = "\n".join(_flatten(job["after_script"]))
    for path in WORKFLOW_FILES:
        for job_name, job in workflow(path.name)["jobs"].items():
            for index, step in enumerate(job.get("steps", [])):
                if "run" in step:
                    # `${{ }}` is substituted before the shell runs: stand in a variable for it.
                    body = GHA_EXPRESSION.sub("${GHA_EXPRESSION}", step["run"])
                    scripts[f"github-{path.stem}-{job_name}-{index}"] = body
    return scripts


@pytest.fixture
def shellcheck() -> str:
    found = shutil.which("shellcheck")
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail("shellcheck is required in CI (Debian: apt-get install -y shellcheck)")
    pytest.skip("shellcheck is not installed (apt-get install -y shellcheck); CI runs this test")


def test_shell_steps_pass_shellcheck(shellcheck, tmp_path):
    files = []
    for name, body in shell_steps().items():
        path = tmp_path / f"{name}.sh"
        path.write_text(f"#!/usr/bin/env bash\n{body}\n")
        files.append(path)
    assert len(files) >= 10, "no shell steps found: is the extraction broken?"
    result = subprocess.run(
        [shellcheck, "--format=gcc", *map(str, files)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout.replace(str(tmp_path) + "/", "")


@pytest.mark.parametrize("path", SHELL_SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_shell_scripts_pass_shellcheck(shellcheck, path):
    result = subprocess.run(
        [shellcheck, "--format=gcc", str(path)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout


# --- GitLab: structure ----------------------------------------------------------------------------


def test_gitlab_stages():
    assert gitlab()["stages"] == ["lint", "test", "preview", "deploy"]


def test_merge_requests_test_and_preview_every_stack_without_deploying():
    assert pipeline(MERGE_REQUEST) == {
        "lint": "on_success",
        "test": "on_success",
        "preview-offline": "on_success",
        "pulumi-preview": "on_success",
    }
    all_jobs = jobs(gitlab())
    assert "make test" in _flatten(all_jobs["test"]["script"])
    assert "make preview-all" in _flatten(all_jobs["preview-offline"]["script"])


def test_default_branch_deploys_dev_automatically_and_prod_behind_a_manual_gate():
    assert pipeline(PUSH_MAIN_PROTECTED) == {
        "lint": "on_success",
        "test": "on_success",
        "preview-offline": "on_success",
        "deploy-dev": "on_success",
        "deploy-prod": "manual",
    }
    # Never prod from an unprotected ref, never anything from other branches' pushes.
    assert "deploy-prod" not in pipeline(PUSH_MAIN)
    assert pipeline({**PUSH_MAIN, "CI_COMMIT_BRANCH": "feature"}) == {}


def test_schedules_run_only_the_drift_check():
    assert pipeline(SCHEDULE) == {"drift-check": "on_success"}
    drift = jobs(gitlab())["drift-check"]
    assert all("schedule" in rule["if"] for rule in drift["rules"])


def _matrix_stacks(job: Mapping[str, Any]) -> list[str]:
    (entry,) = job["parallel"]["matrix"]
    return list(entry["STACK"])


def test_merge_request_preview_runs_pulumi_with_the_policy_pack_per_stack():
    job = jobs(gitlab())["pulumi-preview"]
    assert _matrix_stacks(job) == repo_stacks()
    script = "\n".join(_flatten(job["before_script"]) + _flatten(job["script"]))
    assert 'pulumi stack select "${PULUMI_ORG:+$PULUMI_ORG/}$STACK"' in script
    assert f"pulumi preview --diff {POLICY_FLAGS}" in script
    assert job["environment"] == {"name": "preview/$STACK", "action": "access"}
    for stack in repo_stacks():
        assert (ROOT / "policies" / "config" / f"{stack}.json").is_file()


def _deploy_jobs() -> dict[str, dict[str, Any]]:
    return {
        job["variables"]["STACK"]: job
        for job in jobs(gitlab()).values()
        if any(line.startswith("pulumi up") for line in _flatten(job.get("script")))
    }


def test_every_stack_deploys_one_at_a_time_with_the_policy_pack():
    deploys = _deploy_jobs()
    assert sorted(deploys) == repo_stacks()
    for stack, job in deploys.items():
        assert job["resource_group"] == "$STACK"
        assert job["environment"]["name"] == stack
        assert job["interruptible"] is False
        assert f"pulumi up --yes --diff {POLICY_FLAGS}" in _flatten(job["script"])
        assert 'pulumi stack select "${PULUMI_ORG:+$PULUMI_ORG/}$STACK"' in _flatten(
            job["before_script"]
        )


def test_prod_deploy_is_manual_blocking_and_protected():
    job = _deploy_jobs()["prod"]
    assert job["environment"] == {"name": "prod", "deployment_tier": "production"}
    (rule,) = job["rules"]
    assert rule["when"] == "manual"
    assert rule["allow_failure"] is False  # the pipeline waits for the gate, not "passed"
    assert '$CI_COMMIT_REF_PROTECTED == "true"' in rule["if"]
    assert job["needs"] == ["deploy-dev"]


def test_drift_check_expects_no_changes_on_every_stack_and_alerts():
    job = jobs(gitlab())["drift-check"]
    assert _matrix_stacks(job) == repo_stacks()
    assert job["resource_group"] == "$STACK"
    assert "pulumi preview --refresh --expect-no-changes --diff" in _flatten(job["script"])
    assert "SLACK_WEBHOOK_URL" in "\n".join(_flatten(job["after_script"]))


def test_pulumi_version_is_pinned_once_and_used_by_every_install():
    config = gitlab()
    version = config["variables"]["PULUMI_VERSION"]
    assert re.fullmatch(r"3\.\d+\.\d+", version)
    assert GITLAB_CI.read_text().count(version) == 1
    installs = [
        line
        for job in jobs(config).values()
        for line in _flatten(job.get("before_script"))
        if "get.pulumi.com" in line
    ]
    assert installs
    assert all(line.endswith('sh -s -- --version "$PULUMI_VERSION"') for line in installs)
    for path in WORKFLOW_FILES:
        assert workflow(path.name)["env"]["PULUMI_VERSION"] == version, path.name
        for _, step in steps_using(workflow(path.name), "pulumi/actions"):
            assert step["with"]["pulumi-version"] == "${{ env.PULUMI_VERSION }}"


def test_python_image_pinned_by_minor_and_pip_cached_on_pyproject():
    config = gitlab()
    image = config["default"]["image"]
    assert re.fullmatch(r"python:3\.\d+-slim-\w+", image), image
    minor = image.split(":")[1].split("-")[0]
    for path in WORKFLOW_FILES:
        assert workflow(path.name)["env"]["PYTHON_VERSION"] == minor, path.name
    assert config["variables"]["PIP_CACHE_DIR"] == "$CI_PROJECT_DIR/.cache/pip"
    cache = config["default"]["cache"]
    assert "pyproject.toml" in cache["key"]["files"]
    assert cache["paths"] == [".cache/pip"]


# --- GitHub Actions: structure --------------------------------------------------------------------


def test_actions_are_pinned_at_least_by_major_version():
    for path in WORKFLOW_FILES:
        for job in workflow(path.name)["jobs"].values():
            for step in job.get("steps", []):
                if "uses" in step:
                    assert re.search(r"@(v\d+(\.\d+)*|[0-9a-f]{40})$", step["uses"]), step["uses"]


def _pulumi_step(document: Mapping[str, Any], job_name: str) -> dict[str, Any]:
    (step,) = [step for name, step in steps_using(document, "pulumi/actions") if name == job_name]
    assert step["uses"] == "pulumi/actions@v7"
    return step


def test_pull_requests_test_preview_offline_and_comment_a_policy_checked_preview():
    document = workflow("pull-request.yml")
    assert "pull_request" in document["on"]
    runs = [step.get("run") for job in document["jobs"].values() for step in job["steps"]]
    assert "make test" in runs and "make preview-all" in runs
    preview = document["jobs"]["preview"]
    assert preview["strategy"]["matrix"]["stack"] == repo_stacks()
    assert preview["permissions"]["pull-requests"] == "write"
    step = _pulumi_step(document, "preview")
    assert step["with"]["command"] == "preview"
    assert step["with"]["comment-on-pr"] is True
    assert step["with"]["policyPacks"] == "policies"
    assert step["with"]["policyPackConfigs"] == "policies/config/${{ matrix.stack }}.json"


def test_deploy_runs_up_per_stack_dev_first_prod_behind_an_environment():
    document = workflow("deploy.yml")
    assert document["on"]["push"]["branches"] == ["main"]
    deploy = document["jobs"]["deploy"]
    stacks = deploy["strategy"]["matrix"]["stack"]
    assert sorted(stacks) == repo_stacks() and stacks[0] == "dev" and stacks[-1] == "prod"
    assert deploy["strategy"]["max-parallel"] == 1
    assert deploy["environment"] == "${{ matrix.stack }}"
    assert deploy["concurrency"] == {
        "group": "deploy-${{ matrix.stack }}",
        "cancel-in-progress": False,
    }
    step = _pulumi_step(document, "deploy")
    assert step["with"]["command"] == "up"
    assert step["with"]["policyPacks"] == "policies"
    assert step["with"]["policyPackConfigs"] == "policies/config/${{ matrix.stack }}.json"


def test_drift_runs_nightly_and_fails_on_any_change():
    document = workflow("drift.yml")
    assert document["on"]["schedule"][0]["cron"]
    job = document["jobs"]["drift"]
    assert job["strategy"]["matrix"]["stack"] == repo_stacks()
    step = _pulumi_step(document, "drift")
    assert step["with"]["expect-no-changes"] is True
    assert step["with"]["refresh"] is True
    assert any(s.get("if") == "failure()" for s in job["steps"])
