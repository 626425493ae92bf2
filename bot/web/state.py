"""What the request handlers of one app share: settings, database engine and queue.

It lives on ``app.extensions['taskeval']`` (Flask's place for extension state) and is read with
:func:`state` inside a request. Blueprints import this module, never ``bot.app``, so the app
factory can import the blueprints without an import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import Flask, current_app
from sqlalchemy import Engine

from bot.jobs.queue import Queue
from bot.settings import BotSettings

EXTENSION = "taskeval"


@dataclass
class BotState:
    """What request handlers share, kept on ``app.extensions['taskeval']``."""

    settings: BotSettings
    engine: Engine
    queue: Queue

    def install(self, app: Flask) -> None:
        app.extensions[EXTENSION] = self


def state() -> BotState:
    """The current app's state (inside a request or an app context)."""
    found = current_app.extensions[EXTENSION]
    if not isinstance(found, BotState):
        raise RuntimeError("the Flask app was not built by bot.app.create_app")
    return found
