"""The ``LanguageRuntime`` service: what the Pulumi engine asks of the Python language host.

Each method mirrors the upstream Go host's behaviour for the pip toolchain (see the package
docstring for what is left out). Errors the user must act on are returned as plain sentences.
"""

# ruff: noqa: N802 (the methods are named by the LanguageRuntime service)

from __future__ import annotations

import functools
import importlib.metadata
import json
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import grpc
from google.protobuf import empty_pb2, json_format
from pulumi.runtime.proto import language_pb2, language_pb2_grpc, plugin_pb2

from . import plugin_run
from .processes import Children
from .rpc import abort
from .toolchain import (
    HostError,
    Python,
    PythonOptions,
    list_packages,
    package_dependency,
    resolve_python,
)

LOG = logging.getLogger("langhost")
EXECUTOR = Path(__file__).resolve().with_name("executor.py")
EXIT_ERROR_SHOWN = 32
"""The executor's exit code for "the user has seen the error already" (upstream's too)."""

Request = TypeVar("Request")
Response = TypeVar("Response")
Method = Callable[[Any, Request, grpc.ServicerContext], Response]


def _sentences(method: Method[Request, Response]) -> Method[Request, Response]:
    """A HostError ends the call with its message as the gRPC status (the CLI prints it)."""

    @functools.wraps(method)
    def call(self: Any, request: Request, context: grpc.ServicerContext) -> Response:
        try:
            return method(self, request, context)
        except HostError as exc:
            abort(context, grpc.StatusCode.UNKNOWN, str(exc))

    return call


def _options(info: language_pb2.ProgramInfo, *, is_plugin: bool) -> PythonOptions:
    raw = json_format.MessageToDict(info.options) if info.HasField("options") else {}
    return PythonOptions.parse(info.root_directory, raw, is_plugin=is_plugin)


def _python(info: language_pb2.ProgramInfo, *, is_plugin: bool = False) -> Python:
    return resolve_python(_options(info, is_plugin=is_plugin))


def _exit_error(code: int) -> str:
    if code < 0:
        return f"program exited unexpectedly: killed by {signal.Signals(-code).name}"
    return f"program exited with non-zero exit code: {code}"


class LanguageHost(language_pb2_grpc.LanguageRuntimeServicer):
    def __init__(
        self,
        engine_address: str | None,
        child_env: dict[str, str],
        on_engine: Callable[[str], None] = lambda _: None,
    ) -> None:
        """``child_env`` is the environment children start from; ``on_engine`` learns the engine's
        address when a Handshake brings it (to watch that the engine lives)."""
        self.engine_address = engine_address
        self.children = Children()
        self._child_env = child_env
        self._on_engine = on_engine
        self._cancelled = threading.Event()

    def _env(self, python: Python, extra: dict[str, str] | None = None) -> dict[str, str]:
        return python.environment({**self._child_env, **(extra or {})})

    def Handshake(
        self, request: language_pb2.LanguageHandshakeRequest, context: grpc.ServicerContext
    ) -> language_pb2.LanguageHandshakeResponse:
        self.engine_address = request.engine_address
        self._on_engine(request.engine_address)
        return language_pb2.LanguageHandshakeResponse()

    def GetPluginInfo(
        self, request: empty_pb2.Empty, context: grpc.ServicerContext
    ) -> plugin_pb2.PluginInfo:
        return plugin_pb2.PluginInfo(version=importlib.metadata.version("pulumi"))

    def _dependencies(self, info: language_pb2.ProgramInfo) -> list[plugin_pb2.PackageDependency]:
        python = _python(info)
        packages = list_packages(python, cwd=Path(info.program_directory or "."))
        return [dep for p in packages if (dep := package_dependency(p)) is not None]

    @_sentences
    def GetRequiredPackages(
        self, request: language_pb2.GetRequiredPackagesRequest, context: grpc.ServicerContext
    ) -> language_pb2.GetRequiredPackagesResponse:
        return language_pb2.GetRequiredPackagesResponse(packages=self._dependencies(request.info))

    @_sentences
    def GetRequiredPlugins(
        self, request: language_pb2.GetRequiredPluginsRequest, context: grpc.ServicerContext
    ) -> language_pb2.GetRequiredPluginsResponse:
        plugins = [
            plugin_pb2.PluginDependency(
                name=d.name, kind=d.kind, version=d.version, server=d.server
            )
            for d in self._dependencies(request.info)
        ]
        return language_pb2.GetRequiredPluginsResponse(plugins=plugins)

    @_sentences
    def Run(
        self, request: language_pb2.RunRequest, context: grpc.ServicerContext
    ) -> language_pb2.RunResponse:
        if not self.engine_address:
            raise HostError("the engine address is unknown: pass it as argument or call Handshake")
        info = request.info
        python = _python(info)
        program_dir = info.program_directory or request.pwd or "."
        program = os.path.join(program_dir, info.entry_point or request.program or ".")
        args = {
            "monitor": request.monitor_address,
            "engine": self.engine_address,
            "project": request.project,
            "root_directory": info.root_directory,
            "stack": request.stack,
            "pwd": request.pwd,
            "dry_run": "true" if request.dryRun else "false",
            "parallel": str(request.parallel),
            "organization": request.organization,
        }
        # -P: this folder stays off the program's sys.path (the program cannot import our modules).
        argv = [python.executable, "-P", str(EXECUTOR)]
        argv += [item for key, value in args.items() if value for item in (f"--{key}", value)]
        argv += [program, *request.args]
        env = self._env(
            python,
            {
                "PULUMI_CONFIG": json.dumps(dict(request.config)),
                "PULUMI_CONFIG_SECRET_KEYS": json.dumps(list(request.configSecretKeys)),
            },
        )
        LOG.debug("running %s", argv)
        try:
            # stdout and stderr are ours: the engine shows what the program prints.
            process = self.children.start(argv, env=env, cwd=Path(request.pwd or program_dir))
        except OSError as exc:
            return language_pb2.RunResponse(
                error=f"problem executing program (could not run language executor): {exc}"
            )
        code = self.children.wait(
            process, lambda: self._cancelled.is_set() or not context.is_active()
        )
        if code == 0:
            return language_pb2.RunResponse()
        if code == EXIT_ERROR_SHOWN:
            return language_pb2.RunResponse(bail=True)
        return language_pb2.RunResponse(error=_exit_error(code))

    def InstallDependencies(
        self, request: language_pb2.InstallDependenciesRequest, context: grpc.ServicerContext
    ) -> Iterator[language_pb2.InstallDependenciesResponse]:
        """Never installs anything: checks that the environment exists and says which it is."""
        try:
            python = _python(request.info, is_plugin=request.is_plugin)
        except HostError as exc:
            abort(context, grpc.StatusCode.UNKNOWN, str(exc))
        where = f"virtualenv {python.venv}" if python.venv else python.executable
        yield language_pb2.InstallDependenciesResponse(
            stdout=f"Using {where}; this language host (tools/e2e/langhost) does not install "
            "dependencies: install them into that environment yourself.\n".encode()
        )

    def RuntimeOptionsPrompts(
        self, request: language_pb2.RuntimeOptionsRequest, context: grpc.ServicerContext
    ) -> language_pb2.RuntimeOptionsResponse:
        return language_pb2.RuntimeOptionsResponse()

    @_sentences
    def About(
        self, request: language_pb2.AboutRequest, context: grpc.ServicerContext
    ) -> language_pb2.AboutResponse:
        python = _python(request.info)
        script = (
            "import importlib.metadata as m, json, platform, sys\n"
            "try: pip = m.version('pip')\nexcept Exception: pip = ''\n"
            "print(json.dumps([sys.executable, platform.python_version(), pip]))"
        )
        executable, version, pip = json.loads(python.run(["-c", script]))
        return language_pb2.AboutResponse(
            executable=executable,
            version=version,
            metadata={"toolchain": "pip", "toolchainVersion": pip, "typechecker": "none"},
        )

    @_sentences
    def GetProgramDependencies(
        self, request: language_pb2.GetProgramDependenciesRequest, context: grpc.ServicerContext
    ) -> language_pb2.GetProgramDependenciesResponse:
        packages = list_packages(_python(request.info))
        return language_pb2.GetProgramDependenciesResponse(
            dependencies=[
                language_pb2.DependencyInfo(name=p.name, version=p.version)
                for p in packages
                if request.transitiveDependencies or not p.required
            ]
        )

    def RunPlugin(
        self, request: language_pb2.RunPluginRequest, context: grpc.ServicerContext
    ) -> Iterator[language_pb2.RunPluginResponse]:
        try:
            command = self._plugin_command(request)
        except HostError as exc:
            abort(context, grpc.StatusCode.UNKNOWN, str(exc))
        LOG.debug("running plugin %s", command.argv)
        yield from plugin_run.stream(command, self.children, context)

    def _plugin_command(self, request: language_pb2.RunPluginRequest) -> plugin_run.PluginCommand:
        info = request.info
        policy_pack = request.kind == "analyzer"
        python = _python(info, is_plugin=not policy_pack)
        program_dir = info.program_directory or request.program
        extra = dict(item.split("=", 1) for item in request.env if "=" in item)
        env = self._env(python, extra)
        if policy_pack:
            # Policy packs run from their own folder, with the folder as last argument.
            argv = [python.executable, "-u", "-m", "pulumi.policy", *request.args, program_dir]
            return plugin_run.PluginCommand(argv, env, Path(program_dir), policy_pack=True)
        if not (Path(info.root_directory or program_dir) / "__main__.py").is_file():
            raise HostError(
                f"plugin in {program_dir} is not runnable: it has no __main__.py (packaged "
                "plugins run through pulumi.run.plugin are not supported by tools/e2e/langhost)"
            )
        argv = [python.executable, program_dir, *request.args]
        return plugin_run.PluginCommand(argv, env, Path(request.pwd) if request.pwd else None,
                                        policy_pack=False)  # fmt: skip

    def Cancel(self, request: empty_pb2.Empty, context: grpc.ServicerContext) -> empty_pb2.Empty:
        """Interrupt running programs (their Run calls then return)."""
        self._cancelled.set()
        return empty_pb2.Empty()

    def shutdown(self) -> None:
        self._cancelled.set()
        self.children.stop_all()
