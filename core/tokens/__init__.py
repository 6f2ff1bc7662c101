"""tokenbox.core.tokens."""
