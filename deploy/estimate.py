"""Full-build estimate from the per-record costs measured by `bench/stage_costs.py`.

    .venv/bin/python deploy/estimate.py [--costs bench/stage_costs.json] [--markdown]

Every scale number and price used is a named constant below, marked MEASURED (from the
bench JSON), PUBLISHED (the published OpenMSD build's scale) or ASSUMED (a stated
guess, to be replaced by a measurement on real data). `deploy/ESTIMATE.md` shows this
script's output and explains each row.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# PUBLISHED scale (the published OpenMSD build)
UNPAYWALL = 140e6
CROSSREF = 134e6
URLS = 130e6
PAPERS_KEPT = 74e6
CITATION_ROWS = 1.4e9
PAPERS_IN_SPLITS = 53e6
CC_PAIRS = 12e9
BC_PAIRS = 63e9

# ASSUMED: real pages and PDFs cost more than the generated ones. The published reference build measured on one
# core: trafilatura 68 pages/s; pypdfium2 570-1,650 pages/s. Assume a landing page costs
# 1/68 s, a PDF ~12 pages at 1,000 pages/s = 12 ms, half the URLs are PDFs, plus 5 ms of
# fetch / TLS / WARC-writing CPU per URL.
REAL_CPU_S_PER_URL = 0.5 * (1 / 68) + 0.5 * 0.012 + 0.005
# ASSUMED: the pairs stage shuffles int64 paper ids: (a, b, c-count) ~ 24 bytes per pair
# instance, and one instance per pair on average after combining (support counted inside
# partitions).
SHUFFLE_BYTES_PER_PAIR = 24.0
# ASSUMED: the split stage's per-document cost is below what a 6,000-paper sample resolves
# (its run time is Beam's fixed cost); 20 µs per document covers its batched degree and
# dedup steps plus the polars global step.
SPLIT_CPU_S_FLOOR = 20e-6
# ASSUMED: real documents are far larger than generated ones. Full content of 38M papers
# at ~40 KB of text each plus 74M titles + abstracts at ~1.5 KB move through the text
# stage's GroupByKey by DOI (uncompressed); zstd Parquet keeps ~30% of that.
# ASSUMED: real Unpaywall / Crossref records average ~3 KB of JSON (the generated ones are
# ~0.3 KB); parsing and projection cost is taken as proportional to record bytes.
REAL_RECORD_BYTES = 3000.0
FULL_CONTENT_PAPERS = 38e6
TEXT_SHUFFLE_BYTES = FULL_CONTENT_PAPERS * 40e3 + PAPERS_KEPT * 1.5e3
TEXT_OUTPUT_BYTES = 0.3 * TEXT_SHUFFLE_BYTES

# ASSUMED machine shapes per stage: (machine, vCPUs, GB per vCPU, max workers) as in
# deploy/dataflow/launch.sh, and the share of provisioned CPU actually used.
MACHINES = {
    "papers": ("n2-standard-8", 8, 4, 64),
    "text": ("n2-highmem-4", 4, 8, 300),
    "citations": ("n2-highmem-8", 8, 8, 128),
    "split": ("n2-highmem-16", 16, 8, 32),
    "pairs": ("n2-highmem-8", 8, 8, 500),
}
CPU_EFFICIENCY = 0.7
STAGE_OVERHEAD_H = 0.15  # ASSUMED: start-up, autoscaling ramp and teardown per job

# ASSUMED prices (USD, us-central1 on-demand list prices; check the current price sheets).
DATAFLOW_VCPU_H = 0.056
DATAFLOW_GB_H = 0.003557
DATAFLOW_SHUFFLE_GB = 0.011
PD_GB_H = 0.000054
GCE_VCPU_H = 0.031611  # n2, for a self-managed Flink cluster on GKE / Compute Engine
GCE_GB_H = 0.004237
SPOT_DISCOUNT = 0.65  # ASSUMED: spot VMs for Flink TaskManagers (batch, restartable regions)


def load(path: Path) -> dict:
    return json.loads(path.read_text())["per_record"]


def estimate(per: dict) -> list[dict]:
    rows = []

    def add(stage, what, units, cpu_s_per_unit, shuffle_bytes, out_bytes, basis):
        machine, vcpus, gb_per_vcpu, max_workers = MACHINES[stage]
        vcpu_h = units * cpu_s_per_unit / 3600 / CPU_EFFICIENCY
        wall_h = vcpu_h / (vcpus * max_workers) + STAGE_OVERHEAD_H
        rows.append({
            "stage": stage, "what": what, "units": units, "cpu_s_per_unit": cpu_s_per_unit, "basis": basis,
            "vcpu_h": vcpu_h, "gb_h": vcpu_h * gb_per_vcpu, "shuffle_gb": shuffle_bytes / 1e9,
            "out_gb": out_bytes / 1e9, "machine": machine, "max_workers": max_workers, "wall_h": wall_h,
        })

    p = per["papers"]
    records = UNPAYWALL + CROSSREF
    scale = max(1.0, REAL_RECORD_BYTES / p.get("input_bytes_per_record", REAL_RECORD_BYTES))
    add("papers", "Unpaywall + Crossref records", records, p["cpu_s_per_record"] * scale,
        records * p["shuffle_bytes_per_record"], records * p["parquet_bytes_out_per_record"],
        f"measured × {scale:.1f} (assumed 3 KB real records)")
    t = per["text"]
    add("text", "URLs fetched + extracted", URLS, max(t["cpu_s_per_url"], REAL_CPU_S_PER_URL),
        max(TEXT_SHUFFLE_BYTES, URLS * t["shuffle_bytes_per_record"] / max(t["urls_per_paper"], 1e-9)),
        max(TEXT_OUTPUT_BYTES, URLS * t["parquet_bytes_out_per_record"] / max(t["urls_per_paper"], 1e-9)),
        "max(measured, assumed real pages)")
    c = per["citations"]
    add("citations", "OpenCitations rows", CITATION_ROWS, c["cpu_s_per_record"],
        CITATION_ROWS * c["shuffle_bytes_per_record"], CITATION_ROWS * c["parquet_bytes_out_per_record"], "measured")
    s = per["split"]
    split_cpu = s["cpu_s_per_record"]
    add("split", "documents", PAPERS_KEPT, max(split_cpu, SPLIT_CPU_S_FLOOR),
        PAPERS_KEPT * s["shuffle_bytes_per_record"], PAPERS_KEPT * s["parquet_bytes_out_per_record"],
        "measured" if split_cpu >= SPLIT_CPU_S_FLOOR else "assumed (below the bench's resolution)")
    q = per["pairs"]
    pairs = CC_PAIRS + BC_PAIRS
    add("pairs", "CC + BC train pairs", pairs, q["cpu_s_per_pair"], pairs * SHUFFLE_BYTES_PER_PAIR,
        pairs * q["parquet_bytes_per_pair"], "measured per pair; shuffle assumed 24 B/pair")
    return rows


def costs(rows: list[dict]) -> dict:
    vcpu_h = sum(r["vcpu_h"] for r in rows)
    gb_h = sum(r["gb_h"] for r in rows)
    shuffle = sum(r["shuffle_gb"] for r in rows)
    disk_gb_h = sum(r["wall_h"] * r["max_workers"] * 100 for r in rows)  # ASSUMED 100 GB PD per worker
    dataflow = vcpu_h * DATAFLOW_VCPU_H + gb_h * DATAFLOW_GB_H + shuffle * DATAFLOW_SHUFFLE_GB + disk_gb_h * PD_GB_H
    flink = vcpu_h * GCE_VCPU_H + gb_h * GCE_GB_H + disk_gb_h * PD_GB_H
    return {
        "vcpu_h": vcpu_h, "gb_h": gb_h, "shuffle_gb": shuffle, "wall_h_compute": sum(r["wall_h"] for r in rows),
        "dataflow_usd": dataflow, "flink_on_demand_usd": flink,
        "flink_spot_usd": vcpu_h * GCE_VCPU_H * (1 - SPOT_DISCOUNT) + gb_h * GCE_GB_H * (1 - SPOT_DISCOUNT)
        + disk_gb_h * PD_GB_H,
    }


def markdown(rows: list[dict], total: dict) -> str:
    lines = [
        "| stage | units | CPU per unit | basis | vCPU-h | shuffle GB | output GB | machine × max | compute wall h |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['stage']} | {r['units']:.3g} {r['what']} | {r['cpu_s_per_unit'] * 1e6:,.1f} µs | {r['basis']} | "
            f"{r['vcpu_h']:,.0f} | {r['shuffle_gb']:,.0f} | {r['out_gb']:,.0f} | {r['machine']} × {r['max_workers']} | "
            f"{r['wall_h']:.1f} |"
        )
    lines.append(
        f"| **total** | | | | **{total['vcpu_h']:,.0f}** | **{total['shuffle_gb']:,.0f}** | "
        f"{sum(r['out_gb'] for r in rows):,.0f} | | **{total['wall_h_compute']:.1f}** |"
    )
    lines.append("")
    lines.append(f"- Dataflow (vCPU + memory + Shuffle + PD): **${total['dataflow_usd']:,.0f}**")
    lines.append(f"- Flink on GKE, on-demand n2: **${total['flink_on_demand_usd']:,.0f}**; "
                 f"with spot TaskManagers: **${total['flink_spot_usd']:,.0f}**")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--costs", default=str(ROOT / "bench" / "stage_costs.json"))
    parser.add_argument("--json", action="store_true", help="print JSON instead of a Markdown table")
    args = parser.parse_args()
    rows = estimate(load(Path(args.costs)))
    total = costs(rows)
    if args.json:
        print(json.dumps({"stages": rows, "total": total}, indent=2))
    else:
        print(markdown(rows, total))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
