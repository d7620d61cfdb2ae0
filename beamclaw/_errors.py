"""The release's errors, in a module of their own: every CLI command may raise or catch
them (a bad data dir or log level, a daemon already running), and importing them must
not import the apps, which only the daemon needs."""


class ConfigError(Exception):
    """The configuration is unusable; the message says which file and key, and why."""


class AlreadyRunning(Exception):
    """Another daemon uses this data dir; the message says which, and what to do."""
