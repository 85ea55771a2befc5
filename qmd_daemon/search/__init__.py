"""The search pipeline: parse, retrieve (lexical, vector), fuse, rerank, score, shape results."""
