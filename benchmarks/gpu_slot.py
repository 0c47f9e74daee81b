"""A GPU slot as the device tool takes it: what each call carries, and the calls.

    python benchmarks/gpu_slot.py prepare --mirror ../shared/data/multi30k

builds .slot/ (git ignores it) here, where the package registry is reachable:
- wheels/: mixnmt's own wheel, and the cp312 manylinux wheels of what mixnmt[workflow]
  needs that the device's image lacks (benchmarks/device-image.txt), at the versions
  installed here, but for LEFT_OUT: never one the image has, so none shadows its torch
  or numpy;
- <dataset>/: the dataset's pinned files, copied from --mirror and checked by sha256
  (the device reaches no network);
- COMMIT: the commit the wheel was built from (the device's copy has no .git).
It checks that .slot and the tree that travels fit in the call's 64 MiB (the published
results do not: LEAVE_OUT leaves them behind while the calls run), then prints the
`run` calls in order, one JSON object per line, each under 600 s: the facts, CUDA tests
and speed benchmark, then the study in calls that resume one another on the warm machine.
Each call writes what it made under $OUT (within the 8-file limit): facts, logs, and
results-<experiment>.tar.gz, the results so far without checkpoints.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

from mixnmt import MixnmtError
from mixnmt.config import load
from mixnmt.files import sha256sum

ROOT = Path(__file__).resolve().parents[1]
SLOT = ".slot"
LEFT_OUT = frozenset({"pulp"})
"""Needed distributions the slot does not carry: pulp is only Snakemake's ILP scheduler,
15.6 MiB of solver binaries (gpu_session's Snakemake schedules greedily without it), and
a call's 64 MiB has no room for it."""
CARRY_LIMIT = 64 * 2**20
"""What one call carries at most: the tree that travels and the carried paths."""
LEAVE_OUT = ("git sparse-checkout set --no-cone '/*' '!/results/'", "git sparse-checkout disable")
"""Leave the published results (tracked files under results/) out of the working tree
while a slot's calls run, and bring them back after: they outgrew a call's 64 MiB, and
the device needs none of them. Git keeps them tracked and the checkout clean."""
CALL_MINUTES = 9.5
"""One call's budget (the tool stops a command at 600 s)."""
STUDY_CALLS = 2
"""Study calls after the checks: three calls and a start fill a lease of about 30 minutes."""
DEVICE = {
    "python_version": "3.12",
    "python_full_version": "3.12.3",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "os_name": "posix",
}
"""The device's environment markers (its python3 is CPython 3.12.3 on x86-64 Linux)."""
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64"]


def image() -> set[str]:
    """The packages of the device's image, by canonical name."""
    lines = (ROOT / "benchmarks" / "device-image.txt").read_text().splitlines()
    return {canonicalize_name(line) for line in lines if line and not line.startswith("#")}


def needed(project: str = "mixnmt", extras: tuple[str, ...] = ("workflow",)) -> dict[str, str]:
    """Every distribution `project[extras]` needs on the device, by name, at the version
    installed here (which is what the tests here ran with)."""
    pins: dict[str, str] = {}
    seen: set[tuple[str, str]] = set()
    todo = [(project, extra) for extra in ("", *extras)]
    while todo:
        name, extra = todo.pop()
        if (canonicalize_name(name), extra) in seen:
            continue
        seen.add((canonicalize_name(name), extra))
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise MixnmtError(
                f"{name}: needed on the device but not installed here; pip install -e '.[workflow]' first"
            ) from None
        pins[canonicalize_name(name)] = dist.version
        for line in dist.requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({**DEVICE, "extra": extra}):
                todo += [(requirement.name, e) for e in ("", *requirement.extras)]
    return pins


def wheels(folder: Path, pins: dict[str, str]) -> list[Path]:
    """mixnmt's wheel and the cp312 wheels of `pins`, downloaded into `folder`; a pin
    published only as source is built here, and kept if its wheel is pure Python."""
    folder.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as source:  # setuptools leaves build/ where it builds
        for name in ("pyproject.toml", "README.md", "src"):
            copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copyfile
            copy(ROOT / name, Path(source) / name)
        checked(pip("wheel", "--no-deps", "--no-build-isolation", "-w", folder, source))
    left = dict(pins)
    while left:
        done = pip(*download(folder), *(f"{n}=={v}" for n, v in sorted(left.items())))
        if done.returncode == 0:
            break
        missing = re.search(r"No matching distribution found for ([^=\s]+)", done.stderr)
        if not missing:
            checked(done)  # failed for another reason
        name = canonicalize_name(missing.group(1))
        before = set(folder.glob("*.whl"))
        checked(pip("wheel", "--no-deps", "-w", folder, f"{name}=={left.pop(name)}"))
        (built,) = set(folder.glob("*.whl")) - before
        if not built.name.endswith("-py3-none-any.whl"):
            raise MixnmtError(f"{name}: no cp312 wheel is published, and the one built here is {built.name}")
    return sorted(folder.glob("*.whl"))


def download(folder: Path) -> list[str | Path]:
    """pip's arguments that download, into `folder`, the device's wheels of what follows."""
    options = ["download", "--no-deps", "--only-binary=:all:", "--implementation", "cp", "-d", folder]
    return [*options, "--python-version", DEVICE["python_version"], *(f"--platform={p}" for p in PLATFORMS)]


def pip(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", "-q", *args], capture_output=True, text=True)


def checked(done: subprocess.CompletedProcess) -> None:
    """An error with pip's last line, if it failed."""
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise MixnmtError(f"pip {done.args[4]}: {last}")


def data(config: dict, mirror: Path, folder: Path) -> list[Path]:
    """The dataset's pinned files copied from `mirror` into `folder`, each checked."""
    found = config["datasets"][config["dataset"]]
    entries = [
        e for files in (found["train"], found["valid"], *found["test"].values()) for e in files.values()
    ]
    folder.mkdir(parents=True)
    for entry in entries:
        source = mirror / entry["file"]
        if not source.is_file() or sha256sum(source) != entry["sha256"]:
            raise MixnmtError(
                f"{source}: missing, or not the file the config pins (sha256 {entry['sha256']})"
            )
        shutil.copyfile(source, folder / entry["file"])
    return [folder / e["file"] for e in entries]


def travelling() -> list[str]:
    """The files of the tree that travel (relative to ROOT): tracked ones and untracked
    ones git does not ignore."""
    listed = subprocess.run(
        ["git", "-C", ROOT, "ls-files", "-z", "-co", "--exclude-standard"], capture_output=True, check=True
    ).stdout.decode()
    return [name for name in listed.split("\0") if (ROOT / name).is_file()]


SETUP_END = "|| exit; "
"""Ends the part of each call that installs the wheels and sets the environment."""


def calls(
    overlays: list[str], settings: list[str], minutes: float = CALL_MINUTES, *options: str
) -> list[dict]:
    """The `run` calls of a slot, in order, each `minutes` long (gpu_session's `options`
    too); each installs the wheels first."""
    setup = (
        "python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade "
        f"--target /tmp/site {SLOT}/wheels/*.whl && export PYTHONPATH=/tmp/site "
        f"PATH=/tmp/site/bin:$PATH MIXNMT_COMMIT=$(cat {SLOT}/COMMIT) PYTHONUNBUFFERED=1 {SETUP_END}"
    )
    session = shlex.join(["python3", "benchmarks/gpu_session.py", "--minutes", str(minutes), *options])
    session += ' --out "$OUT" --steps'
    overlaid = f" --configfile {shlex.join(overlays)}" if overlays else ""  # the speed step times its models
    study = f"{session} study{overlaid} --config {shlex.join(settings)}"
    commands = [f"{session} tests speed{overlaid}", *[study] * STUDY_CALLS]
    return [{"command": setup + c, "carry": [SLOT], "timeout_s": 600} for c in commands]


def carried(files: list[Path]) -> int:
    """The bytes of `files`, refused in one line where they pass a call's limit, naming
    the published results' share and how to leave them behind (LEAVE_OUT)."""
    total = sum(path.stat().st_size for path in files)
    if total > CARRY_LIMIT:
        results = sum(path.stat().st_size for path in files if path.is_relative_to(ROOT / "results"))
        remedy = (
            f" ({results / 2**20:.1f} MiB of it the published results: leave them out of the "
            f"working tree, `{LEAVE_OUT[0]}`, prepare again, and after the calls `{LEAVE_OUT[1]}`)"
            if results
            else ""
        )
        raise MixnmtError(f"a call would carry {total / 2**20:.1f} MiB, over 64 MiB{remedy}")
    return total


def prepare(mirror: Path, overlays: list[str], slot: Path = ROOT / SLOT) -> list[dict]:
    """Build `slot` (see the module's docstring); the calls to make."""
    tree = [ROOT / name for name in travelling()]
    carried(tree)  # before minutes of downloads, where the tree alone is too large
    shutil.rmtree(slot, ignore_errors=True)
    config = load(*overlays)
    on_image = image()
    pins = {n: v for n, v in needed().items() if n not in on_image | LEFT_OUT and n != "mixnmt"}
    built = wheels(slot / "wheels", pins)
    shadowing = [w.name for w in built if canonicalize_name(parse_wheel_filename(w.name)[0]) in on_image]
    if shadowing:
        raise MixnmtError(f"{SLOT}/wheels: {', '.join(shadowing)} would shadow the image's own")
    copied = data(config, mirror, slot / config["dataset"])
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True)
    (slot / "COMMIT").write_text(commit.stdout.strip() + "\n")
    for path in [*built, *copied]:
        print(f"{path.stat().st_size / 2**20:7.2f} MiB  {path.relative_to(slot)}", file=sys.stderr)
    total = carried(tree + [p for p in slot.rglob("*") if p.is_file()])
    print(f"{len(built)} wheels; the tree and {SLOT} {total / 2**20:.1f} MiB of 64", file=sys.stderr)
    return calls(overlays, [f"mirror={SLOT}/{config['dataset']}"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    ready = commands.add_parser("prepare", help=f"build {SLOT}/ and print the calls")
    ready.add_argument("--mirror", type=Path, required=True, help="a folder with the dataset's files")
    ready.add_argument("--configfile", nargs="*", default=[], help="overlays of the study's config")
    a = parser.parse_args(argv)
    try:
        for call in prepare(a.mirror, a.configfile):
            print(json.dumps(call))
    except MixnmtError as e:
        raise SystemExit(f"gpu_slot: {e}") from None


if __name__ == "__main__":
    main()
