"""Service versions (``x-ms-version``): which are known, which are refused, what each enables.

Decides which version applies to a request (:func:`resolve_version`) and answers the
version-gated questions of the HTTP layer (PROTOCOL.md 13).

Example::

    >>> resolve_version("2019-02-02")
    '2019-02-02'
    >>> supports_json("2013-08-15"), supports_atom("2019-02-02")
    (True, False)
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping

from .errors import StubError, invalid_header_value

#: Every storage service version the stub knows, oldest first (the list Azurite
#: validates against, plus its 2026 baseline).
KNOWN_VERSIONS: tuple[str, ...] = (
    "2009-04-14",
    "2009-07-17",
    "2009-09-19",
    "2011-08-18",
    "2012-02-12",
    "2013-08-15",
    "2014-02-14",
    "2015-02-21",
    "2015-04-05",
    "2015-07-08",
    "2015-12-11",
    "2016-05-31",
    "2017-04-17",
    "2017-07-29",
    "2017-11-09",
    "2018-03-28",
    "2018-11-09",
    "2019-02-02",
    "2019-07-07",
    "2019-10-10",
    "2019-12-12",
    "2020-02-10",
    "2020-04-08",
    "2020-06-12",
    "2020-08-04",
    "2020-10-02",
    "2020-12-06",
    "2021-02-12",
    "2021-04-10",
    "2021-06-08",
    "2021-08-06",
    "2021-10-04",
    "2021-12-02",
    "2022-11-02",
    "2023-01-03",
    "2023-08-03",
    "2023-11-03",
    "2024-02-04",
    "2024-05-04",
    "2024-08-04",
    "2024-11-04",
    "2025-01-05",
    "2025-05-05",
    "2025-07-05",
    "2025-11-05",
    "2026-06-06",
)
_KNOWN_SET = frozenset(KNOWN_VERSIONS)

#: The version the stub applies when a request names none, and the newest it accepts.
BASELINE_VERSION = KNOWN_VERSIONS[-1]
#: The oldest version the stub knows.
OLDEST_VERSION = KNOWN_VERSIONS[0]

_DATE_RE = re.compile(r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$")

#: Feature name -> the first version that has it (PROTOCOL.md section 13).
FEATURES: Mapping[str, str] = {
    "batch": "2009-04-14",
    "version_header": "2009-09-19",
    "data_service_version_required": "2009-09-19",
    "upsert": "2011-08-18",
    "select": "2011-08-18",
    "table_sas": "2012-02-12",
    "table_acl": "2012-02-12",
    "json": "2013-08-15",
    "prefer": "2013-08-15",
    "format_query_option": "2013-08-15",
    "cors": "2013-08-15",
    "sas_service_prefix": "2015-02-21",
    "account_sas": "2015-04-05",
    "sas_ip_protocol": "2015-04-05",
    "json_only": "2015-12-11",
    "error_code_header": "2017-07-29",
    "bearer": "2019-02-02",
    "account_sas_encryption_scope": "2020-12-06",
}


def is_known(version: str) -> bool:
    """Whether ``version`` is one of :data:`KNOWN_VERSIONS`.

    Example::

        >>> is_known("2019-02-02"), is_known("2019-02-03")
        (True, False)
    """
    return version in _KNOWN_SET


def _refuse(value: str) -> StubError:
    err = invalid_header_value()
    err.details.update({"HeaderName": "x-ms-version", "HeaderValue": value})
    return err


# Version selection:
#
# * a version in :data:`KNOWN_VERSIONS` applies as is;
# * no ``x-ms-version`` (and no SAS ``sv``) applies :data:`BASELINE_VERSION`;
# * a well-formed date newer than the baseline is refused with
#   ``400 InvalidHeaderValue`` (as Azurite does), or applies the baseline in
#   lenient mode;
# * a well-formed but unknown date older than the baseline applies the nearest
#   known older version (older than the oldest known: the oldest). Every
#   behaviour is gated by a threshold date, so this is well defined;
# * anything that is not a ``YYYY-MM-DD`` date is refused with
#   ``400 InvalidHeaderValue``.
def resolve_version(value: str | None, *, lenient: bool = False) -> str:
    """The version that applies to a request whose ``x-ms-version`` is ``value``.

    ``None`` (header absent) gives :data:`BASELINE_VERSION`. Raises
    ``400 InvalidHeaderValue`` (details ``HeaderName``/``HeaderValue``) for a
    malformed value, and for a version newer than the baseline unless ``lenient``.

    Example::

        >>> resolve_version(None) == BASELINE_VERSION
        True
        >>> resolve_version("2019-03-01")  # unknown: the nearest known older version
        '2019-02-02'
        >>> resolve_version("2099-01-01", lenient=True) == BASELINE_VERSION
        True
    """
    if value is None:
        return BASELINE_VERSION
    if value in _KNOWN_SET:
        return value
    text = value.strip()
    if not _DATE_RE.match(text):
        raise _refuse(value)
    if text in _KNOWN_SET:
        return text
    if text > BASELINE_VERSION:
        if lenient:
            return BASELINE_VERSION
        raise _refuse(value)
    index = bisect.bisect_right(KNOWN_VERSIONS, text)
    return KNOWN_VERSIONS[index - 1] if index else OLDEST_VERSION


def request_version(
    x_ms_version: str | None, sas_version: str | None = None, lenient: bool = False
) -> str:
    """The version for a request: ``x-ms-version`` if sent, else the SAS ``sv``, else baseline.

    A SAS's ``sv`` also selects the version used to process the request unless
    the request names one explicitly (PROTOCOL.md 10.7). An unusable ``sv`` is the
    authenticator's business; here it is resolved leniently.

    Example::

        >>> request_version(None, "2015-04-05")
        '2015-04-05'
        >>> request_version("2019-02-02", "2015-04-05")
        '2019-02-02'
    """
    if x_ms_version is not None:
        if x_ms_version in _KNOWN_SET:  # (resolve_version's first answer, without its call)
            return x_ms_version
        return resolve_version(x_ms_version, lenient=lenient)
    if sas_version:
        try:
            return resolve_version(sas_version, lenient=True)
        except StubError:
            return BASELINE_VERSION
    return BASELINE_VERSION


def supports(feature: str, version: str) -> bool:
    """Whether ``version`` has ``feature`` (a key of :data:`FEATURES`).

    Raises ``KeyError`` for an unknown feature name.

    Example::

        >>> supports("upsert", "2011-08-18"), supports("upsert", "2009-09-19")
        (True, False)
    """
    return version >= FEATURES[feature]


def supports_batch(version: str) -> bool:
    """Entity group transactions (``$batch``), from 2009-04-14.

    Example::

        >>> supports_batch("2009-04-14")
        True
    """
    return version >= FEATURES["batch"]


def supports_upsert(version: str) -> bool:
    """Insert Or Replace / Insert Or Merge (PUT/MERGE without If-Match), from 2011-08-18.

    Before it, a PUT/MERGE without ``If-Match`` is refused (400).

    Example::

        >>> supports_upsert("2009-09-19")
        False
    """
    return version >= FEATURES["upsert"]


def supports_select(version: str) -> bool:
    """``$select`` projection, from 2011-08-18.

    Example::

        >>> supports_select("2011-08-18")
        True
    """
    return version >= FEATURES["select"]


def supports_table_sas(version: str) -> bool:
    """Table SAS and stored access policies, from 2012-02-12.

    Example::

        >>> supports_table_sas("2011-08-18")
        False
    """
    return version >= FEATURES["table_sas"]


def supports_table_acl(version: str) -> bool:
    """Get/Set Table ACL, from 2012-02-12.

    Example::

        >>> supports_table_acl("2012-02-12")
        True
    """
    return version >= FEATURES["table_acl"]


def supports_json(version: str) -> bool:
    """JSON payloads (no/minimal/full metadata), from 2013-08-15; before: 415.

    Example::

        >>> supports_json("2012-02-12"), supports_json("2013-08-15")
        (False, True)
    """
    return version >= FEATURES["json"]


def supports_prefer(version: str) -> bool:
    """The ``Prefer`` header (return-content / return-no-content), from 2013-08-15.

    Example::

        >>> supports_prefer("2013-08-15")
        True
    """
    return version >= FEATURES["prefer"]


def supports_format_option(version: str) -> bool:
    """The ``$format`` query option, from 2013-08-15.

    Example::

        >>> supports_format_option("2012-02-12")
        False
    """
    return version >= FEATURES["format_query_option"]


def supports_cors(version: str) -> bool:
    """CORS rules and hour/minute metrics in service properties, from 2013-08-15.

    Example::

        >>> supports_cors("2013-08-15")
        True
    """
    return version >= FEATURES["cors"]


def supports_atom(version: str) -> bool:
    """AtomPub payloads: before 2015-12-11 only (later versions answer 415).

    Example::

        >>> supports_atom("2015-04-05"), supports_atom("2015-12-11")
        (True, False)
    """
    return version < FEATURES["json_only"]


def supports_account_sas(version: str) -> bool:
    """Account SAS (its ``sv``), from 2015-04-05.

    Example::

        >>> supports_account_sas("2015-02-21")
        False
    """
    return version >= FEATURES["account_sas"]


def sas_has_ip_and_protocol(version: str) -> bool:
    """Service SAS string-to-sign has the ``sip``/``spr`` lines, from 2015-04-05.

    Example::

        >>> sas_has_ip_and_protocol("2015-04-05")
        True
    """
    return version >= FEATURES["sas_ip_protocol"]


def sas_resource_has_service_prefix(version: str) -> bool:
    """Service SAS canonical resource is ``/table/{account}/{table}``, from 2015-02-21.

    Example::

        >>> sas_resource_has_service_prefix("2013-08-15")
        False
    """
    return version >= FEATURES["sas_service_prefix"]


def account_sas_has_encryption_scope(version: str) -> bool:
    """Account SAS string-to-sign has the ``ses`` line, from 2020-12-06.

    Example::

        >>> account_sas_has_encryption_scope("2020-12-06")
        True
    """
    return version >= FEATURES["account_sas_encryption_scope"]


def sends_error_code_header(version: str) -> bool:
    """Azure adds ``x-ms-error-code`` to failures from 2017-07-29 (harmless to always send).

    Example::

        >>> sends_error_code_header("2017-07-29")
        True
    """
    return version >= FEATURES["error_code_header"]


def returns_version_header(version: str) -> bool:
    """Responses carry ``x-ms-version``, from 2009-09-19.

    Example::

        >>> returns_version_header("2009-04-14")
        False
    """
    return version >= FEATURES["version_header"]


def requires_data_service_version(version: str) -> bool:
    """OData operations must send ``DataServiceVersion``/``MaxDataServiceVersion``, from 2009-09-19.

    Example::

        >>> requires_data_service_version("2009-09-19")
        True
    """
    return version >= FEATURES["data_service_version_required"]


def supports_bearer(version: str) -> bool:
    """Entra ID bearer tokens on tables, from 2019-02-02 (earlier: 403 AuthenticationFailed).

    Example::

        >>> supports_bearer("2018-03-28"), supports_bearer("2019-02-02")
        (False, True)
    """
    return version >= FEATURES["bearer"]
