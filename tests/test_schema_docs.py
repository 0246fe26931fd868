"""Schema descriptions come from attribute docstrings exactly as pydantic's own option made them."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from infra.config import PlatformConfig
from infra.outputs import StackOutputs
from infra.schema_docs import DocumentedJsonSchema, field_docstrings

CAMEL = ConfigDict(alias_generator=to_camel, serialize_by_alias=True)


class Inner(BaseModel):
    model_config = CAMEL
    claim_name: str = "data"
    """The claim.

    Indented second paragraph."""


class Base(BaseModel):
    model_config = CAMEL
    shared_field: int = 1
    """From the base class."""
    overridden: int = 2
    """Base text, replaced below."""


class Documented(Base):
    """A model's own docstring stays its description."""

    model_config = CAMEL
    overridden: int = 3
    """Subclass text."""
    inner: Inner | None = None
    """An optional nested model."""
    explicit: str = Field(default="x", description="Field() wins.")
    """Ignored: an explicit description wins."""
    undocumented: str = "y"
    limit: ClassVar[int] = 1
    """A class variable: read, but never a field, so never a description."""


class Mirrored(BaseModel):
    """The same body twice: once read by us, once by pydantic's own option."""

    model_config = CAMEL
    inner: Inner | None = None
    """An optional nested model."""
    items: list[Inner] = []
    """A list of them,

    over two paragraphs."""
    explicit: str = Field(default="x", description="Field() wins.")
    """Ignored."""
    required_number: int
    """Required, no default."""
    undocumented: str = "y"


class MirroredByPydantic(BaseModel):
    """The same body twice: once read by us, once by pydantic's own option."""

    model_config = ConfigDict(
        alias_generator=to_camel, serialize_by_alias=True, use_attribute_docstrings=True
    )
    inner: Inner | None = None
    """An optional nested model."""
    items: list[Inner] = []
    """A list of them,

    over two paragraphs."""
    explicit: str = Field(default="x", description="Field() wins.")
    """Ignored."""
    required_number: int
    """Required, no default."""
    undocumented: str = "y"


def test_docstrings_follow_pydantics_rules() -> None:
    assert field_docstrings(Documented) == {
        "shared_field": "From the base class.",
        "overridden": "Subclass text.",
        "inner": "An optional nested model.",
        "explicit": "Ignored: an explicit description wins.",
        "limit": "A class variable: read, but never a field, so never a description.",
    }
    assert field_docstrings(Inner) == {"claim_name": "The claim.\n\nIndented second paragraph."}


def test_generated_schema_has_descriptions_where_pydantic_put_them() -> None:
    ours = Documented.model_json_schema(by_alias=True, schema_generator=DocumentedJsonSchema)
    props = ours["properties"]
    assert props["sharedField"]["description"] == "From the base class."
    assert props["overridden"]["description"] == "Subclass text."
    assert props["inner"]["description"] == "An optional nested model."
    assert props["explicit"]["description"] == "Field() wins."
    assert "description" not in props["undocumented"]
    assert ours["description"] == "A model's own docstring stays its description."
    assert ours["$defs"]["Inner"]["properties"]["claimName"]["description"].startswith("The claim.")
    # Field names, not aliases, when the schema is asked for by name.
    by_name = Documented.model_json_schema(by_alias=False, schema_generator=DocumentedJsonSchema)
    assert by_name["properties"]["shared_field"]["description"] == "From the base class."


def test_the_plain_generator_has_no_field_descriptions() -> None:
    """The models do not pay for docstrings at import: only the generator adds them."""
    plain = Documented.model_json_schema(by_alias=True)["properties"]
    assert [key for key, value in plain.items() if "description" in value] == ["explicit"]


def test_same_schema_as_pydantics_use_attribute_docstrings() -> None:
    ours = Mirrored.model_json_schema(by_alias=True, schema_generator=DocumentedJsonSchema)
    theirs = MirroredByPydantic.model_json_schema(by_alias=True)
    assert ours.pop("title") == "Mirrored"
    assert theirs.pop("title") == "MirroredByPydantic"
    # Inner has no use_attribute_docstrings: only our generator describes its field.
    assert ours["$defs"].pop("Inner")["properties"]["claimName"]["description"]
    assert "description" not in theirs["$defs"].pop("Inner")["properties"]["claimName"]
    assert ours == theirs


def test_every_output_field_is_described() -> None:
    """The outputs are a contract: the schema other teams read explains every field."""
    schema = StackOutputs.model_json_schema(by_alias=True, schema_generator=DocumentedJsonSchema)
    definitions = {"StackOutputs": schema, **schema.get("$defs", {})}
    undescribed = [
        f"{name}.{key}"
        for name, definition in definitions.items()
        for key, prop in definition.get("properties", {}).items()
        if "description" not in prop
    ]
    assert undescribed == []
    assert len(definitions) > 3


def test_config_schema_descriptions_come_from_the_models() -> None:
    schema = PlatformConfig.model_json_schema(by_alias=True, schema_generator=DocumentedJsonSchema)
    assert schema["properties"]["cluster"]["description"]
    assert (
        "description"
        not in PlatformConfig.model_json_schema(by_alias=True)["properties"]["cluster"]
    )
