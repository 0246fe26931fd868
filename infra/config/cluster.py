"""``ai-platform:cluster``: which cluster a stack targets and how strict it is."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from .base import ConfigModel, DnsLabel

Environment = Literal["dev", "staging", "prod"]


class ClusterConfig(ConfigModel):
    """The cluster every Kubernetes resource of the stack is sent to, through one provider."""

    name: DnsLabel
    """Short cluster name; prefixes the provider and appears in labels and outputs."""
    environment: Environment
    """``dev``, ``staging`` or ``prod``. ``prod`` protects data and retains namespaces."""
    kubeconfig_context: str = Field(min_length=1)
    """Kubeconfig context to deploy to. Required: no stack may use the current one by accident."""
    kubeconfig: str | None = None
    """Path to a kubeconfig file; default: the provider's (``KUBECONFIG`` or ``~/.kube/config``)."""
    kubernetes_version: str = "1.33"
    """``major.minor`` of the cluster's API server; manifests are validated against its schema."""
    protect_data: bool | None = None
    """Protect PVCs, retain namespaces and storage classes. Default: ``environment == prod``."""

    @field_validator("kubernetes_version")
    @classmethod
    def _minor_version(cls, value: str) -> str:
        if not re.fullmatch(r"1\.\d{2}", value):
            raise ValueError(f"must be a Kubernetes minor version such as '1.33', got {value!r}")
        return value

    @property
    def protects_data(self) -> bool:
        """Whether stateful resources get ``protect`` and namespaces ``retain_on_delete``."""
        return self.environment == "prod" if self.protect_data is None else self.protect_data
