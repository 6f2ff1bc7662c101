"""Planning one turn: the ``Engine`` (settings, assembly, layout, lenses, behaviours) and its caches.
Imports ``sources`` and below."""
