"""The worker pool's contract with Celery, against a real worker: a real ``redis-server`` with a
password on loopback as the broker, a real ``celery worker`` on a tiny app, started with the
exact command and environment the component renders (``worker_command``, ``worker_env``).

- the probe command (``ping_command``) succeeds against the running worker, and fails for a
  node name that is not this pod's;
- SIGTERM during a task is a warm shutdown: the worker keeps running until the task finishes,
  then exits 0 within the grace period, and the task it had fetched but not started goes back
  to its queue (nothing is lost).

In a pod, ``$HOSTNAME`` is the pod's hostname, which Celery's default node name is made of;
here the test sets ``HOSTNAME`` to this machine's hostname, which is the same relation.
Every process the test starts is stopped by it, on failure too.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from components.workloads import ComputeResources
from components.workloads.worker_pool import (
    BROKER_ENV,
    WorkerPoolArgs,
    ping_command,
    worker_command,
    worker_env,
)

redis = pytest.importorskip("redis", reason="redis-py is in the dev extra")
pytest.importorskip("celery", reason="Celery is in the dev extra")

REDIS_SERVER = shutil.which("redis-server")
CELERY = Path(sys.executable).with_name("celery")
QUEUE = "ingest"
GRACE_SECONDS = 60
"""The pod's terminationGracePeriodSeconds in this test: the worker must be gone within it."""

pytestmark = pytest.mark.skipif(
    REDIS_SERVER is None or not CELERY.exists(),
    reason="needs redis-server (Debian: apt-get install redis-server) and Celery (dev extra)",
)

APP = textwrap.dedent(
    '''
    """A tiny Celery app: its broker is CELERY_BROKER_URL, as the platform's contract says."""
    import time
    from pathlib import Path

    from celery import Celery

    app = Celery("tinyapp")
    app.conf.worker_hijack_root_logger = False


    @app.task(name="tinyapp.hold")
    def hold(folder: str, name: str) -> str:
        """Runs until the test releases it: started, then waits for ``release``, finished."""
        root = Path(folder)
        (root / f"{name}.started").write_text("started")
        deadline = time.monotonic() + 120
        while not (root / "release").exists():
            if time.monotonic() > deadline:
                raise TimeoutError("never released")
            time.sleep(0.05)
        (root / f"{name}.finished").write_text("finished")
        return name
    '''
)


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """A bounded poll of ``condition``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process group, then SIGKILL; never leaves it behind."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=15)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[str]:
    """A password-protected redis-server on loopback; yields the URL as the team Secret has it."""
    assert REDIS_SERVER is not None
    port, password = free_port(), secrets.token_hex(16)
    data = tmp_path / "redis"
    data.mkdir()
    server = subprocess.Popen(
        [
            REDIS_SERVER,
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
            "--requirepass",
            password,
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(data),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        client = redis.Redis(host="127.0.0.1", port=port, password=password)

        def answers() -> bool:
            try:
                return bool(client.ping())
            except redis.exceptions.ConnectionError:
                return False

        wait_for(answers, 20, "redis-server to answer")
        with pytest.raises(redis.exceptions.AuthenticationError):
            redis.Redis(host="127.0.0.1", port=port, password="wrong").ping()
        yield f"redis://:{password}@127.0.0.1:{port}/0"
    finally:
        stop(server)


def pool_args() -> WorkerPoolArgs:
    return WorkerPoolArgs(
        team="platform",
        namespace="platform",
        name="pipeline-workers",
        image="unused",
        resources=ComputeResources(cpu="500m", memory="1Gi"),
        app="tinyapp",
        concurrency=1,
        queues=(QUEUE,),
        args=("--prefetch-multiplier=1",),
        termination_grace_period_seconds=GRACE_SECONDS,
        probe_timeout_seconds=5,
    )


def container_env(args: WorkerPoolArgs, broker_url: str, app_dir: Path) -> dict[str, str]:
    """The container's environment as the component renders it, the Secret's key resolved."""
    env = {
        "PATH": f"{CELERY.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(app_dir),
        "HOSTNAME": socket.gethostname(),
    }
    for entry in worker_env(args):
        if entry["name"] == BROKER_ENV:
            assert entry["valueFrom"]["secretKeyRef"]["key"] == "url"
            env[BROKER_ENV] = broker_url
        else:
            env[entry["name"]] = entry["value"]
    env["HOME"] = env["TMPDIR"] = str(app_dir)  # the pod's /tmp emptyDir
    return env


def probe(args: WorkerPoolArgs, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ping_command(args),
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=args.probe_timeout_seconds + 20,  # the probe's timeoutSeconds
        check=False,
    )


def test_probe_answers_and_sigterm_finishes_the_running_task(broker: str, tmp_path: Path) -> None:
    app_dir = tmp_path / "app"
    app_dir.mkdir()
    (app_dir / "tinyapp.py").write_text(APP, encoding="utf-8")
    args = pool_args()
    env = container_env(args, broker, app_dir)
    command = worker_command(args)
    assert command[:6] == [
        "celery",
        "-A",
        "tinyapp",
        "worker",
        "--loglevel=info",
        "--concurrency=1",
    ]
    log = (tmp_path / "worker.log").open("wb")
    worker = subprocess.Popen(
        command, env=env, cwd=app_dir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        # Startup probe: the worker answers its own ping once it is up.
        deadline = time.monotonic() + 60
        result = probe(args, env, app_dir)
        while result.returncode != 0:
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()
            assert time.monotonic() < deadline, f"never answered: {result.stdout}{result.stderr}"
            result = probe(args, env, app_dir)
        assert "pong" in result.stdout
        # The probe can fail: another node name gets no reply, and celery exits non-zero.
        other = dict(env, HOSTNAME="not-this-pod")
        assert probe(args, other, app_dir).returncode != 0

        from celery import Celery

        client = Celery("tinyapp", broker=broker)
        client.send_task("tinyapp.hold", args=[str(tmp_path), "first"], queue=QUEUE)
        wait_for(lambda: (tmp_path / "first.started").exists(), 30, "the first task to start")
        client.send_task("tinyapp.hold", args=[str(tmp_path), "second"], queue=QUEUE)
        queue = redis.Redis.from_url(broker)
        # The second task leaves the list: the worker has fetched it (prefetch) behind the first.
        wait_for(lambda: queue.llen(QUEUE) == 0, 30, "the worker to fetch the second task")

        worker.send_signal(signal.SIGTERM)  # what the kubelet sends first
        # Warm shutdown: the running task holds the worker; it takes nothing new.
        wait_for(
            lambda: b"worker: Warm shutdown" in (tmp_path / "worker.log").read_bytes(),
            30,
            "the worker to log its warm shutdown",
        )
        assert worker.poll() is None, "the worker exited with a task still running"
        assert not (tmp_path / "first.finished").exists()

        released = time.monotonic()
        (tmp_path / "release").write_text("go")
        code = worker.wait(timeout=GRACE_SECONDS)
        assert code == 0, (tmp_path / "worker.log").read_text()
        assert time.monotonic() - released < GRACE_SECONDS
        assert (tmp_path / "first.finished").exists(), "the running task did not finish"
        assert not (tmp_path / "second.started").exists(), "a new task started after SIGTERM"
        # The fetched but unstarted task went back to its queue for another worker.
        assert queue.llen(QUEUE) == 1
    finally:
        stop(worker)
        log.close()
