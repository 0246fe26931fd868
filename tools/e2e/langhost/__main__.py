"""``python -m tools.e2e.langhost [flags] [ENGINE_ADDRESS]``: serve, print the port, wait.

This is the plugin startup contract of the Pulumi CLI: the first stdout line is the port of the
gRPC server on 127.0.0.1; the engine's address comes as the last argument (or later in a
Handshake); ``--tracing``, ``-v=N``, ``--logtostderr`` and ``--logflow`` may precede it. Anything
the host writes to stderr the CLI shows the user, so it logs only warnings unless asked for more.
The host stops on SIGINT/SIGTERM (what the CLI sends when it closes a plugin) and when the engine
stops answering health checks, stopping its children first.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from types import FrameType

import grpc
from pulumi.runtime.proto import language_pb2_grpc

from .host import LanguageHost
from .rpc import GRPC_OPTIONS

HEALTH_EVERY_S = 10.0


def watch_engine(address: str, stop: threading.Event) -> None:
    """Set ``stop`` once the engine no longer answers (the CLI died without closing us)."""
    channel = grpc.insecure_channel(address)
    check = channel.unary_unary(
        "/grpc.health.v1.Health/Check",
        request_serializer=lambda _: b"",
        response_deserializer=lambda data: data,
    )

    def loop() -> None:
        while not stop.wait(HEALTH_EVERY_S):
            try:
                check(None, timeout=60)
            except grpc.RpcError as exc:
                if exc.code() not in (
                    grpc.StatusCode.UNIMPLEMENTED,
                    grpc.StatusCode.DEADLINE_EXCEEDED,
                ):
                    logging.getLogger("langhost").warning("engine %s is gone: stopping", address)
                    stop.set()
        channel.close()

    threading.Thread(target=loop, daemon=True).start()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="pulumi-language-python", description=__doc__)
    parser.add_argument("engine", nargs="?", help="the engine's gRPC address")
    parser.add_argument("--tracing", help="accepted and ignored")
    parser.add_argument("--logtostderr", action="store_true")
    parser.add_argument("--logflow", action="store_true", help="accepted and ignored")
    parser.add_argument("-v", type=int, default=0, help="verbosity (debug logs from 5)")
    parser.add_argument("--version", action="store_true")
    args = parser.parse_args(argv)
    if args.version:
        from importlib.metadata import version

        print(version("pulumi"))
        return 0
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if args.logtostderr and args.v >= 5 else logging.WARNING,
        format="langhost: %(message)s",
    )

    stop = threading.Event()
    host = LanguageHost(
        args.engine,
        dict(os.environ),
        on_engine=lambda address: watch_engine(address, stop),
    )
    server = grpc.server(ThreadPoolExecutor(max_workers=64), options=GRPC_OPTIONS)
    language_pb2_grpc.add_LanguageRuntimeServicer_to_server(host, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    if args.engine:
        watch_engine(args.engine, stop)
    stop.wait()
    host.shutdown()
    server.stop(grace=1).wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
