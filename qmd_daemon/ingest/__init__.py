"""Turning a folder into indexed chunks: scan, chunk, extract symbols and links, update the store."""
