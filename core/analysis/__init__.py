"""tokenbox.core.analysis."""
