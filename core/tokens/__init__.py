"""Counting tokens: the ``Tokenizer`` interface, exact BPE encodings, the calibrated estimate and its
character classes, and the counter with its caches. Imports ``model`` only."""
