"""Vector stores behind one interface (protocol.VectorStore): LanceDB embedded, a Chroma server."""
