"""GPU node pools and the NVIDIA stack: models (``config``), what a pool holds (``capacity``),
cross-field rules (``rules``) and the mapping to components (``build``)."""
