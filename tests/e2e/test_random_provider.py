"""The Random provider we build (tools/e2e/go/random-provider), driven as the engine drives it.

The binary is started the way the engine starts a plugin (engine address as argument, port on
stdout) and spoken to over the ResourceProvider gRPC protocol: schema, config, then a
RandomPassword such as the monitoring stack's. Skipped when the binary is not built
(``python -m tools.e2e build random-provider``); the last test also needs the Pulumi CLI.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import inspect
import json
import os
import re
import selectors
import signal
import string
import subprocess
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pulumi_random
import pytest
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime.proto import (
    engine_pb2,
    engine_pb2_grpc,
    provider_pb2,
    provider_pb2_grpc,
)

from tools.e2e.build import BIN_LINKS, PROJECT_ROOT, RANDOM_PROVIDER_VERSION, write_language_host

PROVIDER = BIN_LINKS / "pulumi-resource-random"
PULUMI = BIN_LINKS / "pulumi"
VENV = PROJECT_ROOT / ".venv"
START_TIMEOUT_S = 30.0
PASSWORD_TOKEN = "random:index/randomPassword:RandomPassword"
PASSWORD_URN = f"urn:pulumi:e2e::random-probe::{PASSWORD_TOKEN}::admin"
SPECIALS = "!#%&*()-_=+[]{}<>:?"
SECRET_SIG = "4dabf18193072939515e22adb298388d"
"""The key that marks a secret value in a gRPC property struct (Pulumi's wire format)."""

pytestmark = [
    pytest.mark.real,
    pytest.mark.skipif(
        not PROVIDER.exists(),
        reason=f"{PROVIDER} is not built (`python -m tools.e2e build random-provider`)",
    ),
]


@dataclass
class FakeEngine(engine_pb2_grpc.EngineServicer):
    """The engine's Log service: a provider logs to the engine whose address it was given."""

    logs: list[engine_pb2.LogRequest] = field(default_factory=list)

    def Log(self, request: engine_pb2.LogRequest, context: grpc.ServicerContext) -> empty_pb2.Empty:  # noqa: N802
        self.logs.append(request)
        return empty_pb2.Empty()


def read_line(process: subprocess.Popen[bytes], timeout: float) -> bytes:
    """The first line of the process's stdout, or fail after ``timeout``."""
    assert process.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    line = b""
    deadline = time.monotonic() + timeout
    while not line.endswith(b"\n"):
        if not selector.select(max(deadline - time.monotonic(), 0)):
            pytest.fail(f"the provider printed no port within {timeout} s (read {line!r})")
        chunk = os.read(process.stdout.fileno(), 1)
        if not chunk:
            pytest.fail(f"the provider exited ({process.poll()}) before printing its port")
        line += chunk
    return line


def stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, then SIGKILL: nothing a test started outlives it."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=10)
            break
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


@pytest.fixture
def provider() -> Iterator[provider_pb2_grpc.ResourceProviderStub]:
    engine = FakeEngine()
    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    engine_pb2_grpc.add_EngineServicer_to_server(engine, server)
    engine_address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    server.start()
    process = subprocess.Popen(
        [str(PROVIDER), engine_address], stdout=subprocess.PIPE, start_new_session=True
    )
    channel: grpc.Channel | None = None
    try:
        port = int(read_line(process, START_TIMEOUT_S))
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        yield provider_pb2_grpc.ResourceProviderStub(channel)
    finally:
        if channel is not None:
            channel.close()
        stop_group(process)
        server.stop(grace=None)


def struct(values: dict[str, Any]) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    message.update(values)
    return message


def plain(message: struct_pb2.Struct) -> dict[str, Any]:
    return json_format.MessageToDict(message)


def unwrap_secret(value: object) -> object:
    """The value inside a secret, failing if it is not one."""
    assert isinstance(value, dict), f"expected a secret, got {value!r}"
    assert value.get(SECRET_SIG) == "1b47061264138c4ac30d75fd1eb44270", value
    return value["value"]


def schema_of(stub: provider_pb2_grpc.ResourceProviderStub) -> dict[str, Any]:
    response = stub.GetSchema(provider_pb2.GetSchemaRequest(version=0), timeout=30)
    schema: dict[str, Any] = json.loads(response.schema)
    return schema


def configure(stub: provider_pb2_grpc.ResourceProviderStub) -> None:
    urn = "urn:pulumi:e2e::random-probe::pulumi:providers:random::default"
    checked = stub.CheckConfig(
        provider_pb2.CheckRequest(urn=urn, olds=struct({}), news=struct({})), timeout=30
    )
    assert not checked.failures, checked.failures
    stub.Configure(
        provider_pb2.ConfigureRequest(
            args=checked.inputs, acceptSecrets=True, acceptResources=True
        ),
        timeout=30,
    )


def camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(part.title() for part in rest)


def test_reports_the_stamped_version(provider: provider_pb2_grpc.ResourceProviderStub) -> None:
    info = provider.GetPluginInfo(empty_pb2.Empty(), timeout=30)
    assert info.version == RANDOM_PROVIDER_VERSION
    assert schema_of(provider)["version"] == RANDOM_PROVIDER_VERSION


def test_schema_has_what_the_installed_sdk_sends(
    provider: provider_pb2_grpc.ResourceProviderStub,
) -> None:
    """Every resource token of the pulumi_random package in the venv, and every argument of
    RandomPasswordArgs (camelCased, as the SDK sends it), exists in the served schema."""
    schema = schema_of(provider)
    assert schema["name"] == "random"
    sdk_init = Path(inspect.getfile(pulumi_random)).read_text()
    sdk_tokens = set(re.findall(r'"(random:index/\w+:\w+)"', sdk_init))
    assert PASSWORD_TOKEN in sdk_tokens
    assert sdk_tokens <= set(schema["resources"]), sdk_tokens - set(schema["resources"])

    password = schema["resources"][PASSWORD_TOKEN]
    parameters = inspect.signature(pulumi_random.RandomPasswordArgs.__init__).parameters
    args = {name for name in parameters if not name.startswith("_")}  # __self__
    assert {camel(a) for a in args} == set(password["inputProperties"])
    assert password["requiredInputs"] == ["length"]
    for output in ("result", "bcryptHash"):
        assert password["properties"][output].get("secret") is True, output


def test_creates_a_random_password_with_the_requested_classes(
    provider: provider_pb2_grpc.ResourceProviderStub,
) -> None:
    configure(provider)
    news = {
        "length": 40,
        "special": True,
        "overrideSpecial": SPECIALS,
        "minSpecial": 2,
        "minUpper": 2,
        "minLower": 2,
        "minNumeric": 2,
    }
    checked = provider.Check(
        provider_pb2.CheckRequest(
            urn=PASSWORD_URN, olds=struct({}), news=struct(news), randomSeed=os.urandom(32)
        ),
        timeout=30,
    )
    assert not checked.failures, checked.failures
    inputs = plain(checked.inputs)
    assert {k: inputs[k] for k in news} == news

    created = provider.Create(
        provider_pb2.CreateRequest(urn=PASSWORD_URN, properties=checked.inputs, timeout=60),
        timeout=60,
    )
    assert created.id
    state = plain(created.properties)
    result = unwrap_secret(state["result"])
    assert isinstance(result, str)
    assert len(result) == 40
    classes = {
        "upper": string.ascii_uppercase,
        "lower": string.ascii_lowercase,
        "numeric": string.digits,
        "special": SPECIALS,
    }
    for name, alphabet in classes.items():
        assert sum(c in alphabet for c in result) >= 2, (name, result)
    assert set(result) <= set("".join(classes.values())), result
    assert str(unwrap_secret(state["bcryptHash"])).startswith("$2")

    # The same inputs again: no change, so a second `pulumi up` leaves the password alone.
    diff = provider.Diff(
        provider_pb2.DiffRequest(
            id=created.id,
            urn=PASSWORD_URN,
            olds=created.properties,
            news=checked.inputs,
            old_inputs=checked.inputs,
        ),
        timeout=30,
    )
    assert diff.changes == provider_pb2.DiffResponse.DIFF_NONE, diff

    # A longer password is a replacement, as the released provider plans it.
    longer = provider.Diff(
        provider_pb2.DiffRequest(
            id=created.id,
            urn=PASSWORD_URN,
            olds=created.properties,
            news=struct({**inputs, "length": 48}),
            old_inputs=checked.inputs,
        ),
        timeout=30,
    )
    assert longer.changes == provider_pb2.DiffResponse.DIFF_SOME
    assert "length" in longer.replaces


def test_invalid_inputs_are_check_failures(
    provider: provider_pb2_grpc.ResourceProviderStub,
) -> None:
    configure(provider)
    checked = provider.Check(
        provider_pb2.CheckRequest(
            urn=PASSWORD_URN, olds=struct({}), news=struct({"length": 0}), randomSeed=b"0" * 32
        ),
        timeout=30,
    )
    assert checked.failures, "length 0 must be refused"


# -- a real `pulumi up` --------------------------------------------------------------------------

PROGRAM = f"""\
import pulumi
import pulumi_random as random

password = random.RandomPassword(
    "admin",
    length=32,
    special=True,
    override_special={SPECIALS!r},
    min_special=2,
    min_upper=2,
    min_lower=2,
    min_numeric=2,
)
pulumi.export("password", password.result)
"""


def marked_processes(marker: str) -> list[int]:
    """Processes whose environment carries ``marker`` (the CLI and all it started)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                if marker.encode() in (proc / "environ").read_bytes():
                    found.append(int(proc.name))
    return found


@pytest.mark.skipif(not PULUMI.exists(), reason=f"the Pulumi CLI is not built ({PULUMI} missing)")
def test_pulumi_up_of_a_random_password(tmp_path: Path) -> None:
    """The real CLI and our language host run a program with a RandomPassword on this provider
    (found on PATH, as the e2e runs it): up, a second up with no changes, destroy."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pulumi").symlink_to(PULUMI.resolve())
    (bin_dir / PROVIDER.name).symlink_to(PROVIDER.resolve())
    write_language_host(bin_dir)
    project = tmp_path / "project"
    project.mkdir()
    (project / "Pulumi.yaml").write_text(
        "name: random-probe\nruntime:\n  name: python\n  options:\n"
        f"    toolchain: pip\n    virtualenv: {VENV}\n"
    )
    (project / "__main__.py").write_text(PROGRAM)
    (tmp_path / "state").mkdir()
    marker = f"RANDOM_PROVIDER_TEST_{uuid.uuid4().hex}"
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(tmp_path / "home"),
        "PULUMI_HOME": str(tmp_path / "pulumi-home"),
        "PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}",
        "PULUMI_CONFIG_PASSPHRASE": "x",
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        marker: "1",
    }

    def pulumi(*args: str) -> str:
        done = subprocess.run(
            [str(bin_dir / "pulumi"), *args, "--non-interactive", "--color", "never"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            start_new_session=True,
        )
        assert done.returncode == 0, f"pulumi {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    try:
        pulumi("stack", "init", "e2e")
        up = pulumi("up", "--yes")
        assert "random:index:RandomPassword" in up, up
        if importlib.metadata.version("pulumi-random") == RANDOM_PROVIDER_VERSION:
            assert "is expected to have version" not in up, up  # the SDK pin fits the plugin
        password = pulumi("stack", "output", "password", "--show-secrets").strip()
        assert len(password) == 32, password
        assert sum(c in SPECIALS for c in password) >= 2, password
        assert password not in pulumi("stack", "output", "password")  # shown as a secret
        again = pulumi("up", "--yes")
        assert "2 unchanged" in again, again
        assert pulumi("stack", "output", "password", "--show-secrets").strip() == password
        assert "2 deleted" in pulumi("destroy", "--yes")
        assert not marked_processes(marker), "the CLI left plugins running"
    finally:
        for pid in marked_processes(marker):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
