"""One ``RunPlugin`` call: a plugin process whose output and exit code stream back to the engine.

The engine reads the plugin's port from the first line of the streamed stdout, then talks to it
over gRPC. For a policy pack that first line is the PolicyProxy's port (see policy_proxy.py); the
pack itself starts once the engine has said which stack it judges.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import grpc
from pulumi.runtime.proto import analyzer_pb2, language_pb2

from .policy_proxy import PolicyProxy
from .processes import Children
from .rpc import abort

_Item = language_pb2.RunPluginResponse | str | None
"""A message to stream, an error to end the call with, or the end."""


@dataclass(frozen=True)
class PluginCommand:
    argv: list[str]
    env: dict[str, str]
    cwd: Path | None
    policy_pack: bool
    """Start it behind a PolicyProxy, with the stack's environment."""


def policy_environment(
    config: analyzer_pb2.AnalyzerStackConfigureRequest | None,
) -> dict[str, str]:
    """What ``pulumi_policy`` reads to know the stack (the variables upstream sets)."""
    if config is None:
        return {}
    env = {
        "PULUMI_ORGANIZATION": config.organization,
        "PULUMI_PROJECT": config.project,
        "PULUMI_STACK": config.stack,
        "PULUMI_DRY_RUN": "true" if config.dry_run else "false",
        "PULUMI_CONFIG": json.dumps(dict(config.config)) if config.config else "",
    }
    return {key: value for key, value in env.items() if value}


def _stdout(data: bytes) -> language_pb2.RunPluginResponse:
    return language_pb2.RunPluginResponse(stdout=data)


def _pump(
    stream: IO[bytes], out: queue.Queue[_Item], stderr: bool, proxy: PolicyProxy | None
) -> None:
    """Forward a child's output as it comes; a policy pack's first line goes to the proxy."""
    if proxy is not None:
        _attach(proxy, stream, out)
    while chunk := stream.read1(65536):  # type: ignore[attr-defined]
        out.put(
            language_pb2.RunPluginResponse(stderr=chunk)
            if stderr
            else language_pb2.RunPluginResponse(stdout=chunk)
        )


def stream(
    command: PluginCommand, children: Children, context: grpc.ServicerContext
) -> Iterator[language_pb2.RunPluginResponse]:
    """The RunPlugin response stream; the child is stopped when the engine ends the call."""
    items: queue.Queue[_Item] = queue.Queue()
    ended = threading.Event()
    context.add_callback(ended.set)
    proxy = PolicyProxy() if command.policy_pack else None
    if proxy is not None:
        items.put(_stdout(f"{proxy.port}\n".encode()))
    threading.Thread(
        target=_supervise, args=(command, children, proxy, items, ended), daemon=True
    ).start()
    while (item := items.get()) is not None:
        if isinstance(item, str):
            abort(context, grpc.StatusCode.UNKNOWN, item)
        yield item


def _supervise(
    command: PluginCommand,
    children: Children,
    proxy: PolicyProxy | None,
    items: queue.Queue[_Item],
    ended: threading.Event,
) -> None:
    try:
        env = command.env
        if proxy is not None:
            config = proxy.await_configuration(ended)
            if ended.is_set():
                return
            env = {**env, **policy_environment(config)}
        try:
            process = children.start(
                command.argv,
                env=env,
                cwd=command.cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except OSError as exc:
            items.put(f"problem executing plugin program (could not run {command.argv[0]}): {exc}")
            return
        assert process.stdout is not None and process.stderr is not None
        pumps = [
            threading.Thread(target=_pump, args=(process.stderr, items, True, None)),
            threading.Thread(target=_pump, args=(process.stdout, items, False, proxy)),
        ]
        for pump in pumps:
            pump.start()
        code = children.wait(process, ended.is_set)
        for pump in pumps:
            pump.join()
        if code != 0:
            items.put(language_pb2.RunPluginResponse(exitcode=code if code > 0 else -1))
    finally:
        if proxy is not None:
            proxy.stop()
        items.put(None)


def _attach(proxy: PolicyProxy, stdout: IO[bytes], items: queue.Queue[_Item]) -> None:
    """Read the pack's port (its first stdout line) and hand the proxy over to it."""
    first = stdout.readline()
    try:
        port = int(first.strip())
    except ValueError:
        if first:
            items.put(_stdout(first))  # whatever the pack said instead is the user's clue
        proxy.fail(f"the policy pack did not print its port (first line: {first[:200]!r})")
        return
    proxy.attach(port)
