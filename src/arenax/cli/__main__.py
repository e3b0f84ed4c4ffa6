"""`python -m arenax.cli`."""

from arenax.cli import entry

entry()
