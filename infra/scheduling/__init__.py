"""Priority classes: models (``config``), cross-field rules (``rules``) and the mapping to the
component (``build``)."""
