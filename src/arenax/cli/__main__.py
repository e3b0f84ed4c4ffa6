"""`python -m arenax.cli`."""

from arenax.cli import main

main()
