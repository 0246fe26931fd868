"""The local cluster's storage: a volume provisioner standing in for the CSI drivers.

    python -m tools.e2e.provisioner --kubeconfig admin.kubeconfig --context lab-admin

A real cluster's CSI driver (local-path, NFS, EBS) creates a PersistentVolume for each claim of
its storage class; KWOK has no disks, so without this every claim stays Pending and every pod
that mounts one stays unscheduled (the scheduler waits for ``WaitForFirstConsumer`` claims to be
provisioned). This does what an external provisioner does, and nothing more: for a Pending claim
whose class names a provisioner (once the scheduler picked a node, for late binding), a PV of the
claim's size, access modes, class, reclaim policy and mount options, bound to the claim through
``claimRef``; the controller manager then binds the pair. A released PV whose policy is
``Delete`` is deleted, as the driver would. No data exists anywhere: the PV's source is a CSI
volume handle nothing serves.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from components.constants import HOSTNAME_LABEL, ZONE_LABEL

SELECTED_NODE = "volume.kubernetes.io/selected-node"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
MANAGED_LABEL = "e2e.aiplatform.io/provisioned"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
NODE_LOCAL_PROVISIONERS = frozenset({"rancher.io/local-path", "openebs.io/local"})
"""Provisioners whose volumes live on one node's disk: their PVs are pinned to that node. Other
CSI drivers report the zone as the volume's topology (EBS), or nothing (NFS, EFS)."""
VOLUME_ROOT = "/var/lib/e2e-volumes"
POLL_S = 0.5
GIVE_UP_S = 120.0
"""Without an API server for this long the cluster is gone: stop rather than linger."""


class Kubectl:
    def __init__(self, binary: Path, kubeconfig: Path, context: str) -> None:
        self.base = [str(binary), f"--kubeconfig={kubeconfig}", f"--context={context}"]

    def get(self, *args: str) -> Any:
        out = subprocess.run(
            [*self.base, "get", *args, "-o", "json"],
            capture_output=True, text=True, timeout=30, check=True,
        )  # fmt: skip
        return json.loads(out.stdout)

    def apply(self, manifest: dict[str, Any]) -> None:
        subprocess.run(
            [*self.base, "create", "-f", "-"],
            input=json.dumps(manifest), capture_output=True, text=True, timeout=30, check=True,
        )  # fmt: skip

    def delete(self, kind: str, name: str) -> None:
        subprocess.run(
            [*self.base, "delete", kind, name, "--wait=false", "--ignore-not-found"],
            capture_output=True, text=True, timeout=30, check=True,
        )  # fmt: skip


def volume_for(
    claim: dict[str, Any],
    storage_class: dict[str, Any],
    node_labels: dict[str, str] | None = None,
) -> dict[str, Any] | None:
    """The PV a CSI driver would create for ``claim``, or None when it is not (yet) one to
    provision: bound already, no provisioner, or late binding before the scheduler chose.
    ``node_labels``: the scheduler's chosen node's, for the volume's topology."""
    meta, spec = claim["metadata"], claim.get("spec", {})
    if claim.get("status", {}).get("phase") != "Pending" or spec.get("volumeName"):
        return None
    provisioner = storage_class.get("provisioner", NO_PROVISIONER)
    if provisioner == NO_PROVISIONER:
        return None
    late = storage_class.get("volumeBindingMode") == "WaitForFirstConsumer"
    if late and SELECTED_NODE not in (meta.get("annotations") or {}):
        return None
    volume: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": f"pvc-{meta['uid']}",
            "labels": {MANAGED_LABEL: "true"},
            "annotations": {PROVISIONED_BY: provisioner},
        },
        "spec": {
            "capacity": {"storage": spec["resources"]["requests"]["storage"]},
            "accessModes": spec.get("accessModes", ["ReadWriteOnce"]),
            "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy", "Delete"),
            "storageClassName": storage_class["metadata"]["name"],
            "volumeMode": spec.get("volumeMode", "Filesystem"),
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta["uid"],
            },
            # A path on no disk: KWOK mounts nothing, and the source must only be valid.
            "hostPath": {"path": f"{VOLUME_ROOT}/{meta['namespace']}/{meta['name']}"},
        },
    }
    node = (meta.get("annotations") or {}).get(SELECTED_NODE)
    single_writer = volume["spec"]["accessModes"] == ["ReadWriteOnce"]
    if node and single_writer:
        if provisioner in NODE_LOCAL_PROVISIONERS:
            # A node-local volume, as local-path makes it: pods that mount it go to that node.
            volume["spec"]["nodeAffinity"] = _affinity(HOSTNAME_LABEL, node)
        elif (node_labels or {}).get(ZONE_LABEL):
            # A zonal block volume (EBS): pods that mount it stay in that zone.
            volume["spec"]["nodeAffinity"] = _affinity(ZONE_LABEL, (node_labels or {})[ZONE_LABEL])
    if storage_class.get("mountOptions"):
        volume["spec"]["mountOptions"] = list(storage_class["mountOptions"])
    return volume


def _affinity(key: str, value: str) -> dict[str, Any]:
    expression = {"key": key, "operator": "In", "values": [value]}
    return {"required": {"nodeSelectorTerms": [{"matchExpressions": [expression]}]}}


def released(volume: dict[str, Any]) -> bool:
    """A volume of ours whose claim is gone and whose class says delete."""
    return (
        volume["metadata"].get("labels", {}).get(MANAGED_LABEL) == "true"
        and volume.get("status", {}).get("phase") == "Released"
        and volume["spec"].get("persistentVolumeReclaimPolicy") == "Delete"
    )


def reconcile(kubectl: Kubectl, log: Any = print) -> None:
    classes = {c["metadata"]["name"]: c for c in kubectl.get("storageclasses")["items"]}
    nodes = {
        n["metadata"]["name"]: n["metadata"].get("labels", {})
        for n in kubectl.get("nodes")["items"]
    }
    volumes = kubectl.get("persistentvolumes")["items"]
    existing = {v["metadata"]["name"] for v in volumes}
    for claim in kubectl.get("persistentvolumeclaims", "--all-namespaces")["items"]:
        storage_class = classes.get(claim.get("spec", {}).get("storageClassName") or "")
        if storage_class is None:
            continue
        selected = (claim["metadata"].get("annotations") or {}).get(SELECTED_NODE, "")
        volume = volume_for(claim, storage_class, nodes.get(selected))
        if volume is None or volume["metadata"]["name"] in existing:
            continue
        meta = claim["metadata"]
        where = f"{meta['namespace']}/{meta['name']}"
        try:
            kubectl.apply(volume)
        except subprocess.CalledProcessError as exc:  # one bad claim must not block the others
            log(f"provisioner: {where}: {(exc.stderr or '').strip()[:300]}")
            continue
        log(f"provisioned {volume['metadata']['name']} for {where}")
    for volume in volumes:
        if released(volume):
            kubectl.delete("persistentvolume", volume["metadata"]["name"])
            log(f"deleted released {volume['metadata']['name']}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.e2e.provisioner", description=__doc__)
    parser.add_argument("--kubectl", type=Path, required=True)
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--context", required=True)
    args = parser.parse_args(argv)
    kubectl = Kubectl(args.kubectl, args.kubeconfig, args.context)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

    def log(line: str) -> None:
        print(line, flush=True)

    log("provisioner: watching claims")
    failing_since: float | None = None
    while True:
        try:
            reconcile(kubectl, log)
            failing_since = None
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            stderr = getattr(exc, "stderr", "") or ""
            log(f"provisioner: retrying after {exc.__class__.__name__}: {stderr.strip()[:300]}")
            failing_since = failing_since or time.monotonic()
            if time.monotonic() - failing_since > GIVE_UP_S:
                log(f"provisioner: no API server for {GIVE_UP_S:.0f} s, stopping")
                return 1
        time.sleep(POLL_S)


if __name__ == "__main__":
    sys.exit(main())
