"""One time-boxed GPU session: check, measure, then train until the deadline.

    python benchmarks/gpu_session.py --minutes 28 --out gpu-session      # config.yaml's study
    python benchmarks/gpu_session.py --minutes 28 --out s --configfile experiments/cpu.yaml

In order, each step's output under --out (and summarised on stdout):
1. facts.json: GPU, driver, torch, CUDA, cuDNN, the commit (MIXNMT_COMMIT where the copy
   has no .git).
2. cuda-tests.log: tests/test_cuda.py (skipped, saying why, without a GPU).
3. determinism.json: the tiny experiment's training trained twice (`--until train`),
   every checkpoint's sha256 compared.
4. speed.json / speed.log: benchmarks/speed.py on the device (the study's models, one per
   architecture, rows kept as they finish), then with 1, N and 2N processes
   sharing it; N for the study is the one with the most tokens/s (or --jobs).
5. study.log: `snakemake --resources gpu_jobs=N` (seed 1 of every model first, by the
   rules' priorities) until the deadline. Then every job gets SIGINT, as from Ctrl-C
   (training saves its state), and Snakemake SIGTERM too (it starts no new job), and the
   same command later resumes where this one stopped.
6. results-<experiment>.tar.gz: results/<experiment> without checkpoints or states.

--steps runs some of steps 2-5 (the facts always): a device call ends at 600 s, so a slot
makes one call per step or two (benchmarks/gpu_slot.py prints them); a study step without
a speed step in the same call uses the jobs per GPU an earlier call's speed step chose.

--quick shrinks steps 3 and 4 (the first model, a few steps, small batches): the CPU dry run
of the whole path (tests/test_gpu_session.py) and a GPU slot in a hurry use it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import torch
import yaml

from mixnmt import MixnmtError
from mixnmt.config import SCHEMA, merge, read, schema, selected
from mixnmt.files import sha256sum
from mixnmt.models import architecture
from mixnmt.paths import CHECKPOINTS, STATES, Layout
from mixnmt.provenance import code_version

ROOT = Path(__file__).resolve().parents[1]
STEPS = ("tests", "determinism", "speed", "study")
"""The steps after the facts, in order; --steps picks some (one GPU call each, say)."""
SPEED = ".gpu-session-jobs.json"
"""Under results/: the jobs per GPU the speed step chose, for a later session's study."""


def facts() -> dict:
    """What ran the session: machine, GPU and software."""
    record = {
        "host": platform.node(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "commit": code_version(),
        "cpus": os.cpu_count(),
        "gpu": None,
    }
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        record["gpu"] = {
            "name": props.name,
            "memory_gb": round(props.total_memory / 2**30, 1),
            "capability": f"{props.major}.{props.minor}",
            "bf16": torch.cuda.is_bf16_supported(),
        }
        try:
            smi = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
            record["driver"] = subprocess.run(smi, capture_output=True, text=True).stdout.strip() or None
        except OSError:
            record["driver"] = None
    return record


def run_until(command: list[str | Path], deadline: float, log: Path, grace: float = 120) -> int:
    """Run `command` (output to `log`) in a process group of its own until it ends or
    `deadline` (time.time()) passes, or this session is interrupted (Ctrl-C, SIGTERM);
    then stop the group: SIGINT to all of it, as Ctrl-C would (training saves its state),
    SIGTERM to the command itself (Snakemake then starts no new job even where its
    KeyboardInterrupt is lost, seen under load with --keep-going), and SIGKILL to whatever
    of the group is left `grace` seconds later, also when the command itself ended sooner
    (a trainer started as the signals came, left running when Snakemake exited). An
    interruption is raised again once the group is gone."""
    with log.open("a") as out:
        out.write(f"$ {' '.join(map(str, command))}\n")
        out.flush()
        process = subprocess.Popen(
            command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        interrupted = None
        try:
            return process.wait(timeout=max(deadline - time.time(), 0))
        except subprocess.TimeoutExpired:
            out.write(f"# deadline reached: SIGTERM to {process.pid}, SIGINT to its process group\n")
        except KeyboardInterrupt as e:
            interrupted = e
            out.write(f"# interrupted: SIGTERM to {process.pid}, SIGINT to its process group\n")
        out.flush()
        process.send_signal(signal.SIGTERM)
        os.killpg(process.pid, signal.SIGINT)
        end = time.time() + grace
        while time.time() < end and group_alive(process.pid):
            process.poll()  # reap the command once it ends; its jobs may outlive it
            time.sleep(0.5)
        if group_alive(process.pid):
            os.killpg(process.pid, signal.SIGKILL)
        code = process.wait()
        if interrupted:
            raise interrupted
        return code


def run_study(command: list[str | Path], deadline: float, log: Path, grace: float) -> int:
    """`run_until` for Snakemake: if it had to be killed, its lock on the working
    directory is released (`--unlock`), or the next call's study stops at once with
    LockException (seen on the first GPU slot: Snakemake outlived a 30 s grace)."""
    code = run_until(command, deadline, log, grace)
    if code == -signal.SIGKILL:
        with log.open("a") as out:
            out.write("# Snakemake was killed: releasing its lock\n")
        subprocess.run([*command, "--unlock"], cwd=ROOT, capture_output=True, check=True)
    return code


def group_alive(pgid: int) -> bool:
    """Whether a process of group `pgid` (not yet reaped) is left."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def snakemake(directory: Path, *args: str | Path) -> list[str | Path]:
    """Snakemake on `directory`, scheduling greedily: the slot leaves out its ILP solver
    (benchmarks/gpu_slot.py, LEFT_OUT)."""
    command = [sys.executable, "-m", "snakemake", "-s", ROOT / "Snakefile", "-d", directory]
    return [*command, "--scheduler", "greedy", *args]


def determinism(directory: Path, out: Path, deadline: float, quick: bool) -> dict:
    """Train the tiny experiment twice under two names (with --quick its first model for
    20 steps), in bf16 where the device computes it (tiny.yaml's fp32 suits CPUs; the
    studies on a GPU train in bf16); compare the checkpoints byte for byte."""
    data = directory / "data" / "tiny-source"
    subprocess.run([sys.executable, ROOT / "tests" / "tinydata.py", data], check=True, capture_output=True)
    tiny = yaml.safe_load((ROOT / "tests" / "tiny.yaml").read_text())
    digests = []
    for run in ("determinism-1", "determinism-2"):
        shutil.rmtree(directory / "results" / run, ignore_errors=True)  # an earlier session's: train anew
        first = Layout(f"results/{run}").checkpoint(tiny["only"][0], tiny["seeds"][0])
        settings = [f"experiment={run}", "train={precision: auto}", *(["max_steps=20"] if quick else [])]
        command = snakemake(
            directory,
            *([first] if quick else ["--until", "train"]),
            "--cores",
            "all",
            "--configfile",
            ROOT / "tests" / "tiny.yaml",
            "--config",
            *settings,
            "--resources",
            "gpu_jobs=8",
        )
        if run_until(command, deadline, out / "determinism.log") != 0:
            return {"verdict": "failed", "log": "determinism.log"}
        folder = directory / "results" / run / CHECKPOINTS
        digests.append({str(p.relative_to(folder)): sha256sum(p) for p in sorted(folder.rglob("*.pt"))})
    same = digests[0] == digests[1] and bool(digests[0])
    return {"verdict": "identical" if same else "DIFFERENT", "checkpoints": digests}


def measure(
    out: Path, device: str, deadline: float, quick: bool, jobs: int | None, configfiles: list[str | Path]
) -> int:
    """The speed benchmark of the study's models (`configfiles` merged in order, as the
    study reads them); the number of jobs per GPU with the most tokens/s."""
    counts = [1, 2] if quick else [1, jobs or 4, 2 * (jobs or 4)]
    study: dict = {}
    for path in configfiles:
        study = merge(study, read(path))
    command = [
        sys.executable,
        str(ROOT / "benchmarks" / "speed.py"),
        "--device",
        device,
        "--json",
        str(out / "speed.json"),
        "--no-baseline",  # the device's precision only: the step has 300 s
        "--profile",  # where the first model's training steps spend their time, in speed.log
        "--processes",
        *map(str, counts),
        "--configfile",
        *map(str, configfiles),
        "--no-references",
    ]
    if quick:  # the study's first model
        command += ["--models", selected(study)[0], "--steps", "3", "--seconds", "1", "--max-tokens", "512"]
        command += ["--precision", "auto"]  # a CPU that emulates bf16: fp32, 60x faster
    else:  # within the step's 300 s: one model of each architecture, then the sharing runs
        first: dict[str, str] = {}
        for name in selected(study):
            first.setdefault(architecture(name, study["models"].get(name)), name)
        command += ["--models", *first.values()]
    if run_until(command, deadline, out / "speed.log") != 0 or not (out / "speed.json").exists():
        return jobs or 4
    shared = json.loads((out / "speed.json").read_text())["shared"]
    return jobs or int(max(shared, key=shared.get))


def tarball(results: Path, out: Path) -> Path:
    """results/<experiment> as a .tar.gz, without checkpoints and training states."""
    path = out / f"results-{results.name}.tar.gz"

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        parts = Path(info.name).parts
        return None if set(parts[1:2]) & {CHECKPOINTS, STATES} else info

    with tarfile.open(path, "w:gz") as tar:
        tar.add(results, arcname=results.name, filter=keep)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, required=True, help="the whole session's budget")
    parser.add_argument(
        "--out", type=Path, default=Path(os.environ.get("OUT", "gpu-session")), help="reports"
    )
    parser.add_argument("--directory", type=Path, default=ROOT, help="Snakemake's working directory")
    parser.add_argument("--configfile", nargs="*", default=[], help="overlays of the study's config")
    parser.add_argument("--config", nargs="*", default=[], help="KEY=VALUE settings of the study")
    parser.add_argument("--jobs", type=int, help="model jobs per GPU (default: the benchmark's best)")
    parser.add_argument(
        "--quick", action="store_true", help="small checks: one model, few steps, small batches"
    )
    parser.add_argument("--grace", type=float, default=120, help="seconds to save states at the deadline")
    parser.add_argument(
        "--study-minutes", type=float, help="at most this long for the study (default: the rest)"
    )
    parser.add_argument(
        "--steps", nargs="+", choices=STEPS, default=list(STEPS), help="which steps (default: all)"
    )
    a = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, interrupt)  # as Ctrl-C: the running step stops its group
    deadline = time.time() + 60 * a.minutes
    experiment = settings_experiment(a.directory, a.configfile, a.config)
    try:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / ".writable").touch()
        (a.out / ".writable").unlink()
    except OSError as e:
        raise SystemExit(f"gpu_session: --out {a.out}: not a folder it can write ({e.strerror})") from None
    device = "cuda" if torch.cuda.is_available() else "cpu"

    def step(name: str, seconds: float) -> float:
        """The deadline of a step: its share, never past the session's."""
        print(f"[{time.strftime('%H:%M:%S')}] {name}", flush=True)
        return min(time.time() + seconds, deadline)

    record = facts()
    (a.out / "facts.json").write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record))

    tests = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-rs",
        "-p",
        "no:cacheprovider",
        str(ROOT / "tests" / "test_cuda.py"),
    ]
    passed = True
    if "tests" in a.steps:
        passed = run_until(tests, step("CUDA tests", 240), a.out / "cuda-tests.log") == 0
        print(f"CUDA tests: {'passed' if passed else 'FAILED'} (cuda-tests.log)")

    verdict = "identical"
    if "determinism" in a.steps:
        found = determinism(a.directory, a.out, step("determinism check", 360), a.quick)
        (a.out / "determinism.json").write_text(json.dumps(found, indent=1) + "\n")
        verdict = found["verdict"]
        print(f"determinism: {verdict}")

    measured = a.directory / "results" / SPEED  # kept for a later call's study
    if "speed" in a.steps:
        study = [Path(p).resolve() for p in (a.directory / "config.yaml", *a.configfile)]  # for ROOT
        jobs = measure(a.out, device, step("speed benchmark", 300), a.quick, a.jobs, study)
        measured.parent.mkdir(parents=True, exist_ok=True)
        measured.write_text(json.dumps({"jobs": jobs}) + "\n")
    else:
        jobs = a.jobs or (json.loads(measured.read_text())["jobs"] if measured.exists() else 4)
    if "study" not in a.steps:
        return 0 if passed and verdict == "identical" else 1
    print(f"study: {jobs} jobs per GPU")

    settings = ["--configfile", *a.configfile] if a.configfile else []
    settings += ["--config", *a.config] if a.config else []
    study = snakemake(
        a.directory, "--cores", "all", "--resources", f"gpu_jobs={jobs}", "--keep-going", *settings
    )
    rest = deadline - time.time() - a.grace - 30  # then stop, save, pack
    end = step("study", min(rest, 60 * a.study_minutes) if a.study_minutes else rest)
    code = run_study(study, end, a.out / "study.log", a.grace)
    print(f"study: exit {code} ({'finished' if code == 0 else 'stopped or failed; rerun to resume'})")

    results = a.directory / "results" / experiment
    if results.exists():
        print(f"results: {tarball(results, a.out)}")
    return 0 if passed and verdict == "identical" and code == 0 else 1


def interrupt(signum: int, frame: object) -> None:
    """SIGTERM to the session: stop as at Ctrl-C."""
    raise KeyboardInterrupt(signal.Signals(signum).name)


def settings_experiment(directory: Path, configfiles: list[str], settings: list[str]) -> str:
    """The study's experiment name, as Snakemake will read it (the last word wins), if it
    is a name of the config's schema: a folder of results/, never a path out of it."""
    try:
        name = read(directory / "config.yaml")["experiment"]
        for path in configfiles:
            name = read(path).get("experiment", name)
    except MixnmtError as e:
        raise SystemExit(f"gpu_session: {e}") from None
    for setting in settings:
        key, _, value = setting.partition("=")
        name = value if key == "experiment" else name
    rule = schema(ROOT / SCHEMA)["definitions"]["name"]
    if not isinstance(name, str) or not re.match(rule["pattern"], name):
        raise SystemExit(f"gpu_session: experiment: {name!r} is not {rule['description']}")
    return name


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit("gpu_session: interrupted; the running step's processes were stopped (states saved)")
