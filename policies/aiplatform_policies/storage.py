"""Storage policies: datasets and checkpoints are the most expensive things to lose, so they live
on named, bounded, existing PersistentVolumeClaims that prod never deletes by accident."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any, Final, NamedTuple

from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    Severity,
    StackValidationArgs,
)

from .kube import (
    as_map,
    as_seq,
    as_str,
    dig,
    effective_namespace,
    format_bytes,
    is_kind,
    name_of,
    parse_quantity,
)
from .podspec import WORKLOAD_KINDS, PodView, iter_volume_mounts, pod_view
from .registry import (
    NO_KNOBS,
    Category,
    Knobs,
    resource_policy,
    stack_policy,
    str_list,
    string_list_schema,
)
from .shared import WORKLOAD_TYPE_EVALUATION, WORKLOAD_TYPE_TRAINING

PVC: Final = "core/PersistentVolumeClaim"
STATEFULSET: Final = "apps/StatefulSet"
STORAGE_CLASS: Final = "storage.k8s.io/StorageClass"
SHM_PATH: Final = "/dev/shm"


def volume_source(volume: Mapping[str, Any]) -> str:
    """The volume's source type (``persistentVolumeClaim``, ``emptyDir``, ...)."""
    for key in volume:
        if key != "name":
            return str(key)
    return "unknown"


def claim_templates(props: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """``spec.volumeClaimTemplates`` of a StatefulSet."""
    for item in as_seq(dig(props, "spec", "volumeClaimTemplates")):
        if isinstance(item, Mapping):
            yield item


def claim_specs(
    resource_type: str, props: Mapping[str, Any]
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """``(how to name it, claim spec)`` for a PVC or each claim template of a StatefulSet."""
    if is_kind(resource_type, PVC):
        yield f'PersistentVolumeClaim "{name_of(props)}"', as_map(props.get("spec"))
    elif is_kind(resource_type, STATEFULSET):
        for template in claim_templates(props):
            yield (f'volume claim template "{name_of(template)}"', as_map(template.get("spec")))


# --- training-data-on-pvc -------------------------------------------------------------------------
class DataPaths(NamedTuple):
    paths: tuple[str, ...]
    workload_types: frozenset[str]


def _parse_data_paths(raw: Mapping[str, Any]) -> DataPaths:
    paths = tuple(p.rstrip("/") or "/" for p in str_list(raw.get("dataPaths")))
    return DataPaths(paths, frozenset(str_list(raw.get("workloadTypes"))))


def _under(path: str, prefixes: tuple[str, ...]) -> bool:
    path = path.rstrip("/") or "/"
    return any(path == p or path.startswith(p + "/") or p == "/" for p in prefixes)


def _check_data_on_pvc(
    args: ResourceValidationArgs, report: ReportViolation, cfg: DataPaths
) -> None:
    view = pod_view(args.resource_type, args.props)
    if view is None or view.workload_type not in cfg.workload_types:
        return
    templates = (
        {name_of(t) for t in claim_templates(args.props)} if view.kind == "StatefulSet" else set()
    )
    for container in view.containers:
        for volume_name, mount_path in iter_volume_mounts(container):
            if not _under(mount_path, cfg.paths) or volume_name in templates:
                continue
            volume = view.volumes.get(volume_name)
            if volume is None:
                continue
            source = volume_source(volume)
            if source != "persistentVolumeClaim":
                report(
                    f'{container.label} mounts volume "{volume_name}" ({source}) at '
                    f'"{mount_path}"; datasets and checkpoints must come from a '
                    "PersistentVolumeClaim",
                    None,
                )


training_data_on_pvc = resource_policy(
    name="training-data-on-pvc",
    description="Training and evaluation pods read datasets and write checkpoints on PVCs only.",
    category=Category.STORAGE,
    severity=Severity.HIGH,
    remediation=(
        "Back every volume mounted at a data path (/data, /datasets, /checkpoints) with a "
        "persistentVolumeClaim volume (or a StatefulSet volumeClaimTemplate). emptyDir dies with "
        "the pod and hostPath ties the job to one node: a preempted or rescheduled training "
        "run loses its checkpoints."
    ),
    check=_check_data_on_pvc,
    knobs=Knobs(
        {
            "dataPaths": string_list_schema(
                "Mount paths (and everything below them) that hold datasets or checkpoints.",
                ("/data", "/datasets", "/checkpoints"),
            ),
            "workloadTypes": string_list_schema(
                "Values of the workload-type label the policy applies to.",
                (WORKLOAD_TYPE_TRAINING, WORKLOAD_TYPE_EVALUATION),
            ),
        },
        _parse_data_paths,
    ),
    kinds=WORKLOAD_KINDS,
)


# --- pvc-storage-class-allowed --------------------------------------------------------------------
def _check_class(
    args: ResourceValidationArgs, report: ReportViolation, allowed: tuple[str, ...]
) -> None:
    for who, spec in claim_specs(args.resource_type, args.props):
        name = spec.get("storageClassName")
        if not isinstance(name, str) or not name:
            report(
                f"{who} sets no storageClassName; name one of the platform's storage classes "
                "explicitly instead of relying on the cluster default",
                None,
            )
        elif allowed and name not in allowed:
            report(
                f'{who} uses storage class "{name}", which is not one of: {", ".join(allowed)}',
                None,
            )


pvc_storage_class_allowed = resource_policy(
    name="pvc-storage-class-allowed",
    description="Every PVC and StatefulSet claim template names an allowed storage class.",
    category=Category.STORAGE,
    severity=Severity.MEDIUM,
    remediation=(
        "Set spec.storageClassName to one of the platform's storage classes (the checkpoints "
        "class for single-writer checkpoints, the datasets class for shared read-many data). The "
        "cluster default may change and a wrong class means the wrong performance and cost."
    ),
    check=_check_class,
    knobs=Knobs(
        {
            "allowedStorageClasses": string_list_schema(
                "Storage classes claims may use; empty allows any explicitly named class "
                "(pvc-storage-class-defined then checks it exists).",
                (),
            )
        },
        lambda raw: str_list(raw.get("allowedStorageClasses")),
    ),
    kinds=(PVC, STATEFULSET),
)


# --- pvc-size-bounds ------------------------------------------------------------------------------
class SizeBounds(NamedTuple):
    minimum: Decimal
    maximum: Decimal
    min_text: str
    max_text: str


def _parse_bounds(raw: Mapping[str, Any]) -> SizeBounds:
    min_text = as_str(raw.get("minSize")) or "1Gi"
    max_text = as_str(raw.get("maxSize")) or "64Ti"
    minimum = parse_quantity(min_text)
    maximum = parse_quantity(max_text)
    if minimum is None:
        min_text, minimum = "1Gi", Decimal(2**30)
    if maximum is None:
        max_text, maximum = "64Ti", Decimal(64 * 2**40)
    return SizeBounds(minimum, maximum, min_text, max_text)


def _check_size(args: ResourceValidationArgs, report: ReportViolation, cfg: SizeBounds) -> None:
    for who, spec in claim_specs(args.resource_type, args.props):
        raw = dig(spec, "resources", "requests", "storage")
        if raw is None:
            report(f"{who} requests no storage size (spec.resources.requests.storage)", None)
            continue
        size = parse_quantity(raw)
        shown = (
            raw if isinstance(raw, str) else format_bytes(size) if size is not None else str(raw)
        )
        if size is None:
            report(f'{who} requests storage "{shown}", which is not a Kubernetes quantity', None)
        elif size > cfg.maximum:
            report(f"{who} requests {shown} of storage, above the maximum of {cfg.max_text}", None)
        elif size < cfg.minimum:
            report(f"{who} requests {shown} of storage, below the minimum of {cfg.min_text}", None)


_QUANTITY_PATTERN: Final = r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$"

pvc_size_bounds = resource_policy(
    name="pvc-size-bounds",
    description=(
        "Every PVC and StatefulSet claim template requests a size within the platform's bounds."
    ),
    category=Category.STORAGE,
    severity=Severity.MEDIUM,
    remediation=(
        "Set spec.resources.requests.storage between minSize and maxSize. Tiny claims are "
        "usually typos (100Mi for 100Gi); huge ones exhaust the team's storage quota or the "
        "backend. Split very large datasets or use object storage."
    ),
    check=_check_size,
    knobs=Knobs(
        {
            "minSize": {
                "type": "string",
                "pattern": _QUANTITY_PATTERN,
                "default": "1Gi",
                "description": "Smallest claim size (a Kubernetes quantity).",
            },
            "maxSize": {
                "type": "string",
                "pattern": _QUANTITY_PATTERN,
                "default": "64Ti",
                "description": "Largest claim size (a Kubernetes quantity).",
            },
        },
        _parse_bounds,
    ),
    kinds=(PVC, STATEFULSET),
)


# --- shm-size-limit -------------------------------------------------------------------------------
def _check_shm(args: ResourceValidationArgs, report: ReportViolation, _: None) -> None:
    view = pod_view(args.resource_type, args.props)
    if view is None:
        return
    seen: set[str] = set()
    for container in view.containers:
        for volume_name, mount_path in iter_volume_mounts(container):
            if mount_path.rstrip("/") != SHM_PATH or volume_name in seen:
                continue
            seen.add(volume_name)
            volume = view.volumes.get(volume_name)
            if volume is None or "emptyDir" not in volume:
                continue
            empty_dir = as_map(volume.get("emptyDir"))
            if empty_dir.get("medium") != "Memory":
                report(
                    f'volume "{volume_name}" mounted at {SHM_PATH} is disk-backed; set '
                    "emptyDir.medium: Memory",
                    None,
                )
            if empty_dir.get("sizeLimit") in (None, ""):
                report(
                    f'volume "{volume_name}" mounted at {SHM_PATH} sets no emptyDir.sizeLimit; '
                    "unbounded shared memory can exhaust the node's memory",
                    None,
                )


shm_size_limit = resource_policy(
    name="shm-size-limit",
    description="A /dev/shm emptyDir is memory-backed and sets a sizeLimit.",
    category=Category.STORAGE,
    severity=Severity.MEDIUM,
    remediation=(
        "Declare the /dev/shm volume as emptyDir: {medium: Memory, sizeLimit: <e.g. 16Gi>}. "
        "PyTorch dataloaders and NCCL need a large /dev/shm, but an unbounded one grows until "
        "the node runs out of memory and evicts its neighbours; size it and count it in the "
        "container's memory limit."
    ),
    check=_check_shm,
    knobs=NO_KNOBS,
    kinds=WORKLOAD_KINDS,
)


# --- pvc-protected --------------------------------------------------------------------------------
def _check_protected(args: ResourceValidationArgs, report: ReportViolation, _: None) -> None:
    if is_kind(args.resource_type, PVC):
        if not args.opts.protect:
            report(
                f'PersistentVolumeClaim "{name_of(args.props)}" is not protected; set the '
                "protect resource option so Pulumi refuses to delete it",
                None,
            )
        return
    if not any(True for _ in claim_templates(args.props)):
        return
    policy = as_map(dig(args.props, "spec", "persistentVolumeClaimRetentionPolicy"))
    for when in ("whenDeleted", "whenScaled"):
        if policy.get(when) == "Delete":
            report(
                f"StatefulSet deletes its PersistentVolumeClaims "
                f"(persistentVolumeClaimRetentionPolicy.{when}: Delete); use Retain",
                None,
            )


pvc_protected = resource_policy(
    name="pvc-protected",
    description="PersistentVolumeClaims cannot be deleted by a Pulumi update (prod).",
    category=Category.STORAGE,
    severity=Severity.HIGH,
    remediation=(
        "Create PersistentVolumeClaims with the protect resource option (the platform does so "
        "when the stack protects data, the default in prod), and keep StatefulSet "
        "persistentVolumeClaimRetentionPolicy at Retain. Deleting a claim deletes the dataset or "
        "checkpoints behind it unless the storage class retains."
    ),
    check=_check_protected,
    knobs=NO_KNOBS,
    kinds=(PVC, STATEFULSET),
)


# --- storage-class-retain -------------------------------------------------------------------------
def _check_retain(args: ResourceValidationArgs, report: ReportViolation, _: None) -> None:
    name = name_of(args.props)
    policy = args.props.get("reclaimPolicy")
    if policy is None:
        report(
            f'StorageClass "{name}" sets no reclaimPolicy, so Kubernetes uses Delete; set Retain',
            None,
        )
    elif policy != "Retain":
        report(
            f'StorageClass "{name}" has reclaimPolicy {policy}; set Retain so a deleted claim '
            "keeps its volume",
            None,
        )


storage_class_retain = resource_policy(
    name="storage-class-retain",
    description="StorageClasses keep volumes after their claims are deleted (prod).",
    category=Category.STORAGE,
    severity=Severity.HIGH,
    remediation=(
        "Set reclaimPolicy: Retain on every StorageClass of a stack that protects data. The "
        "volume then survives an accidental claim deletion and can be re-bound by hand."
    ),
    check=_check_retain,
    knobs=NO_KNOBS,
    kinds=(STORAGE_CLASS,),
)


# --- workload-pvcs-exist (stack) ------------------------------------------------------------------
def _claims_in_stack(resources: list[PolicyResource]) -> set[tuple[str, str]]:
    return {
        (effective_namespace(r.props), name_of(r.props))
        for r in resources
        if is_kind(r.resource_type, PVC)
    }


def _mounted_claims(view: PodView) -> Iterator[tuple[str, str]]:
    """``(volume name, claim name)`` for every PVC volume of the pod template."""
    for volume_name, volume in view.volumes.items():
        claim = as_str(as_map(volume.get("persistentVolumeClaim")).get("claimName"))
        if claim:
            yield volume_name, claim


def _check_claims_exist(
    args: StackValidationArgs, report: ReportViolation, external: frozenset[str]
) -> None:
    claims = _claims_in_stack(args.resources)
    for resource in args.resources:
        view = pod_view(resource.resource_type, resource.props)
        if view is None:
            continue
        namespace = effective_namespace(resource.props)
        for volume_name, claim in _mounted_claims(view):
            if (namespace, claim) in claims or f"{namespace}/{claim}" in external:
                continue
            report(
                f'{view.kind} "{view.name}" in namespace "{namespace}" mounts '
                f'PersistentVolumeClaim "{claim}" (volume "{volume_name}"), which this stack '
                "does not define",
                resource.urn,
            )


workload_pvcs_exist = stack_policy(
    name="workload-pvcs-exist",
    description=(
        "Every PersistentVolumeClaim a workload mounts is defined in the same stack and namespace."
    ),
    category=Category.STORAGE,
    severity=Severity.HIGH,
    remediation=(
        "Define the claim in the stack (a team volume in ai-platform:teams), fix the claimName "
        "or the namespace, or list a claim managed elsewhere in externalClaims as "
        "<namespace>/<name>. A pod whose claim does not exist stays Pending forever."
    ),
    check=_check_claims_exist,
    knobs=Knobs(
        {
            "externalClaims": string_list_schema(
                "Claims managed outside this stack, as <namespace>/<name>.", ()
            )
        },
        lambda raw: frozenset(str_list(raw.get("externalClaims"))),
    ),
)


# --- pvc-storage-class-defined (stack) ------------------------------------------------------------
def _check_class_defined(
    args: StackValidationArgs, report: ReportViolation, external: frozenset[str]
) -> None:
    defined = {name_of(r.props) for r in args.resources if is_kind(r.resource_type, STORAGE_CLASS)}
    for resource in args.resources:
        for who, spec in claim_specs(resource.resource_type, resource.props):
            name = spec.get("storageClassName")
            if isinstance(name, str) and name and name not in defined and name not in external:
                report(
                    f'{who} uses storage class "{name}", which this stack does not define',
                    resource.urn,
                )


pvc_storage_class_defined = stack_policy(
    name="pvc-storage-class-defined",
    description="Claims use storage classes the stack defines (or that are listed as external).",
    category=Category.STORAGE,
    severity=Severity.MEDIUM,
    remediation=(
        "Use a storage class from ai-platform:storage.classes, or list a class the cluster "
        "provides outside this stack in externalStorageClasses. A claim naming a missing class "
        "never binds."
    ),
    check=_check_class_defined,
    knobs=Knobs(
        {
            "externalStorageClasses": string_list_schema(
                "Storage classes that exist in the cluster but are not created by this stack.", ()
            )
        },
        lambda raw: frozenset(str_list(raw.get("externalStorageClasses"))),
    ),
    level=EnforcementLevel.ADVISORY,
)
