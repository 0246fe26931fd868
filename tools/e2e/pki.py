"""Certificates, keys and kubeconfigs of the local cluster, made with the ``openssl`` CLI.

The layout follows kubeadm's, so every component authenticates as it does on a real cluster and
RBAC decides what it may do: the API server serves a certificate for its loopback address and
the in-cluster names; the controller manager and the scheduler are ``system:kube-controller-
manager`` and ``system:kube-scheduler`` (their bootstrap roles); the admin and KWOK (which
plays every kubelet) are in ``system:masters``; a separate front-proxy CA signs the aggregation
layer's client; ``sa.key``/``sa.pub`` sign and verify service-account tokens.
"""

from __future__ import annotations

import base64
import ipaddress
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import yaml

VALID_DAYS: Final = 30
"""A local cluster lives for a test run; a month leaves room for a long-lived debugging one."""
KEY_BITS: Final = 2048
SERVICE_CIDR: Final = "127.96.0.0/16"
"""Service ClusterIPs, inside the loopback range: whatever the API server sends to a Service
(admission webhooks, aggregated APIs) stays on this machine, and the e2e can serve a Service
from an out-of-cluster process listening on its ClusterIP. There is no kube-proxy; the first
address is ``kubernetes``."""
CLUSTER_DOMAIN: Final = "cluster.local"
API_SERVER_NAMES: Final = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    f"kubernetes.default.svc.{CLUSTER_DOMAIN}",
)


class PkiError(RuntimeError):
    """openssl failed or is missing; the message has its output."""


@dataclass(frozen=True)
class Identity:
    """A key pair and the certificate the cluster CA signed for it."""

    name: str
    cn: str
    organisation: str = ""
    server: bool = False
    client: bool = True
    ca: str = "ca"


IDENTITIES: Final = (
    Identity("apiserver", "kube-apiserver", server=True, client=False),
    Identity("apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters"),
    Identity("admin", "kubernetes-admin", "system:masters"),
    Identity("kube-controller-manager", "system:kube-controller-manager", server=True),
    Identity("kube-scheduler", "system:kube-scheduler", server=True),
    Identity("kwok", "kwok-controller", "system:masters", server=True),
    Identity("front-proxy-client", "front-proxy-client", ca="front-proxy-ca"),
)


@dataclass(frozen=True)
class Pki:
    """Paths of everything :func:`generate` wrote into one folder."""

    folder: Path

    def cert(self, name: str) -> Path:
        return self.folder / f"{name}.crt"

    def key(self, name: str) -> Path:
        return self.folder / f"{name}.key"

    @property
    def ca_cert(self) -> Path:
        return self.cert("ca")

    @property
    def sa_key(self) -> Path:
        return self.folder / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.folder / "sa.pub"


def _openssl(args: list[str], cwd: Path) -> None:
    try:
        done = subprocess.run(
            ["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False
        )
    except FileNotFoundError:
        raise PkiError(
            "the `openssl` command is not on PATH (Debian: apt-get install openssl)"
        ) from None
    if done.returncode != 0:
        raise PkiError(f"openssl {' '.join(args)} failed:\n{done.stderr.strip()}")


def _alt_names() -> str:
    service_ip = next(ipaddress.ip_network(SERVICE_CIDR).hosts())
    names = [f"DNS:{name}" for name in API_SERVER_NAMES]
    return ",".join([*names, "IP:127.0.0.1", f"IP:{service_ip}"])


def _config(subject: dict[str, str], extensions: dict[str, str]) -> str:
    """A whole openssl config, so the machine's default one (its CA extensions) never applies."""
    lines = ["[req]", "distinguished_name = dn", "prompt = no", "x509_extensions = ext", "[dn]"]
    lines += [f"{key} = {value}" for key, value in subject.items()]
    lines += ["[ext]", *(f"{key} = {value}" for key, value in extensions.items())]
    return "\n".join(lines) + "\n"


def _ca(folder: Path, name: str, cn: str) -> None:
    (folder / f"{name}.cnf").write_text(
        _config(
            {"CN": cn},
            {
                "basicConstraints": "critical,CA:TRUE",
                "keyUsage": "critical,keyCertSign,cRLSign,digitalSignature",
                "subjectKeyIdentifier": "hash",
            },
        )
    )
    _openssl(
        [
            "req",
            "-x509",
            "-config",
            f"{name}.cnf",
            "-newkey",
            f"rsa:{KEY_BITS}",
            "-noenc",
            "-keyout",
            f"{name}.key",
            "-out",
            f"{name}.crt",
            "-days",
            str(VALID_DAYS),
        ],
        folder,
    )


def _leaf(folder: Path, identity: Identity) -> None:
    usages = [
        u for u, on in (("serverAuth", identity.server), ("clientAuth", identity.client)) if on
    ]
    extensions = {
        "basicConstraints": "critical,CA:FALSE",
        "keyUsage": "critical,digitalSignature,keyEncipherment",
        "extendedKeyUsage": ",".join(usages),
        "subjectKeyIdentifier": "hash",
        "authorityKeyIdentifier": "keyid",
    }
    if identity.server:
        extensions["subjectAltName"] = _alt_names()
    subject = {"O": identity.organisation} if identity.organisation else {}
    subject["CN"] = identity.cn
    (folder / f"{identity.name}.cnf").write_text(_config(subject, extensions))
    _openssl(
        [
            "req",
            "-x509",
            "-config",
            f"{identity.name}.cnf",
            "-newkey",
            f"rsa:{KEY_BITS}",
            "-noenc",
            "-keyout",
            f"{identity.name}.key",
            "-out",
            f"{identity.name}.crt",
            "-days",
            str(VALID_DAYS),
            "-CA",
            f"{identity.ca}.crt",
            "-CAkey",
            f"{identity.ca}.key",
        ],
        folder,
    )


def generate(folder: Path) -> Pki:
    """Fresh CAs, one certificate per identity and the service-account key pair."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    _ca(folder, "ca", "ai-platform-e2e-ca")
    _ca(folder, "front-proxy-ca", "ai-platform-e2e-front-proxy-ca")
    for identity in IDENTITIES:
        _leaf(folder, identity)
    _openssl(
        [
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            f"rsa_keygen_bits:{KEY_BITS}",
            "-out",
            "sa.key",
        ],
        folder,
    )
    _openssl(["pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub"], folder)
    for cnf in folder.glob("*.cnf"):
        cnf.unlink()
    return Pki(folder)


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def kubeconfig(pki: Pki, identity: str, server: str, *, context: str, cluster: str = "e2e") -> str:
    """A self-contained kubeconfig (certificates embedded) for one identity."""
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": cluster,
                "cluster": {"server": server, "certificate-authority-data": _b64(pki.ca_cert)},
            }
        ],
        "users": [
            {
                "name": identity,
                "user": {
                    "client-certificate-data": _b64(pki.cert(identity)),
                    "client-key-data": _b64(pki.key(identity)),
                },
            }
        ],
        "contexts": [{"name": context, "context": {"cluster": cluster, "user": identity}}],
        "current-context": context,
    }
    return yaml.safe_dump(document, sort_keys=False)
