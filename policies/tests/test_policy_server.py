"""Start the pack as the CLI does (``python -m pulumi.policy <engine> .`` with the pack directory as
working directory), read the port it prints and talk to it over gRPC on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime import proto
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from aiplatform_policies import PACK_NAME, POLICIES

PACK_DIR = Path(__file__).resolve().parent.parent
STARTUP_TIMEOUT = 60.0


def _start(command: list[str]) -> tuple[subprocess.Popen[bytes], int]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    process = subprocess.Popen(
        command,
        cwd=PACK_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    line: list[bytes] = []
    reader = threading.Thread(target=lambda: line.append(process.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(STARTUP_TIMEOUT)
    if not line or not line[0].strip().isdigit():
        process.kill()
        _, err = process.communicate(timeout=10)
        raise AssertionError(f"pack did not print a port: {line!r}\n{err.decode(errors='replace')}")
    return process, int(line[0])


@pytest.fixture(params=["main", "cli"], ids=["python __main__.py", "python -m pulumi.policy"])
def server(request: pytest.FixtureRequest) -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    if request.param == "main":
        command = [sys.executable, "__main__.py"]
    else:
        command = [sys.executable, "-u", "-m", "pulumi.policy", "127.0.0.1:1", "."]
    process, port = _start(command)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        grpc.channel_ready_future(channel).result(timeout=STARTUP_TIMEOUT)
        yield analyzer_pb2_grpc.AnalyzerStub(channel)
    finally:
        channel.close()
        process.kill()
        process.communicate(timeout=10)


def test_pack_serves_over_grpc(server: analyzer_pb2_grpc.AnalyzerStub) -> None:
    info = server.GetAnalyzerInfo(empty_pb2.Empty(), timeout=30)
    assert info.name == PACK_NAME
    assert [p.name for p in info.policies] == [p.name for p in POLICIES]

    request = analyzer_pb2.ConfigureAnalyzerRequest()
    request.policyConfig["gpu-max-per-pod"].CopyFrom(
        analyzer_pb2.PolicyConfig(enforcementLevel=proto.MANDATORY, properties=struct_pb2.Struct())
    )
    request.policyConfig["gpu-max-per-pod"].properties.update({"maxGpusPerPod": 2})
    server.Configure(request, timeout=30)

    pod = struct_pb2.Struct()
    pod.update(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "research"},
            "spec": {
                "containers": [
                    {
                        "name": "trainer",
                        "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                        "resources": {"limits": {"nvidia.com/gpu": 4}},
                    }
                ]
            },
        }
    )
    response = server.Analyze(
        analyzer_pb2.AnalyzeRequest(
            type="kubernetes:core/v1:Pod",
            properties=pod,
            urn="urn:pulumi:test::ai-platform::kubernetes:core/v1:Pod::p",
            name="p",
        ),
        timeout=30,
    )
    found = [d for d in response.diagnostics if d.policyName == "gpu-max-per-pod"]
    assert [d.message.split("\n", 1)[1] for d in found] == [
        "pod requests 4 nvidia.com/gpu in all, above the per-pod maximum of 2"
    ]
    assert found[0].enforcementLevel == proto.MANDATORY
