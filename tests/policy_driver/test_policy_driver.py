"""End-to-end tests of tools.policy_driver against throwaway packs run as real processes.

Why end to end: the driver's value is speaking the Analyzer protocol exactly as the CLI does, so
every assertion here goes through a pack process started the CLI's way; unit tests cover only
the pure conversions and the config-file checks that need no pack.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tools import policy_driver as pd

from .packs import (
    CHATTY_PACK,
    CRASHING_PACK,
    FAILING_POLICY_PACK,
    MAIN_PACK,
    PACK_NAME,
    PACK_VERSION,
    REMEDIATING_PACK,
    write_pack,
)

P = "urn:pulumi:dev::proj::"
PROVIDER = P + "pulumi:providers:kubernetes::k8s"
TEAM = P + "test:index:Team::research"
NS_A = P + "test:index:Team$kubernetes:core/v1:Namespace::ns-a"
NS_B = P + "kubernetes:core/v1:Namespace::ns-b"
SMALL = P + "kubernetes:apps/v1:Deployment::small"
BIG = P + "kubernetes:apps/v1:Deployment::big"
ECHO = P + "test:index:Team$test:index:Echo::echo-1"
ECHO_UNKNOWN = P + "test:index:Echo::echo-unknown"


def _record(urn: str, type_: str, inputs: dict[str, Any] | None = None, **extra: Any) -> dict:
    options = {
        "protect": False,
        "retainOnDelete": False,
        "dependsOn": [],
        "provider": "",
        "deleteBeforeReplace": False,
        "ignoreChanges": [],
        "replaceOnChanges": [],
        **extra.pop("options", {}),
    }
    return {
        "urn": urn,
        "type": type_,
        "name": urn.rsplit("::", 1)[1],
        "custom": True,
        "inputs": inputs or {},
        "options": options,
        "propertyDependencies": {},
        **extra,
    }


def _deployment(urn: str, replicas: int) -> dict:
    inputs = {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": replicas}}
    return _record(urn, "kubernetes:apps/v1:Deployment", inputs)


RECORDS = [
    _record(PROVIDER, "pulumi:providers:kubernetes", {"namespace": "default", "kc": "[secret]"}),
    {**_record(TEAM, "test:index:Team"), "custom": False},
    _record(
        NS_A,
        "kubernetes:core/v1:Namespace",
        {"metadata": {"name": "a"}},
        parent=TEAM,
        options={"protect": True, "provider": PROVIDER + "::prov-id"},
    ),
    _record(
        NS_B,
        "kubernetes:core/v1:Namespace",
        {"metadata": {"name": "b"}},
        options={"retainOnDelete": True},
    ),
    _deployment(SMALL, 4),
    _deployment(BIG, 6),
    _record(
        ECHO,
        "test:index:Echo",
        {"nested": {"list": [1, "two", True, None]}, "token": "[secret]"},
        parent=TEAM,
        options={
            "protect": True,
            "retainOnDelete": True,
            "dependsOn": [NS_A],
            "provider": PROVIDER + "::prov-id",
            "ignoreChanges": ["nested"],
            "deleteBeforeReplace": True,
            "aliases": [P + "test:index:Echo::old-echo"],
            "customTimeouts": {"create": "5m", "update": "1h30m", "delete": 30},
            "additionalSecretOutputs": ["token"],
        },
        propertyDependencies={"nested": [NS_B], "token": []},
    ),
    _record(ECHO_UNKNOWN, "test:index:Echo", {"value": "[unknown]"}),
]

MAIN_CONFIG = {
    "all": "mandatory",
    "replica-limit": {"enforcementLevel": "advisory", "maxReplicas": 5},
    "echo": "advisory",
}


def _alive(pid: int) -> bool:
    """True if `pid` is running (a zombie waiting for init does not count)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def assert_all_gone(pid_file: Path) -> None:
    pids = [int(x) for x in pid_file.read_text().split()] if pid_file.exists() else []
    deadline = time.monotonic() + 3.0
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [p for p in pids if _alive(p)] == [], "policy pack processes outlived the run"


@pytest.fixture
def pid_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "pids"
    monkeypatch.setenv("TEST_POLICY_PACK_PIDS", str(path))
    yield path
    assert_all_gone(path)


@pytest.fixture(scope="module")
def main_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_pack(tmp_path_factory.mktemp("packs") / "main", MAIN_PACK)


@pytest.fixture(scope="module")
def main_run(
    main_pack: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[pd.PolicyRunResult, list[int]]:
    tmp = tmp_path_factory.mktemp("main-run")
    pid_path = tmp / "pids"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TEST_POLICY_PACK_PIDS", str(pid_path))
        result = _run_main(main_pack, tmp, processes=1)
    return result, [int(x) for x in pid_path.read_text().split()]


def _run_main(pack: Path, folder: Path, **options: Any) -> pd.PolicyRunResult:
    """The main pack over RECORDS with MAIN_CONFIG (written into ``folder``) and a stack tag."""
    config = folder / "dev.json"
    config.write_text(json.dumps(MAIN_CONFIG))
    return pd.run_policy_pack(
        pack, RECORDS, config_path=config, stack_tags={"team": "research"}, **options
    )


def _by(result: pd.PolicyRunResult, policy: str, urn: str | None = None) -> list[pd.Violation]:
    return [
        v for v in result.violations if v.policy_name == policy and (urn is None or v.urn == urn)
    ]


# --- the main run: one pack process, a config file with `all` and per-policy overrides -------


def test_exact_violations_and_levels(main_run: tuple[pd.PolicyRunResult, list[int]]) -> None:
    result, _ = main_run
    got = [(v.policy_name, v.enforcement_level, v.urn, v.stack_policy) for v in result.violations]
    assert got == [
        ("namespace-protected", "mandatory", NS_B, False),
        ("replica-limit", "advisory", BIG, False),
        ("echo", "advisory", ECHO, False),
        ("echo", "advisory", ECHO_UNKNOWN, False),
        # `all: mandatory` raised the stack policy from its advisory default.
        ("stack-topology", "mandatory", "", True),
        ("stack-topology", "mandatory", ECHO, True),
    ]
    assert result.has_mandatory and pd.has_mandatory(result.violations)
    ns = _by(result, "namespace-protected")[0]
    assert ns.message == "Namespaces must be protected.\nnamespace ns-b has protect=False"
    assert (ns.resource_type, ns.resource_name) == ("kubernetes:core/v1:Namespace", "ns-b")
    assert (ns.policy_pack_name, ns.policy_pack_version) == (PACK_NAME, PACK_VERSION)
    assert ns.description == "Namespaces must be protected."


def test_properties_from_config_reach_the_policy(
    main_run: tuple[pd.PolicyRunResult, list[int]],
) -> None:
    result, _ = main_run
    (big,) = _by(result, "replica-limit")
    assert big.message.endswith("replicas 6 exceeds maxReplicas 5")  # 4 replicas passed
    assert big.severity == "high"
    policy = result.analyzer.policy("replica-limit")
    assert (policy.enforcement_level, policy.configured_level) == ("advisory", "advisory")
    assert policy.config == {"maxReplicas": 5}
    assert policy.config_schema == {
        "properties": {"maxReplicas": {"type": "integer", "minimum": 1, "default": 3}}
    }


def test_analyzer_info_reports_levels(main_run: tuple[pd.PolicyRunResult, list[int]]) -> None:
    result, _ = main_run
    info = result.analyzer
    assert (info.name, info.version, info.plugin_version) == (PACK_NAME, PACK_VERSION, "1.21.0")
    levels = {
        p.name: (p.policy_type, p.enforcement_level, p.configured_level) for p in info.policies
    }
    assert levels == {
        "echo": ("resource", "advisory", "advisory"),
        "namespace-protected": ("resource", "mandatory", "mandatory"),
        "replica-limit": ("resource", "advisory", "advisory"),
        "stack-topology": ("stack", "advisory", "mandatory"),
    }


def test_resource_options_and_provider_reach_the_policy(
    main_run: tuple[pd.PolicyRunResult, list[int]],
) -> None:
    result, _ = main_run
    (echo,) = _by(result, "echo", ECHO)
    seen = json.loads(echo.message.split("\n", 1)[1])
    assert seen["type"] == "test:index:Echo"
    assert (seen["name"], seen["urn"]) == ("echo-1", ECHO)
    assert seen["props"] == {"nested": {"list": [1, "two", True, None]}, "token": "[secret]"}
    assert seen["opts"] == {
        "protect": True,
        "ignore_changes": ["nested"],
        "delete_before_replace": True,
        "aliases": [P + "test:index:Echo::old-echo"],
        "custom_timeouts": [300, 5400, 30],
        "additional_secret_outputs": ["token"],
        "parent": TEAM,
        # The Analyzer protocol has no field for these: no policy can see them, even under
        # the real CLI. dependsOn reaches stack policies as `dependencies` instead.
        "has_retain_on_delete": False,
        "has_depends_on": False,
    }
    assert seen["provider"] == {
        "type": "pulumi:providers:kubernetes",
        "name": "k8s",
        "urn": PROVIDER,
        "props": {"namespace": "default", "kc": "[secret]"},
    }
    assert seen["config"] == {}
    assert seen["stack_tags"] == {"team": "research"}
    assert seen["runtime"] == {"project": "proj", "stack": "dev", "dry_run": True}


def test_unknown_inputs_become_a_preview_advisory(
    main_run: tuple[pd.PolicyRunResult, list[int]],
) -> None:
    result, _ = main_run
    (unknown,) = _by(result, "echo", ECHO_UNKNOWN)
    assert "can't run policy 'echo'" in unknown.message
    assert "during preview" in unknown.message
    assert unknown.enforcement_level == "advisory"


def test_stack_policy_sees_parents_and_dependencies(
    main_run: tuple[pd.PolicyRunResult, list[int]],
) -> None:
    result, _ = main_run
    whole, per_resource = _by(result, "stack-topology")
    assert whole.urn == "" and whole.resource_type == ""
    assert whole.message.endswith("2 namespaces in 8 resources")
    assert (per_resource.resource_type, per_resource.resource_name) == ("test:index:Echo", "echo-1")
    assert json.loads(per_resource.message.split("\n", 1)[1]) == {
        "parent": TEAM,
        "dependencies": [NS_A, NS_B],  # dependsOn + property dependencies
        "property_dependencies": {"nested": [NS_B]},  # empty ones are dropped, like the engine
        "protect": True,
        "provider": PROVIDER,
    }


def test_pack_output_is_collected(main_run: tuple[pd.PolicyRunResult, list[int]]) -> None:
    assert "echo saw echo-1" in main_run[0].pack_output


def test_pack_and_its_children_are_gone(main_run: tuple[pd.PolicyRunResult, list[int]]) -> None:
    _, pids = main_run
    assert len(pids) == 2  # the pack and the child it started
    assert [p for p in pids if _alive(p)] == []


def test_grouping_and_report(main_run: tuple[pd.PolicyRunResult, list[int]]) -> None:
    result, _ = main_run
    grouped = pd.group_violations(result.violations)
    assert list(grouped) == ["mandatory", "advisory"]
    assert list(grouped["mandatory"]) == [NS_B, "", ECHO]
    assert list(grouped["advisory"]) == [BIG, ECHO, ECHO_UNKNOWN]
    text = pd.format_violations(result.violations)
    assert text.index("MANDATORY (3)") < text.index("ADVISORY (3)")
    assert "  (stack)\n" in text and "kubernetes:core/v1:Namespace  ns-b" in text
    report = json.loads(json.dumps(result.to_dict()))
    assert report["summary"] == {"total": 6, "mandatory": 3, "advisory": 3, "hasMandatory": True}
    assert report["violations"][0]["policyName"] == "namespace-protected"
    assert report["policyPack"]["policies"][2]["config"] == {"maxReplicas": 5}
    assert (report["stack"], report["project"], report["resourcesAnalyzed"]) == ("dev", "proj", 8)


def test_two_processes_give_the_same_result(
    main_pack: Path, main_run: tuple[pd.PolicyRunResult, list[int]], tmp_path: Path, pid_file: Path
) -> None:
    result = _run_main(main_pack, tmp_path, processes=2)
    assert result.violations == main_run[0].violations
    assert len(pid_file.read_text().split()) == 4


def test_a_pack_launched_early_is_the_one_the_run_uses(
    main_pack: Path, main_run: tuple[pd.PolicyRunResult, list[int]], tmp_path: Path, pid_file: Path
) -> None:
    launched = pd.launch_policy_pack(main_pack, stack="dev", project="proj")
    try:
        assert launched.alive() and launched.channel is None  # started, not waited for
        result = _run_main(main_pack, tmp_path, processes=1, launched=launched)
        assert result.violations == main_run[0].violations
        assert len(pid_file.read_text().split()) == 2  # one pack process: the launched one
        assert launched.channel is None  # asked to end; waiting for it is ours
    finally:
        launched.close()
    assert launched.returncode is not None


def test_a_pack_launched_for_another_stack_is_refused_and_left_to_its_caller(
    main_pack: Path, pid_file: Path
) -> None:
    launched = pd.launch_policy_pack(main_pack, stack="prod", project="proj")
    try:
        with pytest.raises(ValueError, match=r"PULUMI_STACK.*prod.*this run needs"):
            pd.run_policy_pack(main_pack, RECORDS, launched=launched)
        assert launched.returncode is None  # not reaped: close() is the caller's
    finally:
        launched.close()
    assert launched.returncode is not None


def test_stop_asks_the_pack_to_end_and_close_waits_for_it(main_pack: Path, pid_file: Path) -> None:
    pack = pd.PolicyPackProcess(main_pack, env={"PULUMI_STACK": "dev", "PULUMI_PROJECT": "proj"})
    pack.start()
    pack.stop()
    assert pack.channel is None and pack.returncode is None
    pack.close()
    assert pack.returncode is not None
    assert_all_gone(pid_file)


# --- config defaults and levels ---------------------------------------------------------------


def test_cli_defaults_disabled_level_and_exit_codes(
    main_pack: Path, tmp_path: Path, pid_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = tmp_path / "report.json"
    records.write_text(json.dumps({"resources": RECORDS[:6]}))
    config = tmp_path / "cfg.json"
    config.write_text(json.dumps({"namespace-protected": "disabled"}))
    out_json = tmp_path / "out.json"
    argv = ["--pack", str(main_pack), "--records", str(records), "--config", str(config)]
    # Without a config the schema default (3) applies; with the file the mandatory policy is off.
    assert pd.main([*argv, "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert "namespace-protected" not in out
    assert "replicas 4 exceeds maxReplicas 3" in out and "replicas 6 exceeds maxReplicas 3" in out
    report = json.loads(out_json.read_text())
    assert [v["urn"] for v in report["violations"]] == [SMALL, BIG, ""]
    assert pd.main(argv[:4]) == 1
    out = capsys.readouterr().out
    assert out.index("MANDATORY (1)") < out.index("ADVISORY (")
    assert "namespace ns-b has protect=False" in out


def test_reconcile_applies_defaults_initial_config_all_then_file() -> None:
    info = pd.AnalyzerInfo(
        name="p",
        version="1",
        policies=(
            pd.PolicyInfo(
                "a", "d", "advisory", config_schema={"properties": {"n": {"default": 1}}}
            ),
            pd.PolicyInfo("b", "d", "mandatory"),
            pd.PolicyInfo("c", "d", "advisory"),
        ),
        initial_config={"c": pd.PolicyConfig("disabled")},
    )
    entries = {
        "all": pd.PolicyConfigEntry("advisory", {}),
        "b": pd.PolicyConfigEntry("remediate", {}),
        "a": pd.PolicyConfigEntry(None, {"n": 7}),
    }
    got = pd.reconcile_policy_config(info, entries, "f.json")
    assert got == {
        "a": pd.PolicyConfig("advisory", {"n": 7}),
        "b": pd.PolicyConfig("remediate", {}),
        "c": pd.PolicyConfig("advisory", {}),  # `all` in the file beats the initial config
    }
    assert pd.reconcile_policy_config(info, {}, "f.json")["a"] == pd.PolicyConfig(
        "advisory", {"n": 1}
    )


# --- bad config files: clear errors naming the file and the key -----------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"replica-limit": "strict"}', "key 'replica-limit': 'strict' is not a valid enforcement"),
        ('{"echo": 5}', "key 'echo': 5 is not a valid value"),
        ('{"echo": {"enforcementLevel": true}}', "key 'echo': enforcementLevel must be a string"),
        ('{"echo": {"enforcementLevel": "loud"}}', "key 'echo': 'loud' is not a valid enforcement"),
        ('{"all": {"enforcementLevel": "advisory", "x": 1}}', "key 'all': 'all' only sets"),
        ('["advisory"]', "must be a JSON object"),
        ("{not json", "invalid JSON"),
    ],
)
def test_malformed_config_file(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(pd.PolicyConfigError) as err:
        pd.load_policy_pack_config(path)
    assert str(path) in str(err.value)
    assert expected in str(err.value)


def test_empty_config_file_is_no_config(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text("  \n")
    assert pd.load_policy_pack_config(path) == {}


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"no-such-policy": "mandatory"}, "key 'no-such-policy': unknown policy"),
        ({"replica-limit": {"maxReplica": 2}}, "key 'replica-limit': unknown property maxReplica"),
        ({"replica-limit": {"maxReplicas": "ten"}}, "maxReplicas: 'ten' is not of type 'integer'"),
        ({"replica-limit": {"maxReplicas": 0}}, "maxReplicas: 0 is less than the minimum of 1"),
        ({"echo": {"anything": 1}}, "key 'echo': unknown property anything (policy accepts: none)"),
    ],
)
def test_config_that_does_not_fit_the_pack(
    main_run: tuple[pd.PolicyRunResult, list[int]], tmp_path: Path, config: dict, expected: str
) -> None:
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(config))
    entries = pd.load_policy_pack_config(path)
    with pytest.raises(pd.PolicyConfigError) as err:
        pd.reconcile_policy_config(main_run[0].analyzer, entries, path)
    assert str(path) in str(err.value)
    assert expected in str(err.value)


def test_config_mismatch_stops_the_run_before_analyze(
    main_pack: Path, tmp_path: Path, pid_file: Path
) -> None:
    path = tmp_path / "dev.json"
    path.write_text('{"replica-limt": "mandatory"}')
    with pytest.raises(pd.PolicyConfigError, match=r"dev.json: key 'replica-limt': unknown policy"):
        pd.run_policy_pack(main_pack, RECORDS, config_path=path)
    # pid_file's teardown checks that the pack asked for its policies is gone.


def test_cli_bad_input_exit_code(
    main_pack: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "bad.json"
    config.write_text('{"echo": "sometimes"}')
    records = tmp_path / "records.json"
    records.write_text(json.dumps(RECORDS))
    argv = ["--pack", str(main_pack), "--records", str(records), "--config", str(config)]
    assert pd.main(argv) == 2
    assert "'sometimes' is not a valid enforcement level" in capsys.readouterr().err
    records.write_text(json.dumps([{"type": "x"}]))
    assert pd.main(argv[:4]) == 2
    assert "'urn' must be a Pulumi URN" in capsys.readouterr().err
    records.write_text(json.dumps(RECORDS))
    assert pd.main(["--pack", str(tmp_path), "--records", str(records)]) == 2
    assert "PulumiPolicy.yaml not found" in capsys.readouterr().err


# --- packs that fail ---------------------------------------------------------------------------


def test_pack_crashing_on_startup(
    tmp_path: Path, pid_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack = write_pack(tmp_path / "crash", CRASHING_PACK)
    with pytest.raises(pd.PackStartError) as err:
        pd.run_policy_pack(pack, RECORDS)
    msg = str(err.value)
    assert "policy pack failed to start: exit status 1" in msg
    assert "--- pack stderr ---" in msg
    assert "RuntimeError: boom: the pack cannot start" in msg
    records = tmp_path / "records.json"
    records.write_text(json.dumps(RECORDS))
    assert pd.main(["--pack", str(pack), "--records", str(records)]) == 3
    assert "boom: the pack cannot start" in capsys.readouterr().err


def test_pack_printing_before_its_port(tmp_path: Path) -> None:
    pack = write_pack(tmp_path / "chatty", CHATTY_PACK)
    with pytest.raises(pd.PackStartError, match="invalid port to stdout: 'hello from the pack"):
        pd.run_policy_pack(pack, RECORDS)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("bad", ["failed: UNKNOWN", "policy bug: cannot handle bad"]),
        ("fatal", ["failed: UNAVAILABLE", "(pack exited with status 3)", "about to die"]),
    ],
)
def test_policy_failing_during_analyze(
    tmp_path: Path, pid_file: Path, name: str, expected: list[str]
) -> None:
    pack = write_pack(tmp_path / "failing", FAILING_POLICY_PACK)
    records = [_record(P + f"test:index:Thing::ok-{i}", "test:index:Thing") for i in range(20)]
    records.insert(7, _record(P + f"test:index:Thing::{name}", "test:index:Thing"))
    with pytest.raises(pd.PolicyRunError) as err:
        pd.run_policy_pack(pack, records, processes=1)
    msg = str(err.value)
    if name == "bad":
        assert f"Analyze({P}test:index:Thing::bad) failed" in msg
    for part in expected:
        assert part in msg


def test_not_a_policy_pack(tmp_path: Path) -> None:
    with pytest.raises(pd.PackLayoutError, match=r"PulumiPolicy\.yaml not found"):
        pd.run_policy_pack(tmp_path, RECORDS)
    (tmp_path / "PulumiPolicy.yaml").write_text("runtime: nodejs\n")
    with pytest.raises(pd.PackLayoutError, match="only runs Python policy packs"):
        pd.run_policy_pack(tmp_path, RECORDS)


# --- remediation -------------------------------------------------------------------------------


def test_remediate_level_rewrites_inputs_before_analysis(tmp_path: Path, pid_file: Path) -> None:
    pack = write_pack(tmp_path / "remediating", REMEDIATING_PACK, name="remediating-pack")
    config = tmp_path / "cfg.json"
    config.write_text('{"team-label": "remediate"}')
    plain = P + "kubernetes:core/v1:ConfigMap::plain"
    labelled = P + "kubernetes:core/v1:ConfigMap::labelled"
    records = [
        _record(plain, "kubernetes:core/v1:ConfigMap", {"metadata": {"labels": {"a": "b"}}}),
        _record(labelled, "kubernetes:core/v1:ConfigMap", {"metadata": {"labels": {"team": "x"}}}),
    ]
    result = pd.run_policy_pack(pack, records, config_path=config, processes=2)
    assert [(r.policy_name, r.urn) for r in result.remediations] == [("team-label", plain)]
    assert result.remediations[0].properties == {
        "metadata": {"labels": {"a": "b", "team": "unknown"}}
    }
    # Analyze saw the remediated inputs (no violation) and so did AnalyzeStack.
    seen = [(v.policy_name, v.urn, json.loads(v.message.split("\n")[1])) for v in result.violations]
    assert seen == [
        ("labels", plain, {"a": "b", "team": "unknown"}),
        ("labels", labelled, {"team": "x"}),
    ]


# --- pure conversions -------------------------------------------------------------------------


def test_record_to_analyze_request() -> None:
    by_urn = {r["urn"]: r for r in RECORDS}
    req = pd.record_to_analyze_request(RECORDS[6], by_urn)
    assert (req.type, req.urn, req.name) == ("test:index:Echo", ECHO, "echo-1")
    assert req.options.protect and req.options.deleteBeforeReplaceDefined
    assert req.options.parent == TEAM
    assert (req.options.customTimeouts.create, req.options.customTimeouts.update) == (300, 5400)
    assert (req.provider.type, req.provider.name, req.provider.urn) == (
        "pulumi:providers:kubernetes",
        "k8s",
        PROVIDER,
    )
    unknown = pd.record_to_analyze_request(RECORDS[7], by_urn)
    assert unknown.properties["value"] == "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
    plain = pd.record_to_analyze_request(RECORDS[3])
    assert not plain.options.deleteBeforeReplaceDefined and not plain.HasField("provider")


def test_record_to_analyzer_resource() -> None:
    res = pd.record_to_analyzer_resource(RECORDS[6], {r["urn"]: r for r in RECORDS})
    assert res.parent == TEAM
    assert list(res.dependencies) == [NS_A, NS_B]
    assert {k: list(v.urns) for k, v in res.propertyDependencies.items()} == {"nested": [NS_B]}


def test_urn_helpers() -> None:
    assert pd.urn_name(NS_A) == "ns-a" and pd.urn_type(NS_A) == "kubernetes:core/v1:Namespace"
    assert pd.urn_name(P + "a:b:C::name::with::colons") == "name::with::colons"
    assert pd.parse_provider_reference(PROVIDER + "::04da6b54") == (PROVIDER, "04da6b54")
    assert pd.parse_provider_reference(PROVIDER) == (PROVIDER, "")
    assert pd.parse_provider_reference("nonsense") == ("", "")


def test_records_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "records.json"
    path.write_text(json.dumps([RECORDS[0], RECORDS[0]]))
    with pytest.raises(pd.RecordsError, match="record 1: duplicate urn"):
        pd.load_records(path)
    path.write_text(json.dumps([{**RECORDS[3], "options": {"dependsOn": "x"}}]))
    with pytest.raises(pd.RecordsError, match=r"options.dependsOn must be a list of strings"):
        pd.load_records(path)
    bad_timeout = {**RECORDS[3], "options": {"customTimeouts": {"create": "soon"}}}
    with pytest.raises(pd.RecordsError, match="invalid custom timeout 'soon'"):
        pd.record_to_analyze_request(bad_timeout)


def test_group_violations_orders_levels() -> None:
    def v(level: str, urn: str) -> pd.Violation:
        return pd.Violation("p", "pack", "m", level, urn)

    vs = [v("advisory", "u1"), v("mandatory", "u2"), v("advisory", "u1"), v("advisory", "")]
    grouped = pd.group_violations(vs)
    assert list(grouped) == ["mandatory", "advisory"]
    assert {k: len(x) for k, x in grouped["advisory"].items()} == {"u1": 2, "": 1}
    assert not pd.has_mandatory(vs[:1]) and pd.has_mandatory(vs)
    assert pd.format_violations([]) == "No policy violations."


def test_alive_helper() -> None:
    # The process checks above are only as good as this helper.
    assert _alive(os.getpid())
    assert not _alive(2**22 + 12345)  # above the default pid_max


def test_a_pack_started_with_sigint_ignored_is_stopped_politely(main_pack: Path) -> None:
    """Background jobs inherit an ignored SIGINT; the pack must then get SIGTERM, not sit out
    the grace period and be killed."""
    previous = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        assert pd.polite_stop_signal() is signal.SIGINT
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        assert pd.polite_stop_signal() is signal.SIGTERM
        pack = pd.PolicyPackProcess(main_pack)
        try:
            pack.start()
            assert pack.alive()
        finally:
            pack.close()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert pack.returncode == -signal.SIGTERM
