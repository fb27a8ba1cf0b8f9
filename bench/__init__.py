"""Benchmarks: attnlab against its peers, measured side by side in one process (see RESULTS.md)."""
