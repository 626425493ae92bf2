"""The dashboard: one Flask blueprint, served by the bot at ``/dashboard`` (sign-in required) and
by ``taskeval dashboard`` over a local store (see :mod:`dashboard.cli`).

The package itself imports nothing, so ``taskeval --help`` works without the ``bot`` extra;
:mod:`dashboard.settings` holds the settings, :func:`dashboard.core.install` wires them in.

Pages are server-rendered HTML with inline SVG charts: no JavaScript, no CDN, and every table has a
CSV export. :func:`install` wires the blueprint, its session cookie and its settings into an app.
"""
