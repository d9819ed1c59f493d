"""The command line's Beam import (`core.beam_import`) and its collector settings
(`core.collector`): what they leave out, and that nothing else changes."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap

from openmsd_build.core.collector import QUIET_GC_THRESHOLD, paused_collector


def _run(code: str) -> dict:
    """`code` in a fresh interpreter (nothing imported yet); its last stdout line as JSON."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return {"out": json.loads(done.stdout.strip().splitlines()[-1]), "stderr": done.stderr}


def test_beam_is_imported_without_pymongo_which_stays_importable():
    got = _run("""
        import json, sys
        from openmsd_build.core.beam_import import import_beam
        beam = import_beam()
        before = {name: name in sys.modules for name in ("pymongo", "bson", "pandas")}
        finders = [type(f).__name__ for f in sys.meta_path]
        import pymongo  # the real module, once Beam is in
        with beam.Pipeline(runner="FnApiRunner") as p:
            _ = p | beam.Create([1, 2, 3]) | beam.Map(lambda x: x * 2)
        print(json.dumps({"before": before, "finders": finders, "pymongo": hasattr(pymongo, "MongoClient")}))
    """)
    assert got["out"]["before"] == {"pymongo": False, "bson": False, "pandas": True}
    assert "_Decline" not in got["out"]["finders"]  # removed once Beam is imported
    assert got["out"]["pymongo"] is True
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


def test_a_cli_command_runs_with_pymongo_left_out_and_its_imports_frozen(tmp_path):
    """A real command through `cli.main`: it works, Beam came without pymongo, and what the
    imports built is out of the collector's reach, with young collections made rarer."""
    got = _run(f"""
        import gc, json, sys
        from openmsd_build import cli
        code = cli.main(["sample", "--out", {str(tmp_path / "s")!r}, "--papers", "20", "--seed", "3"])
        print(json.dumps({{"code": code, "pymongo": "pymongo" in sys.modules, "beam": "apache_beam" in sys.modules,
                          "frozen": gc.get_freeze_count(), "enabled": gc.isenabled(),
                          "threshold": gc.get_threshold()}}))
    """)
    out = got["out"]
    assert (out["code"], out["pymongo"], out["beam"], out["enabled"]) == (0, False, True, True)
    assert out["frozen"] > 50_000  # Beam's import, left out of every later collection
    assert tuple(out["threshold"]) == QUIET_GC_THRESHOLD
    assert (tmp_path / "s").is_dir()


def test_paused_collector_collects_nothing_inside_and_restores_a_disabled_collector():
    was = gc.isenabled()
    threshold = gc.get_threshold()
    collections = []

    def seen(phase, info):
        if phase == "start":
            collections.append(info["generation"])

    gc.disable()
    gc.callbacks.append(seen)
    try:
        with paused_collector():
            assert not gc.isenabled()
            junk = [[] for _ in range(50_000)]  # would trigger young collections
            del junk
        assert not gc.isenabled()  # it was off before: left off
        assert collections == []
        assert gc.get_threshold() == QUIET_GC_THRESHOLD
    finally:
        gc.callbacks.remove(seen)
        gc.unfreeze()
        gc.set_threshold(*threshold)
        if was:
            gc.enable()
