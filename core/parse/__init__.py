"""tokenbox.core.parse."""
