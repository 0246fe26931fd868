"""The ``ai-platform:monitoring`` blocks proposed for Pulumi.dev.yaml and Pulumi.prod.yaml.

Kept verbatim here so the tests prove the blocks validate, pass the rules and render; once the
lead adds them to the stack files, the tests can read them from there instead.
"""

from __future__ import annotations

from typing import Any

import yaml

from infra.config.load import OFFLINE_SECRET_PLACEHOLDER

DEV_BLOCK = """\
  ai-platform:monitoring:
    prometheus:
      retention: 7d
      retentionSize: 18GiB
      storageSize: 20Gi
      storageClassName: checkpoints-local
    grafana:
      adminUser: admin
    loki:
      mode: single-binary
      retention: 3d
      storageClassName: checkpoints-local
      storageSize: 20Gi
"""

PROD_BLOCK = """\
  ai-platform:monitoring:
    prometheus:
      retention: 30d
      retentionSize: 450GiB
      storageSize: 500Gi
      storageClassName: checkpoints-gp3
      replicas: 2
      resources:
        requests: {cpu: "2", memory: 16Gi}
        limits: {memory: 24Gi}
    alertmanager:
      replicas: 3
      receivers:
        - name: platform-pager
          type: pagerduty
          severities: [critical]
          routingKey:
            secure: v1:REPLACE-with-pulumi-config-set-secret
        - name: platform-slack
          type: slack
          severities: [critical, warning]
          channel: "#gpu-platform-alerts"
          url:
            secure: v1:REPLACE-with-pulumi-config-set-secret
    grafana:
      adminUser: admin
      persistence: true
      storageClassName: checkpoints-gp3
    loki:
      mode: scalable
      retention: 30d
      storageClassName: checkpoints-gp3
      storageSize: 50Gi
      replicas: 3
      objectStorage:
        region: eu-central-1
        buckets:
          chunks: gpu-prod-loki-chunks
          ruler: gpu-prod-loki-ruler
        credentialsSecret: loki-s3-credentials
        lifecycleRule: true
    fluentBit:
      excludeNamespaces: [kube-node-lease]
"""


def _replace_secure(value: Any) -> Any:
    """What ``StackFile`` does to ``secure:`` values for the offline preview."""
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            return OFFLINE_SECRET_PLACEHOLDER
        return {k: _replace_secure(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_secure(v) for v in value]
    return value


def block(text: str) -> dict[str, Any]:
    """The ``ai-platform:monitoring`` value of a block, secure values replaced."""
    document = yaml.safe_load(text)
    return _replace_secure(document["ai-platform:monitoring"])


def dev_monitoring() -> dict[str, Any]:
    return block(DEV_BLOCK)


def prod_monitoring() -> dict[str, Any]:
    return block(PROD_BLOCK)
