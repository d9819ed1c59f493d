"""Stage 5, `pairs`: direct-citation, co-citation and bibliographic-coupling pairs per split,
hard negatives and relation mixes (`relations`) -> `OUT/pairs/`, `OUT/negatives/`."""
