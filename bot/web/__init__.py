"""The bot's web face: the webhook receiver, the read API, /metrics, the state requests share and
gunicorn's settings. It answers fast and hands work to :mod:`bot.jobs`; the app factory that
assembles it is :func:`bot.app.create_app`."""
