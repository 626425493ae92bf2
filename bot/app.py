"""Flask application factory: ``gunicorn 'bot.app:create_app()'``.

Each gunicorn worker calls the factory after the fork, so each gets its own database engine. The
factory refuses to build an app without ``GITHUB_WEBHOOK_SECRET``: an unsigned receiver would queue
evaluations for anyone who can reach it.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask, jsonify
from sqlalchemy import Engine
from werkzeug.exceptions import HTTPException

from bot import logs
from bot.jobs.queue import Queue
from bot.settings import BotSettings
from bot.web.api import api, health
from bot.web.state import BotState
from bot.web.webhook import webhook
from taskeval.store.db import init_schema, make_engine

log = logging.getLogger("bot.app")


def create_app(settings: BotSettings | None = None, *, engine: Engine | None = None) -> Flask:
    """Build the receiver; raises ``SettingsError`` when the webhook secret is missing."""
    settings = settings or BotSettings.from_env()
    logs.register_secrets(settings.secrets())
    engine = engine or make_engine(settings.database_url)
    init_schema(engine)
    app = Flask("taskeval-bot")
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    app.json.sort_keys = False  # type: ignore[attr-defined]
    BotState(
        settings=settings,
        engine=engine,
        queue=Queue.for_settings(engine, settings),
    ).install(app)
    app.register_blueprint(webhook)
    app.register_blueprint(health)
    app.register_blueprint(api, url_prefix="/api")
    from bot.web.metrics import metrics

    app.register_blueprint(metrics)
    from dashboard.core import DashboardConfig, install

    install(app, DashboardConfig.from_env(settings.env, engine, webhook_secret=settings.webhook_secret))

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException) -> Any:
        """JSON for every HTTP error (404, 405, 413, ...): GitHub shows it in the delivery log."""
        reason = exc.description or exc.name
        if exc.code == 413:
            reason = f"payload larger than {settings.max_body_bytes} bytes"
        return jsonify(error=reason), exc.code

    return app
