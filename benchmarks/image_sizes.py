"""Installed size of the two images' virtualenvs, built the way the Dockerfiles build them.

No container engine is needed (and this machine has none): the script follows the Dockerfiles'
recipe on the local Python, in a temporary directory. ``python -m venv --without-pip`` makes each
virtualenv, the running interpreter's pip installs into it (``pip --python``) the runtime
dependencies (the Action image, ``Dockerfile``) or those plus the ``bot`` extra (the bot image,
``Dockerfile.bot``), then taskeval itself. For comparison it also measures the old recipe: a venv
made *with* pip and setuptools, which the single image used to copy into its runtime layer.
Sizes are bytes on disk of the whole venv directory, byte-compiled files included (pip compiles
them, as in the image). The base image (python:3.11.11-slim-bookworm) is the same under both and
is not counted. Run from the repository root:

    python -m benchmarks.image_sizes
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOT_ONLY = ("flask", "gunicorn", "sqlalchemy", "psycopg", "werkzeug")


def size_of(path: Path) -> int:
    """Bytes on disk of every regular file under ``path`` (symlinks not followed)."""
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            p = Path(folder) / name
            if not p.is_symlink():
                total += p.stat().st_size
    return total


def requirements(bot: bool) -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return list(project["dependencies"]) + (list(project["optional-dependencies"]["bot"]) if bot else [])


def pip(venv: Path, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), *args,
                    "--quiet", "--disable-pip-version-check", "--no-cache-dir"], check=True)


def build(folder: Path, name: str, bot: bool, with_pip: bool) -> Path:
    venv = folder / name
    subprocess.run([sys.executable, "-m", "venv", *([] if with_pip else ["--without-pip"]), str(venv)],
                   check=True)
    pip(venv, "install", *requirements(bot))
    # What the image installs: the source tree without tests (the Dockerfile's COPY lines).
    src = folder / f"{name}-src"
    src.mkdir()
    for part in ("pyproject.toml", "README.md", "taskeval", "bot" if bot else "action"):
        copy = shutil.copytree if (ROOT / part).is_dir() else shutil.copy
        copy(ROOT / part, src / part)
    pip(venv, "install", "--no-deps", str(src))
    return venv


def installed(venv: Path) -> set[str]:
    site = next((venv / "lib").glob("python*/site-packages"))
    return {p.name.split("-")[0].lower() for p in site.glob("*.dist-info")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="taskeval-sizes-") as tmp:
        folder = Path(tmp)
        for label, bot, with_pip in (
            ("Action image venv (Dockerfile)", False, False),
            ("Bot image venv (Dockerfile.bot)", True, False),
            ("Action deps, venv with pip + setuptools", False, True),
            ("Old single image venv: bot deps with pip + setuptools", True, True),
        ):
            venv = build(folder, f"v{len(rows)}", bot, with_pip)
            names = installed(venv)
            if not bot:
                leaked = sorted(n for n in names if n in BOT_ONLY)
                assert not leaked, f"the Action venv holds bot dependencies: {leaked}"
            if not with_pip:
                assert not {"pip", "setuptools"} & names, f"{label}: pip/setuptools present"
            rows.append((label, size_of(venv), len(names)))
    print(f"Python {sys.version.split()[0]} on {sys.platform}")
    print("| venv | installed size | distributions |")
    print("|---|---:|---:|")
    for label, size, count in rows:
        print(f"| {label} | {size / 2**20:.1f} MiB | {count} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
