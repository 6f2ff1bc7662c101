"""Parsing: JSON and YAML into positioned nodes (``nodes``, ``yamlnodes``), the validator every input
shares, the tokenbox session schema and lens specs. Imports ``model`` only."""
