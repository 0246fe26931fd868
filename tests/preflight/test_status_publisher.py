"""The status publisher against a real ``redis-server`` (Debian package ``redis-server``) on a
loopback port with ``requirepass``: what a subscriber sees of a job's life, and a job that runs
on, unharmed, when Redis refuses the password or is down.

The script runs as shipped (``python3 -I <file>``), with a child command that prints progress
lines. The server is started per test module and stopped in a ``finally``, on failure too.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.team_redis import DEFAULT_STATUS_CHANNEL
from components.workloads import preflight
from components.workloads.preflight import status_publisher

SCRIPT = Path(status_publisher.__file__)
PASSWORD = "loopback-test-password"
WAIT_S = 20.0
POLL_S = 0.05


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def command(sock: socket.socket, *parts: str) -> None:
    sock.sendall(status_publisher.resp_command(*parts))


class Subscriber:
    """A RESP subscriber of its own (not the publisher's code): what ``redis-cli subscribe``
    prints, as parsed messages."""

    def __init__(self, port: int, channel: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
        self.file = self.sock.makefile("rb")
        command(self.sock, "AUTH", PASSWORD)
        assert self.file.readline() == b"+OK\r\n"
        command(self.sock, "SUBSCRIBE", channel)
        assert self._array() == ["subscribe", channel, 1]

    def _value(self) -> Any:
        line = self.file.readline().rstrip(b"\r\n")
        kind, rest = line[:1], line[1:].decode()
        if kind == b":":
            return int(rest)
        if kind == b"$":
            data = self.file.read(int(rest) + 2)[:-2]
            return data.decode()
        if kind == b"*":
            return [self._value() for _ in range(int(rest))]
        raise AssertionError(f"unexpected reply {line!r}")

    def _array(self) -> list[Any]:
        value = self._value()
        assert isinstance(value, list)
        return value

    def messages(self, until_event: str = "exit") -> list[dict[str, Any]]:
        """Messages up to and including the first ``until_event`` one (bounded by the timeout)."""
        found: list[dict[str, Any]] = []
        while not found or found[-1]["event"] != until_event:
            kind, _channel, payload = self._array()
            assert kind == "message"
            found.append(json.loads(payload))
        return found

    def nothing_within(self, seconds: float) -> bool:
        self.sock.settimeout(seconds)
        try:
            return self.sock.recv(1) == b""
        except TimeoutError:
            return True
        finally:
            self.sock.settimeout(WAIT_S)

    def close(self) -> None:
        self.file.close()
        self.sock.close()


@pytest.fixture(scope="module")
def redis_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A redis-server with requirepass on a free loopback port; stopped in any case."""
    binary = shutil.which("redis-server")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is not installed (apt-get install -y redis-server)")
        pytest.skip("redis-server is not installed (apt-get install -y redis-server)")
    work = tmp_path_factory.mktemp("redis")
    port = free_port()
    config = work / "redis.conf"
    config.write_text(
        f'bind 127.0.0.1\nport {port}\nrequirepass {PASSWORD}\ndir {work}\nsave ""\n'
        'appendonly no\nlogfile ""\n',
        encoding="utf-8",
    )
    log = (work / "server.log").open("wb")
    server = subprocess.Popen([binary, str(config)], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + WAIT_S
        while True:
            assert server.poll() is None, (work / "server.log").read_text()
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                    command(sock, "AUTH", PASSWORD)
                    command(sock, "PING")
                    if sock.makefile("rb").read(12) == b"+OK\r\n+PONG\r\n":
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "redis-server did not answer"
            time.sleep(POLL_S)
        yield port
    finally:
        server.terminate()
        try:
            server.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


@pytest.fixture
def subscriber(redis_port: int) -> Iterator[Subscriber]:
    subscribed = Subscriber(redis_port, DEFAULT_STATUS_CHANNEL)
    try:
        yield subscribed
    finally:
        subscribed.close()


CHILD = (
    "import json, sys\n"
    "print('loading data', flush=True)\n"
    "print('progress:', json.dumps({'step': 1, 'loss': 2.5}), flush=True)\n"
    "print('  progress: half way', flush=True)\n"
    "print('to stderr', file=sys.stderr, flush=True)\n"
    "sys.exit(int(sys.argv[1]))\n"
)


def run_job(
    url: str | None, code: int = 0, *extra: str, timeout: float = WAIT_S
) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOSTNAME": "llama-0-abcde",
        "JOB_COMPLETION_INDEX": "0",
        "STATUS_CHANNEL": DEFAULT_STATUS_CHANNEL,
    }
    if url is not None:
        env["REDIS_URL"] = url
    argv = [sys.executable, "-I", str(SCRIPT), "--job", "llama", *extra]
    argv += ["--", sys.executable, "-c", CHILD, str(code)]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)


def test_a_subscriber_sees_start_progress_and_exit_in_order(
    redis_port: int, subscriber: Subscriber
) -> None:
    done = run_job(f"redis://:{PASSWORD}@127.0.0.1:{redis_port}/0", 3)
    assert done.returncode == 3  # the command's exit code, passed on
    # The command's output, unchanged; nothing of the publisher's on a healthy Redis.
    assert done.stdout.splitlines() == [
        "loading data",
        'progress: {"step": 1, "loss": 2.5}',
        "  progress: half way",
    ]
    assert done.stderr == "to stderr\n"
    messages = subscriber.messages()
    assert [m["event"] for m in messages] == ["start", "progress", "progress", "exit"]
    for message in messages:
        assert (message["job"], message["pod"], message["rank"]) == ("llama", "llama-0-abcde", "0")
        assert message["time"].endswith("+00:00")
    assert messages[0]["command"] == Path(sys.executable).name
    assert (messages[1]["step"], messages[1]["loss"]) == (1, 2.5)
    assert messages[2]["message"] == "half way"
    assert messages[3]["exit_code"] == 3


def test_a_username_in_the_url_authenticates_as_that_user(
    redis_port: int, subscriber: Subscriber
) -> None:
    done = run_job(f"redis://default:{PASSWORD}@127.0.0.1:{redis_port}", 0)
    assert done.returncode == 0
    assert [m["event"] for m in subscriber.messages()] == ["start", "progress", "progress", "exit"]


def test_a_wrong_password_costs_the_job_nothing(redis_port: int, subscriber: Subscriber) -> None:
    done = run_job(f"redis://:wrong-password@127.0.0.1:{redis_port}/0", 0)
    assert done.returncode == 0
    assert done.stdout.splitlines()[0] == "loading data"
    lines = [line for line in done.stderr.splitlines() if line.startswith("status:")]
    # One line for the outage, not one per message; the exit is attempted once more (same
    # reason: not repeated).
    assert len(lines) == 1, done.stderr
    assert f"cannot publish to 'training_status' on 127.0.0.1:{redis_port}" in lines[0]
    assert "the server refused: WRONGPASS" in lines[0]
    assert "the job goes on without status" in lines[0]
    assert subscriber.nothing_within(0.5)


def test_redis_down_costs_the_job_nothing() -> None:
    port = free_port()  # nothing listens there
    started = time.monotonic()
    done = run_job(f"redis://:{PASSWORD}@127.0.0.1:{port}/0", 5)
    assert time.monotonic() - started < WAIT_S
    assert done.returncode == 5
    assert done.stdout.splitlines()[-1] == "  progress: half way"
    [line] = [line for line in done.stderr.splitlines() if line.startswith("status:")]
    assert f"on 127.0.0.1:{port}: cannot connect" in line


def test_a_server_that_never_answers_is_given_up_on_within_the_timeout() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # accepts connections, never replies
        port = silent.getsockname()[1]
        started = time.monotonic()
        done = run_job(f"redis://:x@127.0.0.1:{port}/0", 0, "--timeout", "0.3")
        elapsed = time.monotonic() - started
    assert done.returncode == 0
    assert "no answer within 0.3s" in done.stderr
    # start (0.3 s), the progress lines within --retry-after (skipped), the exit (0.3 s).
    assert elapsed < 5


def test_no_url_or_channel_runs_the_job_without_status() -> None:
    done = run_job(None, 0)
    assert done.returncode == 0
    assert "$REDIS_URL is not set; the job runs without status" in done.stderr
    done = run_job("http://127.0.0.1:1", 0)
    assert "$REDIS_URL is unusable (not a redis:// URL (scheme 'http'))" in done.stderr


def test_sigterm_reaches_the_command_and_the_exit_says_so(
    redis_port: int, subscriber: Subscriber
) -> None:
    # The handler only raises: printing from it could re-enter a print the signal interrupted.
    child = (
        "import signal, time\n"
        "def stop(*_):\n"
        "    raise SystemExit(0)\n"
        "signal.signal(signal.SIGTERM, stop)\n"
        "try:\n"
        "    print('progress: {\"step\": 7}', flush=True)\n"
        "    time.sleep(60)\n"
        "finally:\n"
        "    print('checkpoint', flush=True)\n"
    )
    env = {
        "PATH": os.environ.get("PATH", ""),
        "REDIS_URL": f"redis://:{PASSWORD}@127.0.0.1:{redis_port}/0",
    }
    argv = [sys.executable, "-I", str(SCRIPT), "--status-channel", DEFAULT_STATUS_CHANNEL]
    job = subprocess.Popen(
        [*argv, "--", sys.executable, "-c", child], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert [m["event"] for m in subscriber.messages("progress")] == ["start", "progress"]
        job.send_signal(signal.SIGTERM)
        out, _ = job.communicate(timeout=WAIT_S)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    assert job.returncode == 0
    assert out.splitlines()[-1] == "checkpoint"  # the trainer got the signal and saved
    [exit_message] = subscriber.messages()
    assert exit_message["exit_code"] == 0


def test_a_command_killed_by_a_signal_exits_128_plus_it(
    redis_port: int, subscriber: Subscriber
) -> None:
    env = {"PATH": "", "REDIS_URL": f"redis://:{PASSWORD}@127.0.0.1:{redis_port}/0"}
    argv = [sys.executable, "-I", str(SCRIPT), "--status-channel", DEFAULT_STATUS_CHANNEL, "--"]
    killer = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    done = subprocess.run(
        [*argv, sys.executable, "-c", killer], env=env, capture_output=True, timeout=WAIT_S
    )
    assert done.returncode == 128 + signal.SIGKILL
    exit_message = subscriber.messages()[-1]
    assert (exit_message["exit_code"], exit_message["signal"]) == (137, "SIGKILL")


def test_a_command_that_cannot_run_exits_127_and_says_so(
    redis_port: int, subscriber: Subscriber
) -> None:
    env = {"PATH": "", "REDIS_URL": f"redis://:{PASSWORD}@127.0.0.1:{redis_port}/0"}
    argv = [sys.executable, "-I", str(SCRIPT), "--status-channel", DEFAULT_STATUS_CHANNEL]
    done = subprocess.run(
        [*argv, "--", "/nonexistent/trainer"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 127
    assert "cannot run '/nonexistent/trainer'" in done.stderr
    assert [m["event"] for m in subscriber.messages()] == ["start", "exit"]


def test_usage_without_a_command() -> None:
    done = subprocess.run(
        [sys.executable, "-I", str(SCRIPT), "--status-channel", "x"],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert done.returncode == 2
    assert "no command to run" in done.stderr


# --- the script as shipped ------------------------------------------------------------------------


def test_stdlib_only_and_python39_grammar() -> None:
    text = SCRIPT.read_text(encoding="utf-8")
    ast.parse(text, feature_version=(3, 9))
    modules: set[str] = set()
    for stmt in ast.walk(ast.parse(text)):
        if isinstance(stmt, ast.Import):
            modules.update(alias.name.split(".")[0] for alias in stmt.names)
        elif isinstance(stmt, ast.ImportFrom):
            assert stmt.level == 0
            modules.add((stmt.module or "").split(".")[0])
    assert modules - set(sys.stdlib_module_names) - {"__future__"} == set()


def test_shipped_beside_the_preflight() -> None:
    assert preflight.STATUS_SCRIPT_PATH == "/preflight/status_publisher.py"
    assert preflight.scripts() == {preflight.SCRIPT_FILENAME: preflight.script_text()}
    both = preflight.scripts(status=True)
    assert both[preflight.STATUS_SCRIPT_FILENAME] == SCRIPT.read_text(encoding="utf-8")


def test_resp_encoding() -> None:
    assert status_publisher.resp_command("PUBLISH", "ch", "é") == (
        b"*3\r\n$7\r\nPUBLISH\r\n$2\r\nch\r\n$2\r\n\xc3\xa9\r\n"
    )
