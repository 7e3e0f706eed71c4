"""The ``finops`` command's exit statuses: one rule for every command (``cli.main.DESCRIPTION``).

A command returns one of these (a check that fails, hours left unloaded); an exception becomes one
in ``cli.main.main`` by its class (``finops.errors``): bad input or configuration is ``USAGE``, an
unavailable dependency ``UNAVAILABLE``, a refused period ``NO_ANSWER``, anything else ``BUG``.
"""

from __future__ import annotations

OK = 0
BUG = 1  # an internal error: nothing a user typed should end here
USAGE = 2  # usage or bad input: an argument, the configuration, a policy or input file (argparse's own 2)
UNAVAILABLE = 3  # a dependency is unavailable: PostgreSQL, OpenCost, Prometheus, Kubernetes, S3, a function
NO_ANSWER = 4  # the data cannot give the answer: a refused or incomplete period, a failed check
INTERRUPTED = 130  # Ctrl-C or SIGTERM, as a shell reports SIGINT
