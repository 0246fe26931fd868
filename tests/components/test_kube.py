"""components.kube registers each kind exactly as pulumi-kubernetes's typed class does."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path
from typing import Any

import pulumi
import pytest
from google.protobuf import json_format
from pulumi.runtime.proto import resource_pb2

from components import kube, raw_manifests
from tools import mockrun
from tools.mockrun import run_under_mocks

PROJECT_ROOT = Path(__file__).resolve().parents[2]
KINDS = sorted(kube.KINDS.items())
TYPED_MODULES = tuple(
    f"pulumi_kubernetes.{module}.{version}"
    for module, version in (
        ("core", "v1"),
        ("apps", "v1"),
        ("batch", "v1"),
        ("networking", "v1"),
        ("rbac", "v1"),
        ("storage", "v1"),
        ("scheduling", "v1"),
        ("policy", "v1"),
        ("admissionregistration", "v1"),
        ("autoscaling", "v2"),
    )
)


def typed_class(kind: kube.Kind) -> type[pulumi.CustomResource]:
    found = raw_manifests.typed_class(kind.api_version, kind.token_kind or kind.kind)
    assert found is not None, kind
    return found


FLAGS = {"immutable", "global_default", "allow_volume_expansion", "automount_service_account_token"}
TEXTS = {"type", "provisioner", "reclaim_policy", "volume_binding_mode", "preemption_policy"}
MAPS = {"data", "binary_data", "string_data", "parameters"}
LISTS = {
    "rules",
    "subjects",
    "mount_options",
    "allowed_topologies",
    "image_pull_secrets",
    "secrets",
}


def sample(field: str) -> Any:
    """A value of the field's type: carried through as it is (a Secret's data comes out
    secret), and read back by the typed class's output types without complaint."""
    if field == "metadata":
        return {"name": "sample", "namespace": "team-a", "labels": {"app.kubernetes.io/name": "x"}}
    if field in FLAGS:
        return True
    if field in TEXTS or field == "description":
        return f"sample-{field}"
    if field == "value":
        return 1000
    if field in LISTS:
        return [{"name": field}] if field not in ("mount_options",) else ["ro"]
    if field in MAPS:
        return {"camelCase": f"sample-{field}"}
    return {"sample": field, "nested": {"camelCase": [1, 2]}}


def registrations(monkeypatch: pytest.MonkeyPatch, make: Any) -> list[Any]:
    """Every RegisterResource request of a run that calls ``make(provider)``, as sent."""
    seen: list[Any] = []
    original = mockrun.CapturingMonitor.RegisterResource

    def recording(self: Any, request: Any) -> Any:
        copy = resource_pb2.RegisterResourceRequest()
        copy.CopyFrom(request)
        seen.append(copy)
        return original(self, request)

    monkeypatch.setattr(mockrun.CapturingMonitor, "RegisterResource", recording)

    def program() -> None:
        import pulumi_kubernetes as k8s

        make(pulumi.ResourceOptions(provider=k8s.Provider("k8s")))

    run_under_mocks(program, stack="dev", config={}, fresh_modules=False)
    monkeypatch.setattr(mockrun.CapturingMonitor, "RegisterResource", original)
    return [r for r in seen if r.type.startswith("kubernetes:") and r.custom]


@pytest.mark.parametrize(("token", "cls"), KINDS, ids=[token for token, _ in KINDS])
def test_the_request_is_the_typed_classes(monkeypatch, token, cls):
    fields = {name: sample(name) for name in cls.KIND.fields}
    typed = typed_class(cls.KIND)
    opts = pulumi.ResourceOptions(protect=True)

    [ours] = registrations(
        monkeypatch, lambda p: cls("obj", opts=pulumi.ResourceOptions.merge(p, opts), **fields)
    )
    [theirs] = registrations(
        monkeypatch, lambda p: typed("obj", opts=pulumi.ResourceOptions.merge(p, opts), **fields)
    )
    assert ours.type == token
    assert ours == theirs, f"\nours:   {ours}\ntheirs: {theirs}"


@pytest.mark.parametrize(("token", "cls"), KINDS, ids=[token for token, _ in KINDS])
def test_the_fields_are_the_typed_classes_arguments(token, cls):
    typed: Any = typed_class(cls.KIND)  # the generated classes' own initializer
    signature = inspect.signature(typed._internal_init)
    arguments = set(signature.parameters) - {
        "__self__",
        "resource_name",
        "opts",
        "api_version",
        "kind",
        "__props__",
    }
    assert set(cls.KIND.fields) == arguments


def test_a_secret_is_secret_on_the_wire(monkeypatch):
    [request] = registrations(
        monkeypatch,
        lambda p: kube.Secret(
            "s", metadata={"name": "s"}, string_data={"password": "hunter2"}, opts=p
        ),
    )
    wire = json_format.MessageToDict(request.object)["stringData"]
    assert wire["4dabf18193072939515e22adb298388d"] == "1b47061264138c4ac30d75fd1eb44270"
    assert wire["value"] == {"password": "hunter2"}
    assert list(request.additionalSecretOutputs) == ["data", "stringData"]


def test_an_unknown_field_is_refused_by_name():
    with pytest.raises(TypeError, match="ConfigMap has no field spec, stringData"):
        kube.ConfigMap("cm", spec={}, stringData={})


def test_metadata_is_the_providers_dict():
    names: list[str] = []

    def program() -> None:
        namespace = kube.Namespace("ns", metadata={"name": "team-a"})
        namespace.metadata.apply(lambda meta: names.append(meta["name"]))

    run_under_mocks(program, stack="dev", config={})
    assert names == ["team-a"]


def test_the_platform_program_imports_no_typed_kubernetes_class():
    """The point of the module: the dev stack's whole program runs without building one."""
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from infra.config import StackFile\n"
        "from tools.preview import run_stack_program\n"
        "run_stack_program(StackFile(Path('Pulumi.dev.yaml')), 'dev')\n"
        f"print([m for m in {TYPED_MODULES!r} if m in sys.modules])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
