# taskeval: the container GitHub Action (default) and, with a command override, the webhook bot.
# Build: docker build -t taskeval .
# Bot:   docker run -p 8000:8000 --user 10001:10001 -v taskeval-data:/data \
#          --entrypoint taskeval taskeval serve --bind 0.0.0.0:8000      (docs/bot.md, "Install")

# Pinned to an exact Python patch release on Debian bookworm; bump deliberately.
FROM python:3.11.11-slim-bookworm AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH
WORKDIR /src

# Dependency layer: rebuilt only when pyproject.toml changes, not on every source edit.
# Runtime dependencies plus the bot extra; the test extra (dev tools) never enters the image.
COPY pyproject.toml ./
RUN python -m venv "$VIRTUAL_ENV" \
 && python -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; print('\n'.join(p['dependencies'] + p['optional-dependencies']['bot']))" > /tmp/requirements.txt \
 && pip install --no-cache-dir -r /tmp/requirements.txt

# Source layer.
COPY README.md ./
COPY taskeval/ taskeval/
COPY action/ action/
COPY bot/ bot/
RUN pip install --no-cache-dir --no-deps /src


FROM python:3.11.11-slim-bookworm

LABEL org.opencontainers.image.title="taskeval" \
      org.opencontainers.image.description="Grade merged pull requests from the evidence GitHub holds" \
      org.opencontainers.image.licenses="MIT"

# PYTHONSAFEPATH keeps the working directory (the checked-out workspace) off sys.path, so files
# in a repository can never shadow the installed `action` or `taskeval` packages.
ENV VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    PYTHONSAFEPATH=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /opt/venv /opt/venv

# The bot's state directory. The bot runs as uid 10001 (`--user 10001:10001`) in /data, where its
# default DATABASE_URL (sqlite:///taskeval-bot.sqlite3, relative) puts the SQLite file; mount a
# volume there. A new named volume copies this directory's owner, so it is writable at once.
# The Action ignores both: the runner sets the working directory to the workspace.
RUN mkdir /data && chown 10001:10001 /data
WORKDIR /data

# No USER: GitHub runs container actions as the image's default user and documents that it must
# be root to write to the mounted workspace and file commands. Run the bot with `--user`.
ENTRYPOINT ["python", "-m", "action"]
