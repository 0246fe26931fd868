"""Metrics, alerts, dashboards and logs: models (``config``), cross-field rules (``rules``) and the
mapping to ``MonitoringStack`` (``build``)."""
