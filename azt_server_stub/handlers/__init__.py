"""The Table service's HTTP operations, one module per resource (PROTOCOL.md 2, 4, 9).

:mod:`~azt_server_stub.handlers.dispatch` routes every request to ``tables``,
``entities``, ``batch``, ``service`` or ``cors``; ``parsing``, ``call`` and
``error_payload`` hold what they share.

Example::

    from azt_server_stub.handlers.dispatch import dispatch
    app.router.add_route("*", "/{tail:.*}", dispatch)
"""
