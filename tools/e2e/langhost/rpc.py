"""gRPC settings and helpers shared by the host's servers and clients."""

from __future__ import annotations

from typing import NoReturn

import grpc

GRPC_OPTIONS = [
    ("grpc.max_receive_message_length", 400 * 1024 * 1024),
    ("grpc.max_send_message_length", 400 * 1024 * 1024),
]
"""The engine's message size limit (resource inputs such as rendered charts can be large)."""


def abort(context: grpc.ServicerContext, code: grpc.StatusCode, message: str) -> NoReturn:
    """End the call with ``message`` as its status (what the CLI prints)."""
    context.abort(code, message)
    raise AssertionError("unreachable: ServicerContext.abort raises")
