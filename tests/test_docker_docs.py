"""The Docker story is one story: every `docker run` of the bot in README.md and docs/*.md uses the
user id and the data directory the bot image's Dockerfile sets up, and the SQLite file the docs
name is where the bot's default DATABASE_URL puts it. Reads whatever Dockerfiles exist, so it keeps
holding when the image is split."""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.settings import DEFAULT_DATABASE_URL

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@dataclass(frozen=True)
class Image:
    path: Path
    user: str | None  # the uid the bot runs as: USER, or the owner given to its work directory
    workdir: str | None
    volumes: tuple[str, ...]


def _final_stage(text: str) -> list[tuple[str, str]]:
    joined = re.sub(r"\\\n", " ", text)
    lines = [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]
    stages: list[list[tuple[str, str]]] = []
    for line in lines:
        word, _, rest = line.partition(" ")
        if word.upper() == "FROM":
            stages.append([])
        if stages:
            stages[-1].append((word.upper(), rest.strip()))
    return stages[-1] if stages else []


def _uid_of(user: str, stage: list[tuple[str, str]]) -> str:
    name = user.split(":")[0]
    if name.isdigit():
        return name
    for word, rest in stage:  # a named user: its uid from useradd/adduser
        if word == "RUN" and name in rest:
            m = re.search(r"(?:-u|--uid)\s+(\d+)", rest)
            if m:
                return m.group(1)
    return name


def bot_images() -> list[Image]:
    found = {*ROOT.glob("Dockerfile*"), *ROOT.glob("**/*.Dockerfile"), *ROOT.glob("docker/**/Dockerfile*")}
    images = []
    for path in sorted(p for p in found if ".venv" not in p.parts):
        text = path.read_text(encoding="utf-8")
        instructions = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
        if not re.search(r"COPY\s+bot/|\['bot'\]|\[bot\]", instructions):
            continue  # an image without the bot (the Action's own, once split)
        stage = _final_stage(text)
        workdirs = [rest for word, rest in stage if word == "WORKDIR"]
        workdir = workdirs[-1] if workdirs else None
        users = [rest for word, rest in stage if word == "USER"]
        user = _uid_of(users[-1], stage) if users else None
        if user is None and workdir:  # no USER (the Action must be root): who owns the data dir
            for word, rest in stage:
                m = re.search(rf"chown\s+(\d+)(?::\d+)?\s+{re.escape(workdir)}\b", rest) if word == "RUN" else None
                if m:
                    user = m.group(1)
        volumes = tuple(v.strip('[]" ') for word, rest in stage if word == "VOLUME" for v in rest.split())
        images.append(Image(path, user, workdir, volumes))
    return images


def docker_runs() -> list[tuple[str, list[str]]]:
    """(where, argv) of every `docker run` of the bot (serve or worker) in the docs."""
    out = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        joined = re.sub(r"\\\n\s*", " ", text)
        for m in re.finditer(r"docker run [^\n`]*", joined):
            command = m.group(0)
            if not re.search(r"\b(serve|worker)\b", command):
                continue
            where = f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
            argv = shlex.split(command.replace("…", ""), comments=False)
            out.append((where, argv))
    return out


def _options(argv: list[str], *names: str) -> list[str]:
    values = []
    for n, arg in enumerate(argv):
        for name in names:
            if arg == name and n + 1 < len(argv):
                values.append(argv[n + 1])
            elif arg.startswith(name + "="):
                values.append(arg.split("=", 1)[1])
    return values


IMAGES = bot_images()
RUNS = docker_runs()


def test_there_is_a_bot_image_with_a_user_and_a_data_directory() -> None:
    assert IMAGES, "no Dockerfile installs the bot"
    for image in IMAGES:
        assert image.user and image.workdir, f"{image.path.name}: no bot user id or work directory"


def test_the_docs_run_the_bot_somewhere() -> None:
    assert len(RUNS) >= 2, RUNS


@pytest.mark.parametrize(("where", "argv"), RUNS, ids=[w for w, _ in RUNS])
def test_every_docker_run_of_the_bot_matches_the_image(where: str, argv: list[str]) -> None:
    image = IMAGES[0]
    users = _options(argv, "--user", "-u")
    volumes = [v.split(":")[1] for v in _options(argv, "-v", "--volume") if ":" in v]
    database = [e.split("=", 1)[1] for e in _options(argv, "-e", "--env") if e.startswith("DATABASE_URL=")]
    if "..." in argv or not (users or volumes or database):
        return  # an abbreviated mention; the full command is elsewhere
    assert [u.split(":")[0] for u in users] == [image.user], f"{where}: --user {users} but the image uses {image.user}"
    assert volumes == [image.workdir], f"{where}: volume on {volumes} but the bot's directory is {image.workdir}"
    for url in database:
        if url.startswith("sqlite:////"):
            assert posixpath.dirname(url[len("sqlite:///"):]) == image.workdir, f"{where}: {url}"


def test_every_sqlite_path_the_docs_name_is_the_default_one_in_the_data_directory() -> None:
    image = IMAGES[0]
    default_file = DEFAULT_DATABASE_URL.removeprefix("sqlite:///")
    assert "/" not in default_file, "the default SQLite file is relative to the work directory"
    expected = posixpath.join(image.workdir or "", default_file)
    for path in DOCS:
        for m in re.finditer(r"(?<![\w:/.~-])(/[\w./-]+\.(?:sqlite3|db))\b", path.read_text(encoding="utf-8")):
            assert m.group(1) == expected, f"{path.name}: names {m.group(1)}, the image keeps {expected}"


def test_every_uid_the_docs_name_is_the_images() -> None:
    image = IMAGES[0]
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"(?:--user[ =]|\buid |chown )(\d+)", text):
            assert m.group(1) == image.user, f"{path.name}: uid {m.group(1)}, the image's is {image.user}"
