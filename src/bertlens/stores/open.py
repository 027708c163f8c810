"""A store from what the user typed: a directory is LanceDB (embedded); `chroma://HOST:PORT/COLLECTION` a Chroma
server. One table here, so a new store is one entry."""

from __future__ import annotations

from urllib.parse import urlparse

from bertlens.errors import BertlensError
from bertlens.stores.protocol import VectorStore

SCHEMES = ("chroma",)


def open_store(where: str) -> VectorStore:
    """The store `where` names; a URI with an unknown scheme is one line naming the known ones."""
    if "://" not in where:
        from bertlens.stores.lance import LanceStore

        return LanceStore(where)
    parsed = urlparse(where)
    if parsed.scheme == "chroma":
        from bertlens.stores.chroma import ChromaStore

        if not parsed.hostname or not parsed.port or not parsed.path.strip("/"):
            raise BertlensError(f"store {where}: expected chroma://HOST:PORT/COLLECTION")
        return ChromaStore(parsed.hostname, parsed.port, parsed.path.strip("/"), where)
    raise BertlensError(
        f"store {where}: unknown scheme '{parsed.scheme}'; give a directory (LanceDB) or one of "
        + ", ".join(f"{s}://" for s in SCHEMES)
    )
