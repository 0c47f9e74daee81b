"""Which code made a result (the git commit of the checkout the package runs from), and
which files: what a figure or the report records of its inputs (`made_from`)."""

from __future__ import annotations

import functools
import hashlib
import html
import json
import os
import re
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mixnmt.files import sha256sum

if TYPE_CHECKING:
    import pandas as pd

HERE = Path(__file__).resolve().parent


COMMIT_VARIABLE = "MIXNMT_COMMIT"
"""Names the commit of a copy without .git (a tree copied to a GPU node): its dirty flag
is then unknown."""


def git_output(folder: Path, *args: str) -> bytes | None:
    """What `git args` prints, run in `folder`; None outside a git checkout or without git."""
    try:
        done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def git_state(folder: Path = HERE) -> dict[str, Any]:
    """Commit and dirty flag of the git checkout holding `folder`; outside one, the
    commit named by $MIXNMT_COMMIT, if set, with an unknown dirty flag.
    Dirty means edited code or configuration: a run rewriting committed results/ is not."""

    def git(*args: str) -> str | None:
        out = git_output(folder, *args)
        return None if out is None else out.decode().strip()

    commit = git("rev-parse", "HEAD")
    if not commit:
        return {"commit": os.environ.get(COMMIT_VARIABLE) or None, "dirty": None}
    code = [":/", ":(top,exclude)results"]  # the whole checkout but results/
    status = git("status", "--porcelain", "--untracked-files=no", "--", *code)
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


@functools.cache
def committed_sha256(path: Path) -> frozenset[str]:
    """sha256 of every version of `path` committed to the git checkout it lies in (none
    outside one): whether a file's recorded digest is of a text the project once had."""
    folder, name = path.resolve().parent, path.name
    commits = (git_output(folder, "log", "--format=%H", "--", name) or b"").decode().split()
    texts = (git_output(folder, "show", f"{commit}:./{name}") for commit in commits)
    return frozenset(hashlib.sha256(text).hexdigest() for text in texts if text is not None)


def version(git: dict[str, Any]) -> str | None:
    """A `git_state` as one string: the commit, with `+dirty` for edited code or configuration."""
    return git["commit"] and git["commit"] + ("+dirty" if git["dirty"] else "")


def code_version() -> str | None:
    """The code version the package runs from (None outside a git checkout): what every
    score, translation and table records."""
    return version(git_state())


def stamped(table: pd.DataFrame) -> pd.DataFrame:
    """`table` with a last column `commit`: the code version that made it."""
    return table.assign(commit=code_version())


INPUTS_KEY = "mixnmt-inputs"
"""Where a figure (PNG text chunk, SVG description) and the report (a JSON script element)
record `made_from` of their inputs."""

EMPTY_KEY = "mixnmt-empty"
"""A figure with nothing to show records why in its PNG under this key; the report shows
that line in its place."""


def made_from(paths: list[str | Path]) -> dict[str, str]:
    """{path: sha256} of the files something was made from, in a fixed order."""
    return {str(path): sha256sum(path) for path in sorted(set(map(str, paths)))}


def drawn_from(figure: str | Path) -> dict[str, str] | None:
    """What a figure records it was drawn from: a PNG in its INPUTS_KEY text chunk, an SVG
    in its description (plots.save writes both); None where it records nothing or does
    not exist."""
    try:
        if Path(figure).suffix == ".svg":
            found = re.search(
                r"<dc:description>(.*?)</dc:description>", Path(figure).read_text(encoding="utf-8"), re.S
            )
            text = None if found is None else html.unescape(found[1])
        else:
            text = png_text(figure, INPUTS_KEY)
    except FileNotFoundError:
        return None
    return None if text is None else json.loads(text)


def png_text(figure: str | Path, key: str) -> str | None:
    """The PNG's text chunk `key`, read without decoding its pixels (plots.save writes
    its text chunks before them; the whole check of a study reads hundreds of figures)."""
    from PIL import Image  # with matplotlib: only here

    with Image.open(figure) as image:
        return image.info.get(key)
