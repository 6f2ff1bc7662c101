"""tokenbox benchmarks: ``python -m benchmarks [--quick | --tiny]`` (see benchmarks/README.md)."""
