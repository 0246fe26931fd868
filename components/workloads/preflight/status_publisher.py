#!/usr/bin/env python3
"""Job status on Redis pub/sub: run a command and publish its start, progress and exit.

A TrainingJob that publishes status runs its trainer through this script::

    python3 /preflight/status_publisher.py --status-channel training_status --job llama -- \\
        torchrun /workspace/train.py ...

and every subscriber of the channel (``redis-cli subscribe training_status``) sees one JSON
message per event, with the job, the pod, the worker's rank and the time::

    {"event": "start", "job": "llama", "pod": "llama-0-x7k2p", "rank": "0", "time": "...",
     "command": "torchrun"}
    {"event": "progress", "job": "llama", ..., "step": 100, "loss": 1.93}
    {"event": "exit", "job": "llama", ..., "exit_code": 0}

Progress: the command prints a line ``progress: <JSON object>`` (``print("progress:",
json.dumps({"step": 100}), flush=True)``); its fields join the message (text that is not a JSON
object arrives as ``message``). Every line of the command's output is passed on unchanged.

The job never fails because status could not be published: a Redis that is down, refuses the
password or answers slowly costs at most ``--timeout`` seconds per attempt (connect and each
reply), one line on stderr when publishing stops working (and one when it works again), and
after a failure no new attempt for ``--retry-after`` seconds. The script exits with the
command's exit code (128 + the signal's number when a signal ended it) and passes SIGTERM and
SIGINT on to the command, so a preempted trainer still checkpoints.

The connection comes from ``$REDIS_URL`` (``redis://[user]:<password>@host:port/db``, from the
team Redis Secret), the channel from ``--status-channel`` (default ``$STATUS_CHANNEL``).
Like ``start_check.py`` it is the standard library only, Python 3.9 syntax, and speaks RESP
(Redis' protocol) itself: ``AUTH`` and ``PUBLISH``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any, TextIO
from urllib.parse import unquote, urlsplit

PREFIX = "status:"
PROGRESS_PREFIX = "progress:"
"""A line of the command's output starting with this (after leading blanks) is a progress
event."""
DEFAULT_TIMEOUT_SECONDS = 2.0
DEFAULT_RETRY_AFTER_SECONDS = 30.0
DEFAULT_PORT = 6379
USAGE_EXIT_CODE = 2
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class RedisError(Exception):
    """Publishing failed: unreachable, refused, timed out, or an error reply."""


def resp_command(*parts: str | bytes) -> bytes:
    """One RESP array of bulk strings: ``*2\\r\\n$4\\r\\nAUTH\\r\\n$2\\r\\npw\\r\\n``."""
    out = [b"*%d\r\n" % len(parts)]
    for part in parts:
        data = part.encode("utf-8") if isinstance(part, str) else part
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


class Endpoint:
    """Where and as whom to connect, from a ``redis://`` URL."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme != "redis":
            raise ValueError(f"not a redis:// URL (scheme {parts.scheme or 'none'!r})")
        if not parts.hostname:
            raise ValueError("the URL names no host")
        self.host = parts.hostname
        try:
            self.port = parts.port or DEFAULT_PORT
        except ValueError as exc:
            raise ValueError(f"bad port: {exc}") from None
        self.username = unquote(parts.username) if parts.username else None
        self.password = unquote(parts.password) if parts.password is not None else None

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


class Publisher:
    """A lazily (re)connected RESP client that publishes to one channel and never raises."""

    def __init__(
        self,
        endpoint: Endpoint | None,
        channel: str,
        timeout: float,
        retry_after: float,
        err: TextIO,
        clock: Any = time.monotonic,
    ) -> None:
        self.endpoint = endpoint
        self.channel = channel
        self.timeout = timeout
        self.retry_after = retry_after
        self.err = err
        self.clock = clock
        self._sock: socket.socket | None = None
        self._buffer = b""
        self._failing_since: float | None = None
        self._failure: str | None = None

    # --- the wire ---

    def _connect(self) -> socket.socket:
        assert self.endpoint is not None
        try:
            sock = socket.create_connection(
                (self.endpoint.host, self.endpoint.port), timeout=self.timeout
            )
        except OSError as exc:
            raise RedisError(f"cannot connect: {exc.strerror or exc}") from None
        sock.settimeout(self.timeout)
        self._sock, self._buffer = sock, b""
        if self.endpoint.password is not None:
            credentials = [self.endpoint.password]
            if self.endpoint.username:
                credentials.insert(0, self.endpoint.username)
            self._call("AUTH", *credentials)
        return sock

    def _fill(self, size: int) -> None:
        """Read until the buffer holds ``size`` bytes; bounded by the socket's timeout."""
        assert self._sock is not None
        while len(self._buffer) < size:
            try:
                chunk = self._sock.recv(4096)
            except socket.timeout:  # noqa: UP041  (Python 3.9: not yet TimeoutError)
                raise RedisError(f"no answer within {self.timeout:g}s") from None
            except OSError as exc:
                raise RedisError(f"connection failed: {exc.strerror or exc}") from None
            if not chunk:
                raise RedisError("the server closed the connection")
            self._buffer += chunk

    def _read_line(self) -> bytes:
        while b"\r\n" not in self._buffer:
            self._fill(len(self._buffer) + 1)
        line, _, self._buffer = self._buffer.partition(b"\r\n")
        return line

    def _reply(self) -> Any:
        """One RESP2 reply; an error reply raises."""
        line = self._read_line()
        kind, rest = line[:1], line[1:].decode("utf-8", "replace")
        try:
            if kind == b"+":
                return rest
            if kind == b"-":
                raise RedisError(f"the server refused: {rest}")
            if kind == b":":
                return int(rest)
            if kind == b"$":
                length = int(rest)
                if length < 0:
                    return None
                self._fill(length + 2)
                data, self._buffer = self._buffer[:length], self._buffer[length + 2 :]
                return data.decode("utf-8", "replace")
            if kind == b"*":
                return [self._reply() for _ in range(max(int(rest), 0))]
        except ValueError:
            pass
        raise RedisError(f"unexpected reply {line[:40]!r}")

    def _call(self, *parts: str) -> Any:
        assert self._sock is not None
        try:
            self._sock.sendall(resp_command(*parts))
        except OSError as exc:
            raise RedisError(f"cannot send: {exc.strerror or exc}") from None
        return self._reply()

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    # --- publishing ---

    def publish(self, message: Mapping[str, Any], force: bool = False) -> bool:
        """Publish one JSON message; False (and a stderr line, once per outage) if it failed.
        Within ``retry_after`` of a failure nothing is attempted, unless ``force`` (the exit)."""
        if self.endpoint is None:
            return False
        now = self.clock()
        waiting = self._failing_since is not None and now - self._failing_since < self.retry_after
        if waiting and not force:
            return False
        payload = json.dumps(message, separators=(", ", ": "), default=str)
        try:
            if self._sock is None:
                self._connect()
            self._call("PUBLISH", self.channel, payload)
        except RedisError as exc:
            self.close()
            reason = str(exc)
            if self._failure != reason:
                print(
                    f"{PREFIX} cannot publish to {self.channel!r} on {self.endpoint}: {reason}; "
                    f"the job goes on without status (next attempt in {self.retry_after:g}s)",
                    file=self.err,
                    flush=True,
                )
            self._failing_since, self._failure = now, reason
            return False
        if self._failure is not None:
            print(f"{PREFIX} publishing to {self.channel!r} again", file=self.err, flush=True)
        self._failing_since = self._failure = None
        return True


def now_iso() -> str:
    utc = datetime.timezone.utc  # noqa: UP017  (datetime.UTC is Python 3.11)
    return datetime.datetime.now(utc).isoformat(timespec="milliseconds")


def progress_fields(line: str) -> dict[str, Any] | None:
    """The fields of a ``progress:`` line, or None for any other line."""
    text = line.lstrip()
    if not text.startswith(PROGRESS_PREFIX):
        return None
    body = text[len(PROGRESS_PREFIX) :].strip()
    try:
        value = json.loads(body)
    except ValueError:
        value = None
    if isinstance(value, dict):
        return value
    return {"message": body}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="status_publisher.py",
        description="Run a command; publish its start, progress and exit on Redis pub/sub.",
    )
    parser.add_argument(
        "--status-channel",
        default=None,
        help="pub/sub channel (default: $STATUS_CHANNEL)",
    )
    parser.add_argument("--job", default=None, help="the job's name in every message")
    parser.add_argument(
        "--redis-url-env",
        default="REDIS_URL",
        help="environment variable holding the redis:// URL (default REDIS_URL)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_SECONDS,
        help="seconds for the connect and for each reply",
    )
    parser.add_argument(
        "--retry-after",
        type=float,
        default=DEFAULT_RETRY_AFTER_SECONDS,
        help="seconds without attempts after a failure",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- command [args...]")
    return parser


def _identity(args: argparse.Namespace, environ: Mapping[str, str]) -> dict[str, Any]:
    identity: dict[str, Any] = {}
    if args.job:
        identity["job"] = args.job
    if environ.get("HOSTNAME"):
        identity["pod"] = environ["HOSTNAME"]
    rank = environ.get("JOB_COMPLETION_INDEX", environ.get("NODE_RANK"))
    if rank is not None:
        identity["rank"] = rank
    return identity


def _endpoint(url: str | None, variable: str, err: TextIO) -> Endpoint | None:
    if not url:
        print(f"{PREFIX} ${variable} is not set; the job runs without status", file=err)
        return None
    try:
        return Endpoint(url)
    except ValueError as exc:
        print(f"{PREFIX} ${variable} is unusable ({exc}); the job runs without status", file=err)
        return None


def main(
    argv: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Run the command and return its exit code; the streams and environment are injectable."""
    env = os.environ if environ is None else environ
    stdout = sys.stdout if out is None else out
    stderr = sys.stderr if err is None else err
    args = build_parser().parse_args(argv)
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        print(f"{PREFIX} no command to run (status_publisher.py [options] -- command)", file=stderr)
        return USAGE_EXIT_CODE
    channel = args.status_channel or env.get("STATUS_CHANNEL") or ""
    endpoint = None
    if not channel:
        print(f"{PREFIX} no --status-channel nor $STATUS_CHANNEL; no status", file=stderr)
    else:
        endpoint = _endpoint(env.get(args.redis_url_env), args.redis_url_env, stderr)
    publisher = Publisher(endpoint, channel, args.timeout, args.retry_after, stderr)
    identity = _identity(args, env)

    def publish(event: str, **fields: Any) -> None:
        message = {"event": event, **identity, "time": now_iso(), **fields}
        publisher.publish(message, force=event == "exit")

    publish("start", command=os.path.basename(command[0]))
    try:
        child = subprocess.Popen(
            command, stdout=subprocess.PIPE, env=dict(env), bufsize=1, text=True, errors="replace"
        )
    except OSError as exc:
        print(f"{PREFIX} cannot run {command[0]!r}: {exc.strerror or exc}", file=stderr)
        code = 127 if isinstance(exc, FileNotFoundError) else 126
        publish("exit", exit_code=code, error=f"cannot run {command[0]!r}")
        publisher.close()
        return code

    def forward(signum: int, _frame: Any) -> None:
        child.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED_SIGNALS}
    try:
        assert child.stdout is not None
        for line in child.stdout:
            stdout.write(line)
            stdout.flush()
            fields = progress_fields(line)
            if fields is not None:
                publish("progress", **fields)
        returncode = child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if returncode < 0:
        name = signal.Signals(-returncode).name
        code = 128 - returncode
        publish("exit", exit_code=code, signal=name)
    else:
        code = returncode
        publish("exit", exit_code=code)
    publisher.close()
    return code


if __name__ == "__main__":
    sys.exit(main())
