"""Machinery every floor uses: lazy imports, threads, memory, frames, ids, progress, optional extras."""
