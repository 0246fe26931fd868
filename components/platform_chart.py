"""PlatformChartArgs: what every component that installs a third-party chart into a namespace of
its own takes, and :class:`ChartInstall`, the namespace and Helm release they all make.

A chart component (Kueue, KEDA, KubeRay, the GPU operator, metrics-server, prometheus-adapter)
owns one platform namespace: labelled as no team's, enforcing one Pod Security level, starting
from default-deny when the stack gives it a network (its component's ``*_policies`` open what it
needs), kept on delete in prod. Into it goes one awaited Helm release of a pinned chart, read from
the public repositories or a mirror, its images pulled through the registry mirror if any.

Adding one:

1. ``@frozen class FooArgs(PlatformChartArgs)``: redeclare ``chart`` and
   ``namespace`` with the component's defaults (the pinned ``Chart`` and its namespace constant),
   then add the component's own fields, each with a default; redeclare another base field to
   change its default (``timeout_seconds: int = 600``).
2. In the component: ``install = ChartInstall(self, name, args, foo_policies)`` (and
   ``pod_security=`` if it needs the host), then ``install.release(FOO_RELEASE,
   chart_values(args))``; ``install.inside`` places anything else in the namespace.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from . import kube
from .charts import PUBLIC_REPOSITORIES, Chart, ChartSource
from .constants import PSA_RESTRICTED
from .frozen import frozen
from .labels import system_namespace_labels
from .network_policies import PolicySpec, SystemNetwork, create_policies

Policies = Callable[[str, SystemNetwork], Sequence[PolicySpec]]
"""A component's NetworkPolicies, from its namespace and the stack's network."""


@frozen
class PlatformChartArgs:
    """Inputs every chart component takes. A component's args redeclare ``chart`` and
    ``namespace`` with its own defaults."""

    chart: Chart
    """The pinned chart (``components.charts``)."""
    namespace: str
    """The namespace the component makes and installs the chart into."""
    chart_source: ChartSource = PUBLIC_REPOSITORIES
    """The public repository, or a mirror directory."""
    registry_mirror: str | None = None
    """Pull every image the chart deploys through this mirror (``components.images``); None: as
    pinned."""
    timeout_seconds: int = 300
    """How long Helm waits for the release to be ready before the update fails."""
    retain_on_delete: bool = False
    """Keep the namespace when the stack drops it (prod): deleting it stops the component and
    whatever relies on it."""
    network: SystemNetwork | None = None
    """Default-deny NetworkPolicies for the namespace, opened by the component's policies; None:
    none."""


def platform_release(
    name: str,
    release: str,
    chart: Chart,
    source: ChartSource,
    namespace: str,
    values: Mapping[str, Any],
    timeout_seconds: int,
    opts: pulumi.ResourceOptions,
) -> k8s.helm.v3.Release:
    """A chart as the platform's components install it, into the namespace they made: awaited
    (a broken install fails the update, and what depends on the chart's webhooks waits for
    them), a failed upgrade rolled back instead of left half-applied, ten revisions kept."""
    return k8s.helm.v3.Release(
        name,
        name=release,
        **source.release_args(chart),
        namespace=namespace,
        create_namespace=False,
        values=dict(values),
        skip_await=False,
        atomic=True,
        cleanup_on_fail=True,
        timeout=timeout_seconds,
        max_history=10,
        opts=opts,
    )


class ChartInstall:
    """A chart component's namespace ``<name>-namespace`` and its policies
    ``<name>-netpol-<policy>``, made on construction; :meth:`release` adds the Helm release."""

    def __init__(
        self,
        component: pulumi.Resource,
        name: str,
        args: PlatformChartArgs,
        policies: Policies,
        pod_security: str = PSA_RESTRICTED,
    ) -> None:
        self._name = name
        self._args = args
        self.namespace = kube.Namespace(
            f"{name}-namespace",
            metadata={"name": args.namespace, "labels": system_namespace_labels(pod_security)},
            opts=pulumi.ResourceOptions(parent=component, retain_on_delete=args.retain_on_delete),
        )
        self.inside = pulumi.ResourceOptions(parent=component, depends_on=[self.namespace])
        """Options of what goes into the namespace: the component's children, after it."""
        if args.network is not None:
            create_policies(name, policies(args.namespace, args.network), self.inside)

    def release(
        self,
        release: str,
        values: Mapping[str, Any],
        after: Sequence[pulumi.Resource] = (),
    ) -> k8s.helm.v3.Release:
        """The chart's release ``<name>-release`` (Helm name ``release``) in the namespace,
        after the namespace and ``after``."""
        args = self._args
        opts = self.inside
        if after:
            opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[*after]))
        return platform_release(
            f"{self._name}-release",
            release,
            args.chart,
            args.chart_source,
            args.namespace,
            values,
            args.timeout_seconds,
            opts,
        )
