"""Whole-stack properties: one explicit provider, component conventions, data protection."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.harness import ROOT, run_stack


def test_pulumi_yaml_disables_default_kubernetes_provider():
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    assert project["name"] == "ai-platform"
    assert project["runtime"]["options"] == {"toolchain": "pip", "virtualenv": ".venv"}
    assert "kubernetes" in project["config"]["pulumi:disable-default-providers"]["value"]


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_kubernetes_resource_uses_the_explicit_provider(stack, dev_run, prod_run):
    run = {"dev": dev_run, "prod": prod_run}[stack]
    [provider] = run.by_type("pulumi:providers:kubernetes")
    expected_context = {"dev": "lab-admin", "prod": "gpu-prod-deployer"}[stack]
    assert provider.inputs["context"] == expected_context
    custom = [r for r in run.resources if r.custom and r.type.startswith("kubernetes:")]
    assert custom
    for resource in custom:
        assert resource.options["provider"].startswith(provider.urn + "::"), resource.urn


def test_components_follow_naming_conventions(prod_run):
    components = {r.urn: r for r in prod_run.resources if not r.custom}
    assert components
    for component in components.values():
        assert re.fullmatch(r"aiplatform:[a-z]+:[A-Z][A-Za-z]+", component.type), component.type
    for resource in prod_run.resources:
        if resource.parent in components:
            parent = components[resource.parent]
            assert resource.name.startswith(f"{parent.name}-"), (resource.name, parent.name)


def test_every_kubernetes_object_is_named_explicitly(prod_run):
    for resource in prod_run.kubernetes_objects():
        assert resource.metadata.get("name"), resource.urn


def test_prod_protects_everything_that_holds_data(prod_run):
    for resource in prod_run.kubernetes_objects():
        if resource.kind == "PersistentVolumeClaim":
            assert resource.options["protect"], resource.urn
        if resource.kind in ("Namespace", "StorageClass"):
            assert resource.options["retainOnDelete"], resource.urn


def test_protect_data_can_be_forced_on_outside_prod(dev_config):
    dev_config["cluster"]["protectData"] = True
    run = run_stack(dev_config)
    assert all(
        r.options["protect"] for r in run.kubernetes_objects() if r.kind == "PersistentVolumeClaim"
    )
