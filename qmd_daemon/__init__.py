"""qmd-daemon: private, local, long-lived semantic code search for AI coding agents."""

__version__ = "0.1.0"
