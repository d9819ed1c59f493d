"""The command line's Beam import (`core.beam_import`) and its collector settings
(`core.collector`): what they leave out, and that nothing else changes."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap

import pytest

from openmsd_build.core.collector import QUIET_GC_THRESHOLD, paused_collector


def _run(code: str) -> dict:
    """`code` in a fresh interpreter (nothing imported yet); its last stdout line as JSON."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return {"out": json.loads(done.stdout.strip().splitlines()[-1]), "stderr": done.stderr}


def test_beam_is_imported_without_pymongo_which_stays_importable():
    got = _run("""
        import importlib.util, json, sys
        from openmsd_build.core.beam_import import import_beam
        beam = import_beam()
        before = {name: name in sys.modules for name in ("pymongo", "bson", "pandas")}
        found = importlib.util.find_spec("bson") is not None  # no None entry left behind
        import pymongo  # the real module, once Beam is in
        with beam.Pipeline(runner="FnApiRunner") as p:
            _ = p | beam.Create([1, 2, 3]) | beam.Map(lambda x: x * 2)
        print(json.dumps({"before": before, "found": found, "pymongo": hasattr(pymongo, "MongoClient")}))
    """)
    assert got["out"] == {"before": {"pymongo": False, "bson": False, "pandas": True}, "found": True, "pymongo": True}
    assert "bson" not in got["stderr"]  # Beam's warning about the missing bson is held back


def test_beam_imported_first_elsewhere_is_left_whole():
    got = _run("""
        import json, sys
        import apache_beam
        from openmsd_build.core.beam_import import import_beam
        assert import_beam() is apache_beam
        print(json.dumps({"pymongo": "pymongo" in sys.modules}))
    """)
    assert got["out"]["pymongo"] is True


def test_the_program_runs_a_command_with_pymongo_left_out_and_its_imports_frozen(tmp_path):
    """`main()` as the `openmsd-build` program calls it (the command line in `sys.argv`): the
    command works, Beam came without pymongo, and what the imports built is out of the
    collector's reach; young collections keep Python's default pace in this process."""
    got = _run(f"""
        import gc, json, sys
        from openmsd_build import cli
        default = gc.get_threshold()
        sys.argv = ["openmsd-build", "sample", "--out", {str(tmp_path / "s")!r}, "--papers", "20", "--seed", "3"]
        code = cli.main()
        print(json.dumps({{"code": code, "pymongo": "pymongo" in sys.modules, "beam": "apache_beam" in sys.modules,
                          "frozen": gc.get_freeze_count(), "enabled": gc.isenabled(),
                          "same_threshold": gc.get_threshold() == default}}))
    """)
    out = got["out"]
    assert (out["code"], out["pymongo"], out["beam"], out["enabled"], out["same_threshold"]) == (0, False, True, True, True)
    assert out["frozen"] > 50_000  # Beam's import, left out of every later collection
    assert (tmp_path / "s").is_dir()


def test_main_called_with_arguments_leaves_the_callers_collector_alone(tmp_path):
    """A caller running a command in its own process (a test, a notebook) keeps its
    collector: nothing frozen, thresholds and state as they were."""
    got = _run(f"""
        import gc, json
        from openmsd_build import cli
        before = (gc.get_freeze_count(), gc.get_threshold(), gc.isenabled())
        code = cli.main(["sample", "--out", {str(tmp_path / "s")!r}, "--papers", "20", "--seed", "3"])
        print(json.dumps({{"code": code, "same": (gc.get_freeze_count(), gc.get_threshold(), gc.isenabled()) == before}}))
    """)
    assert got["out"] == {"code": 0, "same": True}


@pytest.mark.parametrize(("enabled", "young"), [(True, True), (True, False), (False, True)])
def test_paused_collector_collects_nothing_inside_then_freezes(enabled, young):
    """Inside: the collector is off (no collection however much is allocated); after: what
    is alive is frozen, the collector is as it was (on or off), and with `young` the young
    collections come at `QUIET_GC_THRESHOLD`."""
    was = gc.isenabled()
    threshold = gc.get_threshold()
    collections = []

    def seen(phase, info):
        if phase == "start":
            collections.append(info["generation"])

    (gc.enable if enabled else gc.disable)()
    gc.callbacks.append(seen)
    try:
        frozen = gc.get_freeze_count()
        with paused_collector(young=young):
            assert not gc.isenabled()
            junk = [[] for _ in range(50_000)]  # enough for young collections, were it on
            del junk
            inside = list(collections)
        assert inside == []
        assert gc.isenabled() is enabled
        assert gc.get_freeze_count() > frozen
        assert gc.get_threshold() == (QUIET_GC_THRESHOLD if young else threshold)
    finally:
        gc.callbacks.remove(seen)
        gc.unfreeze()
        gc.set_threshold(*threshold)
        (gc.enable if was else gc.disable)()
