"""One run reports every config error: schema and cross-field errors together, entries named.

The rules run on whatever parsed. A check that needs an entry that did not parse does not run
(nothing is inferred from a value the user did not write), and the output says which.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.config import ConfigError, StackFile, validate_platform_config
from tests.harness import ROOT, stack_config


def _errors(config: dict[str, Any], stack: str = "dev") -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        validate_platform_config(config, f"Pulumi.{stack}.yaml")
    return caught.value


def _lines(error: ConfigError) -> list[str]:
    return [f"{issue.key_path}: {issue.message}" for issue in error.issues]


def _workload(config: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(w for w in config["workloads"] if w["name"] == name)
    return found


def test_a_typo_a_quota_overrun_and_a_missing_storage_class_in_one_run() -> None:
    config = stack_config("dev")
    _workload(config, "llm-chat")["inference"]["minReplica"] = 2
    _workload(config, "llama-eval")["resources"]["cpu"] = "80"
    config["teams"][0]["volumes"][1]["storageClass"] = "fast-ssd"
    error = _errors(config)
    assert _lines(error) == [
        "ai-platform:workloads[llm-chat].inference.minReplica: unknown key; did you mean "
        "'minReplicas'?",
        "ai-platform:teams[research].volumes[checkpoints].storageClass: unknown storage class "
        "'fast-ssd'; defined: checkpoints-local, datasets-nfs",
        "ai-platform:workloads[llama-eval].resources.cpu: needs 80 CPU at its peak (1 pod x 80), "
        "above the quota of team 'research' (66)",
        "ai-platform:workloads[llama-eval].resources.cpu: the job needs 80 cpu at once, more than "
        "the queue of team 'research' can ever admit on pool 'lab-a100' (nominal 48 + borrowing "
        "16)",
    ]
    assert error.not_checked == ("ai-platform:workloads[llm-chat]: its cross-field checks",)


def test_an_entry_that_did_not_parse_is_never_reported_as_missing() -> None:
    """A team with a typo is not 'unknown' to its workloads, and they are not checked against
    a quota nobody can read; the other teams' workloads still are."""
    config = stack_config("dev")
    config["teams"][0]["quota"]["gpu"] = 8  # research
    _workload(config, "llama-finetune")["resources"]["cpu"] = "100"  # research: not checkable
    _workload(config, "embeddings")["resources"]["cpu"] = "40"  # search-serving: checked
    error = _errors(config)
    assert _lines(error) == [
        "ai-platform:teams[research].quota.gpu: unknown key; did you mean 'gpus'?",
        "ai-platform:workloads[embeddings].resources.cpu: needs 160 CPU at its peak (4 pods x "
        "40), above the quota of team 'search-serving' (32)",
        "ai-platform:workloads[embeddings]: the inference services of team 'search-serving' need "
        "84.25 CPU at their minimum replicas (llm-chat 4.25 + embeddings 80), above the team's "
        "quota of 32",
    ]
    (research, pools) = error.not_checked
    assert research.startswith("ai-platform:teams[research]: its cross-field checks, and those of")
    assert "workloads fit team quota" in research and "workload volumes" in research
    assert pools == "pool quotas fit capacity: not run (reads ai-platform:teams[research])"


def test_a_team_whose_name_is_invalid_holds_back_every_reference() -> None:
    """Its workloads may have meant it: no 'unknown team' for them."""
    config = stack_config("dev")
    config["teams"][1]["name"] = "Search_Serving"
    error = _errors(config)
    assert [issue.key_path for issue in error.issues] == ["ai-platform:teams[Search_Serving].name"]
    assert error.not_checked[0].startswith("ai-platform:teams[Search_Serving]: its cross-field")
    assert "workload teams exist" in error.not_checked[0]


def test_a_misspelt_top_level_key_holds_back_the_key_it_meant() -> None:
    """``monitorng`` was meant to be ``monitoring``: its defaults are not checked in its place."""
    config = stack_config("dev")
    config["monitorng"] = config.pop("monitoring")
    config["monitorng"]["prometheus"]["storageClassName"] = "fast-ssd"
    config["teams"][2]["env"] = {"TRAINING_ENV": "x"}
    error = _errors(config)
    assert _lines(error) == [
        "ai-platform:monitorng: unknown key; did you mean 'monitoring'?",
        "ai-platform:teams[platform].env.TRAINING_ENV: is set by the platform; remove it",
    ]
    assert any(
        line.endswith("not run (reads ai-platform:monitoring)") and "monitoring" in line
        for line in error.not_checked
    ), error.not_checked


def test_a_key_that_did_not_parse_stops_only_the_checks_that_read_it() -> None:
    config = stack_config("dev")
    config["storage"]["classes"] = "datasets-nfs"
    _workload(config, "embeddings")["inference"]["minReplicas"] = 9
    error = _errors(config)
    assert _lines(error) == [
        "ai-platform:storage.classes: must be a list, got 'datasets-nfs'",
        "ai-platform:workloads[embeddings].inference.minReplicas: minReplicas 9 exceeds "
        "maxReplicas 3",
    ]
    (storage,) = [line for line in error.not_checked if "reads ai-platform:storage" in line]
    assert "volumes are consistent" in storage and "workload volumes" in storage


def test_repeated_names_keep_the_position_and_odd_names_are_quoted() -> None:
    config = stack_config("dev")
    twin = {**_workload(config, "llm-chat"), "team": "platform", "gpus": None}
    twin["inference"] = {**twin["inference"], "queued": False, "minReplica": 1}
    del twin["gpus"]
    config["workloads"].append(twin)
    config["teams"][2]["volumes"] = [
        {"name": "0042", "purpose": "general", "storageClass": "nope", "size": "1Gi"}
    ]
    lines = _lines(_errors(config))
    assert lines[0] == (
        "ai-platform:workloads[llm-chat].inference.minReplica: unknown key; did you mean "
        "'minReplicas'?; it is workloads[7], one of 2 entries named 'llm-chat'"
    )
    assert lines[1].startswith(
        'ai-platform:teams[platform].volumes["0042"].storageClass: unknown storage class'
    )


def test_the_program_fails_with_the_same_text() -> None:
    """``pulumi up`` and the offline preview reject the same input with the same words."""
    import pulumi

    from tests.harness import engine_config
    from tools.mockrun import run_under_mocks

    config = stack_config("dev")
    config["teams"][0]["quota"]["gpu"] = 8
    _workload(config, "embeddings")["resources"]["cpu"] = "40"
    expected = _errors(config).render()

    def program() -> Any:
        from infra.program import run

        return run()

    with pytest.raises(pulumi.RunError) as failure:
        run_under_mocks(program, stack="dev", config=engine_config(config))
    assert str(failure.value) == expected


def test_misplaced_secrets_come_with_the_other_errors(tmp_path: Path) -> None:
    """The loader's findings (a secret outside a credential field, a credential in plain text)
    are reported in the same run as schema and rule errors, and the credential's command keeps
    the position the CLI's --path needs."""
    document = yaml.safe_load((ROOT / "Pulumi.prod.yaml").read_text())
    config = document["config"]
    config["ai-platform:teams"][0]["env"]["HF_TOKEN"] = {"secure": "v1:abc"}
    config["ai-platform:monitoring"]["alertmanager"]["receivers"][1]["url"] = "https://hooks/x"
    config["ai-platform:teams"][1]["quota"]["gpus"] = -1
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    with pytest.raises(ConfigError) as caught:
        StackFile(path).platform_config()
    assert [issue.key_path for issue in caught.value.issues] == [
        "ai-platform:teams[research].env.HF_TOKEN",
        "ai-platform:monitoring.alertmanager.receivers[platform-slack].url",
        "ai-platform:teams[search-serving].quota.gpus",
    ]
    assert "--path 'ai-platform:monitoring.alertmanager.receivers[1].url'" in str(caught.value)


def test_a_rule_that_fails_on_broken_input_is_listed_not_raised() -> None:
    """Whatever a rule does with a stand-in for a broken entry (compare it, format it, add to
    it), the run ends in the error list, never a traceback."""
    from infra.config.partial import Unparsed, UnparsedInputError, run_rules

    broken = Unparsed(("teams", 0), "research")
    for use in (lambda: broken == 1, lambda: f"{broken}", lambda: broken + 1, lambda: len(broken)):
        with pytest.raises(UnparsedInputError):
            use()

    def divides_by_zero(config: Any) -> list[Any]:
        return [1 / 0]

    issues, skipped = run_rules([divides_by_zero], object(), partial=True)
    assert issues == [] and [s.check for s in skipped] == ["divides by zero"]
    with pytest.raises(ZeroDivisionError):
        run_rules([divides_by_zero], object())
