"""Connection strings and endpoints (PROTOCOL.md section 1).

``parse_connection_string`` turns a storage connection string into
:class:`ConnectionSettings` (account, key or SAS, primary and secondary endpoints);
:class:`Endpoint` splits a table endpoint URL into the parts the client needs to build and
sign request URLs (host-style ``https://acct.table.core.windows.net`` or emulator
path-style ``http://127.0.0.1:10002/devstoreaccount1``); :func:`is_cosmos_endpoint` tells
an Azure Cosmos DB Table API endpoint (``https://acct.table.cosmos.azure.com:443/``), which
has no ``-secondary`` endpoint.

Example::

    >>> s = parse_connection_string("UseDevelopmentStorage=true")
    >>> s.endpoint, s.account_name
    ('http://127.0.0.1:10002/devstoreaccount1', 'devstoreaccount1')
"""

from __future__ import annotations

import ipaddress
import urllib.parse

import attrs

from azt._core.signing import decode_key
from azt._errors import ConnectionStringError, ValidationError

DEV_ACCOUNT_NAME = "devstoreaccount1"
"""The development storage (emulator) account name."""

DEV_ACCOUNT_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
"""The development storage account key (public, well known)."""

DEV_TABLE_PORT = 10002
DEV_TABLE_ENDPOINT = f"http://127.0.0.1:{DEV_TABLE_PORT}/{DEV_ACCOUNT_NAME}"
DEFAULT_ENDPOINT_SUFFIX = "core.windows.net"

# Canonical spelling of every key we understand, indexed by its lower-cased form.
_KNOWN_KEYS = {
    k.lower(): k
    for k in (
        "DefaultEndpointsProtocol",
        "AccountName",
        "AccountKey",
        "SharedAccessSignature",
        "TableEndpoint",
        "TableSecondaryEndpoint",
        "EndpointSuffix",
        "UseDevelopmentStorage",
        "DevelopmentStorageProxyUri",
    )
}
# Keys of the other storage services: legal in a shared connection string, ignored here.
_OTHER_SERVICE_KEYS = {
    k.lower()
    for k in (
        "BlobEndpoint",
        "BlobSecondaryEndpoint",
        "QueueEndpoint",
        "QueueSecondaryEndpoint",
        "FileEndpoint",
        "FileSecondaryEndpoint",
        "DfsEndpoint",
        "DfsSecondaryEndpoint",
    )
}


def is_cosmos_endpoint(url: object) -> bool:
    """Whether ``url`` is an Azure Cosmos DB Table API endpoint (by its host name alone).

    ``{account}.table.cosmos.{suffix}`` (the current form, ``acct.table.cosmos.azure.com``,
    also ``cosmos.azure.us`` / ``cosmos.azure.cn``) or ``{account}.table.cosmosdb.{suffix}``
    (the older form) are, ``-secondary`` accounts included; a URL without a scheme is read
    as a host. Storage endpoints, emulators on loopback addresses (their port says nothing
    reliable), custom domains and non-strings are not (pass ``flavor=Flavor.COSMOS`` to a
    client for those). One definition serves the flavour and the bearer-token scope.

    Example::

        >>> is_cosmos_endpoint("https://acct.table.cosmos.azure.com:443/")
        True
        >>> is_cosmos_endpoint("https://acct.table.core.windows.net")
        False
    """
    if not isinstance(url, str):
        return False
    text = url.strip()
    if "//" not in text:
        text = "//" + text
    try:
        host = urllib.parse.urlsplit(text).hostname or ""
    except ValueError:
        return False
    labels = host.lower().rstrip(".").split(".")
    return len(labels) >= 4 and labels[1] == "table" and labels[2] in ("cosmos", "cosmosdb")


@attrs.frozen
class Endpoint:
    """A table service endpoint split into what request building and signing need.

    ``url`` has no trailing slash; ``path`` is its path part (``""`` for host-style
    endpoints, ``"/devstoreaccount1"`` for the emulator), which every request path is
    appended to. ``account_name`` is the account the URL names (first DNS label for
    host-style ``{account}.table.{suffix}``, first path segment for path-style), with any
    ``-secondary`` suffix removed; ``None`` when the URL does not name one (custom
    domains). ``is_secondary`` is true for ``-secondary``.

    Example::

        >>> ep = Endpoint.parse("http://127.0.0.1:10002/devstoreaccount1/")
        >>> ep.url, ep.path, ep.account_name, ep.path_style
        ('http://127.0.0.1:10002/devstoreaccount1', '/devstoreaccount1', 'devstoreaccount1', True)
        >>> Endpoint.parse("https://acct.table.core.windows.net").secondary().url
        'https://acct-secondary.table.core.windows.net'
    """

    url: str
    scheme: str
    netloc: str
    path: str
    account_name: str | None
    path_style: bool
    is_secondary: bool

    @classmethod
    def parse(cls, url: str) -> Endpoint:
        """Parse and normalise an endpoint URL; raise :class:`ConnectionStringError` if bad.

        Example::

            >>> Endpoint.parse("https://acct.table.core.windows.net/").path
            ''
        """
        if not isinstance(url, str) or not url.strip():
            raise ConnectionStringError("the table endpoint is empty")
        text = url.strip()
        parts = urllib.parse.urlsplit(text)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            raise ConnectionStringError(
                f"the table endpoint {text!r} must start with http:// or https://"
            )
        if not parts.hostname:
            raise ConnectionStringError(f"the table endpoint {text!r} has no host")
        if parts.query or parts.fragment:
            raise ConnectionStringError(
                f"the table endpoint {text!r} must not carry a query string or fragment; "
                "pass a SAS token as the credential instead"
            )
        try:
            _ = parts.port
        except ValueError as exc:
            raise ConnectionStringError(f"the table endpoint {text!r} has a bad port") from exc
        path = parts.path.rstrip("/")
        host = parts.hostname.lower()
        path_style = _is_path_style_host(host)
        if path_style:
            first = path.lstrip("/").split("/", 1)[0]
            raw_account = first or None
        else:
            labels = host.split(".")
            # Only Azure-shaped hosts ({account}.table.{suffix}) name the account.
            raw_account = labels[0] if len(labels) >= 3 and labels[1] == "table" else None
        is_secondary = bool(raw_account and raw_account.endswith("-secondary"))
        account = raw_account[: -len("-secondary")] if raw_account and is_secondary else raw_account
        netloc = parts.netloc
        return cls(
            url=f"{scheme}://{netloc}{path}",
            scheme=scheme,
            netloc=netloc,
            path=path,
            account_name=account or None,
            path_style=path_style,
            is_secondary=is_secondary,
        )

    def secondary(self) -> Endpoint | None:
        """The RA-GRS secondary endpoint derived from this one, or ``None`` if unknown
        (always for Cosmos DB endpoints, which have none).

        Host-style: ``{account}-secondary.…``; path-style: ``/{account}-secondary``.

        Example::

            >>> Endpoint.parse("http://127.0.0.1:10002/devstoreaccount1").secondary().url
            'http://127.0.0.1:10002/devstoreaccount1-secondary'
        """
        if self.is_secondary:
            return self
        if self.account_name is None or is_cosmos_endpoint(self.url):
            return None  # Cosmos DB has no -secondary endpoint
        if self.path_style:
            segments = self.path.lstrip("/").split("/", 1)
            if segments[0] != self.account_name:
                return None
            rest = "/" + segments[1] if len(segments) > 1 else ""
            return Endpoint.parse(
                f"{self.scheme}://{self.netloc}/{self.account_name}-secondary{rest}"
            )
        host_labels = self.netloc.split(".", 1)
        if host_labels[0].lower() != self.account_name:
            return None
        return Endpoint.parse(
            f"{self.scheme}://{host_labels[0]}-secondary.{host_labels[1]}{self.path}"
        )


def _is_path_style_host(host: str) -> bool:
    """Azurite's rule: IP literals, ``host.docker.internal`` and dot-less names are path-style."""
    if host == "host.docker.internal" or "." not in host:
        return True
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


@attrs.frozen
class ConnectionSettings:
    """What a connection string says: account, credential material and endpoints.

    Exactly one of ``account_key`` and ``sas_token`` is set (the key wins when a string
    carries both, as Microsoft's SDKs do). ``endpoint`` and ``secondary_endpoint`` are
    normalised URLs without a trailing slash.

    Example::

        >>> s = parse_connection_string(
        ...     "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;"
        ...     "EndpointSuffix=core.chinacloudapi.cn")
        >>> s.endpoint
        'https://acct.table.core.chinacloudapi.cn'
        >>> s.secondary_endpoint
        'https://acct-secondary.table.core.chinacloudapi.cn'
    """

    account_name: str | None
    account_key: str | None
    sas_token: str | None
    endpoint: str
    secondary_endpoint: str | None


def _split(connection_string: str) -> dict[str, str]:
    if not isinstance(connection_string, str):
        raise ConnectionStringError(
            f"a connection string must be a str, got {type(connection_string).__name__}"
        )
    if not connection_string.strip():
        raise ConnectionStringError("the connection string is empty")
    values: dict[str, str] = {}
    for position, raw in enumerate(connection_string.split(";"), start=1):
        segment = raw.strip()
        if not segment:
            continue  # empty segments (e.g. a trailing ';') are allowed
        if "=" not in segment:
            raise ConnectionStringError(
                f"segment {position} ({_redact_segment(segment)!r}) is not of the form key=value"
            )
        key, value = segment.split("=", 1)
        key = key.strip()
        value = value.strip()
        if not key:
            raise ConnectionStringError(f"segment {position} has an empty key")
        lowered = key.lower()
        if lowered in _OTHER_SERVICE_KEYS:
            continue
        canonical = _KNOWN_KEYS.get(lowered)
        if canonical is None:
            raise ConnectionStringError(
                f"unknown connection string key {key!r}; known keys: "
                + ", ".join(sorted(_KNOWN_KEYS.values()))
            )
        if canonical in values and values[canonical] != value:
            raise ConnectionStringError(f"{canonical} is given twice with different values")
        if not value:
            raise ConnectionStringError(f"{canonical} has an empty value")
        values[canonical] = value
    if not values:
        raise ConnectionStringError("the connection string has no key=value pairs")
    return values


def _redact_segment(segment: str) -> str:
    return segment if len(segment) <= 24 else segment[:20] + "..."


def parse_connection_string(connection_string: str) -> ConnectionSettings:
    """Parse a storage connection string (PROTOCOL.md 1.4).

    Keys are matched case-insensitively; each ``key=value`` pair is split on the first
    ``=`` (keys and SAS tokens contain ``=``); empty segments are ignored; keys of other
    storage services (``BlobEndpoint``…) are ignored. Anything else that is wrong raises
    :class:`ConnectionStringError` naming the problem.

    ``UseDevelopmentStorage=true`` expands to the emulator account at
    ``http://127.0.0.1:10002/devstoreaccount1``; ``DevelopmentStorageProxyUri`` replaces the
    scheme and host of that endpoint (port 10002 and the account path are kept, as the
    legacy storage client did).

    Example::

        >>> s = parse_connection_string(
        ...     "TableEndpoint=https://acct.table.core.windows.net/;SharedAccessSignature=sv=2019-02-02&sig=x%3D")
        >>> s.sas_token, s.account_key
        ('sv=2019-02-02&sig=x%3D', None)
        >>> parse_connection_string(
        ...     "UseDevelopmentStorage=true;DevelopmentStorageProxyUri=http://ipv4.fiddler").endpoint
        'http://ipv4.fiddler:10002/devstoreaccount1'
    """
    values = _split(connection_string)

    use_dev = values.pop("UseDevelopmentStorage", None)
    proxy = values.pop("DevelopmentStorageProxyUri", None)
    if use_dev is not None:
        if use_dev.lower() != "true":
            raise ConnectionStringError(
                f"UseDevelopmentStorage only accepts 'true', got {use_dev!r}"
            )
        if values:
            raise ConnectionStringError(
                "UseDevelopmentStorage=true cannot be combined with "
                + ", ".join(sorted(values))
                + " (only DevelopmentStorageProxyUri is allowed with it)"
            )
        endpoint = DEV_TABLE_ENDPOINT
        if proxy is not None:
            proxy_parts = urllib.parse.urlsplit(proxy)
            if proxy_parts.scheme.lower() not in ("http", "https") or not proxy_parts.hostname:
                raise ConnectionStringError(
                    f"DevelopmentStorageProxyUri {proxy!r} must be an http(s) URL with a host"
                )
            host = proxy_parts.hostname
            if ":" in host:  # IPv6 literal
                host = f"[{host}]"
            endpoint = f"{proxy_parts.scheme.lower()}://{host}:{DEV_TABLE_PORT}/{DEV_ACCOUNT_NAME}"
        dev_primary = Endpoint.parse(endpoint)
        dev_secondary = dev_primary.secondary()
        return ConnectionSettings(
            account_name=DEV_ACCOUNT_NAME,
            account_key=DEV_ACCOUNT_KEY,
            sas_token=None,
            endpoint=dev_primary.url,
            secondary_endpoint=dev_secondary.url if dev_secondary else None,
        )
    if proxy is not None:
        raise ConnectionStringError(
            "DevelopmentStorageProxyUri is only valid together with UseDevelopmentStorage=true"
        )

    account_name = values.get("AccountName")
    account_key = values.get("AccountKey")
    sas = values.get("SharedAccessSignature")
    protocol = values.get("DefaultEndpointsProtocol", "https").lower()
    suffix = values.get("EndpointSuffix", DEFAULT_ENDPOINT_SUFFIX).strip(".")
    table_endpoint = values.get("TableEndpoint")
    table_secondary = values.get("TableSecondaryEndpoint")

    if protocol not in ("http", "https"):
        raise ConnectionStringError(
            f"DefaultEndpointsProtocol must be 'http' or 'https', got {protocol!r}"
        )
    if account_key is not None:
        if account_name is None:
            raise ConnectionStringError("AccountKey is given without AccountName")
        try:
            decode_key(account_key)
        except ValidationError as exc:
            raise ConnectionStringError(f"AccountKey: {exc}") from exc
        sas = None  # shared key wins, as in Microsoft's SDKs
    elif sas is not None:
        sas = sas.lstrip("?")
        if not sas:
            raise ConnectionStringError("SharedAccessSignature is empty")
        if "sig=" not in sas:
            raise ConnectionStringError("SharedAccessSignature has no 'sig=' parameter")
    else:
        raise ConnectionStringError(
            "no credential: give AccountName and AccountKey, or SharedAccessSignature"
        )
    if account_name is not None and not account_name.isalnum():
        raise ConnectionStringError(
            f"AccountName {account_name!r} must contain only letters and digits"
        )

    if table_secondary is not None and table_endpoint is None:
        raise ConnectionStringError(
            "TableSecondaryEndpoint is only valid together with TableEndpoint"
        )
    if table_endpoint is not None:
        primary = Endpoint.parse(table_endpoint)
        if table_secondary is not None:
            secondary: Endpoint | None = Endpoint.parse(table_secondary)
        else:
            secondary = primary.secondary()
        if account_name is None:
            account_name = primary.account_name
    else:
        if account_name is None:
            raise ConnectionStringError(
                "cannot determine the table endpoint: give TableEndpoint or AccountName"
            )
        primary = Endpoint.parse(f"{protocol}://{account_name}.table.{suffix}")
        secondary = primary.secondary()

    return ConnectionSettings(
        account_name=account_name,
        account_key=account_key,
        sas_token=sas,
        endpoint=primary.url,
        secondary_endpoint=secondary.url if secondary is not None else None,
    )
