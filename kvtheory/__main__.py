"""``python -m kvtheory`` runs the command line."""

import sys

from kvtheory.cli import main

sys.exit(main())
