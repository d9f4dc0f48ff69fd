"""The warm path (SPEC L20): short commands ask a running convodex service over a Unix
domain socket instead of paying for imports and a catalog open in every process.

``client`` and ``entry`` import only the standard library's cheapest modules (they run
before click, msgspec or the catalog are loaded); ``server``, ``runner`` and ``daemon``
run inside a service process that has everything loaded already.
"""


class NotWarm(Exception):
    """The service cannot answer this request exactly as the command would in-process
    (another catalog, roots, a relative path, a terminal it cannot reach): the client
    runs the command itself. Never shown to a user."""
