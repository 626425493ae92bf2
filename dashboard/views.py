"""The dashboard's pages: overview, agent (or author), PR, sign-in; CSV and JSON of every table.

Filters live in the query string (``repo``, ``agent``, ``band``, ``since``, ``until``, ``by``), so a
view is a URL that can be shared; every table link keeps them. Each view builds its tables once as
:class:`Table` objects, which the HTML template, ``?format=csv&table=NAME`` and ``?format=json``
all render, so the numbers a person reads are the numbers a script downloads.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, TypeVar, cast

from flask import (
    Blueprint,
    Response,
    abort,
    g,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from markupsafe import Markup, escape
from sqlalchemy import Connection

from dashboard import charts, queries, teamwork
from dashboard.auth import (
    GitHubSignInError,
    Viewer,
    authorize_url,
    bearer_matches,
    csrf_ok,
    csrf_token,
    exchange_code,
    readable_repositories,
    safe_next,
    session_viewer,
    start_session,
    token_fingerprint,
    token_matches,
    user_login,
)
from dashboard.queries import BANDS, CATEGORY_TITLES, Filters
from dashboard.render import comment_html
from dashboard.settings import config
from taskeval.contract import PROVISIONAL_BELOW

log = logging.getLogger("dashboard")
dashboard = Blueprint("dashboard", __name__, template_folder="templates", static_folder="static",
                      static_url_path="/static")

_REPO_RE = re.compile(r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")
_KEY_RE = re.compile(r"^[A-Za-z0-9_.\[\]-]{1,100}$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
PAGE_SIZE = 50
T = TypeVar("T")
PROVISIONAL_CHOICES = ("include", "exclude")  # ?provisional=: the default counts them, exclude leaves them out
TASK_TYPES = queries.TASK_TYPES
OPEN_ENDPOINTS = {"dashboard.login", "dashboard.login_token", "dashboard.callback",
                  "dashboard.signed_out", "dashboard.static"}
CSP = ("default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
       "frame-ancestors 'none'; base-uri 'none'")


# --- tables ---------------------------------------------------------------------------------------

@dataclass
class Column:
    title: str
    value: Callable[[Any], Any]  # the raw value: what CSV and JSON carry
    html: Callable[[Any], Any] | None = None  # what the page shows (default: the value)
    numeric: bool = False
    key: str = ""
    csv_only: bool = False  # detail a script wants but the page leaves out (interval bounds, ids)
    help: str = ""  # what the column means: the header's tooltip


@dataclass
class Table:
    name: str
    title: str
    columns: list[Column]
    rows: Sequence[Any]
    note: str = ""
    row_class: Callable[[Any], str] = field(default=lambda _r: "")

    def cells(self, row: Any) -> list[tuple[Any, bool]]:
        out = []
        for c in self.columns:
            shown = c.html(row) if c.html else c.value(row)
            out.append(("—" if shown is None or shown == "" else shown, c.numeric))
        return out

    @property
    def visible(self) -> list[int]:
        """Indexes of the columns the page shows."""
        return [i for i, c in enumerate(self.columns) if not c.csv_only]

    @property
    def data_columns(self) -> list[Column]:
        """The columns CSV and JSON carry (keys starting with ``_`` are charts and links)."""
        return [c for c in self.columns if not c.key.startswith("_")]

    def records(self) -> list[dict[str, Any]]:
        cols = self.data_columns
        return [{(c.key or c.title): c.value(r) for c in cols} for r in self.rows]


def _csv_cell(value: Any) -> Any:
    """Numbers as they are; text that a spreadsheet would run as a formula gets a leading quote."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return value
    text = str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _csv_response(table: Table, stem: str) -> Response:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([c.key or c.title for c in table.data_columns])
    for record in table.records():
        writer.writerow([_csv_cell(v) for v in record.values()])
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{stem}-{table.name}").strip("-")
    return Response(buf.getvalue(), mimetype="text/csv",
                    headers={"Content-Disposition": f'attachment; filename="{name}.csv"'})


def _csv_table_name(names: Sequence[str]) -> str:
    """The table a ``format=csv`` request asks for (``table=``, else the page's first); 404 when
    the page has none of that name."""
    wanted = request.args.get("table") or names[0]
    if wanted not in names:
        abort(404, f"no table {wanted!r} on this page")
    return wanted


def _tables_or_page(tables: list[Table], stem: str, template: str, **context: Any) -> Any:
    fmt = request.args.get("format", "html")
    if fmt == "csv":
        wanted = _csv_table_name([t.name for t in tables])
        return _csv_response(next(t for t in tables if t.name == wanted), stem)
    if fmt == "json":
        body = {t.name: t.records() for t in tables}
        return Response(json.dumps(body, ensure_ascii=False, default=str), mimetype="application/json")
    return render_template(template, tables={t.name: t for t in tables}, **context)


# --- request plumbing -----------------------------------------------------------------------------

def viewer() -> Viewer:
    return g.viewer  # type: ignore[no-any-return]


@dashboard.before_request
def _sign_in_required() -> Any:
    cfg = config()
    g.viewer = None
    if cfg.open_access:
        g.viewer = Viewer("open")
        return None
    bearer = bearer_matches(request, cfg.api_token)
    if bearer is True:
        g.viewer = Viewer("token")
        return None
    if bearer is False:
        return Response("wrong bearer token\n", 401, {"WWW-Authenticate": 'Bearer realm="taskeval"'},
                        mimetype="text/plain")
    g.viewer = session_viewer(cfg.api_token)
    if g.viewer is not None or request.endpoint in OPEN_ENDPOINTS:
        return None
    if request.args.get("format") in ("csv", "json") or request.method != "GET":
        return Response("sign in first (or send Authorization: Bearer $TASKEVAL_API_TOKEN)\n", 401,
                        mimetype="text/plain")
    return redirect(url_for("dashboard.login", next=request.full_path.rstrip("?")))


@dashboard.before_request
def _csrf() -> Any:
    if request.method == "POST" and not csrf_ok(request.form.get("csrf")):
        return Response("the form expired or did not come from this dashboard; reload and retry\n",
                        400, mimetype="text/plain")
    return None


@dashboard.after_request
def _headers(resp: Response) -> Response:
    resp.headers.setdefault("Content-Security-Policy", CSP)
    resp.headers.setdefault("X-Content-Type-Options", "nosniff")
    resp.headers.setdefault("Referrer-Policy", "same-origin")
    resp.headers.setdefault("X-Frame-Options", "DENY")
    if request.endpoint != "dashboard.static":
        resp.headers["Cache-Control"] = "no-store"
    return resp


@dashboard.app_template_global()
def csrf_field() -> Markup:
    return Markup('<input type="hidden" name="csrf" value="{}">').format(csrf_token())


@dashboard.app_template_global()
def view_url(endpoint: str | None = None, **changes: Any) -> str:
    """The current view's URL with some query parameters changed (None removes one)."""
    args: dict[str, Any] = {k: v for k, v in request.args.items() if k not in ("format", "table")}
    for k, v in changes.items():
        if v is None:
            args.pop(k, None)
        else:
            args[k] = v
    return url_for(endpoint or request.endpoint or "dashboard.overview", **(request.view_args or {}), **args)


@dashboard.app_template_filter("num")
def _num(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


@dashboard.app_template_filter("pct")
def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f} %"


def _day(epoch: float | None) -> str | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d")


@dataclass
class View:
    """The parsed query string."""

    filters: Filters
    by: str
    args: dict[str, str]
    problems: list[str]
    exclude_provisional: bool = False  # ``provisional=exclude``: provisional grades out of means and ranks


def _view(*, agent: str | None = None, author: str | None = None) -> View:
    args = request.args
    problems: list[str] = []
    chosen: dict[str, str] = {}

    def pick(name: str, ok: Callable[[str], bool]) -> str | None:
        value = (args.get(name) or "").strip()
        if not value:
            return None
        if not ok(value):
            problems.append(f"ignored {name}={value[:60]!r}")
            return None
        chosen[name] = value
        return value

    repo = pick("repo", lambda v: bool(_REPO_RE.match(v)))
    agent_arg = pick("agent", lambda v: bool(_KEY_RE.match(v)))
    band = pick("band", lambda v: v in BANDS)
    task_type = pick("task_type", lambda v: v in TASK_TYPES)
    author_arg = pick("author", lambda v: bool(_KEY_RE.match(v))) if author is None else None
    since = pick("since", lambda v: bool(_DATE_RE.match(v)) and _valid_day(v))
    until = pick("until", lambda v: bool(_DATE_RE.match(v)) and _valid_day(v))
    by = "author" if args.get("by") == "author" else "agent"
    exclude = pick("provisional", lambda v: v in PROVISIONAL_CHOICES) == "exclude"
    v = viewer()
    filters = Filters(
        repos=v.repos,
        repo=repo,
        agent=agent if agent is not None else agent_arg,
        author=author if author is not None else author_arg,
        band=band,
        task_type=task_type,
        since=queries.day_start(since) if since else None,
        until=queries.day_start(until) + 86400 if until else None,  # the whole `until` day
    )
    return View(filters, by, chosen, problems, exclude)


def _valid_day(value: str) -> bool:
    try:
        queries.day_start(value)
    except ValueError:
        return False
    return True


def _mean_cell(m: queries.Mean) -> Markup:
    """The mean, and under it its 95 % interval as the range it spans on the 0–100 scale (an
    interval of "10.0 ± 27.8" would claim scores below 0)."""
    if m.mean is None:
        return Markup("—")
    if m.low is None or m.high is None:
        return Markup('<span class="mean">{}</span>').format(f"{m.mean:.1f}")
    return Markup('<span class="mean">{}</span> <span class="ci" title="95 % interval of the mean: '
                  '{}–{} (within the 0–100 scale)">{}–{}</span>').format(
        f"{m.mean:.1f}", f"{m.low:.1f}", f"{m.high:.1f}", f"{m.low:.0f}", f"{m.high:.0f}")


def rests_on_text(gr: queries.Group, measure: str) -> str:
    """"212 PRs, 40 provisional" (included) or "172 PRs, 40 provisional left out"."""
    n, provisional = gr.rests_on(measure), gr.provisional.get(measure, 0)
    prs = f"{n} PR" + ("" if n == 1 else "s")
    if gr.excluded:
        return f"{prs}, {provisional} provisional left out" if provisional else prs
    return f"{prs}, {provisional} provisional"


dashboard.add_app_template_global(rests_on_text, "rests_on_text")


@dashboard.app_template_global()
def provisional_floor() -> int:
    """taskeval.contract.PROVISIONAL_BELOW in per cent, for the switch's explanation."""
    return round(PROVISIONAL_BELOW * 100)


def _rests_on_cell(gr: queries.Group, measure: str, cell: Markup) -> Markup:
    return cell + Markup('<br><span class="rests" data-measure="{}">{}</span>').format(
        measure, rests_on_text(gr, measure))


def _rank_cell(gr: queries.Group) -> Markup | str:
    if gr.rank is None:
        return "—"
    rests = rests_on_text(gr, "overall")
    if gr.tied:
        return Markup('<span title="shares rank {} with another row: their 95 % intervals '
                      'overlap; ranked on the overall mean of {}">={}</span>').format(gr.rank, rests, gr.rank)
    return Markup('<span title="ranked on the overall mean of {}">{}</span>').format(rests, gr.rank)


GroupCell = Callable[[queries.Group], Any]


def _category(cat: str, part: str) -> GroupCell:
    return lambda gr: _round(getattr(gr.categories[cat], part))


def _category_cell(cat: str) -> GroupCell:
    return lambda gr: _rests_on_cell(gr, cat, _mean_cell(gr.categories[cat]))


def _rests_columns(measure: str, key: str) -> list[Column]:
    """The CSV's (and JSON's) counts beside a mean: PRs provisional in it, PRs it rests on."""
    return [
        Column(f"{key} provisional", lambda gr: gr.provisional.get(measure, 0), key=f"{key}Provisional",
               csv_only=True),
        Column(f"{key} rests on", lambda gr: gr.rests_on(measure), key=f"{key}RestsOn", csv_only=True),
    ]


def _band_count(band: str) -> GroupCell:
    return lambda gr: gr.bands[band]


def _outcome(kind: str) -> GroupCell:
    def value(gr: queries.Group) -> float | None:
        m = gr.outcomes.get(kind)
        return None if m is None else _round(m.mean, 4)
    return value


def _outcome_cell(kind: str) -> GroupCell:
    def cell(gr: queries.Group) -> Markup | str:
        m = gr.outcomes.get(kind)
        if m is None or m.mean is None:
            return "—"
        return Markup('<span title="95 % interval {}–{}">{}</span>').format(
            _pct(m.low), _pct(m.high), _pct(m.mean))
    return cell


def _round(x: float | None, digits: int = 2) -> float | None:
    return None if x is None else round(x, digits)


# --- overview -------------------------------------------------------------------------------------

RANK_HELP = ("Ranked by mean overall score only where the 95 % intervals separate: one plus the "
             "number of rows whose whole interval lies above this row's. Rows the data cannot "
             "tell apart share a rank (=2).")
NO_AGENT_HELP = ("PRs where no agent's mark was found (attributed to a person or to an unknown "
                 "bot, or stored before attribution). Many are agent PRs whose marks the evidence "
                 "lacks, so they are not ranked among the agents.")


def group_table(groups: list[queries.Group], by: str, outcome_cols: list[str], view: View,
                *, link: bool = True) -> Table:
    detail = "dashboard.agent" if by == "agent" else "dashboard.author"
    keep: dict[str, Any] = {k: v for k, v in view.args.items() if k not in ("agent",)}

    def name_cell(gr: queries.Group) -> Markup:
        label = gr.name if by == "agent" else gr.key
        cell = escape(label)
        if link:
            target = url_for(detail, key=gr.key, **keep)
            cell = Markup('<a href="{}">{}</a>').format(target, label)
        if gr.no_agent:
            cell += Markup(' <span class="tag no-agent" title="{}">not ranked</span>').format(NO_AGENT_HELP)
        elif gr.small:
            cell += Markup(' <span class="tag small" title="fewer than {} PRs: not ranked">small sample</span>'
                           ).format(queries.SMALL_SAMPLE)
        return cell

    interval = "Under the mean, its 95 % interval (Student's t), within the 0–100 scale."
    provisional = (f"Then how many PRs it rests on, and how many of them had a provisional grade in it "
                   f"(under {round(PROVISIONAL_BELOW * 100)} % of its signal weight conclusive): counted in the mean, "
                   f"or left out with provisional=exclude.")
    columns = [
        Column("Rank", lambda gr: gr.rank, _rank_cell, numeric=True, key="rank", help=RANK_HELP),
        Column("Rank shared", lambda gr: gr.tied, key="rankShared", csv_only=True),
        Column("Agent" if by == "agent" else "Author", lambda gr: gr.key, name_cell, key=by),
    ]
    if by == "agent":
        columns.append(Column("Agent name", lambda gr: gr.name, key="agentName", csv_only=True))
    columns += [
        Column("PRs", lambda gr: gr.count, numeric=True, key="prs",
               help="Pull requests in view, each once (its latest evaluation)."),
        Column("Small sample", lambda gr: gr.small, key="smallSample", csv_only=True),
        Column("Overall", lambda gr: _round(gr.overall.mean),
               lambda gr: _rests_on_cell(gr, "overall", _mean_cell(gr.overall)),
               numeric=True, key="overallMean", help=f"Mean overall score. {interval} {provisional}"),
        Column("Overall 95% low", lambda gr: _round(gr.overall.low), key="overallLow", csv_only=True),
        Column("Overall 95% high", lambda gr: _round(gr.overall.high), key="overallHigh", csv_only=True),
        *_rests_columns("overall", "overall"),
        Column("Provisional left out", lambda gr: gr.excluded, key="provisionalLeftOut", csv_only=True),
    ]
    for cat, title in CATEGORY_TITLES.items():
        columns.append(Column(title, _category(cat, "mean"), _category_cell(cat), numeric=True, key=f"{cat}Mean",
                              help=f"Mean {title.lower()} score. {interval} {provisional}"))
        columns.append(Column(f"{title} 95% low", _category(cat, "low"), key=f"{cat}Low", csv_only=True))
        columns.append(Column(f"{title} 95% high", _category(cat, "high"), key=f"{cat}High", csv_only=True))
        columns += _rests_columns(cat, cat)
    columns.append(Column("Bands", lambda gr: None, lambda gr: charts.band_bar(gr.bands), key="_bands",
                          help="PRs per overall band, failing (left) to excellent (right)."))
    for band in BANDS:
        columns.append(Column(band, _band_count(band), numeric=True, key=band, csv_only=True))
    columns.append(Column("Merged", lambda gr: _round(gr.merged_share, 4), lambda gr: _pct(gr.merged_share),
                          numeric=True, key="mergedShare",
                          help="Merged: share of all PRs in view that were merged (open ones count)."))
    for col in outcome_cols:  # on the page: Rejected here, the others in the outcomes table
        columns.append(Column(_outcome_title(col), _outcome(col), _outcome_cell(col),
                              numeric=True, key=f"outcome.{col}", help=queries.outcome_definition(col),
                              csv_only=col != "rejected"))
    columns.append(Column("Weekly trend", lambda gr: None, lambda gr: charts.trend(gr.trend), key="_trend",
                          help="Weekly mean overall score, last 26 weeks with PRs (dashed line at 60)."))
    left = ("left out of every mean and rank" if view.exclude_provisional
            else "counted in every mean; the switch above leaves them out")
    table = Table("groups", "Agents" if by == "agent" else "Authors", columns, groups,
                  note=f"Each PR counts once (its latest evaluation). Under each mean, its 95 % interval, "
                       f"the PRs it rests on and how many had a provisional grade ({left}). "
                       f"Ranks only where intervals separate (=2: a shared rank). Groups under "
                       f"{queries.SMALL_SAMPLE} PRs, and PRs where no agent was found, are marked and "
                       f"not ranked. Hover a column's title for its definition.",
                  row_class=lambda gr: "no-agent" if gr.no_agent else ("small" if gr.small else ""))
    return table


def _outcome_title(key: str) -> str:
    return re.sub(r"\bpr\b", "PR", key.replace("_", " ").capitalize())


def outcome_table(groups: list[queries.Group], by: str, outcome_cols: list[str], view: View) -> Table:
    """The outcomes recorded after evaluation beyond Rejected, one column each, for the rows of
    the main table in its order: beside the scores they would push the trend off a laptop screen."""
    detail = "dashboard.agent" if by == "agent" else "dashboard.author"
    keep: dict[str, Any] = {k: v for k, v in view.args.items() if k not in ("agent",)}
    columns = [
        Column("Agent" if by == "agent" else "Author", lambda gr: gr.key,
               lambda gr: Markup('<a href="{}">{}</a>').format(
                   url_for(detail, key=gr.key, **keep), gr.name if by == "agent" else gr.key), key=by),
        Column("PRs", lambda gr: gr.count, numeric=True, key="prs"),
    ]
    for col in outcome_cols:
        if col != "rejected":
            columns.append(Column(_outcome_title(col), _outcome(col), _outcome_cell(col),
                                  numeric=True, key=f"outcome.{col}",
                                  help=queries.outcome_definition(col)))
    return Table("outcomes", "What happened after evaluation", columns, groups,
                 note="Share of each row's PRs with the outcome, among those where it was recorded "
                      "(hover a cell for its 95 % interval, a title for its definition); — where "
                      "none was.",
                 row_class=lambda gr: "no-agent" if gr.no_agent else ("small" if gr.small else ""))


@dashboard.get("/")
def overview() -> Any:
    view = _view()
    cfg = config()
    with cfg.engine.connect() as conn:
        groups = [replace(gr) for gr in queries.cached(
            conn, "groups", (view.filters, view.by, view.exclude_provisional),
            lambda: queries.groups(conn, view.filters, view.by, exclude_provisional=view.exclude_provisional))]
        outcome_cols, rates = queries.cached(conn, "outcomes", (view.filters, view.by),
                                             lambda: queries.outcome_rates(conn, view.filters, view.by))
        for gr in groups:
            gr.outcomes = rates.get(gr.key, {})
        choices = queries.choices(conn, view.filters)
    tables = [group_table(groups, view.by, outcome_cols, view)]
    if any(col != "rejected" for col in outcome_cols):
        tables.append(outcome_table(groups, view.by, outcome_cols, view))
    total = sum(gr.count for gr in groups)
    return _tables_or_page(tables, f"taskeval-{view.by}s", "dashboard/overview.html",
                           view=view, choices=choices, total=total,
                           title="Overview")


# --- one agent or author --------------------------------------------------------------------------

@dashboard.get("/agent/<key>")
def agent(key: str) -> Any:
    return _detail("agent", key)


@dashboard.get("/author/<key>")
def author(key: str) -> Any:
    return _detail("author", key)


class _DetailReads:
    """What the agent (or author) page reads, each figure on first use: a CSV of one table reads
    only what that table shows, not every figure of the page (BENCHMARKS.md)."""

    def __init__(self, conn: Connection, view: View, by: str, total: int, page: int) -> None:
        self.conn, self.view, self.by, self.total, self.page = conn, view, by, total, page

    def _read(self, name: str, read: Callable[..., T], *args: Any) -> T:
        """``read(conn, filters, *args)`` through the aggregate cache, keyed by its name, the
        filters and ``args``."""
        f = self.view.filters
        return cast(T, queries.cached(self.conn, name, (f, *args), lambda: read(self.conn, f, *args)))

    @cached_property
    def histogram(self) -> list[tuple[str, int]]:
        return self._read("histogram", queries.histogram)

    @cached_property
    def pull_downs(self) -> list[Any]:
        return self._read("pull_downs", queries.pull_downs, self.total)

    @cached_property
    def prs(self) -> list[dict[str, Any]]:
        if request.args.get("format") == "csv" and request.args.get("table") == "prs":
            return queries.pr_list(self.conn, self.view.filters, limit=100_000, offset=0)  # the export: all
        return queries.pr_list(self.conn, self.view.filters, limit=PAGE_SIZE, offset=(self.page - 1) * PAGE_SIZE)

    @cached_property
    def cycle(self) -> teamwork.CycleTimes:
        return self._read("cycle_times", teamwork.cycle_times)

    @cached_property
    def costs(self) -> teamwork.Costs:
        return self._read("costs", teamwork.costs)

    @cached_property
    def recorded(self) -> dict[str, dict[str, tuple[int, int]]]:
        _order, recorded = self._read("outcome_counts", queries.outcome_counts, self.by)
        return recorded


@dataclass
class Section:
    """Tables of a page that rest on the same reads, built when the response shows one of them."""

    names: tuple[str, ...]
    build: Callable[[], list[Table]]


def _signals_table(downs: list[Any]) -> Table:
    return Table("signals", "Signals that pull the score down most often", [
        Column("Signal", lambda d: d.signal_id, lambda d: Markup("{}<br><code>{}</code>").format(
            d.name, d.signal_id), key="signal"),
        Column("Name", lambda d: d.name, key="name", csv_only=True),
        Column("Category", lambda d: d.category, lambda d: CATEGORY_TITLES.get(d.category, d.category),
               key="category"),
        Column("PRs pulled down", lambda d: d.count, numeric=True, key="prs"),
        Column("Share of PRs", lambda d: round(d.share, 4), lambda d: _pct(d.share), numeric=True,
               key="share"),
        Column("Mean signal score", lambda d: round(d.mean_score, 1), numeric=True, key="meanScore"),
        Column("Example PRs", lambda d: " ".join(f"{e['repo']}#{e['number']}" for e in d.examples),
               lambda d: Markup("<br>").join(
                   Markup('<a href="{}">{}#{}</a> <span class="muted">({}/100: {})</span>').format(
                       url_for("dashboard.pr", owner=e["repo"].split("/")[0], repo=e["repo"].split("/")[1],
                               number=e["number"]), e["repo"], e["number"], e["score"], e.get("reason", ""))
                   for e in d.examples), key="examples"),
    ], downs, note=f"A signal pulls a score down when it is conclusive, weighted, and scores under "
                   f"{queries.PULL_DOWN_BELOW}/100 (the comment's \"What pulled the score down\").")


def _detail(by: str, key: str) -> Any:
    if not _KEY_RE.match(key):
        abort(404)
    view = _view(agent=key, author=None) if by == "agent" else _view(author=key)
    cfg = config()
    try:
        page = max(1, int(request.args.get("page", "1")))
    except ValueError:
        page = 1
    stem = f"taskeval-{by}-{key}"
    with cfg.engine.connect() as conn:
        found = queries.cached(conn, "groups", (view.filters, by, view.exclude_provisional),
                               lambda: queries.groups(conn, view.filters, by,
                                                      exclude_provisional=view.exclude_provisional))
        everything = Filters(repos=view.filters.repos, agent=view.filters.agent, author=view.filters.author)
        if not found and not queries.count(conn, everything):
            abort(404, f"no stored evaluations for {by} {key}")
        group = found[0] if found else None
        total = group.count if group else 0
        reads = _DetailReads(conn, view, by, total, page)
        sections = [
            Section(("groups",), lambda: [group_table([group] if group else [], by, [], view, link=False)]),
            Section(("signals",), lambda: [_signals_table(reads.pull_downs)]),
            Section(("distribution",), lambda: [Table("distribution", "Overall score distribution", [
                Column("Score", lambda b: b[0], key="bucket"),
                Column("PRs", lambda b: b[1], numeric=True, key="prs"),
            ], reads.histogram)]),
            Section(("prs",), lambda: [Table("prs", "Pull requests", _pr_columns(), reads.prs,
                                             note="Newest activity first; each PR's latest evaluation.")]),
            Section(("cycle", "merge_trend"), lambda: cycle_tables(reads.cycle)),
            Section(("decisions", "rescue", "per_pr", "closure"), lambda: cost_tables(reads.costs)),
            Section(("after_merge",), lambda: [after_merge_table(reads.recorded.get(group.key, {}) if group else {})]),
        ]
        if request.args.get("format") == "csv":
            wanted = _csv_table_name([name for section in sections for name in section.names])
            built = next(s for s in sections if wanted in s.names).build()
            return _csv_response(next(t for t in built if t.name == wanted), stem)
        tables = [table for section in sections for table in section.build()]
        buckets = [(label, n, charts.BAND_COLOURS[_bucket_band(i)]) for i, (label, n) in enumerate(reads.histogram)]
        title = (group.name if group and by == "agent" else key)
        context: dict[str, Any] = {
            "summary_sentence": teamwork.sentence(title, reads.costs),
            "costs": reads.costs,
            "merge_trend_svg": charts.line(reads.cycle.trend, unit="h", label="weekly median time to merge"),
            "choices": queries.choices(conn, view.filters),
        }
    pages = max(1, -(-total // PAGE_SIZE))
    return _tables_or_page(tables, stem, "dashboard/detail.html", **context, view=view, by=by,
                           key=key,
                           group=group, histogram_svg=charts.histogram(buckets),
                           trend_svg=charts.trend(group.trend if group else [], width=560, height=180,
                                                  axes=True),
                           page=page, pages=pages, title=title)


def _hours(x: float | None) -> str:
    return "—" if x is None else f"{x:.1f} h"


def _interval(low: float | None, high: float | None, fmt: Callable[[float | None], str]) -> Markup | str:
    """The 95 % interval under a figure; "to" between negative bounds, where a dash would read as
    a minus ("-7.3 %–-0.1 %")."""
    if low is None:
        return ""
    between = " to " if low < 0 or (high is not None and high < 0) else "–"
    return Markup(' <span class="ci" title="95 % interval">{}{}{}</span>').format(fmt(low), between, fmt(high))


def _quantile_cell(get: Callable[[teamwork.Figure], teamwork.Quantile]) -> Callable[[teamwork.Figure], Any]:
    def cell(fig: teamwork.Figure) -> Markup | str:
        q = get(fig)
        if q.value is None:
            return "—"
        return Markup('<span class="mean">{}</span>{}').format(_hours(q.value), _interval(q.low, q.high, _hours))
    return cell


def _share_cells(prefix: str, help_text: str) -> list[Column]:
    return [
        Column("PRs", lambda s: s.count, numeric=True, key=f"{prefix}prs"),
        Column("Of", lambda s: s.of, numeric=True, key=f"{prefix}of", help=help_text),
        Column("Share", lambda s: _round(s.share.mean, 4), lambda s: Markup("{}{}").format(
            _pct(s.share.mean), _interval(s.share.low, s.share.high, _pct)), numeric=True, key=f"{prefix}share"),
        Column("Share 95% low", lambda s: _round(s.share.low, 4), key=f"{prefix}shareLow", csv_only=True),
        Column("Share 95% high", lambda s: _round(s.share.high, 4), key=f"{prefix}shareHigh", csv_only=True),
    ]


def cycle_tables(cycle: teamwork.CycleTimes) -> list[Table]:
    """The agent page's cycle times and weekly median time to merge (docs/bot.md)."""
    return [
        Table("cycle", "Cycle time", [
            Column("Figure", lambda fig: fig.key, lambda fig: Markup('{}<br><span class="muted">{}</span>').format(
                fig.title, fig.rests_on), key="figure"),
            Column("PRs", lambda fig: fig.count, lambda fig: Markup("{}{}").format(fig.count, Markup(
                ' <span class="tag small">small sample</span>') if fig.small else ""), numeric=True,
                key="prs", help="How many PRs the figure rests on."),
            Column("Median", lambda fig: _round(fig.median.value), _quantile_cell(lambda fig: fig.median),
                   numeric=True, key="medianHours", help="Median hours; under it its 95 % bootstrap interval."),
            Column("Median 95% low", lambda fig: _round(fig.median.low), key="medianLow", csv_only=True),
            Column("Median 95% high", lambda fig: _round(fig.median.high), key="medianHigh", csv_only=True),
            Column("90th percentile", lambda fig: _round(fig.p90.value), _quantile_cell(lambda fig: fig.p90),
                   numeric=True, key="p90Hours", help="90th percentile hours, with its 95 % bootstrap interval."),
            Column("90th 95% low", lambda fig: _round(fig.p90.low), key="p90Low", csv_only=True),
            Column("90th 95% high", lambda fig: _round(fig.p90.high), key="p90High", csv_only=True),
        ], cycle.figures, note="Hours, each PR once. Quantiles interpolate linearly (a spreadsheet's "
                               "PERCENTILE.INC); intervals are 95 % percentile bootstraps, computed exactly "
                               "(no resampling). Draft time is apart: it is in neither turn."),
        Table("merge_trend", "Weekly median time to merge", [
            Column("Week", lambda p: p[0], key="week"),
            Column("Median hours", lambda p: _round(p[1]), numeric=True, key="medianHours"),
            Column("Merged PRs", lambda p: p[2], numeric=True, key="prs"),
        ], cycle.trend),
    ]


def cost_tables(costs: teamwork.Costs) -> list[Table]:
    """The agent page's costs to people and decision counts (docs/bot.md)."""
    rate = costs.merge_rate
    decisions = [
        ("merged", "Merged", costs.merged), ("closed", "Closed unmerged (after marked ready)", costs.closed),
        ("decided", "Reached a decision (merged + closed): the merge rate's denominator", costs.decided),
        ("closed_drafts", "Closed while still a draft: never marked ready, left out", costs.closed_drafts),
        ("open", "Open: undecided, left out", costs.open),
    ]
    return [
        Table("decisions", "Decisions: the merge rate's denominators", [
            Column("PRs", lambda d: d[1], key="what"),
            Column("Count", lambda d: d[2], numeric=True, key="count"),
            Column("Key", lambda d: d[0], key="key", csv_only=True),
        ], decisions, note=(f"Merge rate {_pct(rate.mean)} (95 %: {_pct(rate.low)}–{_pct(rate.high)}) = "
                            f"{costs.merged} merged of {costs.decided} that reached a decision. Drafts closed "
                            f"without being marked ready ({costs.closed_drafts}) and open PRs ({costs.open}, "
                            f"{costs.open_drafts} of them drafts) are not in it.")),
        Table("rescue", "Merged PRs: did people have to finish them?", [
            Column("Rescue", lambda s: s.key, lambda s: s.title, key="rescue"),
            *_share_cells("", "Merged PRs with a rescue class."),
        ], costs.rescue_mix(), note=(
            f"People's commits per merged PR: {_num(costs.people_commits.mean, 2)} (95 %: "
            f"{_num(costs.people_commits.low, 2)}–{_num(costs.people_commits.high, 2)}); rounds (a person "
            f"sending the work back) per merged PR: {_num(costs.rounds.mean, 2)} (95 %: "
            f"{_num(costs.rounds.low, 2)}–{_num(costs.rounds.high, 2)}). Commits that did the PR's work only, "
            f"as agent.human_intervention counts them.")),
        Table("per_pr", "What each PR asked of people", [
            Column("Figure", lambda c: c[0], lambda c: Markup('{}<br><span class="muted">{}</span>').format(
                c[1], c[2]), key="figure"),
            Column("PRs", lambda c: c[4], numeric=True, key="prs", help="How many PRs the mean rests on."),
            Column("Mean", lambda c: _round(c[3].mean, 4), lambda c: Markup('<span class="mean">{}</span>{}').format(
                _num(c[3].mean, 2), _interval(c[3].low, c[3].high, lambda x: _num(x, 2))), numeric=True,
                key="mean", help="Mean per PR, with its 95 % t interval."),
            Column("Mean 95% low", lambda c: _round(c[3].low, 4), key="low", csv_only=True),
            Column("Mean 95% high", lambda c: _round(c[3].high, 4), key="high", csv_only=True),
        ], costs.per_pr(), note=("People's commits: commits that did the PR's work, as agent.human_intervention "
                                 "counts them. Rounds: a person sending the work back. Comments by people: "
                                 "conversation and review-thread comments by the operator, reviewers and other "
                                 "people (docs/turns.md), never the agent's, a bot's or CI's.")),
        Table("closure", "Closed PRs: why they ended", [
            Column("Closure", lambda s: s.key, lambda s: s.title, key="closure"),
            *_share_cells("", "Decided closed PRs with a closure class (drafts left out)."),
        ], costs.closure_groups() + costs.closure_classes(), note=(
            "First the three groups (the agent's failure; the project's reasons: superseded, duplicate, stale, "
            "declined; withdrawn or unknown), then each class. Only the agent's failure counts against it.")),
    ]


AFTER_MERGE = (("reverted", "Revert rate"), ("follow_up_fix", "Follow-up-fix rate"))


def after_merge_table(counts: dict[str, tuple[int, int]]) -> Table:
    """The agent's revert and follow-up-fix rates with their Wilson intervals, over the PRs where
    the outcome is recorded; "not recorded" where it is recorded for none."""
    rows = [(key, title, *counts.get(key, (0, 0))) for key, title in AFTER_MERGE]

    def share_cell(r: tuple[str, str, int, int]) -> Markup | str:
        if not r[2]:
            return Markup('<span class="muted" data-recorded="no">not recorded</span>')
        m = queries.wilson(r[3], r[2])
        return Markup("{}{}").format(_pct(m.mean), _interval(m.low, m.high, _pct))

    def part(r: tuple[str, str, int, int], name: str) -> float | None:
        return _round(getattr(queries.wilson(r[3], r[2]), name), 4) if r[2] else None

    return Table("after_merge", "After merge: reverts and follow-up fixes", [
        Column("Outcome", lambda r: r[0], lambda r: r[1], key="outcome",
               help="Reverted: merged, then reverted on the base branch. Follow-up fix: merged, then a later "
                    "merged PR fixed it (references it with fix words)."),
        Column("Recorded for", lambda r: r[2], numeric=True, key="recorded",
               help="PRs where the outcome is recorded (true or false): the rate's denominator."),
        Column("PRs with it", lambda r: r[3], numeric=True, key="prs"),
        Column("Rate", lambda r: part(r, "mean"), share_cell, numeric=True, key="rate",
               help="Share of the PRs where it is recorded, with its 95 % Wilson interval."),
        Column("Rate 95% low", lambda r: part(r, "low"), key="rateLow", csv_only=True),
        Column("Rate 95% high", lambda r: part(r, "high"), key="rateHigh", csv_only=True),
    ], rows, note=("From the outcomes store (taskeval outcomes --write-store, or the bot's push and pull_request "
                   "events); \"not recorded\" where no PR in view has the outcome recorded either way."))


def _bucket_band(index: int) -> str:
    from taskeval.contract import band

    return band(index * 10)


def _pr_link(r: dict[str, Any]) -> Markup:
    owner, name = r["repo"].split("/", 1)
    return Markup('<a href="{}">{}#{}</a>').format(
        url_for("dashboard.pr", owner=owner, repo=name, number=r["number"]), r["repo"], r["number"])


def _score_columns() -> list[Column]:
    """Overall, band and the three categories of one stored evaluation row (PR lists, history)."""
    return [
        Column("Overall", lambda r: r["overall_score"], numeric=True, key="overall"),
        Column("Band", lambda r: r["overall_band"],
               lambda r: Markup('<span class="band {0}">{0}</span>').format(r["overall_band"]), key="band"),
        Column("AP", lambda r: r["agent_performance"], numeric=True, key="agentPerformance"),
        Column("TOQ", lambda r: r["task_outcome_quality"], numeric=True, key="taskOutcomeQuality"),
        Column("PC", lambda r: r["process_compliance"], numeric=True, key="processCompliance"),
    ]


def _pr_columns() -> list[Column]:
    return [
        Column("PR", lambda r: f"{r['repo']}#{r['number']}", _pr_link, key="pr"),
        Column("Author", lambda r: r["author"], key="author"),
        Column("Agent", lambda r: r["agent_id"], lambda r: r["agent_name"] or r["agent_id"], key="agent"),
        Column("State", lambda r: r["pr_state"], key="state"),
        *_score_columns(),
        Column("Activity", lambda r: _day(r["activity_at"]), key="activity"),
    ]


# --- comparison -----------------------------------------------------------------------------------

def _side(view: View, side: str, names: dict[str, str]) -> tuple[Filters, str]:
    """One side of the comparison: its agent (``a``/``b``, else ``agent``) and its period
    (``a_since``/``a_until``, else the shared ``since``/``until``)."""
    args, f = request.args, view.filters
    agent_key = (args.get(side) or args.get("agent") or "").strip() or None
    if agent_key is not None and not _KEY_RE.match(agent_key):
        view.problems.append(f"ignored {side}={agent_key[:60]!r}")
        agent_key = None
    bounds: list[float | None] = [f.since, f.until]
    for i, name in enumerate((f"{side}_since", f"{side}_until")):
        value = (args.get(name) or "").strip()
        if value and _DATE_RE.match(value) and _valid_day(value):
            bounds[i] = queries.day_start(value) + (86400 if i else 0)
        elif value:
            view.problems.append(f"ignored {name}={value[:60]!r}")
    chosen = replace(f, agent=agent_key, since=bounds[0], until=bounds[1])
    last = _day(bounds[1] - 86400) if bounds[1] is not None else None
    period = "" if bounds == [f.since, f.until] else f" {_day(bounds[0]) or '…'} to {last or '…'}"
    return chosen, f"{names.get(agent_key, agent_key) if agent_key else 'all agents'}{period}"


def provisional_text(d: teamwork.Difference, exclude: bool) -> str:
    """"A 212 PRs, 40 provisional · B …": what each side's mean of grades rests on."""
    def side(n: int, v: int | None) -> str:
        if exclude:
            return f"{n} PRs, {v} provisional left out" if v else f"{n} PRs"
        return f"{n} PRs, {v} provisional"
    return f"A {side(d.a_n, d.a_provisional)} · B {side(d.b_n, d.b_provisional)}"


def _difference(get: Callable[[teamwork.Stratum], teamwork.Difference], fmt: Callable[[float | None], str],
                what: str, exclude: bool = False) -> list[Column]:
    def cell(st: teamwork.Stratum) -> Markup | str:
        d = get(st)
        if d.strata == 0:
            return Markup('<span class="muted">no stratum both worked in</span>')
        if d.too_few:
            return Markup('<span class="tag small" title="A rests on {}, B on {} PRs">too few PRs</span>').format(
                d.a_n, d.b_n)
        if d.diff is None:
            return "—"
        cell = Markup('<span class="mean">{}{}</span>{}<br><span class="muted">A {} · B {}</span>').format(
            "+" if d.diff > 0 else "", fmt(d.diff), _interval(d.low, d.high, fmt), fmt(d.a), fmt(d.b))
        if d.strata is not None:
            cell += Markup('<br><span class="rests">within {} strata both worked in</span>').format(d.strata)
        if d.a_provisional is not None:
            cell += Markup('<br><span class="rests">{}</span>').format(provisional_text(d, exclude))
        return cell

    def value(st: teamwork.Stratum, part: str) -> Any:
        d = get(st)
        return None if d.too_few else _round(getattr(d, part), 4)

    key = what.replace(" ", "_")
    counts = [
        Column(f"{what} A provisional", lambda st: get(st).a_provisional, key=f"{key}AProvisional", csv_only=True),
        Column(f"{what} B provisional", lambda st: get(st).b_provisional, key=f"{key}BProvisional", csv_only=True),
    ] if what.startswith("mean") else []
    return [
        Column(what[0].upper() + what[1:] + " (A − B)", lambda st: value(st, "diff"), cell, numeric=True,
               key=f"{key}Diff",
               help=f"Difference of the {what}, A minus B, with its 95 % interval; a cell where either side "
                    f"rests on under {queries.SMALL_SAMPLE} PRs says so instead."),
        Column(f"{what} low", lambda st: value(st, "low"), key=f"{key}Low", csv_only=True),
        Column(f"{what} high", lambda st: value(st, "high"), key=f"{key}High", csv_only=True),
        Column(f"{what} A", lambda st: _round(get(st).a, 4), key=f"{key}A", csv_only=True),
        Column(f"{what} B", lambda st: _round(get(st).b, 4), key=f"{key}B", csv_only=True),
        Column(f"{what} A PRs", lambda st: get(st).a_n, key=f"{key}APrs", csv_only=True),
        Column(f"{what} B PRs", lambda st: get(st).b_n, key=f"{key}BPrs", csv_only=True),
        Column(f"{what} strata", lambda st: get(st).strata, key=f"{key}Strata", csv_only=True),
        *counts,
    ]


def _points(x: float | None) -> str:
    return "—" if x is None else f"{x:.1f}"


def _pp(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f} %"


@dashboard.get("/compare")
def compare() -> Any:
    view = _view()
    cfg = config()
    with cfg.engine.connect() as conn:
        choices = queries.choices(conn, view.filters)
        names = dict(choices["agents"])
        fa, label_a = _side(view, "a", names)
        fb, label_b = _side(view, "b", names)
        exclude = view.exclude_provisional
        strata = queries.cached(conn, "compare", (fa, fb, exclude),
                                lambda: teamwork.compare(conn, fa, fb, exclude_provisional=exclude))
    table = Table("compare", f"A: {label_a} − B: {label_b}", [
        Column("Within", lambda st: st.kind, key="kind"),
        Column("Stratum", lambda st: st.name, key="stratum"),
        *_difference(lambda st: st.merge_rate, _pp, "merge rate"),
        *_difference(lambda st: st.rescue_rate, _pp, "rescue rate"),
        *_difference(lambda st: st.agent_performance, _points, "mean agentPerformance", exclude),
    ], strata, note=("Merge rate: merged of the PRs that reached a decision (merged or closed; drafts never "
                     "marked ready and open PRs left out). Rescue rate: merged PRs taken over by people (they "
                     "pushed commits doing the PR's work) of the merged PRs with a rescue class. Mean "
                     "agentPerformance: every PR, with how many had a provisional grade "
                     + ("(left out of the mean). " if exclude else "(counted; the switch above leaves them out). ")
                     + "Intervals: Newcombe's for shares, Welch's t for means. \"Task mix adjusted\": the "
                     "differences within each task type (then each task type and repository) both sides "
                     "worked on, weighted by the stratum's PRs (both sides), its interval from the strata's "
                     "variances: what the difference would be on the same task mix. Then the same within "
                     "each task type and repository both sides worked on."))
    return _tables_or_page([table], "taskeval-compare", "dashboard/compare.html", view=view, choices=choices,
                           label_a=label_a, label_b=label_b, title="Compare")


# --- agents by task type ---------------------------------------------------------------------------

def _task_cell(c: teamwork.TaskCell | None) -> Markup | str:
    if c is None:
        return "—"
    if c.too_few:
        return Markup('{} <span class="tag small" title="fewer than {} PRs: no rate or mean">too few PRs'
                      '</span>').format("1 PR" if c.prs == 1 else f"{c.prs} PRs", queries.SMALL_SAMPLE)
    rate = c.merge_rate
    return Markup('<span class="prs">{} PRs</span><br><span class="rate" title="merged of the {} decided">'
                  'merged {}</span>{}<br><span class="mean">agentPerformance {}</span>{}').format(
        c.prs, c.decided, _pct(rate.mean), _interval(rate.low, rate.high, _pct),
        _points(c.agent_performance.mean),
        _interval(c.agent_performance.low, c.agent_performance.high, _points))


def _task_columns(kind: str) -> list[Column]:
    def get(r: tuple[str, str, dict[str, teamwork.TaskCell]]) -> teamwork.TaskCell | None:
        return r[2].get(kind)

    def part(f: Callable[[teamwork.TaskCell], Any]) -> Callable[[Any], Any]:
        return lambda r: None if (c := get(r)) is None or c.too_few else f(c)

    return [
        Column(kind, lambda r: c.prs if (c := get(r)) else 0, lambda r: _task_cell(get(r)), numeric=True,
               key=f"{kind}Prs", help=f"{kind} PRs: how many, the merge rate over those that reached a "
               "decision, and the mean agentPerformance, each with its 95 % interval"),
        Column(f"{kind} decided", lambda r: c.decided if (c := get(r)) else 0, key=f"{kind}Decided",
               csv_only=True),
        *(Column(f"{kind} {name}", part(f), key=f"{kind}{name}", csv_only=True) for name, f in (
            ("MergeRate", lambda c: _round(c.merge_rate.mean, 4)),
            ("MergeRateLow", lambda c: _round(c.merge_rate.low, 4)),
            ("MergeRateHigh", lambda c: _round(c.merge_rate.high, 4)),
            ("MeanAgentPerformance", lambda c: _round(c.agent_performance.mean, 2)),
            ("MeanAgentPerformanceLow", lambda c: _round(c.agent_performance.low, 2)),
            ("MeanAgentPerformanceHigh", lambda c: _round(c.agent_performance.high, 2)),
            ("Provisional", lambda c: c.provisional))),
    ]


@dashboard.get("/tasks")
def tasks() -> Any:
    """The agent × task-type matrix: which agent does which kind of work, and how it ends."""
    view = _view()
    cfg = config()
    with cfg.engine.connect() as conn:
        choices = queries.choices(conn, view.filters)
        matrix = queries.cached(conn, "tasks", (view.filters, view.exclude_provisional),
                                lambda: teamwork.task_matrix(conn, view.filters,
                                                             exclude_provisional=view.exclude_provisional))
    names = dict(choices["agents"])
    by_agent: dict[str, dict[str, teamwork.TaskCell]] = {}
    for (agent_key, kind), cell in matrix.items():
        by_agent.setdefault(agent_key, {})[kind] = cell
    rows = sorted(((k, queries.NO_AGENT_NAME if k == queries.NO_AGENT else names.get(k, k), cells)
                   for k, cells in by_agent.items()), key=lambda r: (r[0] == queries.NO_AGENT, r[1].lower()))
    kinds = [t for t in queries.TASK_TYPES if any(t in r[2] for r in rows)]
    args: dict[str, Any] = dict(view.args)  # the filters, kept in each agent's link
    table = Table("tasks", "Agents by task type", [
        Column("Agent", lambda r: r[0], lambda r: r[1] if r[0] == queries.NO_AGENT else Markup(
            '<a href="{}">{}</a>').format(url_for("dashboard.agent", key=r[0], **args), r[1]), key="agent"),
        *(col for kind in kinds for col in _task_columns(kind)),
    ], rows, note=("Each cell: the agent's PRs of that task type (docs/tasktypes.md); the merge rate over the "
                   "PRs that reached a decision (merged, or closed after being marked ready), with its Wilson "
                   "interval; the mean agentPerformance with its t interval"
                   + (", provisional grades left out" if view.exclude_provisional else "")
                   + f". Under {queries.SMALL_SAMPLE} PRs a cell says so instead of a number."))
    return _tables_or_page([table], "taskeval-tasks", "dashboard/tasks.html", view=view, choices=choices,
                           title="Task types")


# --- one PR ---------------------------------------------------------------------------------------

@dashboard.get("/pr/<owner>/<repo>/<int:number>")
def pr(owner: str, repo: str, number: int) -> Any:
    full = f"{owner}/{repo}"
    if not _REPO_RE.match(full):
        abort(404)
    cfg = config()
    f = Filters(repos=viewer().repos)
    with cfg.engine.connect() as conn:
        history = queries.pr_history(conn, f, full, number)
        if not history:
            abort(404, f"no stored evaluation of {full}#{number} that you can read")
        try:
            chosen_id = int(request.args.get("evaluation", history[0]["id"]))
        except ValueError:
            chosen_id = history[0]["id"]
        if chosen_id not in {h["id"] for h in history}:
            chosen_id = history[0]["id"]
        stored = queries.result_json(conn, f, chosen_id)
    assert stored is not None  # it is one of this PR's rows, which the viewer may read
    result = json.loads(stored[1])
    markdown, problem = _comment_markdown(result)
    html, renderer = comment_html(markdown) if markdown else (Markup(""), "none")
    evidence = _evidence_links(result)
    tables = [Table("history", "Every stored evaluation of this PR", [
        Column("Evaluation", lambda h: h["id"], lambda h: Markup('<a href="{}">#{}</a>{}').format(
            url_for("dashboard.pr", owner=owner, repo=repo, number=number, evaluation=h["id"]), h["id"],
            Markup(" (shown)") if h["id"] == chosen_id else ""), key="id"),
        Column("Evaluated", lambda h: h["evaluated_at"], key="evaluatedAt"),
        Column("Head", lambda h: h["head_sha"], lambda h: Markup("<code>{}</code>").format(h["head_sha"][:7]),
               key="headSha"),
        Column("Scorer", lambda h: h["scorer_version"], key="scorerVersion"),
        Column("Trigger", lambda h: h["trigger"], key="trigger"),
        *_score_columns(),
        Column("Judge", lambda h: h["judge_status"], key="judge"),
        Column("Comment", lambda h: h["comment_url"], lambda h: _http_link(h["comment_url"], "posted")
               if h["comment_url"] else None, key="commentUrl"),
        Column("JSON", lambda h: None, lambda h: Markup('<a href="{}" download>result.json</a>').format(
            url_for("dashboard.result", evaluation_id=h["id"])), key="_json"),
    ], history)]
    latest = history[0]
    pull = result.get("pullRequest") or {}
    return _tables_or_page(tables, f"taskeval-{owner}-{repo}-{number}", "dashboard/pr.html",
                           full=full, number=number, latest=latest, chosen_id=chosen_id, pull=pull,
                           agent=result.get("agent") or {}, comment=html, renderer=renderer,
                           comment_problem=problem, evidence=evidence, title=f"{full}#{number}",
                           pr_url=_safe_url(pull.get("url")), ending=_ending(result),
                           provisional_below=PROVISIONAL_BELOW,
                           coverage=[(c.get("category"), c.get("coverage"), c.get("signalsConclusive"),
                                      c.get("signalsTotal")) for c in result.get("categoryScores") or []
                                     if c.get("coverage") is not None])


def _ending(result: dict[str, Any]) -> dict[str, Any] | None:
    """Why the PR ended (closure) or whether its merge needed a rescue, and whose time it was, for
    the PR page's summary (docs/turns.md); None for a result stored before they existed."""
    closure, rescue, turns = result.get("closure"), result.get("rescue"), result.get("turns")
    if not (closure or rescue or turns):
        return None
    found = closure or rescue or {}
    return {"kind": "closure" if closure else ("rescue" if rescue else None), "class": found.get("class"),
            "reason": found.get("reason"), "against": bool(closure and closure.get("countsAgainstAgent")),
            "turns": turns or {}}


@dashboard.get("/evaluation/<int:evaluation_id>.json")
def result(evaluation_id: int) -> Any:
    with config().engine.connect() as conn:
        stored = queries.result_json(conn, Filters(repos=viewer().repos), evaluation_id)
    if stored is None:
        abort(404)
    repo, text, number = stored
    name = f"{repo.replace('/', '-')}-{number}-evaluation-{evaluation_id}.json"
    return Response(text, mimetype="application/json",
                    headers={"Content-Disposition": f'attachment; filename="{name}"'})


def _comment_markdown(result: dict[str, Any]) -> tuple[str, str | None]:
    """The PR comment as taskeval renders it from this stored result, or why it cannot."""
    from pydantic import ValidationError

    from taskeval.models import EvaluationResult
    from taskeval.report import render_comment

    try:
        return render_comment(EvaluationResult.model_validate(result)), None
    except (ValidationError, ValueError, KeyError, TypeError) as exc:
        return "", (f"this stored result does not match the current result schema "
                    f"({type(exc).__name__}); the JSON below is what was stored")


def _safe_url(url: Any) -> str | None:
    return url if isinstance(url, str) and re.match(r"^https?://", url) else None


def _http_link(url: Any, text: str) -> Markup | str:
    safe = _safe_url(url)
    return Markup('<a href="{}" rel="noopener noreferrer">{}</a>').format(safe, text) if safe else text


def _evidence_links(result: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    groups = ((result.get("evidence") or {}).get("groups")) or []
    for group in groups:
        if not isinstance(group, dict):
            continue
        items = [{"id": str(i.get("id", "")), "label": str(i.get("label", ""))[:200],
                  "url": _safe_url(i.get("url"))}
                 for i in group.get("items") or [] if isinstance(i, dict)]
        out.append({"source": str(group.get("source", "")), "items": items,
                    "total": group.get("total"), "omitted": group.get("omitted")})
    return out


# --- sign-in --------------------------------------------------------------------------------------

@dashboard.get("/login")
def login() -> Any:
    cfg = config()
    if cfg.open_access or viewer() is not None:
        return redirect(safe_next(request.args.get("next"), _prefix()) or url_for("dashboard.overview"))
    nxt = safe_next(request.args.get("next"), _prefix())
    if cfg.oauth and request.args.get("method") != "token":
        state = secrets.token_urlsafe(32)
        session["oauth_state"] = state
        session["next"] = nxt
        assert cfg.client_id is not None
        return redirect(authorize_url(cfg.web_url, cfg.client_id, _callback_url(), state))
    return _login_page(next=nxt), 200 if cfg.api_token else 503


def _prefix() -> str:
    return url_for("dashboard.overview")


def _callback_url() -> str:
    return url_for("dashboard.callback", _external=True)


@dashboard.post("/login")
def login_token() -> Any:
    cfg = config()
    given = request.form.get("token", "")
    nxt = safe_next(request.form.get("next"), _prefix())
    if not cfg.api_token or not token_matches(given, cfg.api_token):
        return _login_page(error="That is not the dashboard's token.", next=nxt), 401
    start_session("token", login=None, repos=None, ttl=cfg.session_ttl, token_fp=token_fingerprint(cfg.api_token))
    return redirect(nxt or url_for("dashboard.overview"))


@dashboard.get("/callback")
def callback() -> Any:
    cfg = config()
    expected = session.pop("oauth_state", None)
    nxt = session.pop("next", None)
    given = request.args.get("state", "")
    if not cfg.oauth or not expected or not secrets.compare_digest(str(expected), given):
        return _login_error("The sign-in link expired or was not started here; sign in again.", 400)
    if request.args.get("error"):
        why = request.args.get("error_description") or request.args["error"]
        return _login_error(f"GitHub did not sign you in: {why[:200]}", 403)
    code = request.args.get("code", "")
    if not code:
        return _login_error("GitHub sent no code; sign in again.", 400)
    assert cfg.client_id is not None and cfg.client_secret is not None
    try:
        token = exchange_code(cfg.web_url, cfg.client_id, cfg.client_secret, code, _callback_url())
        login_name = user_login(cfg.api_url, token)
        readable = readable_repositories(cfg.api_url, token)
    except GitHubSignInError as exc:
        log.warning("dashboard sign-in failed: %s", exc)
        return _login_error(str(exc), 502)
    with cfg.engine.connect() as conn:
        repos = queries.stored_repositories(conn, readable)
    start_session("github", login=login_name, repos=repos, ttl=cfg.session_ttl)
    log.info("dashboard sign-in: %s can read %d stored repositories", login_name, len(repos))
    return redirect(safe_next(nxt, _prefix()) or url_for("dashboard.overview"))


def _login_page(*, error: str | None = None, next: str | None = None, title: str = "Sign in",
                **context: Any) -> str:
    """The sign-in page: the token form when a token is configured, GitHub when OAuth is."""
    cfg = config()
    return render_template("dashboard/login.html", title=title, next=next, token_form=bool(cfg.api_token),
                           oauth=cfg.oauth, error=error, **context)


def _login_error(message: str, status: int) -> Any:
    return _login_page(error=message), status


@dashboard.post("/logout")
def logout() -> Any:
    session.clear()
    return redirect(url_for("dashboard.signed_out"))


@dashboard.get("/signed-out")
def signed_out() -> Any:
    return _login_page(title="Signed out", signed_out=True)


@dashboard.errorhandler(404)
def _not_found(exc: Any) -> Any:
    if request.args.get("format") in ("csv", "json"):
        return Response(f"{getattr(exc, 'description', 'not found')}\n", 404, mimetype="text/plain")
    return render_template("dashboard/error.html", title="Not found", status=404,
                           message=getattr(exc, "description", "not found")), 404

