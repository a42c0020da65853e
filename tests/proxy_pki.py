"""A throwaway certificate authority and the stub proxy's certificate, made with ``openssl``
for the proxy-mode tests (tests/stub/test_proxy_mode.py, tests/client/test_legacy_proxy.py).

The proxy certificate names what a client checks on the way through the stub's proxy mode:
``127.0.0.1`` (an ``https://`` proxy URL) and ``*.table.core.windows.net`` (the tunnel).
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

HAVE_OPENSSL = shutil.which("openssl") is not None
needs_openssl = pytest.mark.skipif(not HAVE_OPENSSL, reason="needs openssl")

SUBJECT_ALT_NAMES = (
    "IP:127.0.0.1,DNS:localhost,DNS:*.table.core.windows.net,DNS:*.table.cosmos.azure.com"
)


@dataclass(frozen=True)
class ProxyPki:
    """The CA's certificate (``ca``) and the proxy's certificate and key."""

    ca: Path
    cert: Path
    key: Path

    def server_context(self) -> ssl.SSLContext:
        """The proxy's server TLS context."""
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(str(self.cert), str(self.key))
        return ctx

    def client_context(self) -> ssl.SSLContext:
        """A client context trusting only the throwaway CA."""
        return ssl.create_default_context(cafile=str(self.ca))


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_pki(directory: Path) -> ProxyPki:
    """Create the CA and the proxy certificate in ``directory``."""
    ca, ca_key = directory / "ca.pem", directory / "ca.key"
    cert, key, csr = directory / "proxy.pem", directory / "proxy.key", directory / "proxy.csr"
    ext = directory / "ext.cnf"
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        "-subj", "/CN=azt test proxy CA",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        "-keyout", str(ca_key), "-out", str(ca),
    )  # fmt: skip
    _openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
        "-keyout", str(key), "-out", str(csr),
    )  # fmt: skip
    ext.write_text(
        f"subjectAltName={SUBJECT_ALT_NAMES}\nbasicConstraints=CA:FALSE\n"
        "extendedKeyUsage=serverAuth\n"
    )
    _openssl(
        "x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key),
        "-CAcreateserial", "-days", "2", "-extfile", str(ext), "-out", str(cert),
    )  # fmt: skip
    return ProxyPki(ca, cert, key)
