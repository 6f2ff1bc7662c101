"""tokenbox.core.commands."""
