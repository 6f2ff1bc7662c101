"""tokenbox.core.sources."""
