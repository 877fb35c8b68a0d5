"""hloscope: see what XLA was given and what it made of it.

A command-line tool and terminal browser for JAX/XLA compiler IR (StableHLO and
HLO). The command line is `hloscope`; the Python API is `hloscope.api`.
"""

__version__ = "0.1.0"
