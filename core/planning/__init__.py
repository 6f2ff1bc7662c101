"""tokenbox.core.planning."""
