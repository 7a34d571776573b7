"""hipgn's instance generator: spec in, files out (see __main__.py for the command line)."""
