"""The ``tokenbox`` command: flags, the subcommands, the status line (started before anything heavy is
imported) and the warning thresholds. The top layer."""
