"""Reusable ComponentResources of the platform; usable from any Pulumi program.

Conventions every component here keeps (tests/components/test_component_conventions.py):

- Attribute types sit under ``if TYPE_CHECKING:`` in the class body, never as runtime class
  annotations: the SDK evaluates a resource class's own annotations at every registration (a
  dynamic class and a ``get_type_hints`` per instance) to type engine outputs that a component
  never receives, and our attributes are plain values (docs/performance.md, item 5).
"""
