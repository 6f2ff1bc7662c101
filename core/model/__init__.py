"""tokenbox.core.model.session."""
