"""``python -m action``: the container action's entrypoint."""

import sys

from action.main import main

sys.exit(main())
