"""`core.spares.Shelf`: idle workers handed from one user to the next by configuration."""

from __future__ import annotations

from openmsd_build.core.spares import Shelf


def test_take_gives_the_latest_live_item_of_its_key_and_stops_dead_ones() -> None:
    closed: list[str] = []
    dead = {"b-dead"}
    shelf: Shelf[str] = Shelf(close=closed.append, alive=lambda item: item not in dead)
    shelf.put("pdf", "a")
    shelf.put("pdf", "b-dead")
    shelf.put("html", "c")
    assert shelf.take("pdf") == "a"  # the dead one put after it was passed over and stopped
    assert closed == ["b-dead"]
    assert shelf.take("pdf") is None
    assert shelf.take("other") is None
    assert shelf.held() == ["c"]


def test_close_all_stops_every_item_once_and_empties_the_shelf() -> None:
    closed: list[int] = []
    shelf: Shelf[int] = Shelf(close=closed.append)
    for k in range(3):
        shelf.put(k % 2, k)
    shelf.close_all()
    assert sorted(closed) == [0, 1, 2]
    assert shelf.held() == [] and shelf.take(0) is None
    shelf.close_all()
    assert sorted(closed) == [0, 1, 2]
