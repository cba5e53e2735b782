"""The package against PyTorch, timed side by side: ``python -m benchmarks.bench`` (``make bench``)."""
