"""`python -m hloscope`."""

from hloscope.cli import main

main()
