"""The stub's realism layers: fault injection, throttling and range partitions (PROTOCOL.md 12).

:mod:`~azt_server_stub.realism.faults`, :mod:`~azt_server_stub.realism.throttle` and
:mod:`~azt_server_stub.realism.partitions` hold the models; ``fault_middleware`` and
``throttle_middleware`` apply them to the aiohttp application; ``inspection`` is what
they share about a request.

Example::

    from azt_server_stub.realism.faults import FaultInjector
    config = StubConfig(faults=FaultInjector(seed=7))
"""
