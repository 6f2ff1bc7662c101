"""Reading sessions: files and their growing tails, the table of formats (``formats.FORMATS``) and the
readers beneath it (``readers``), turns and threads, the loaders that follow files, foreign formats
refused by name, the agent API's log and the YAML export. Imports ``parse``, ``tokens`` and ``model``.

Kept empty: importing one reader (the status line's) must not import the others."""
