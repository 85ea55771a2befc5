"""Text analysis shared by ingest, store and search, so every backend indexes the same tokens."""
