"""Event-driven autoscaling (KEDA): models (``config``), cross-field rules (``rules``) and the
mapping to components (``build``)."""
