"""The team Redis: its model (``config``), cross-field rules (``rules``) and the mapping to the
``TeamRedis`` component (``build``)."""
