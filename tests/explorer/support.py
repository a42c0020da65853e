"""A small blocking client of the stub's Table API (SharedKeyLite signed, raw HTTP), to seed
and read back what the explorer tests change, outside the page."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import urllib.error
import urllib.request
from email.utils import formatdate
from typing import Any
from urllib.parse import quote

from azt_server_stub import DEV_ACCOUNT, DEV_KEY

FULL = "application/json;odata=fullmetadata"


class TableApi:
    """Signed raw requests to one account of a stub (``base``: ``http://127.0.0.1:port``)."""

    def __init__(self, base: str, account: str = DEV_ACCOUNT, key: str = DEV_KEY) -> None:
        self.base = base
        self.account = account
        self.key = key

    def request(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], Any]:
        """``path`` after the account, already percent-encoded; JSON in and out."""
        date = formatdate(usegmt=True)
        resource = f"/{self.account}/{self.account}{path.split('?', 1)[0]}"
        digest = hmac.new(
            base64.b64decode(self.key), f"{date}\n{resource}".encode(), hashlib.sha256
        ).digest()
        sent = {
            "x-ms-date": date,
            "x-ms-version": "2019-02-02",
            "Accept": FULL,
            "DataServiceVersion": "3.0",
            "Authorization": f"SharedKeyLite {self.account}:{base64.b64encode(digest).decode()}",
        }
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        sent.update(headers or {})
        req = urllib.request.Request(
            f"{self.base}/{self.account}{path}", data=data, method=method, headers=sent
        )
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                raw = resp.read()
                return resp.status, dict(resp.headers), json.loads(raw) if raw else None
        except urllib.error.HTTPError as err:
            raw = err.read()
            return err.code, dict(err.headers), json.loads(raw) if raw else None

    def create_table(self, name: str) -> None:
        status, _, body = self.request("POST", "/Tables", {"TableName": name})
        assert status == 201, body

    def insert(self, table: str, entity: dict[str, Any]) -> dict[str, Any]:
        status, _, body = self.request("POST", f"/{table}", entity)
        assert status == 201, body
        assert isinstance(body, dict)
        return body

    def get(self, table: str, pk: str, rk: str) -> dict[str, Any]:
        """The entity as the service writes it with full metadata (every value as sent)."""
        path = f"/{table}(PartitionKey='{quote(pk)}',RowKey='{quote(rk)}')"
        status, _, body = self.request("GET", path)
        assert status == 200, body
        assert isinstance(body, dict)
        return body

    def status_of(self, table: str, pk: str, rk: str) -> int:
        path = f"/{table}(PartitionKey='{quote(pk)}',RowKey='{quote(rk)}')"
        return self.request("GET", path)[0]

    def merge(self, table: str, pk: str, rk: str, props: dict[str, Any]) -> None:
        path = f"/{table}(PartitionKey='{quote(pk)}',RowKey='{quote(rk)}')"
        status, _, body = self.request("MERGE", path, props, {"If-Match": "*"})
        assert status == 204, body

    def tables(self) -> list[str]:
        status, _, body = self.request("GET", "/Tables")
        assert status == 200, body
        return [t["TableName"] for t in body["value"]]
