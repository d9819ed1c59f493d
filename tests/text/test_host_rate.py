"""`--rate-per-host` is the host's rate on the local runner too. The text stage spreads a
host's URLs over `--host-shards` keys and gave each key `rate / shards`, so that a
distributed runner's workers, one limiter each, add up to the host's rate; but the local
runner's one worker fetches every key of a host through one fetcher, whose limiter is per
host name: a host got a quarter of the rate asked (one request every 4 s at the default
1 req/s, measured against a local server), and `run --plan`'s fetch time, an "upper bound",
was 4 times too short."""

from __future__ import annotations

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from openmsd_build.cli import main
from openmsd_build.core import layout, parquet_io
from openmsd_build.core.errors import UserError
from openmsd_build.schemas import PAPERS


@pytest.mark.parametrize("flags, expected", [
    (["--runner=FnApiRunner"], 2.0),  # one worker, one fetcher: its limiter is the host's
    (["--runner=FnApiRunner", "--direct_num_workers=2"], 0.5),  # a fetcher per worker
    (["--runner=FnApiRunner", "--direct_num_workers=0"], 0.5),  # a worker per CPU
    (["--runner=DataflowRunner"], 0.5),  # a limiter per worker: together the host's rate
])
def test_each_keys_rate_adds_up_to_the_hosts(flags, expected) -> None:
    from openmsd_build.text.command import key_rate

    assert key_rate(2.0, 4, PipelineOptions(flags)) == expected
    assert key_rate(None, 4, PipelineOptions(flags)) is None  # no limit stays none


def test_one_core_of_affinity_is_not_one_beam_worker(monkeypatch) -> None:
    """`--direct_num_workers=0` starts one Beam worker per CPU of the machine
    (`multiprocessing.cpu_count`), not per CPU this process may use: under `taskset -c 0` the
    whole rate per key let two workers fetch one host at twice `--rate-per-host`."""
    import os

    from openmsd_build.text.command import key_rate

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert key_rate(2.0, 4, PipelineOptions(["--runner=FnApiRunner", "--direct_num_workers=0"])) == 0.5


def test_the_text_stage_fetches_a_host_at_the_rate_asked(tmp_path, monkeypatch, capsys) -> None:
    import openmsd_build.pipelines.text as pipeline

    out = tmp_path / "build"
    paper = {name: None for name in PAPERS.names} | {
        "doi": "10.1/a", "urls": [{"url": "http://example.org/a", "kind": "landing", "rank": 0}]}
    parquet_io.write_table(parquet_io.table_from_rows([paper], PAPERS),
                           parquet_io.part_path(layout.papers_dir(str(out)), 0, 1))
    seen = {}

    def build(p, out, spec, config, *args, **kwargs):
        seen["rate"] = config.per_host_rate
        raise UserError("stopped by the test")

    monkeypatch.setattr(pipeline, "build", build)
    assert main(["text", "--out", str(out), "--fetch", "http", "--rate-per-host", "2", "--host-shards", "4"]) == 2
    assert "stopped by the test" in capsys.readouterr().err
    assert seen["rate"] == 2.0
