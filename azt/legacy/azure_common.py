"""Stands in for ``azure.common``: the legacy SDK's error classes.

Replace ``from azure.common import AzureHttpError`` with
``from azt.legacy.azure_common import AzureHttpError``.

Example::

    from azt.legacy.azure_common import AzureMissingResourceHttpError
    try:
        service.get_entity("tasks", "todo", "missing")
    except AzureMissingResourceHttpError as exc:
        print(exc.status_code)   # 404
"""

from azt.legacy._models import (
    AzureConflictHttpError,
    AzureException,
    AzureHttpError,
    AzureMissingResourceHttpError,
)

__all__ = [
    "AzureConflictHttpError",
    "AzureException",
    "AzureHttpError",
    "AzureMissingResourceHttpError",
]
