"""The escape hatch: models (``config``), what it may apply (``rules``) and the mapping to
``RawManifests`` (``build``)."""
