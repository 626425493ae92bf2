"""The dashboard's pages, one module each, on one blueprint (:data:`dashboard`).

Filters live in the query string (``repo``, ``agent``, ``band``, ``since``, ``until``, ``by``), so a
view is a URL that can be shared; every table link keeps them. Importing this package registers
every page's routes on the blueprint.
"""

from dashboard.views import compare, detail, login, overview, pr, tasks
from dashboard.views.common import dashboard

__all__ = ["compare", "dashboard", "detail", "login", "overview", "pr", "tasks"]
