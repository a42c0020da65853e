"""HTTPS with a certificate and key, and bearer tokens (opt-in, HTTPS only as on Azure)."""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import subprocess
import time
from pathlib import Path

import aiohttp
import pytest

from azt_server_stub import StubConfig, StubServer
from azt_server_stub.auth import AuthOptions
from azt_server_stub.server import load_ssl_context

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


def _self_signed(tmp: Path) -> tuple[Path, Path]:
    cert, key = tmp / "cert.pem", tmp / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def _token(claims: dict[str, object]) -> str:
    def part(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJl"


async def test_https_and_bearer_tokens(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    config = StubConfig(auth=AuthOptions(allow_bearer=True))
    client_ctx = ssl.create_default_context(cafile=str(cert))
    now = int(time.time())
    good = _token(
        {
            "aud": "https://storage.azure.com",
            "iat": now,
            "nbf": now - 10,
            "exp": now + 3600,
            "iss": "https://sts.windows.net/t/",
        }
    )
    expired = _token({"aud": "https://storage.azure.com", "nbf": now - 7200, "exp": now - 3600})
    async with StubServer(config, ssl_context=load_ssl_context(cert, key)) as stub:
        assert stub.endpoint.startswith("https://")
        assert "DefaultEndpointsProtocol=https" in stub.connection_string
        async with aiohttp.ClientSession() as session:

            async def get(token: str) -> tuple[int, str | None]:
                async with session.get(
                    f"{stub.table_endpoint()}/Tables",
                    headers={
                        "Authorization": f"Bearer {token}",
                        "x-ms-version": "2019-02-02",
                        "Accept": "application/json;odata=nometadata",
                    },
                    ssl=client_ctx,
                ) as resp:
                    await resp.read()
                    return resp.status, resp.headers.get("x-ms-error-code")

            assert await get(good) == (200, None)
            assert await get(expired) == (401, "InvalidAuthenticationInfo")
            # plain HTTP bearer requests are refused unless explicitly allowed
    async with (
        StubServer(config) as plain,
        aiohttp.ClientSession() as session,
        session.get(
            f"{plain.table_endpoint()}/Tables",
            headers={"Authorization": f"Bearer {good}", "x-ms-version": "2019-02-02"},
        ) as resp,
    ):
        assert resp.status == 403
        assert resp.headers["x-ms-error-code"] == "AuthenticationFailed"
