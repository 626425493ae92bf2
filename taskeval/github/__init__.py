"""GitHub access: the client factory, collection of one pull request, and the evaluation comment.

The package is split by responsibility:

* ``errors``: the ``GitHubError`` family and the translation of PyGithub/requests failures;
* ``client``: ``make_client``, ``api_url``, the metered per-thread requester, bounded retries,
  pagination and ``parse_pr_ref``;
* ``convert``: REST payloads -> ``Raw*`` models (pure);
* ``collection``: ``collect``, reading one PR concurrently;
* ``writes``: ``upsert_comment``, ``collaborator_permission``, ``add_reaction``.

Importing the package also makes PyGithub's logger an ordinary library logger (``client``).
"""

from taskeval.github.client import (
    DEFAULT_API_URL,
    PER_PAGE,
    SECONDARY_RATE_WAIT,
    USER_AGENT,
    api_url,
    env_token,
    make_client,
    parse_pr_ref,
)
from taskeval.github.collection import (
    MAX_WORKFLOW_RUNS,
    PR_COMMIT_LIST_LIMIT,
    PR_FILE_LIST_LIMIT,
    RUN_LOOKBACK,
    collect,
)
from taskeval.github.errors import AuthError, GitHubError, NotFoundError, RateLimitError
from taskeval.github.writes import (
    MARKER,
    PERMISSIONS,
    REACTIONS,
    add_reaction,
    collaborator_permission,
    comment_login,
    upsert_comment,
)

__all__ = [
    "DEFAULT_API_URL",
    "MARKER",
    "MAX_WORKFLOW_RUNS",
    "PERMISSIONS",
    "PER_PAGE",
    "PR_COMMIT_LIST_LIMIT",
    "PR_FILE_LIST_LIMIT",
    "REACTIONS",
    "RUN_LOOKBACK",
    "SECONDARY_RATE_WAIT",
    "USER_AGENT",
    "AuthError",
    "GitHubError",
    "NotFoundError",
    "RateLimitError",
    "add_reaction",
    "api_url",
    "collaborator_permission",
    "collect",
    "comment_login",
    "env_token",
    "make_client",
    "parse_pr_ref",
    "upsert_comment",
]
