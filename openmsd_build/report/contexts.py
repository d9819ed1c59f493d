"""The report's citation-contexts section, from `_stats/contexts.json`: markers found and
resolved per style, unresolved markers by reason, contexts written and CCS pairs per split.
Absent when the contexts stage has not run; one sentence when it found no full text to read.
Like every section it reads the stage's outputs, not its code: the reasons are the
`markers_unresolved.<reason>` counts of the stats, in name order; the stage writes every
reason, zero included."""

from __future__ import annotations

from openmsd_build.report.render import Block, fmt_int, fmt_pct


def contexts_blocks(stats: dict) -> list[Block]:
    counts = (stats.get("stage_counts") or {}).get("contexts")
    if not counts:
        return []
    res = [Block("h2", "Citation contexts — markers resolved through the Crossref reference lists")]
    full_texts = counts.get("documents_with_reference_list", 0) + counts.get("documents_without_reference_list", 0)
    if not full_texts:  # the stage ran, but had nothing to read: one sentence, not tables of zeros
        read = counts.get("documents_read", 0)
        what = f"None of the {fmt_int(read)} documents read has a full text" if read else "No document was read"
        res.append(Block("p", f"{what} (the text stage kept titles and abstracts only, e.g. with `--fetch none`), "
                              "so no sentence was read and no context written."))
        return res
    res.append(Block("p", f"{fmt_int(counts.get('sentences_seen', 0))} sentences of {fmt_int(full_texts)}"
                          f" full texts, {fmt_int(counts.get('sentences_with_markers', 0))} with markers; "
                          f"{fmt_int(counts.get('contexts_written', 0))} contexts written (a marker resolved to a DOI)."))
    styles = sorted({k.split(".", 1)[1] for k in counts if k.startswith("markers_found.")})
    rows = []
    for style in [*styles, None]:
        found = counts.get(f"markers_found.{style}" if style else "markers_found", 0)
        resolved = counts.get(f"markers_resolved.{style}" if style else "markers_resolved", 0)
        rows.append([style or "all", fmt_int(found), fmt_int(resolved), fmt_pct(resolved / found if found else None)])
    res.append(Block("table", headers=["marker style", "found", "resolved to a DOI", "share"], rows=rows))
    prefix = "markers_unresolved."
    rows = [[key[len(prefix):], fmt_int(n)] for key, n in counts.items() if key.startswith(prefix)]
    res.append(Block("table", headers=["unresolved marker reason", "markers"], rows=rows))
    rows = [[split, fmt_int(counts.get(f"ccs_pairs.{split}", 0))] for split in ("train", "idt", "odt")]
    res.append(Block("table", headers=["split", "CCS pairs (co-cited in one sentence)"], rows=rows))
    return res
