"""Field descriptions for the generated JSON Schemas, read from attribute docstrings.

Why not pydantic's ``use_attribute_docstrings``: it finds each model's source while the class is
being built, by walking the caller's frames and asking ``inspect.getmodule`` about each (which
rescans ``sys.modules``). That was most of the cost of importing ``infra.outputs`` and a fifth of
importing ``infra.config``, paid by every preview and every ``pulumi up`` for text that only the
schema generators read (docs/performance.md). Here the docstrings are read once per module, with
the same rules, when a schema is generated; the schemas are byte-identical to pydantic's.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import itertools
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema


def _field_docstrings(body: list[ast.stmt]) -> dict[str, str]:
    """``name: T`` followed by a string literal documents ``name`` (pydantic's rule)."""
    docs: dict[str, str] = {}
    for statement, following in itertools.pairwise(body):
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[statement.target.id] = inspect.cleandoc(following.value.value)
    return docs


@functools.cache
def _module_docstrings(module_name: str) -> dict[str, dict[str, str]]:
    """Top-level class name → field name → docstring, for one module's source."""
    # Imported by name, not read from sys.modules: a run under mocks may have purged it.
    tree = ast.parse(inspect.getsource(importlib.import_module(module_name)))
    return {
        node.name: _field_docstrings(node.body)
        for node in tree.body
        if isinstance(node, ast.ClassDef)
    }


def field_docstrings(model: type[BaseModel]) -> dict[str, str]:
    """Field name → docstring for ``model``, inherited fields included (nearest class wins)."""
    docs: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if isinstance(cls, type) and issubclass(cls, BaseModel) and cls is not BaseModel:
            docs.update(_module_docstrings(cls.__module__).get(cls.__qualname__, {}))
    return docs


class DocumentedJsonSchema(GenerateJsonSchema):
    """``model_json_schema(schema_generator=DocumentedJsonSchema)``: docstrings as descriptions.

    A description given with ``Field(description=...)`` wins, as it does in pydantic.
    """

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        json_schema = super().model_schema(schema)
        model = schema["cls"]
        properties: dict[str, Any] = json_schema.get("properties", {})
        docs = field_docstrings(model)
        for name, field in model.model_fields.items():
            key = (field.alias or name) if self.by_alias else name
            doc = docs.get(name)
            if doc and key in properties and "description" not in properties[key]:
                properties[key] = {**properties[key], "description": doc}
        return json_schema
