"""What every page of the dashboard shares: the blueprint, its sign-in and CSRF guards and headers,
the :class:`Table` that HTML, ``?format=csv&table=NAME`` and ``?format=json`` all render (so the
numbers a person reads are the numbers a script downloads), the view filters from the query string,
and the group tables of the overview and the agent pages."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from flask import (
    Blueprint,
    Response,
    abort,
    g,
    redirect,
    render_template,
    request,
    url_for,
)
from markupsafe import Markup, escape

from dashboard import charts, queries
from dashboard.auth import (
    Viewer,
    bearer_matches,
    csrf_ok,
    csrf_token,
    session_viewer,
)
from dashboard.queries import BANDS, CATEGORY_TITLES, Filters
from dashboard.settings import config
from taskeval import csvcells
from taskeval.contract import PROVISIONAL_BELOW
from taskeval.store.db import MAX_INTEGER, integer_out_of_range

log = logging.getLogger("dashboard")
# Named for the package, not this module: templates/ and static/ sit in dashboard/, not dashboard/views/.
dashboard = Blueprint("dashboard", "dashboard", template_folder="templates", static_folder="static",
                      static_url_path="/static")

_REPO_RE = re.compile(r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")
_KEY_RE = re.compile(r"^[A-Za-z0-9_.\[\]-]{1,100}$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
PAGE_SIZE = 50
MAX_PAGE = MAX_INTEGER // PAGE_SIZE  # beyond it the offset leaves the database's integers
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
    empty: str = "Nothing matches these filters."  # what the page says when it has no rows

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


def _csv_response(table: Table, stem: str) -> Response:
    buf = io.StringIO()
    writer = csvcells.writer(buf, lineterminator="\n")  # text that would run as a formula is quoted
    writer.writerow([c.key or c.title for c in table.data_columns])
    for record in table.records():
        writer.writerow(record.values())
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
    g.viewer = session_viewer(cfg.api_token, cfg.engine)
    if g.viewer is not None or request.endpoint in OPEN_ENDPOINTS:
        return None
    if request.args.get("format") in ("csv", "json") or request.method != "GET":
        return Response("sign in first (or send Authorization: Bearer $TASKEVAL_API_TOKEN)\n", 401,
                        mimetype="text/plain")
    return redirect(url_for("dashboard.login", next=request.full_path.rstrip("?")))


@dashboard.before_request
def _in_range() -> Any:
    """A number in the path beyond what any store holds (a PR number or evaluation id of 20
    digits) is bad input: 400 naming it, not a query that overflows in the database."""
    problem = integer_out_of_range(request.view_args)
    return Response(f"{problem}\n", 400, mimetype="text/plain") if problem else None


def page_number() -> int:
    """``?page=``: 1 when absent or not a number (as before); a number past any page there can
    be is bad input, 400 naming it."""
    raw = request.args.get("page", "1").strip()
    try:
        page = max(1, int(raw))
    except ValueError:
        return 1
    if page > MAX_PAGE:
        abort(Response(f"page must be a whole number from 1 to {MAX_PAGE}\n", 400, mimetype="text/plain"))
    return page


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


# The days a date filter may name: from the epoch (nothing is stored before GitHub existed) to a
# year before the calendar's end, so the day after it and its week are dates too.
FIRST_DAY, LAST_DAY = "1970-01-01", "9998-12-31"


def _valid_day(value: str) -> bool:
    """A real day within FIRST_DAY..LAST_DAY; any other is an ignored filter, said on the page."""
    try:
        queries.day_start(value)
    except ValueError:
        return False
    return FIRST_DAY <= value <= LAST_DAY


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
    """The mean's cell and under it what it rests on, free to break only between its parts."""
    parts = Markup(", ").join(Markup('<span class="part">{}</span>').format(p)
                              for p in rests_on_text(gr, measure).split(", "))
    return cell + Markup('<br><span class="rests" data-measure="{}">{}</span>').format(measure, parts)


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
             "tell apart share a rank (=2); a row with no other to be ranked against gets none.")


def nothing_stored(conn: Any, v: Viewer) -> str | None:
    """What an empty page says when the store holds nothing this viewer may read (rather than
    blaming the filters); None when it holds something."""
    if queries.count(conn, queries.Filters(repos=v.repos)):
        return None
    if v.repos is not None:
        return "None of the repositories you can read has a stored evaluation yet."
    return ("Nothing is stored yet: taskeval backfill OWNER/REPO (or the bot, once a PR is merged) "
            "stores evaluations here.")
NO_AGENT_HELP = ("PRs where no agent's mark was found (attributed to a person or to an unknown "
                 "bot, or stored before attribution). Many are agent PRs whose marks the evidence "
                 "lacks, so they are not ranked among the agents.")


def _trend_cell(gr: queries.Group) -> Markup:
    """The weekly line; a group with fewer than two weeks has no line to draw, and says so
    rather than leaving an empty chart."""
    if len(gr.trend) >= 2:
        return charts.trend(gr.trend)
    if not gr.trend:
        return Markup('<span class="muted trend-none">no dated PRs</span>')
    week, mean, n = gr.trend[0]
    return Markup('<span class="muted trend-none" title="week of {}: {} over {} PRs">one week only</span>').format(
        week, f"{mean:.1f}", n)


MERGE_RATE_HELP = ("Merge rate: merged of the PRs that reached a decision (merged, or closed after being "
                   "marked ready); open PRs and drafts closed without being marked ready are left out. "
                   "The agent page and the comparison show this same figure; Rejected is its complement.")


def _merge_rate_cell(gr: queries.Group) -> Markup | str:
    """The merge rate, and under it what it rests on: "46 of 59 decided"."""
    m = gr.merge_rate
    if m.mean is None:
        return Markup('—<br><span class="rests">none decided</span>')
    return Markup('<span title="95 % interval {}–{}">{}</span><br><span class="rests"><span class="part">{} of {}'
                  '</span> <span class="part">decided</span></span>').format(
        _pct(m.low), _pct(m.high), _pct(m.mean), gr.merged, gr.decided)


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
    columns += [
        Column("Merge rate", lambda gr: _round(gr.merge_rate.mean, 4), _merge_rate_cell, numeric=True,
               key="mergeRate", help=MERGE_RATE_HELP),
        Column("Merge rate 95% low", lambda gr: _round(gr.merge_rate.low, 4), key="mergeRateLow", csv_only=True),
        Column("Merge rate 95% high", lambda gr: _round(gr.merge_rate.high, 4), key="mergeRateHigh", csv_only=True),
        Column("Merged", lambda gr: gr.merged, key="merged", csv_only=True),
        Column("Reached a decision", lambda gr: gr.decided, key="decided", csv_only=True),
        Column("Merged of all PRs", lambda gr: _round(gr.merged_share, 4), key="mergedShare", csv_only=True,
               help="Merged of every PR in view, open PRs and closed drafts included (not the merge rate)."),
    ]
    for col in outcome_cols:  # on the page: Rejected here, the others in the outcomes table
        columns.append(Column(_outcome_title(col), _outcome(col), _outcome_cell(col),
                              numeric=True, key=f"outcome.{col}", help=queries.outcome_definition(col),
                              csv_only=col != "rejected"))
    columns.append(Column("Weekly trend", lambda gr: None, _trend_cell, key="_trend",
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


@dashboard.errorhandler(404)
def _not_found(exc: Any) -> Any:
    if request.args.get("format") in ("csv", "json"):
        return Response(f"{getattr(exc, 'description', 'not found')}\n", 404, mimetype="text/plain")
    return render_template("dashboard/error.html", title="Not found", status=404,
                           message=getattr(exc, "description", "not found")), 404

