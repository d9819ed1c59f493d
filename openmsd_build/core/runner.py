"""Beam pipeline options: one place that decides how a stage runs.

Local runs and tests default to Beam's in-process `FnApiRunner` with one worker: the
default DirectRunner of Beam >= 2.68 tries to download a Prism binary (fails offline). Several
local workers may run as child processes (`--direct_running_mode=multi_processing`) or, in the
default `in_memory` mode, as threads of this process (the same rows in our runs), but the
`multi_threading` mode with more than one worker is refused (`refuse_threaded_workers`): it
loses or mixes up records without an error (measured: the text stage kept 30-242 fewer of
20,000 papers, differently each run; a plain Flatten and GroupByKey of 200,000 keys failed to
decode its own input, or lost 2,129 of its groups). Every other
flag given on the command line passes through to Beam unchanged, so
`--runner=DataflowRunner --project=... --region=...` or
`--runner=PortableRunner --job_endpoint=...` work as Beam documents them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Beam is imported where it is used: `local_cores` is asked before Beam loads
    from apache_beam.options.pipeline_options import PipelineOptions


def _has_flag(args: Sequence[str], name: str) -> bool:
    return any(a == name or a.startswith(name + "=") for a in args)


def pipeline_options(beam_args: Sequence[str] = ()) -> PipelineOptions:
    """Options for one stage's pipeline from the pass-through Beam arguments.

    When no `--runner` is given the in-process FnApiRunner is used. `save_main_session` is
    never needed: DoFns are module-level classes that import what they use.

    The options are also handed to Beam's `FileSystems` at once (as `beam.Pipeline` does
    when it is built), so the launcher's own file work before the pipeline -- matching
    input globs, clearing old part files -- already uses them: e.g. `--no_auth` against a
    storage emulator, or `--project` and credentials for `gs://` paths.
    """
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import PipelineOptions

    args = list(beam_args)
    if not _has_flag(args, "--runner"):
        args.append("--runner=" + LOCAL_RUNNER)
    if _short_name(_runner_name(args)) in _DIRECT_RUNNERS and not _has_flag(
        args, "--direct_num_workers"
    ):
        args.append("--direct_num_workers=1")
    options = PipelineOptions(args)
    refuse_threaded_workers(options)
    FileSystems.set_options(options)
    return options


def refuse_threaded_workers(options: PipelineOptions) -> None:
    """A `UserError` for the local runner's `multi_threading` mode with more than one worker:
    its results are wrong without an error (module docstring), so a user asking for it is
    pointed at the mode that spreads the work correctly."""
    import multiprocessing

    from apache_beam.options.pipeline_options import DirectOptions

    from openmsd_build.core.errors import UserError

    requested = options.view_as(DirectOptions).direct_num_workers
    workers = multiprocessing.cpu_count() if requested == 0 else (requested or 1)  # as the runner counts them
    if is_local_runner(options) and options.view_as(DirectOptions).direct_running_mode == "multi_threading" \
            and workers > 1:
        raise UserError("--direct_running_mode=multi_threading with more than one worker loses or mixes up "
                        "records in Beam's local runner; use --direct_running_mode=multi_processing for several "
                        "local workers, or leave both flags out (one worker, the extractors on every core)")


LOCAL_RUNNER = "apache_beam.runners.portability.fn_api_runner.FnApiRunner"
_DIRECT_RUNNERS = ("direct", "bundlebaseddirect")
_LOCAL_RUNNERS = ("fnapi", "switchingdirect", *_DIRECT_RUNNERS)


def _short_name(runner: str) -> str:
    """A runner's name as Beam matches it: its class name, any case, "Runner" optional
    (`--runner=direct`, `DirectRunner` and `apache_beam.runners.direct.DirectRunner` are one)."""
    return runner.rsplit(".", 1)[-1].lower().removesuffix("runner")


def is_local_runner(options: PipelineOptions) -> bool:
    """The pipeline runs in this process (the in-process FnApiRunner or a DirectRunner)."""
    from apache_beam.options.pipeline_options import StandardOptions

    runner = options.view_as(StandardOptions).runner or ""
    name = runner if isinstance(runner, str) else type(runner).__name__
    return _short_name(name) in _LOCAL_RUNNERS


def runs_in_this_process(options: PipelineOptions) -> bool:
    """The DoFns run in this very process: a local runner in its default in-memory mode (not
    `--direct_running_mode=multi_processing`, whose workers are child processes)."""
    from apache_beam.options.pipeline_options import DirectOptions

    return is_local_runner(options) and options.view_as(DirectOptions).direct_running_mode != "multi_processing"


def one_worker_in_this_process(options: PipelineOptions) -> bool:
    """Every element runs through one Beam worker in this process: the local runner in its
    default mode with one worker by Beam's own count (`--direct_num_workers` unset or 1; 0 is
    one per CPU of the machine, `multiprocessing.cpu_count`, whatever this process's affinity
    allows). What the fetch of a host's keys depends on: one fetcher and limiter for them all
    (`text.command.key_rate`), the hosts one after another (`run --plan`)."""
    from apache_beam.options.pipeline_options import DirectOptions

    return runs_in_this_process(options) and options.view_as(DirectOptions).direct_num_workers in (None, 1)


def cores_per_local_worker(options: PipelineOptions) -> int:
    """Processes a DoFn may keep busy on its own: the CPUs this process may use (affinity:
    containers, taskset) shared by the local runner's Beam workers (`--direct_num_workers`,
    0 meaning one per core); 1 on a distributed runner, whose workers already run one SDK
    process (or thread) per core. The text stage's extractors and the papers stage's
    parsing processes are both sized by this."""
    if not is_local_runner(options):
        return 1
    return max(1, local_cores() // local_beam_workers(options))


def local_beam_workers(options: PipelineOptions) -> int:
    """Beam workers of a local run (`--direct_num_workers`, 0 meaning one per core; 1 when
    unset); 1 on a distributed runner, where the count is the service's."""
    from apache_beam.options.pipeline_options import DirectOptions

    if not is_local_runner(options):
        return 1
    requested = options.view_as(DirectOptions).direct_num_workers
    return local_cores() if requested == 0 else max(1, requested or 1)


def local_cores() -> int:
    """The CPUs this process may use (affinity: containers, taskset)."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _runner_name(args: Sequence[str]) -> str:
    """The `--runner` given in `args` (`--runner=X` or `--runner X`), "" when none is."""
    for k, a in enumerate(args):
        if a.startswith("--runner="):
            return a.split("=", 1)[1]
        if a == "--runner" and k + 1 < len(args):
            return args[k + 1]
    return ""


def check_cloud_credentials(argv: Sequence[str], beam_args: Sequence[str]) -> None:
    """Fail in a second, not minutes, when `gs://` paths are given without credentials.

    Without credentials Google's auth library probes the Compute Engine metadata server with
    retries (~20 s per process, every worker and every command), then Beam goes anonymous or
    fails deep in a stage. Here: `--no_auth` (public buckets) or a storage emulator
    (`STORAGE_EMULATOR_HOST`) skips the probe (`NO_GCE_CHECK`); otherwise credentials must be
    findable (GOOGLE_APPLICATION_CREDENTIALS, gcloud's application-default file) or the
    machine must be a Google Cloud VM (its DMI product name says so), else a `UserError`."""
    import os
    from pathlib import Path

    from openmsd_build.core.errors import UserError

    if not any("gs://" in a for a in list(argv) + list(beam_args)):
        return
    if _has_flag(beam_args, "--no_auth") or os.environ.get("STORAGE_EMULATOR_HOST"):
        os.environ.setdefault("NO_GCE_CHECK", "True")
        return
    key = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
    if key and Path(key).is_file():
        return
    config = Path(os.environ.get("CLOUDSDK_CONFIG") or Path.home() / ".config" / "gcloud")
    if (config / "application_default_credentials.json").is_file():
        return
    try:
        if "Google" in Path("/sys/class/dmi/id/product_name").read_text():
            return
    except OSError:
        pass
    raise UserError(
        "gs:// paths need Google Cloud credentials and none were found: set GOOGLE_APPLICATION_CREDENTIALS to a "
        "service-account key, or run `gcloud auth application-default login`; for a public bucket pass --no_auth, "
        "for a local emulator set STORAGE_EMULATOR_HOST"
    )


def check_local_worker_pool(beam_args: Sequence[str]) -> None:
    """Fail fast instead of hanging when a local SDK worker pool cannot start workers.

    Beam's `worker_pool_main` starts each SDK worker as `python` from its own PATH; when that
    interpreter lacks Beam (a venv not first on PATH) the job waits forever and the error is
    only in the pool's log. For a pool on this machine (`--environment_type=EXTERNAL
    --environment_config=localhost:PORT`) check that `python` here imports Beam, the same
    check the pool's workers will fail."""
    import shutil
    import subprocess

    from openmsd_build.core.errors import UserError

    values = dict(a.split("=", 1) for a in beam_args if a.startswith("--") and "=" in a)
    if values.get("--environment_type", "").upper() != "EXTERNAL":
        return
    host = values.get("--environment_config", "").rsplit(":", 1)[0]
    if host not in ("localhost", "127.0.0.1", "[::1]"):
        return
    python = shutil.which("python")
    probe = [python, "-c", "import apache_beam, openmsd_build"] if python else None
    ok = probe is not None and subprocess.run(probe, capture_output=True, timeout=60).returncode == 0
    if not ok:
        raise UserError(
            f"the local SDK worker pool starts workers with `python` from PATH ({python or 'not found'}), which cannot "
            "import apache_beam and openmsd_build: start the pool with the venv first on PATH, e.g. "
            'PATH="$PWD/.venv/bin:$PATH" .venv/bin/python -m apache_beam.runners.worker.worker_pool_main '
            "--service_port=50000, and run this command with the same PATH")


def check_runner(options: PipelineOptions) -> None:
    """A `--runner` Beam does not know, or Dataflow without the options it cannot start
    without (`--project`, `--region`, `--temp_location`), is a `UserError` of one line before
    any stage starts: both were a traceback from inside the first stage's run (`ValueError:
    Unexpected pipeline runner`, "Pipeline has validations errors"). Only names and presence
    are checked, offline: Beam's own validator calls Cloud Storage (it probes, or creates, the
    temp bucket), which `run --plan` or a command that builds no pipeline must not do."""
    from apache_beam.options.pipeline_options import GoogleCloudOptions, StandardOptions
    from apache_beam.runners.runner import create_runner

    from openmsd_build.core.errors import UserError

    name = options.view_as(StandardOptions).runner
    if not isinstance(name, str) or is_local_runner(options):
        return
    try:
        create_runner(name)
    except Exception as exc:  # noqa: BLE001 - any failure to make the runner is the flag's problem
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise UserError(f"--runner {name}: {first}") from None
    if name.rsplit(".", 1)[-1].lower().removesuffix("runner") == "dataflow":
        cloud = options.view_as(GoogleCloudOptions)
        missing = [flag for flag, value in (("--project", cloud.project), ("--region", cloud.region),
                                            ("--temp_location", cloud.temp_location)) if not value]
        if missing:
            raise UserError(f"--runner {name} needs {', '.join(missing)} (see deploy/README.md)")


def stop_sampler_left_running() -> None:
    """Stop the Beam state sampler a Ctrl-C left running, if any.

    Why: Beam starts a bundle's sampler thread (not a daemon) and only then marks the sampler
    started; its `finally` stops only a started one. A Ctrl-C that lands in between -- while
    `Thread.start` waits for the new thread -- leaves the thread sampling forever, and the
    interpreter's exit waits for it: the command printed "interrupted" and then hung. The
    sampler is still this thread's current tracker then (Beam sets that first), so it is
    found without Beam's private names. Beam not loaded: nothing to do."""
    import sys

    module = sys.modules.get("apache_beam.runners.worker.statesampler")
    sampler = module.get_current_tracker() if module is not None else None
    if sampler is None or sampler.finished:
        return
    try:
        sampler.stop()  # ends the thread within one sampling period (200 ms)
    except (RuntimeError, AttributeError):  # its thread never started: nothing to wait for
        pass
