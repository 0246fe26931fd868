"""tools/report_diff: silent on identical reports, names what differs otherwise."""

from __future__ import annotations

import copy
from typing import Any

from tools.report_diff import diff_reports


def _report() -> dict[str, Any]:
    resource = {
        "urn": "urn:pulumi:dev::ai-platform::kubernetes:core/v1:Namespace::team-a",
        "inputs": {"metadata": {"name": "team-a", "labels": {"team": "a"}}},
        "options": {"protect": False, "dependsOn": []},
    }
    return {"resources": [resource], "outputs": {"teams": ["a"]}, "timings": {"program": 1.0}}


def test_identical_reports_differ_in_nothing_but_timings() -> None:
    after = _report()
    after["timings"] = {"program": 9.0}
    assert diff_reports(_report(), after) == []


def test_a_changed_input_option_or_output_is_named() -> None:
    after = _report()
    after["resources"][0]["inputs"]["metadata"]["labels"]["team"] = "b"
    after["resources"][0]["options"]["protect"] = True
    after["outputs"]["teams"] = ["b"]
    lines = "\n".join(diff_reports(_report(), after))
    assert 'inputs.metadata.labels.team: "a" -> "b"' in lines
    assert "options.protect: false -> true" in lines
    assert "outputs" in lines


def test_added_and_removed_resources_are_named_order_is_not() -> None:
    before = _report()
    other = copy.deepcopy(before["resources"][0])
    other["urn"] = other["urn"].replace("team-a", "team-b")
    other["options"]["dependsOn"] = ["urn:b", "urn:a"]
    before["resources"].append(other)
    swapped = copy.deepcopy(before)
    swapped["resources"].reverse()
    swapped["resources"][0]["options"]["dependsOn"].reverse()
    assert diff_reports(before, swapped) == []
    assert any(line.startswith("  removed") for line in diff_reports(before, _report()))
    assert any(line.startswith("  added") for line in diff_reports(_report(), before))
