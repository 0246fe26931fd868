"""An Analyzer server that stands in for a Python policy pack until the pack is running.

Python policy packs (``pulumi_policy``) read the stack they judge from environment variables
(``PULUMI_PROJECT``, ``PULUMI_STACK``, ``PULUMI_DRY_RUN``, ``PULUMI_CONFIG``, ...), but the engine
sends it over gRPC (``ConfigureStack``) to a pack it has already started. So, as the upstream host
does, the pack's port the engine sees is this proxy's: it answers ``Handshake`` itself, waits for
``ConfigureStack`` (or any other call, which means "no stack"), then the host starts the pack with
that environment, and every call from then on is forwarded to the pack.
"""

# ruff: noqa: N802 (the methods are named by the Analyzer service)

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import grpc
from google.protobuf import empty_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc, plugin_pb2

from .rpc import GRPC_OPTIONS, abort

Response = TypeVar("Response")


class PolicyProxy(analyzer_pb2_grpc.AnalyzerServicer):
    """``port`` is where the engine connects; ``attach`` hands over to the real pack."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._configured = threading.Event()
        self._config: analyzer_pb2.AnalyzerStackConfigureRequest | None = None
        self._attached = threading.Event()
        self._client: analyzer_pb2_grpc.AnalyzerStub | None = None
        self._channel: grpc.Channel | None = None
        self._failure = ""
        self._server = grpc.server(ThreadPoolExecutor(max_workers=16), options=GRPC_OPTIONS)
        analyzer_pb2_grpc.add_AnalyzerServicer_to_server(self, self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()

    def await_configuration(
        self, stopped: threading.Event
    ) -> analyzer_pb2.AnalyzerStackConfigureRequest | None:
        """The stack the engine configured (None: it asked for something else first). Returns None
        too when ``stopped`` is set meanwhile."""
        while not self._configured.wait(0.1):
            if stopped.is_set():
                return None
        return self._config

    def attach(self, port: int) -> None:
        """Connect to the pack listening on ``port`` and replay the stack configuration to it."""
        channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=GRPC_OPTIONS)
        client = analyzer_pb2_grpc.AnalyzerStub(channel)
        if self._config is not None:
            try:
                client.ConfigureStack(self._config, timeout=120)
            except grpc.RpcError as exc:
                if exc.code() != grpc.StatusCode.UNIMPLEMENTED:  # older packs lack it: fine
                    channel.close()
                    self.fail(f"policy pack configuration failed: {exc.details()}")
                    return
        with self._lock:
            self._channel, self._client = channel, client
        self._attached.set()

    def fail(self, reason: str) -> None:
        """The pack will never answer (it did not start, or exited): calls fail with ``reason``."""
        with self._lock:
            self._failure = self._failure or reason
        self._attached.set()

    def stop(self) -> None:
        self.fail("policy pack exited")
        self._server.stop(grace=1).wait()
        with self._lock:
            if self._channel is not None:
                self._channel.close()

    # The engine's calls.

    def Handshake(
        self, request: analyzer_pb2.AnalyzerHandshakeRequest, context: grpc.ServicerContext
    ) -> analyzer_pb2.AnalyzerHandshakeResponse:
        return analyzer_pb2.AnalyzerHandshakeResponse()

    def ConfigureStack(
        self, request: analyzer_pb2.AnalyzerStackConfigureRequest, context: grpc.ServicerContext
    ) -> analyzer_pb2.AnalyzerStackConfigureResponse:
        self._settle(request)
        return analyzer_pb2.AnalyzerStackConfigureResponse()

    def _settle(self, config: analyzer_pb2.AnalyzerStackConfigureRequest | None) -> None:
        with self._lock:
            if not self._configured.is_set():
                self._config = config
                self._configured.set()

    def _forward(
        self,
        call: Callable[[analyzer_pb2_grpc.AnalyzerStub], Callable[..., Response]],
        request: Any,
        context: grpc.ServicerContext,
    ) -> Response:
        self._settle(None)  # e.g. `pulumi policy publish` asks for the info without a stack
        while not self._attached.wait(0.1):
            if not context.is_active():
                abort(context, grpc.StatusCode.CANCELLED, "cancelled")
        with self._lock:
            client, failure = self._client, self._failure
        if client is None:
            abort(context, grpc.StatusCode.UNAVAILABLE, f"policy pack not started: {failure}")
        try:
            return call(client)(request)
        except grpc.RpcError as exc:
            abort(context, exc.code(), exc.details() or "")

    def Analyze(
        self, request: analyzer_pb2.AnalyzeRequest, context: grpc.ServicerContext
    ) -> analyzer_pb2.AnalyzeResponse:
        return self._forward(lambda c: c.Analyze, request, context)

    def AnalyzeStack(
        self, request: analyzer_pb2.AnalyzeStackRequest, context: grpc.ServicerContext
    ) -> analyzer_pb2.AnalyzeResponse:
        return self._forward(lambda c: c.AnalyzeStack, request, context)

    def Remediate(
        self, request: analyzer_pb2.AnalyzeRequest, context: grpc.ServicerContext
    ) -> analyzer_pb2.RemediateResponse:
        return self._forward(lambda c: c.Remediate, request, context)

    def GetAnalyzerInfo(
        self, request: empty_pb2.Empty, context: grpc.ServicerContext
    ) -> analyzer_pb2.AnalyzerInfo:
        return self._forward(lambda c: c.GetAnalyzerInfo, request, context)

    def GetPluginInfo(
        self, request: empty_pb2.Empty, context: grpc.ServicerContext
    ) -> plugin_pb2.PluginInfo:
        return self._forward(lambda c: c.GetPluginInfo, request, context)

    def Configure(
        self, request: analyzer_pb2.ConfigureAnalyzerRequest, context: grpc.ServicerContext
    ) -> empty_pb2.Empty:
        return self._forward(lambda c: c.Configure, request, context)

    def Cancel(self, request: empty_pb2.Empty, context: grpc.ServicerContext) -> empty_pb2.Empty:
        return self._forward(lambda c: c.Cancel, request, context)
