"""Importers for formats real agents write (registered with ``tokenbox.core.session`` on import)."""
