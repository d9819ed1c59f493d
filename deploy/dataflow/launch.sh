#!/usr/bin/env bash
# Full OpenMSD build on Dataflow, one job per stage, in order, from this machine.
#
#   PROJECT=my-project REGION=us-central1 BUCKET=my-bucket \
#   IMAGE=us-central1-docker.pkg.dev/my-project/openmsd/worker:0.1.0 \
#   CONTACT=mailto:me@example.org  deploy/dataflow/launch.sh [first-stage [last-stage]]
#
# Inputs are expected under gs://$BUCKET/snapshots/ (see INPUT_* below). Each stage blocks
# until its job finishes (the next stage reads its Parquet), prints its counts, and can be
# re-run alone: `deploy/dataflow/launch.sh text text`.
# Settings per stage are chosen from the measured costs in deploy/ESTIMATE.md.
set -euo pipefail

: "${PROJECT:?set PROJECT}" "${REGION:?set REGION}" "${BUCKET:?set BUCKET}" "${IMAGE:?set IMAGE (deploy/dataflow/Dockerfile)}"
OUT="${OUT:-gs://$BUCKET/build}"
FETCH="${FETCH:-http}"                       # or warc:gs://.../*.warc.gz (offline, e.g. Common Crawl extracts)
SEED="${SEED:-7}"
CONTACT="${CONTACT:-}"
OPENMSD="${OPENMSD:-.venv/bin/openmsd-build}"
INPUT_UNPAYWALL="${INPUT_UNPAYWALL:-gs://$BUCKET/snapshots/unpaywall/*.jsonl.gz}"
INPUT_CROSSREF="${INPUT_CROSSREF:-gs://$BUCKET/snapshots/crossref/*.json.gz}"
INPUT_OPENCITATIONS="${INPUT_OPENCITATIONS:-gs://$BUCKET/snapshots/opencitations/*.zip}"
INPUT_META="${INPUT_META:-}"                 # OpenCitations Meta CSVs, for OMID-only Index dumps

STAGES=(papers text citations split pairs contexts release)
FIRST="${1:-papers}"; LAST="${2:-release}"

# Options every job shares. Dataflow Shuffle (service-side shuffle) keeps shuffle data off
# worker disks, so disks stay small; Runner v2 is required for custom containers.
common=(
  --runner=DataflowRunner --project="$PROJECT" --region="$REGION"
  --temp_location="gs://$BUCKET/tmp" --staging_location="gs://$BUCKET/staging"
  --sdk_container_image="$IMAGE" --sdk_location=container
  --experiments=use_runner_v2 --experiments=shuffle_mode=service
  --autoscaling_algorithm=THROUGHPUT_BASED
  --labels=app=openmsd-build
)

# Per-stage machine type, disk, worker cap and threads (see deploy/ESTIMATE.md, "Per stage").
stage_options() {
  case "$1" in
    papers)    echo --machine_type=n2-standard-8  --disk_size_gb=50  --max_num_workers=64 ;;
    # I/O bound: many threads per worker (each element is one host key's queue); highmem for
    # PDF extraction in isolated children. Public IPs (or Cloud NAT) are needed for http.
    text)      echo --machine_type=n2-highmem-4   --disk_size_gb=100 --max_num_workers=300 \
                    --number_of_worker_harness_threads=48 ;;
    citations) echo --machine_type=n2-highmem-8   --disk_size_gb=50  --max_num_workers=128 ;;
    # one global step holds ~10 GB (splitting.py): highmem workers, few of them
    split)     echo --machine_type=n2-highmem-16  --disk_size_gb=100 --max_num_workers=32 ;;
    # ~75B CC/BC pair instances through the shuffle: most workers, Dataflow Shuffle
    pairs)     echo --machine_type=n2-highmem-8   --disk_size_gb=100 --max_num_workers=500 ;;
    # citation sentences of the full texts (~40-100 vCPU-h) joined with Crossref's reference lists
    contexts)  echo --machine_type=n2-highmem-8   --disk_size_gb=100 --max_num_workers=128 ;;
    release)   echo --machine_type=n2-standard-4  --disk_size_gb=50  --max_num_workers=64 ;;
  esac
}

run_stage() {
  local stage="$1"; shift
  local job="openmsd-${stage}-$(date -u +%Y%m%d-%H%M%S)"
  # shellcheck disable=SC2046
  "$OPENMSD" -v "$stage" "$@" "${common[@]}" --job_name="$job" $(stage_options "$stage")
}

started=0
for stage in "${STAGES[@]}"; do
  [[ "$stage" == "$FIRST" ]] && started=1
  [[ $started == 1 ]] || continue
  echo "== $stage ($(date -u +%H:%M:%S))"
  case "$stage" in
    papers)    run_stage papers --out "$OUT" --unpaywall "$INPUT_UNPAYWALL" --crossref "$INPUT_CROSSREF" ;;
    text)      run_stage text --out "$OUT" --fetch "$FETCH" ${CONTACT:+--contact "$CONTACT"} --host-shards 8 ;;
    citations) run_stage citations --out "$OUT" --opencitations "$INPUT_OPENCITATIONS" ${INPUT_META:+--meta "$INPUT_META"} ;;
    split)     run_stage split --out "$OUT" --seed "$SEED" ;;
    pairs)     run_stage pairs --out "$OUT" ;;
    contexts)  run_stage contexts --out "$OUT" --crossref "$INPUT_CROSSREF" ;;
    release)   run_stage release "$OUT" ;;
  esac
  [[ "$stage" == "$LAST" ]] && break
done
# The report runs on one machine with polars (reads gs:// through Beam FileSystems):
#   $OPENMSD report "$OUT"
