"""The long-lived daemon: a tokenised aiohttp server on 127.0.0.1 that keeps one engine (and its
models) warm, runs refresh/embed jobs in the background and watches the registered roots.

Front-end layer: imports the engine, never the other way round. Clients (`clients/`) talk to it
over HTTP and never import this package.
"""
