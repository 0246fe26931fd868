"""Bad stack config never crashes the program and never half-deploys a stack.

Thousands of mutated dev/prod configs go through ``validate_platform_config`` (2 ms each): each
either validates or raises our ``ConfigError``, whose every line reads
``Pulumi.<stack>.yaml: ai-platform:<key path>: <message>`` and names a key of the input. A small
sample runs the real program under mocks (about a second each): failing configs must end in
``pulumi.RunError`` with the same text before a single resource is registered, passing ones must
render manifests that pass schema validation.
"""

from __future__ import annotations

import copy
import functools
import tempfile
from pathlib import Path
from typing import Any

import pulumi
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st
from pulumi.runtime.mocks import MockResourceArgs

from infra.config import ConfigError, ConfigIssue, validate_platform_config
from tests.hardening.mutations import (
    BASES,
    STACKS,
    broken_configs,
    check_config,
    check_config_error,
    get,
    nodes,
    put,
)
from tests.harness import engine_config, engine_secret_keys
from tools.mockrun import MockRun, PlatformMocks, run_under_mocks
from tools.render import write_manifests
from tools.schema_validation import (
    ManifestValidator,
    UnsupportedKubernetesVersionError,
    default_crd_location,
    supported_kubernetes_versions,
)

SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
FUZZ = settings(
    max_examples=1000,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=SUPPRESS,
)
BUILD = settings(
    max_examples=5, deadline=None, derandomize=True, database=None, suppress_health_check=SUPPRESS
)
"""Each example runs the program under mocks (about a second): a sample, not a fuzz."""


# --- thousands of configs, validation only ----------------------------------------------------


@FUZZ
@given(broken_configs())
def test_broken_configs_validate_or_fail_with_formatted_errors(
    case: tuple[str, dict[str, Any], list[str]],
) -> None:
    stack, raw, steps = case
    note(f"{stack}: {steps}")
    check_config(raw, stack)


def test_the_checked_in_configs_are_valid() -> None:
    """The fuzz starts from them: a broken base would only ever exercise one error."""
    for stack in STACKS:
        validate_platform_config(BASES[stack], f"Pulumi.{stack}.yaml")


def test_the_contract_check_rejects_what_it_should() -> None:
    """The checker is not vacuous: a union tag or a key the user never wrote fails it."""
    raw = copy.deepcopy(BASES["dev"])
    raw["teams"][0]["quota"]["gpus"] = "x"
    good = ConfigError("Pulumi.dev.yaml", [ConfigIssue(("teams", 0, "quota", "gpus"), "bad")])
    check_config_error(good, raw, "dev")
    missing = ConfigError("Pulumi.dev.yaml", [ConfigIssue(("teams", 0, "quota", "pods"), "bad")])
    check_config_error(missing, raw, "dev")  # a defaulted key of an existing mapping
    for path in (("teams", 0, "quota", "gpus", "str"), ("teams", 9), ("teams", 0, "quotaa")):
        bad = ConfigError("Pulumi.dev.yaml", [ConfigIssue(path, "bad")])
        with pytest.raises(AssertionError):
            check_config_error(bad, raw, "dev")
    with pytest.raises(AssertionError):
        check_config_error(good, raw, "prod")


# --- inputs that once escaped as tracebacks or broke the one-line format ----------------------


@pytest.mark.parametrize(
    ("path", "value"),
    [
        pytest.param(("teams", 0, "quota", "memory"), "1e1000000", id="overflow"),
        pytest.param(("teams", 0, "queue", "pools", 0, "cpu"), "1e99999", id="int-digits"),
        pytest.param(
            ("workloads", 2, "inference", "statefulDependencies", 0, "size"), "9" * 40 + "Ei"
        ),
    ],
)
def test_enormous_quantities_are_config_errors(path: tuple[Any, ...], value: str) -> None:
    raw = copy.deepcopy(BASES["dev"])
    put(raw, path, value)
    assert isinstance(check_config(raw, "dev"), ConfigError)


@pytest.mark.parametrize(
    ("where", "key"),
    [((), ""), (("teams", 0), "with space"), (("teams", 0), "line\nbreak"), ((), "next\x85line")],
)
def test_odd_unknown_keys_keep_the_one_line_format(where: tuple[Any, ...], key: str) -> None:
    raw = copy.deepcopy(BASES["dev"])
    get(raw, where)[key] = 1
    assert isinstance(check_config(raw, "dev"), ConfigError)


# --- a sample through the real program --------------------------------------------------------


class RecordingMocks(PlatformMocks):
    """PlatformMocks that remember every resource the program registers."""

    def __init__(self) -> None:
        self.registered: list[str] = []

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        self.registered.append(f"{args.typ}::{args.name}")
        return super().new_resource(args)


def run_program(raw: dict[str, Any], stack: str, mocks: RecordingMocks) -> MockRun[Any]:
    def program() -> Any:
        from infra.program import run

        return run()

    return run_under_mocks(
        program,
        stack=stack,
        config=engine_config(raw),
        secret_keys=engine_secret_keys(raw),
        mocks=mocks,
    )


@functools.cache
def validator(version: str) -> ManifestValidator:
    try:
        return ManifestValidator(version, default_crd_location())
    except UnsupportedKubernetesVersionError:
        # The preview reports this as a config error (exit 2); the manifests must still be valid
        # for the newest version we have schemas for.
        return ManifestValidator(supported_kubernetes_versions()[-1], default_crd_location())


def check_through_program(raw: dict[str, Any], stack: str) -> str:
    """The program agrees with validation; a failure registers nothing. Returns the outcome."""
    expected = check_config(raw, stack)
    mocks = RecordingMocks()
    if isinstance(expected, ConfigError):
        with pytest.raises(pulumi.RunError) as error:
            run_program(raw, stack, mocks)
        assert str(error.value) == expected.render()
        assert mocks.registered == [], f"registered before failing: {mocks.registered}"
        return "config error"
    run = run_program(raw, stack, mocks)
    objects = [r.inputs for r in run.kubernetes_objects()]
    assert objects, "a valid config rendered no Kubernetes objects"
    report = validator(expected.cluster.kubernetes_version).validate_all(objects)
    assert not report.failed(), report.summary_text()
    with tempfile.TemporaryDirectory() as out:
        write_manifests(run.resources, Path(out))  # what the preview writes must be writable
    return "built"


TEXT_LEAVES = (
    ("teams", "*", "description"),
    ("teams", "*", "env", "*"),
    ("workloads", "*", "env", "*"),
    ("workloads", "*", "args", "*"),
    ("workloads", "*", "command", "*"),
    ("storage", "classes", "*", "parameters", "*"),
    ("storage", "classes", "*", "mountOptions", "*"),
    ("cluster", "kubeconfigContext"),
)
"""Free text the program passes through to manifests: a valid config may hold any string here."""


def _matches(path: tuple[Any, ...], pattern: tuple[str, ...]) -> bool:
    return len(path) == len(pattern) and all(
        p == "*" or p == k for k, p in zip(path, pattern, strict=True)
    )


@st.composite
def odd_text_configs(draw: st.DrawFn) -> tuple[str, dict[str, Any], list[str]]:
    """A real config whose free-text values became arbitrary unicode (most still validate)."""
    stack = draw(st.sampled_from(STACKS))
    raw = copy.deepcopy(BASES[stack])
    leaves = [p for p, _ in nodes(raw) if any(_matches(p, t) for t in TEXT_LEAVES)]
    chosen = draw(st.lists(st.sampled_from(leaves), min_size=1, max_size=4, unique=True))
    for path in chosen:
        put(raw, path, draw(st.text(max_size=40)))
    return stack, raw, [f"{p} = {get(raw, p)!r}" for p in chosen]


@BUILD
@given(broken_configs(max_mutations=2))
def test_sampled_broken_configs_through_the_program(
    case: tuple[str, dict[str, Any], list[str]],
) -> None:
    stack, raw, steps = case
    note(f"{stack}: {steps}")
    check_through_program(raw, stack)


@settings(BUILD, max_examples=3)
@given(broken_configs(max_mutations=1))
def test_sampled_valid_mutations_build_valid_manifests(
    case: tuple[str, dict[str, Any], list[str]],
) -> None:
    """Mutations that still validate (a changed size, a dropped optional key) must build."""
    stack, raw, steps = case
    note(f"{stack}: {steps}")
    assume(not isinstance(check_config(raw, stack), ConfigError))
    assert check_through_program(raw, stack) == "built"


@settings(BUILD, max_examples=3)
@given(odd_text_configs())
def test_sampled_unicode_text_through_the_program(
    case: tuple[str, dict[str, Any], list[str]],
) -> None:
    stack, raw, steps = case
    note(f"{stack}: {steps}")
    check_through_program(raw, stack)


def test_the_program_path_sees_both_outcomes() -> None:
    """Guard against a vacuous sample: one config that fails and one that builds."""
    broken = copy.deepcopy(BASES["prod"])
    broken["teams"][1]["quota"]["gpus"] = -1
    broken["workloads"][0]["team"] = "nobody"
    assert check_through_program(broken, "prod") == "config error"
    odd = copy.deepcopy(BASES["dev"])
    odd["teams"][0]["env"]["GREETING"] = "grüß dich 🚀\n\ttabs and ${NOT_EXPANDED}"
    assert check_through_program(odd, "dev") == "built"
