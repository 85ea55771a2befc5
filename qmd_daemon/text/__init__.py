"""Text analysis shared by ingest, store and search: the chunk model, identifier splitting, CJK
pairs and the analysed text a backend indexes, so every layer (and every store backend) sees the
same tokens."""
