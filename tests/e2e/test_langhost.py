"""Our Python language host (tools/e2e/langhost), driven as the Pulumi CLI drives it.

The host runs as a subprocess through the same ``pulumi-language-python`` wrapper the build writes;
a fake engine records what programs log. The last tests run the real CLI (when it is built) on a
throwaway project and policy pack, so a broken host fails them.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import selectors
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime.proto import (
    analyzer_pb2,
    analyzer_pb2_grpc,
    engine_pb2,
    engine_pb2_grpc,
    language_pb2,
    language_pb2_grpc,
    resource_pb2,
    resource_pb2_grpc,
)

from tools.e2e.build import BIN_LINKS, PROJECT_ROOT, write_language_host
from tools.e2e.langhost.toolchain import Package, package_dependency, plugin_version

VENV = PROJECT_ROOT / ".venv"
VENV_PYTHON = VENV / "bin" / "python"
PULUMI = BIN_LINKS / "pulumi"
START_TIMEOUT_S = 30.0

PROBE_PACK = """\
import pulumi
from pulumi_policy import EnforcementLevel, PolicyPack, StackValidationPolicy


def probe(args, report_violation):
    types = ",".join(sorted(r.resource_type for r in args.resources))
    greeting = pulumi.Config().get("greeting")
    report_violation(f"langhost-probe stack={pulumi.get_stack()} greeting={greeting} types={types}")


PolicyPack(
    name="langhost-probe",
    enforcement_level=EnforcementLevel.ADVISORY,
    policies=[StackValidationPolicy(name="probe", description="Says what it saw.", validate=probe)],
)
"""


# -- fixtures ------------------------------------------------------------------------------------


@dataclass
class FakeEngine(engine_pb2_grpc.EngineServicer):
    """The engine's Log service, recording messages (what a program's pulumi.log sends)."""

    logs: list[engine_pb2.LogRequest] = field(default_factory=list)

    def Log(self, request: engine_pb2.LogRequest, context: grpc.ServicerContext) -> empty_pb2.Empty:  # noqa: N802
        self.logs.append(request)
        return empty_pb2.Empty()


@dataclass
class FakeMonitor(resource_pb2_grpc.ResourceMonitorServicer):
    """A resource monitor that accepts every registration and supports no optional feature."""

    registered: list[str] = field(default_factory=list)
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def SupportsFeature(  # noqa: N802
        self, request: resource_pb2.SupportsFeatureRequest, context: grpc.ServicerContext
    ) -> resource_pb2.SupportsFeatureResponse:
        return resource_pb2.SupportsFeatureResponse(hasSupport=False)

    def RegisterResource(  # noqa: N802
        self, request: resource_pb2.RegisterResourceRequest, context: grpc.ServicerContext
    ) -> resource_pb2.RegisterResourceResponse:
        self.registered.append(request.type)
        urn = f"urn:pulumi:s::p::{request.type}::{request.name}"
        return resource_pb2.RegisterResourceResponse(urn=urn)

    def RegisterResourceOutputs(  # noqa: N802
        self, request: resource_pb2.RegisterResourceOutputsRequest, context: grpc.ServicerContext
    ) -> empty_pb2.Empty:
        self.outputs[request.urn] = json_format.MessageToDict(request.outputs)
        return empty_pb2.Empty()


@dataclass
class Host:
    process: subprocess.Popen[bytes]
    stub: language_pb2_grpc.LanguageRuntimeStub
    engine: FakeEngine
    engine_address: str
    monitor: FakeMonitor
    stderr_path: Path

    def stderr(self) -> str:
        """What the host and its programs wrote to stderr (the CLI would show it the user)."""
        return self.stderr_path.read_text(errors="replace")


def read_line(stream: object, timeout: float) -> bytes:
    """One line from a pipe, or fail after ``timeout`` (a host that never starts fails the test)."""
    selector = selectors.DefaultSelector()
    selector.register(stream, selectors.EVENT_READ)  # type: ignore[arg-type]
    line = b""
    deadline = time.monotonic() + timeout
    while not line.endswith(b"\n"):
        if not selector.select(max(deadline - time.monotonic(), 0)):
            pytest.fail(f"no line within {timeout} s (read {line!r})")
        chunk = os.read(stream.fileno(), 1)  # type: ignore[attr-defined]
        if not chunk:
            pytest.fail(f"stream ended before a full line (read {line!r})")
        line += chunk
    return line


def stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, SIGKILL it if it lingers: nothing a test started survives."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError):  # children that outlived the leader
        os.killpg(process.pid, signal.SIGKILL)


@pytest.fixture
def wrapper(tmp_path: Path) -> Path:
    if not VENV_PYTHON.exists():
        pytest.skip(f"the project venv ({VENV}) is missing")
    return write_language_host(tmp_path / "bin")


@pytest.fixture
def host(wrapper: Path, tmp_path: Path) -> Iterator[Host]:
    engine, monitor = FakeEngine(), FakeMonitor()
    server = grpc.server(ThreadPoolExecutor(max_workers=8))
    engine_pb2_grpc.add_EngineServicer_to_server(engine, server)
    resource_pb2_grpc.add_ResourceMonitorServicer_to_server(monitor, server)
    engine_address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    server.start()
    env = {**os.environ, "PULUMI_PYTHON_CMD": str(VENV_PYTHON)}
    stderr_path = tmp_path / "host.stderr"
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen(
            [str(wrapper), engine_address],
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
            start_new_session=True,
        )
    try:
        assert process.stdout is not None
        port = int(read_line(process.stdout, START_TIMEOUT_S))
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        stub = language_pb2_grpc.LanguageRuntimeStub(channel)
        yield Host(process, stub, engine, engine_address, monitor, stderr_path)
        channel.close()
    finally:
        stop_group(process)
        server.stop(grace=None)


def program_info(directory: Path, **options: object) -> language_pb2.ProgramInfo:
    struct = struct_pb2.Struct()
    struct.update(options)
    return language_pb2.ProgramInfo(
        root_directory=str(directory),
        program_directory=str(directory),
        entry_point=".",
        options=struct,
    )


# -- pure functions ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pep440", "semver"),
    [
        ("4.25.0", "4.25.0"),
        ("1.2", "1.2.0"),
        ("3", "3.0.0"),
        ("1.2.3a4", "1.2.3-alpha.4"),
        ("1.2.3b1", "1.2.3-beta.1"),
        ("1.2.3rc2", "1.2.3-rc.2"),
        ("1.2.3.post4", "1.2.3+post4"),
        ("1.2.3.dev5", "1.2.3+dev5"),
        ("1.2.3.post4.dev5", "1.2.3+post4dev5"),
        ("1!2.0", ""),
        ("1.0+local", ""),
    ],
)
def test_plugin_version_from_a_package_version(pep440: str, semver: str) -> None:
    assert plugin_version(pep440) == semver


def test_package_dependency_follows_pulumi_plugin_json(tmp_path: Path) -> None:
    def dependency(name: str, plugin: dict[str, object] | None, version: str = "1.2.3") -> object:
        path = ""
        if plugin is not None:
            path = str(tmp_path / f"{name}.json")
            Path(path).write_text(json.dumps(plugin))
        return package_dependency(Package(name, version, False, path))

    named = dependency("pulumi-acme", {"resource": True, "name": "acme2", "version": "9.9.9"})
    assert (named.name, named.version, named.kind) == ("acme2", "v9.9.9", "resource")  # type: ignore[attr-defined]
    derived = dependency("pulumi-acme", None, "2.0rc1")
    assert (derived.name, derived.version) == ("acme", "v2.0.0-rc.1")  # type: ignore[attr-defined]
    assert dependency("pulumi-acme", {"resource": False}) is None
    assert dependency("pulumi-policy", None) is None
    assert dependency("requests", None) is None


# -- the host as the engine drives it ------------------------------------------------------------


def test_serves_plugin_info(host: Host) -> None:
    info = host.stub.GetPluginInfo(empty_pb2.Empty(), timeout=30)
    assert info.version == importlib.metadata.version("pulumi")


def test_required_packages_of_this_project(host: Host) -> None:
    """The project's Pulumi.yaml options (pip, virtualenv .venv): every installed resource
    provider SDK, at the version its pulumi-plugin.json names; the policy SDK is not one."""
    info = program_info(PROJECT_ROOT, toolchain="pip", virtualenv=".venv")
    response = host.stub.GetRequiredPackages(
        language_pb2.GetRequiredPackagesRequest(info=info), timeout=60
    )
    packages = {p.name: p.version for p in response.packages}
    site = Path(str(importlib.metadata.distribution("pulumi-kubernetes").locate_file("")))
    kubernetes = json.loads((site / "pulumi_kubernetes" / "pulumi-plugin.json").read_text())
    assert packages["kubernetes"] == "v" + kubernetes["version"]
    assert packages["random"] == "v" + plugin_version(importlib.metadata.version("pulumi-random"))
    assert "policy" not in packages


def test_run_names_a_missing_virtualenv(host: Host, tmp_path: Path) -> None:
    request = language_pb2.RunRequest(
        info=program_info(tmp_path, toolchain="pip", virtualenv="no-such-venv"),
        pwd=str(tmp_path),
        project="p",
        stack="s",
    )
    with pytest.raises(grpc.RpcError) as raised:
        host.stub.Run(request, timeout=60)
    message = raised.value.details()
    assert str(tmp_path / "no-such-venv") in message
    assert "does not exist" in message


def test_run_of_a_folder_without_main_is_reported_to_the_engine(host: Host, tmp_path: Path) -> None:
    """The executor runs under the venv's Python, logs the error to the engine and bails (the
    user has seen it; the CLI adds nothing)."""
    request = language_pb2.RunRequest(
        info=program_info(tmp_path, toolchain="pip", virtualenv=str(VENV)),
        pwd=str(tmp_path),
        project="p",
        stack="s",
        monitor_address="127.0.0.1:1",
    )
    response = host.stub.Run(request, timeout=120)
    assert response.bail and not response.error
    errors = [log.message for log in host.engine.logs if log.severity == engine_pb2.ERROR]
    assert any("unable to find main python program `__main__.py`" in m for m in errors), errors


PROBE_PROGRAM = """\
import pulumi
from pulumi.runtime.config import is_config_secret


class Box(pulumi.ComponentResource):
    def __init__(self, name):
        super().__init__("test:index:Box", name)
        self.register_outputs({})


Box("box")
seen = [pulumi.get_project(), pulumi.get_stack(), pulumi.runtime.is_dry_run()]
pulumi.export("seen", [*seen, pulumi.Config().require("greeting"), is_config_secret("p:token")])
"""


def run_request(host: Host, program: Path, **fields: object) -> language_pb2.RunRequest:
    return language_pb2.RunRequest(
        info=program_info(program, toolchain="pip", virtualenv=str(VENV)),
        pwd=str(program),
        project="p",
        stack="s",
        monitor_address=host.engine_address,  # the fake monitor shares the engine's server
        **fields,  # type: ignore[arg-type]
    )


def test_run_configures_the_sdk_from_the_request(host: Host, tmp_path: Path) -> None:
    """Project, stack, dry run and config (secrets marked) reach the program, which registers
    its stack and resources with the monitor."""
    (tmp_path / "__main__.py").write_text(PROBE_PROGRAM)
    request = run_request(
        host,
        tmp_path,
        dryRun=True,
        config={"p:greeting": "hi", "p:token": "abc"},
        configSecretKeys=["p:token"],
    )
    response = host.stub.Run(request, timeout=120)
    assert (response.error, response.bail) == ("", False), host.stderr()
    assert host.monitor.registered == ["pulumi:pulumi:Stack", "test:index:Box"]
    outputs = host.monitor.outputs["urn:pulumi:s::p::pulumi:pulumi:Stack::p-s"]
    assert outputs["seen"] == ["p", "s", True, "hi", True]


def test_run_error_is_logged_without_traceback(host: Host, tmp_path: Path) -> None:
    (tmp_path / "__main__.py").write_text("import pulumi\nraise pulumi.RunError('no way')\n")
    response = host.stub.Run(run_request(host, tmp_path), timeout=120)
    assert response.error == "program exited with non-zero exit code: 1"
    errors = [log.message for log in host.engine.logs if log.severity == engine_pb2.ERROR]
    assert errors == ["no way"]


def test_unhandled_exception_is_logged_from_the_program_frames_on(
    host: Host, tmp_path: Path
) -> None:
    (tmp_path / "__main__.py").write_text(
        "def boom():\n    raise ValueError('bad value')\nboom()\n"
    )
    response = host.stub.Run(run_request(host, tmp_path), timeout=120)
    assert response.bail and not response.error
    errors = [log.message for log in host.engine.logs if log.severity == engine_pb2.ERROR]
    assert len(errors) == 1, errors
    assert errors[0].startswith("Program failed with an unhandled exception:\nTraceback")
    assert "ValueError: bad value" in errors[0]
    assert "executor.py" not in errors[0] and "runpy" not in errors[0]


def test_cancel_interrupts_a_running_program_quietly(host: Host, tmp_path: Path) -> None:
    """Cancel (like the engine closing the host) interrupts the program, which exits without
    a KeyboardInterrupt traceback that would bury the real error in the CLI's output."""
    started = tmp_path / "started"
    (tmp_path / "__main__.py").write_text(
        f"import pathlib, time\npathlib.Path({str(started)!r}).touch()\ntime.sleep(600)\n"
    )
    request = language_pb2.RunRequest(
        info=program_info(tmp_path, toolchain="pip", virtualenv=str(VENV)),
        pwd=str(tmp_path),
        project="p",
        stack="s",
        monitor_address=host.engine_address,
    )
    running = host.stub.Run.future(request, timeout=120)
    deadline = time.monotonic() + 60
    while not started.exists():
        assert time.monotonic() < deadline, f"the program did not start:\n{host.stderr()}"
        assert not running.done(), running.result()
        time.sleep(0.1)
    host.stub.Cancel(empty_pb2.Empty(), timeout=30)
    response = running.result(timeout=30)
    assert response.error == "program exited with non-zero exit code: 130"
    assert "KeyboardInterrupt" not in host.stderr()
    assert "Traceback" not in host.stderr()


def test_run_plugin_streams_output_and_exit_code(host: Host, tmp_path: Path) -> None:
    (tmp_path / "__main__.py").write_text(
        "import os, sys\n"
        "print('out', sys.argv[1:], os.getcwd(), os.environ['EXTRA'], flush=True)\n"
        "print('err', file=sys.stderr, flush=True)\n"
        "sys.exit(int(sys.argv[1]))\n"
    )
    cwd = tmp_path / "cwd"
    cwd.mkdir()

    def run(code: int) -> tuple[bytes, bytes, list[int]]:
        request = language_pb2.RunPluginRequest(
            info=program_info(tmp_path, virtualenv=str(VENV)),
            pwd=str(cwd),
            args=[str(code)],
            env=["EXTRA=yes"],
            kind="resource",
        )
        out, err, codes = b"", b"", []
        for message in host.stub.RunPlugin(request, timeout=120):
            out += message.stdout
            err += message.stderr
            if message.HasField("exitcode"):
                codes.append(message.exitcode)
        return out, err, codes

    out, err, codes = run(3)
    assert out == f"out ['3'] {cwd} yes\n".encode()
    assert err == b"err\n"
    assert codes == [3]
    assert run(0)[2] == []  # a clean exit ends the stream without a code


def test_cancelled_plugin_is_stopped(host: Host, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    (tmp_path / "__main__.py").write_text(
        "import os, pathlib, sys, time\n"
        f"pathlib.Path({str(pid_file)!r}).write_text(str(os.getpid()))\n"
        "print('started', flush=True)\n"
        "time.sleep(600)\n"
    )
    request = language_pb2.RunPluginRequest(
        info=program_info(tmp_path, virtualenv=str(VENV)), kind="resource"
    )
    call = host.stub.RunPlugin(request)
    out = b""
    while not out.endswith(b"\n"):
        out += next(call).stdout
    assert out == b"started\n"
    call.cancel()
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        time.sleep(0.1)
    assert not Path(f"/proc/{pid}").exists(), "the plugin outlived its cancelled RunPlugin call"


def test_policy_pack_runs_behind_the_proxy_with_the_stack_environment(
    host: Host, tmp_path: Path
) -> None:
    """As the engine does it: port from the stream, Handshake, ConfigureStack, then analysis;
    the pack sees the stack and its config through the environment the proxy set up."""
    (tmp_path / "PulumiPolicy.yaml").write_text("runtime: python\n")
    (tmp_path / "__main__.py").write_text(PROBE_PACK)
    request = language_pb2.RunPluginRequest(
        info=program_info(tmp_path),
        pwd=str(tmp_path),
        args=[host.engine_address],
        kind="analyzer",
        env=[f"PATH={os.environ['PATH']}"],
    )
    call = host.stub.RunPlugin(request)
    try:
        port = int(next(call).stdout)
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        analyzer = analyzer_pb2_grpc.AnalyzerStub(channel)
        analyzer.Handshake(
            analyzer_pb2.AnalyzerHandshakeRequest(engine_address=host.engine_address), timeout=30
        )
        analyzer.ConfigureStack(
            analyzer_pb2.AnalyzerStackConfigureRequest(
                project="proj", stack="dev", config={"proj:greeting": "hello"}, dry_run=True
            ),
            timeout=30,
        )
        info = analyzer.GetAnalyzerInfo(empty_pb2.Empty(), timeout=60)
        assert info.name == "langhost-probe"
        resource = analyzer_pb2.AnalyzerResource(
            type="test:index:Thing",
            name="thing",
            urn="urn:pulumi:dev::proj::test:index:Thing::thing",
        )
        response = analyzer.AnalyzeStack(
            analyzer_pb2.AnalyzeStackRequest(resources=[resource]), timeout=60
        )
        messages = [d.message for d in response.diagnostics]
        assert any(
            "langhost-probe stack=dev greeting=hello types=test:index:Thing" in m for m in messages
        ), messages
        channel.close()
    finally:
        call.cancel()


# -- the real CLI --------------------------------------------------------------------------------

needs_cli = pytest.mark.skipif(
    not PULUMI.exists(),
    reason=f"the Pulumi CLI is not built ({PULUMI} missing; `python -m tools.e2e build pulumi`)",
)

PROGRAM = """\
import pulumi


class Box(pulumi.ComponentResource):
    def __init__(self, name, opts=None):
        super().__init__("langhost:test:Box", name, None, opts)
        self.register_outputs({})


config = pulumi.Config()
if config.get_bool("fail"):
    raise pulumi.RunError("langhost-probe refuses to run")
print("program says hi")
box = Box("box")
pulumi.export("greeting", config.get("greeting") or "none")
pulumi.export("boxUrn", box.urn)
"""


@dataclass
class Cli:
    pulumi: Path
    project: Path
    pack: Path
    env: dict[str, str]
    marker: str

    def __call__(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(self.pulumi), *args, "--non-interactive", "--color", "never"],
            cwd=self.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            start_new_session=True,
        )
        if ok and done.returncode != 0:
            pytest.fail(
                f"pulumi {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
            )
        return done

    def strays(self) -> list[str]:
        """Command lines of processes still carrying this test's marker (the CLI must have
        stopped every language host, program and policy pack it started)."""
        return [cmdline for _, cmdline in marked_processes(self.marker)]


def marked_processes(marker: str) -> list[tuple[int, str]]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if marker.encode() in (proc / "environ").read_bytes():
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                found.append((int(proc.name), cmdline))
        except OSError:
            continue
    return found


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[Cli]:
    if not VENV_PYTHON.exists():
        pytest.skip(f"the project venv ({VENV}) is missing")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pulumi").symlink_to(PULUMI.resolve())
    write_language_host(bin_dir)
    project = tmp_path / "project"
    project.mkdir()
    (project / "Pulumi.yaml").write_text(
        "name: langhost-probe\nruntime:\n  name: python\n  options:\n"
        f"    toolchain: pip\n    virtualenv: {VENV}\n"
    )
    (project / "__main__.py").write_text(PROGRAM)
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "PulumiPolicy.yaml").write_text("runtime: python\n")
    (pack / "__main__.py").write_text(PROBE_PACK)
    marker = f"LANGHOST_TEST_{uuid.uuid4().hex}"
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(tmp_path / "home"),
        "PULUMI_HOME": str(tmp_path / "pulumi-home"),
        "PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}",
        "PULUMI_CONFIG_PASSPHRASE": "x",
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        "PULUMI_PYTHON_CMD": str(VENV_PYTHON),  # the pack sets no virtualenv
        marker: "1",
    }
    (tmp_path / "state").mkdir()
    runner = Cli(bin_dir / "pulumi", project, pack, env, marker)
    try:
        runner("login", f"file://{tmp_path / 'state'}")
        runner("stack", "init", "dev")
        runner("config", "set", "greeting", "hello")
        yield runner
    finally:
        for pid, _ in marked_processes(marker):  # whatever a failed run left behind
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.real
@needs_cli
def test_cli_preview_up_output_refresh_destroy(cli: Cli) -> None:
    preview = cli("preview")
    assert "langhost:test:Box" in preview.stdout
    assert "from $PATH" not in preview.stdout + preview.stderr  # the host sits beside the CLI
    assert "program says hi" in preview.stdout
    cli("up", "--yes")
    assert cli("stack", "output", "greeting").stdout.strip() == "hello"
    assert "langhost:test:Box::box" in cli("stack", "output", "boxUrn").stdout
    again = cli("up", "--yes")
    assert "2 unchanged" in again.stdout, again.stdout
    cli("refresh", "--yes")
    destroy = cli("destroy", "--yes")
    assert "2 deleted" in destroy.stdout, destroy.stdout
    assert not cli.strays(), cli.strays()


@pytest.mark.real
@needs_cli
def test_cli_policy_pack_advisory_and_mandatory(cli: Cli, tmp_path: Path) -> None:
    advisory = cli("preview", "--policy-pack", str(cli.pack))
    assert "langhost-probe stack=dev greeting=hello" in advisory.stdout, advisory.stdout
    assert "langhost:test:Box" in advisory.stdout
    mandatory_config = tmp_path / "mandatory.json"
    mandatory_config.write_text(json.dumps({"probe": "mandatory"}))
    failed = cli(
        "preview",
        "--policy-pack",
        str(cli.pack),
        "--policy-pack-config",
        str(mandatory_config),
        ok=False,
    )
    assert failed.returncode != 0
    assert "langhost-probe stack=dev" in failed.stdout + failed.stderr
    assert not cli.strays(), cli.strays()


@pytest.mark.real
@needs_cli
def test_cli_shows_a_run_error_without_traceback(cli: Cli) -> None:
    cli("config", "set", "fail", "true")
    failed = cli("preview", ok=False)
    output = failed.stdout + failed.stderr
    assert failed.returncode != 0
    assert "langhost-probe refuses to run" in output, output
    assert "Traceback" not in output, output
    assert not cli.strays(), cli.strays()


def test_wrapper_is_what_the_build_writes(tmp_path: Path) -> None:
    """The wrapper execs the project venv's Python on our package, whatever the caller's cwd."""
    wrapper = write_language_host(tmp_path)
    assert os.access(wrapper, os.X_OK)
    done = subprocess.run(
        [str(wrapper), "--version"], cwd=tmp_path, capture_output=True, text=True, check=False,
        timeout=60,
    )  # fmt: skip
    if not VENV_PYTHON.exists():
        assert done.returncode == 1 and "create the project venv" in done.stderr
        return
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == importlib.metadata.version("pulumi")
