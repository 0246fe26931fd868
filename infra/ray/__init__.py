"""KubeRay: models (``config``), cross-field rules (``rules``) and the mapping to the operator
component (``build``). Ray workloads themselves are workload kinds (``infra.workloads``)."""
