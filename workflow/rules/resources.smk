"""What the jobs ask of the machine: threads, GPUs, the shared GPU's slots, and the order
of seeds."""

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger

from mixnmt.config import (
    CONFIG,
    CPU_EXPERIMENT,
    cpu_fits,
    cpu_notice,
    merge,
    read,
    train_settings,
)
from mixnmt.machine import cpu_native_bf16, cuda_available, torch_environment
from mixnmt.progress import watch_training

# The jobs that run a model use the GPU. Locally they share it: the resource gpu_jobs
# counts them, and its limit (profiles/default: gpu_jobs=4) is how many run side by side
# on one GPU, one CPU thread each; the recurrent models are launch-bound, so one job
# alone leaves most of a GPU idle. On SLURM each job asks for a GPU of its own (gpu=1;
# profiles/slurm shows how to pack several onto one). Without a GPU they take one core
# each and run side by side, which gets about 20% more tokens/s out of 2 cores than one
# job on both. The speed rule asks for the whole machine, so its timings are its own.
NO_GPU = not cuda_available()  # without importing torch where no GPU driver is loaded
WHOLE_GPU = 1024  # a gpu_jobs request above the limit is cut to it: every slot
# The conda environment (--use-conda) of the jobs that run a model: PyTorch with CUDA, or
# its CPU build (config `torch_build`; auto: CUDA where Snakemake sees a GPU).
TORCH_ENV = f"../../envs/{torch_environment(config['torch_build'], not NO_GPU)}.yaml"


def cpu_only():
    """A local run on a machine without a GPU. Asked when jobs are made: while the
    Snakefile is read, the executor (local or SLURM) is not yet known."""
    return workflow.local_exec and NO_GPU


def model_threads(threads):
    """Threads of a job that runs a model: one on a local run, where jobs share the
    cores or the GPU; `threads` on a cluster."""
    return lambda wildcards: 1 if workflow.local_exec else threads


def model_gpu(wildcards):
    """The GPUs a job that runs a model asks a cluster for: one."""
    return 0 if workflow.local_exec else 1


def gpu_jobs(slots=1):
    """The local GPU's share a job that runs a model takes (resource gpu_jobs)."""
    return lambda wildcards: slots if workflow.local_exec and not NO_GPU else 0


def train_gpu_jobs(wildcards, input):
    """The local GPU's shares a training job takes of the gpu_jobs limit: one, or what
    its memory needs (a latent model's widest batch), read once its id files exist."""
    if not workflow.local_exec or NO_GPU:
        return 0
    import torch

    from mixnmt.device import gpu_shares

    shares = workflow.global_resources.get("gpu_jobs").value or 1
    memory = torch.cuda.get_device_properties(0).total_memory
    return gpu_shares(config, wildcards.model, input.train, memory, shares)


# The whole run's tally of training runs done (mixnmt.progress), set by onstart.
TRAINING = None


def seed_priority(wildcards):
    """Earlier seeds first: every model's first run finishes before any second one."""
    return len(SEEDS) - SEEDS.index(wildcards.seed)


onstart:
    # Snakemake's job rate limit (--max-jobs-per-timespan, 100/1s unless set) wakes its
    # scheduler by timers that multiply: each pass starts a timer for another pass a
    # second later, so the passes per second grow with every job that finishes, each
    # checking the inputs of every ready job (snakemake#2354's growing CPU). The default
    # never binds here (a submission takes longer than 10 ms), so it is lifted; a limit a
    # site sets stays. The tiny experiment's Snakemake process then takes 15 CPU-seconds,
    # not 54.
    limiter = getattr(workflow.scheduler, "job_rate_limiter", None)
    if limiter and (limiter.max_jobs, limiter.timespan) == (100, 1):
        workflow.scheduler.job_rate_limiter = None
    # Without a GPU, a run whose training takes hours here stops before it starts, saying
    # what fits here (the CPU experiment, in fp32 where bf16 is emulated); with allow_cpu
    # it goes on, saying how long it takes. Training in bf16 on a CPU that emulates it is
    # said before it starts.
    trains = [
        job for job in workflow.dag.needrun_jobs() if job.rule.name == "train"
    ]
    runs = [job.wildcards.model for job in trains]
    if cpu_only():
        warning = None
        if runs:  # torch: only where training runs
            from mixnmt.device import emulated_bf16, pick_device

            precisions = dict.fromkeys(
                train_settings(config, m)["precision"] for m in runs
            )
            warnings = (emulated_bf16(p, pick_device()) for p in precisions)
            warning = next(filter(None, warnings), None)
        if warning:
            logger.warning(warning)
        native, cores = cpu_native_bf16(), workflow.cores
        notice = cpu_notice(config, cores, native, runs)
        if notice:
            short = merge(
                read(CONFIG), read(f"{workflow.basedir}/{CPU_EXPERIMENT}")
            )
            notice = f"{notice} {cpu_fits(short, cores, native)}"
        if notice and not config["allow_cpu"]:
            raise WorkflowError(
                f"{notice} To train this run here anyway: --config allow_cpu=true"
            )
        if notice:
            logger.warning(notice)
    saved = LAYOUT.saved_runs()
    if saved:
        logger.info(
            f"resuming from their saved training states: {', '.join(saved)}"
        )
    # the whole run's line: training runs done of those to train, as each finishes
    global TRAINING
    TRAINING = watch_training(
        [job.output.checkpoint for job in trains], logger.info
    )


onsuccess:
    if TRAINING:  # the last run may have finished since the line was last said
        TRAINING.update()


onerror:
    if TRAINING:
        TRAINING.update()
    # A stop (Ctrl-C, SIGTERM) fails the running training jobs; their states are saved.
    saved = LAYOUT.saved_runs()
    if saved:
        logger.warning(
            f"training states saved: {', '.join(saved)}; the same command resumes them"
        )
