"""The public face of ``azt``: a sorted ``__all__`` of real, documented names."""

from __future__ import annotations

import doctest
import importlib
import inspect
import typing

import pytest

import azt


def _isort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 order: CONSTANTS, then Classes, then functions.
    if name.isupper():
        return (0, name)
    if name[0].isupper():
        return (1, name)
    return (2, name)


def test_all_is_sorted_unique_and_complete() -> None:
    names = azt.__all__
    assert names == sorted(names, key=_isort_key)
    assert len(names) == len(set(names))
    for name in names:
        assert hasattr(azt, name), name
    public_in_module = {
        n for n, v in vars(azt).items() if not n.startswith("_") and not inspect.ismodule(v)
    }
    assert public_in_module == set(names)


@pytest.mark.parametrize("name", azt.__all__)
def test_every_public_name_is_documented_with_an_example(name: str) -> None:
    obj = getattr(azt, name)
    if isinstance(obj, str) or typing.get_origin(obj) is not None:
        return  # constants and type aliases (Int64) cannot carry their own docstring
    doc = inspect.getdoc(obj) or ""
    assert doc.strip(), f"{name} has no docstring"
    assert "Example" in doc or ">>>" in doc, f"{name}'s docstring has no example"


MODULES = [
    "azt._core.auth",
    "azt._core.config",
    "azt._core.connection_string",
    "azt._errors",
    "azt._azure_bases",
    "azt._core.pipeline",
    "azt._core.retry",
    "azt._core.signing",
    "azt._core.transport",
    "azt._core.base",
    "azt._core.batch",
    "azt._core.batch_answer",
    "azt._core.intents",
    "azt._core.packing",
    "azt._core.queries",
    "azt._core.spellings",
    "azt._core.results",
    "azt._core.service_client",
    "azt._core.table_client",
    "azt._core.pagination",
    "azt._core.sas",
    "azt._core.tasks",
]


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples_run(module_name: str) -> None:
    module = importlib.import_module(module_name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} doctest failures in {module_name}"


CLIENT_CORE_CLASSES = [
    "AccessPolicies",
    "AiohttpTransport",
    "AsyncPager",
    "BatchOperation",
    "BearerTokenCredential",
    "ContinuationToken",
    "Endpoint",
    "LocationMode",
    "MockTransport",
    "Page",
    "RetryPolicy",
    "SasCredential",
    "SharedKeyCredential",
    "SharedKeyLiteCredential",
    "TableBatch",
    "TableClient",
    "TableServiceClient",
    "TableSasPermissions",
    "AccountSasPermissions",
    "AccountSasResourceTypes",
    "ServiceError",
    "TransactionError",
    "WireFormat",
]


@pytest.mark.parametrize("class_name", CLIENT_CORE_CLASSES)
def test_public_methods_of_the_client_core_have_examples(class_name: str) -> None:
    cls = getattr(azt, class_name)
    missing = []
    # Every public member azt defines, inherited ones included (a base class's methods are
    # part of the subclass's API); members of builtins (dict, Exception, Enum) are not ours.
    members: dict[str, object] = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__.split(".")[0] == "azt":
            members.update(vars(klass))
    for name, member in members.items():
        if name.startswith("_"):
            continue
        if isinstance(member, staticmethod | classmethod):
            member = member.__func__
        if isinstance(member, property):
            member = member.fget
        if not callable(member):
            continue
        doc = inspect.getdoc(member) or ""
        if "Example" not in doc and ">>>" not in doc:
            missing.append(name)
    assert missing == [], f"{class_name} methods without an example: {missing}"
