"""taskeval: grade finished pull requests from the evidence GitHub already holds."""

__version__ = "0.1.0"
# Bumped whenever a signal, curve or default changes what a bundle scores to.
SCORER_VERSION = "2026.12.6"
