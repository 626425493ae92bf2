"""Reading one pull request over GitHub's GraphQL API, into the same ``Raw*`` models as REST.

One query reads the repository, the PR and its connections (labels, assignees, review requests,
commits with their parents, reviews, review threads with their comments, conversation comments,
changed files, the timeline's items), the head commit's check suites with their check runs
(``checkType: ALL``, so re-runs stay visible, as REST's ``filter=all``) and
``.github/taskeval.yml`` (``HEAD:`` is the default branch, the ref REST reads). Every connection
is then paged to its end: the next page of any connection is read through ``node(id:)`` on the
object that owns it, 100 at a time (the timeline to its first 1,000 events, as REST's).

The first page is 50 (not 100) on purpose: GitHub charges a query the page requests of its
connections divided by 100, and a nested connection costs one request per parent node, so 50
commits with their parents, 50 threads with their comments and 20 check suites with their runs
stay within one point; a PR larger than that pays for its further pages and no more.

What GraphQL does not carry is read over REST by ``collection`` (see docs/collection.md): the
session events of GitHub's Copilot agent (a PR of the agent reads REST's timeline instead of
GraphQL's: :mod:`.timeline`), workflow runs (GraphQL has no run attempt, start time or actor),
the App a PR was opened through (no ``performed_via_github_app``), and the previous path of a
renamed or copied file (``PullRequestChangedFile`` has none). IDs are GitHub's REST ids:
``fullDatabaseId`` where the schema has it, ``databaseId`` elsewhere; timeline events are keyed
by their global node id, the same through both APIs.

The package splits the queries (:mod:`.queries`), the reads that send and page them
(:mod:`.read`) and the conversion of their answers (:mod:`.convert`, the timeline's in
:mod:`.timeline`). Sent through PyGithub's own
``Requester.graphql_query`` on the caller's metered requester, so
retries, authentication, ``GITHUB_API_URL`` (GHES: ``/api/graphql``) and request counting are
the REST path's.
"""
