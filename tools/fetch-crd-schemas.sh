#!/usr/bin/env bash
# Fetch the CRD JSON schemas that `make test` and `make preview` validate custom resources
# against, in kubeconform layout (<group>/<kind>_<version>.json): a shallow, sparse checkout of
# the public CRDs catalog, only the API groups the platform renders. CI runs it before the tests.
#
#   tools/fetch-crd-schemas.sh [DEST]     DEST defaults to $CRD_SCHEMAS, else ../shared/crd-schemas
#
# CRD_CATALOG_REPO (a mirror), CRD_CATALOG_REF (a branch, tag or commit to pin) and
# CRD_CATALOG_GROUPS (space-separated API groups) override the defaults. An existing, non-empty
# DEST is used as it is.
set -euo pipefail

dest="${1:-${CRD_SCHEMAS:-../shared/crd-schemas}}"
repo="${CRD_CATALOG_REPO:-https://github.com/datreeio/CRDs-catalog.git}"
ref="${CRD_CATALOG_REF:-main}"
read -r -a groups <<<"${CRD_CATALOG_GROUPS:-karpenter.sh karpenter.k8s.aws kueue.x-k8s.io monitoring.coreos.com nvidia.com nfd.k8s-sigs.io keda.sh}"

if [ -d "$dest" ] && [ -n "$(ls -A "$dest")" ]; then
  echo "CRD schemas: using $dest"
  exit 0
fi
git init -q "$dest"
git -C "$dest" remote add origin "$repo"
git -C "$dest" sparse-checkout set "${groups[@]}"
git -C "$dest" fetch -q --depth 1 --filter=blob:none origin "$ref"
git -C "$dest" checkout -q FETCH_HEAD
echo "CRD schemas: $repo@$ref ($(git -C "$dest" rev-parse --short HEAD)) in $dest"
