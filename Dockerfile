# taskeval's container Action: the scorer and the Action entrypoint only (no web server, no
# database drivers). action.yml builds this file; releases also publish it prebuilt as
# ghcr.io/<owner>/taskeval:<tag> (.github/workflows/release.yml), which a workflow can run with
# `uses: docker://ghcr.io/<owner>/taskeval:<tag>` and skip the build (docs/action.md).
# Build: docker build -t taskeval .

# The base is pinned by digest (a tag can be re-pushed, a digest cannot) to the published
# python:3.11.11-slim-bookworm. Bump the tag and the digest together, in the two FROM lines.
FROM python:3.11.11-slim-bookworm@sha256:081075da77b2b55c23c088251026fb69a7b2bf92471e491ff5fd75c192fd38e5 AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src

# The virtualenv is made without pip or setuptools: the base image's pip installs into it
# (`pip --python`), so neither ever lands in /opt/venv, the only thing the runtime stage copies.
# Dependency layer: rebuilt only when pyproject.toml changes. The runtime dependencies alone.
COPY pyproject.toml ./
RUN python -m venv --without-pip /opt/venv \
 && python -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; print('\n'.join(p['dependencies']))" > /tmp/requirements.txt \
 && python -m pip --python /opt/venv/bin/python install --no-cache-dir -r /tmp/requirements.txt

# Source layer: the core and the Action adapter.
COPY README.md ./
COPY taskeval/ taskeval/
COPY action/ action/
RUN python -m pip --python /opt/venv/bin/python install --no-cache-dir --no-deps /src


FROM python:3.11.11-slim-bookworm@sha256:081075da77b2b55c23c088251026fb69a7b2bf92471e491ff5fd75c192fd38e5

LABEL org.opencontainers.image.title="taskeval" \
      org.opencontainers.image.description="Grade merged pull requests from the evidence GitHub holds (GitHub Action)" \
      org.opencontainers.image.licenses="MIT"

# PYTHONSAFEPATH keeps the working directory (the checked-out workspace) off sys.path, so files
# in a repository can never shadow the installed `action` or `taskeval` packages.
ENV VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    PYTHONSAFEPATH=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

# Nothing installs packages at run time: the base image's own pip, setuptools and wheel go too.
RUN python -m pip uninstall --yes --no-cache-dir pip setuptools wheel
COPY --from=build /opt/venv /opt/venv

# No USER: GitHub runs container actions as the image's default user and documents that it must
# be root to write to the mounted workspace and file commands.
ENTRYPOINT ["python", "-m", "action"]
