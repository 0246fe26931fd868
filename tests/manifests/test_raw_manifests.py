"""extraManifests: typed resources through the stack's provider, clear errors for what can't be."""

from __future__ import annotations

import pytest

from infra.config import ConfigError, validate_platform_config
from infra.field_ownership import PATCH_FORCE_ANNOTATION
from tests.harness import run_stack

CONFIG_MAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "vendor-settings", "namespace": "research"},
    "data": {"LICENSE_SERVER": "flexlm.lab.internal"},
}
FLAVOR = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "ResourceFlavor",
    "metadata": {"name": "cpu-only"},
    "spec": {"nodeLabels": {"node-role": "cpu"}},
}


def test_builtin_kinds_become_typed_resources_and_crds_custom_resources(dev_config):
    dev_config["extraManifests"] = [CONFIG_MAP, FLAVOR]
    dev_config["escapeHatch"] = {
        "exceptions": [
            {
                "name": "cpu-flavor",
                "reason": "CPU-only nodes for the ingestion jobs.",
                "objects": [{"kind": "kueue.x-k8s.io/ResourceFlavor", "name": "cpu-only"}],
            }
        ]
    }
    run = run_stack(dev_config)
    config_map = run.find("ConfigMap", "vendor-settings", "research")
    assert config_map.type == "kubernetes:core/v1:ConfigMap"
    assert config_map.inputs["data"] == CONFIG_MAP["data"]
    assert config_map.name == "extra-configmap-research-vendor-settings"
    flavor = run.find("ResourceFlavor", "cpu-only")
    assert flavor.type == "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"
    assert flavor.inputs["spec"] == FLAVOR["spec"]
    # The exception that admits it is written on it; the ConfigMap needs none.
    annotations = flavor.metadata["annotations"]
    assert annotations == {
        PATCH_FORCE_ANNOTATION: "true",
        "aiplatform.io/escape-hatch-exception": "cpu-flavor",
    }
    assert config_map.metadata["annotations"] == {PATCH_FORCE_ANNOTATION: "true"}
    [provider] = run.by_type("pulumi:providers:kubernetes")
    assert config_map.options["provider"].startswith(provider.urn)
    # Each object waits for the team namespaces it may live in.
    namespaces = {
        r.urn
        for r in run.kubernetes_objects()
        if r.kind == "Namespace" and "TeamNamespace" in r.urn
    }
    assert len(namespaces) == 3
    assert namespaces <= set(config_map.options["dependsOn"])
    assert namespaces <= set(flavor.options["dependsOn"])


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        (
            {"apiVersion": "apps/v1", "kind": "Deploymnet", "metadata": {"name": "x"}},
            "ai-platform:extraManifests[0].kind: apps/v1 has no kind 'Deploymnet' in "
            "pulumi-kubernetes",
        ),
        (
            {**FLAVOR, "status": {}},
            "ai-platform:extraManifests[0].status: custom resources can carry only apiVersion, "
            "kind, metadata and spec",
        ),
        (
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}},
            "ai-platform:extraManifests[0].metadata.name: required key is missing",
        ),
    ],
)
def test_unregistrable_manifests_are_config_errors(dev_config, manifest, expected):
    dev_config["extraManifests"] = [manifest]
    with pytest.raises(ConfigError) as caught:
        validate_platform_config(dev_config, "Pulumi.dev.yaml")
    assert [f"{i.key_path}: {i.message}" for i in caught.value.issues] == [expected]


def test_duplicates_are_config_errors(dev_config):
    dev_config["extraManifests"] = [CONFIG_MAP, CONFIG_MAP]
    with pytest.raises(ConfigError) as caught:
        validate_platform_config(dev_config, "Pulumi.dev.yaml")
    assert [f"{i.key_path}: {i.message}" for i in caught.value.issues] == [
        "ai-platform:extraManifests[1].metadata.name: ConfigMap research/vendor-settings is "
        "already declared by extraManifests[0]"
    ]
