"""Banks: every layer x pooler (or every word x layer) pooled in one encoder pass, cached on disk with checksums."""
