"""What every component shares: a type token of our own, and no annotations the SDK would read."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pulumi
import pytest

import components


def _component_classes() -> list[type[pulumi.ComponentResource]]:
    found = []
    for module_info in pkgutil.walk_packages(components.__path__, "components."):
        module = importlib.import_module(module_info.name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, pulumi.ComponentResource)
                and value.__module__ == module.__name__
            ):
                found.append(value)
    return found


COMPONENTS = _component_classes()


def test_every_component_is_found() -> None:
    names = {cls.__name__ for cls in COMPONENTS}
    assert {"TeamNamespace", "TrainingJob", "InferenceService", "MonitoringStack"} <= names
    assert len(names) >= 12


@pytest.mark.parametrize("cls", COMPONENTS, ids=lambda cls: cls.__name__)
def test_no_runtime_class_annotations(cls: type[pulumi.ComponentResource]) -> None:
    """The SDK evaluates a resource class's annotations at every registration (one dynamic class
    and a ``get_type_hints`` per instance) to type engine outputs a component never has.
    Attribute types go under ``if TYPE_CHECKING:`` (docs/performance.md)."""
    assert inspect.get_annotations(cls) == {}
    assert pulumi._types.resource_types(cls) == {}
