"""``python -m taskeval`` runs the CLI."""

import sys

from taskeval.cli import main

sys.exit(main())
