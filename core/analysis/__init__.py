"""What is worked out from plans: the breakdown by category and tool, gates on a log's history, the
trimmed request body (``pack``) and the plan table. Imports ``planning`` and below."""
