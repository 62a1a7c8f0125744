"""The exceptions dumpcmp raises on bad input. The CLI turns every one of them into a message and exit code 2.

This module is pure Python and imports nothing of dumpcmp: the C++ core imports it to raise `DumpError`.
"""

from __future__ import annotations


class DumpcmpError(Exception):
    """Base of every error dumpcmp reports about its input (files, names, configs, options)."""


class DumpError(DumpcmpError, ValueError):
    """A dump or ground-truth file that cannot be used: truncated, corrupt, inconsistent. Names the file."""


class NamingError(DumpcmpError, ValueError):
    """A file name that fits none of the naming schemes."""


class ConfigError(DumpcmpError, ValueError):
    """A configuration file (acl.json, graph JSON, fusion rules) or option that is not valid."""


class NotFoundError(DumpcmpError, LookupError):
    """Something asked for by name does not exist (an operator, a tensor index, a file)."""
