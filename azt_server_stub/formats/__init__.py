"""Wire formats of the Table service: JSON, AtomPub, Storage XML and ``$batch`` envelopes.

``negotiation`` picks the format of a request and a response; ``json``, ``atom``, ``xml``
and ``batch`` read and write the bodies.

Example::

    from azt_server_stub.formats.negotiation import negotiate_response
"""
