"""Training jobs and inference services: models (``config``), what a workload holds (``demand``),
cross-field rules (``rules``) and the mapping to components (``build``)."""
