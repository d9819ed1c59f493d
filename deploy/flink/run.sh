#!/usr/bin/env bash
# Run every stage of the build on the Flink session cluster of flink-deployment.yaml.
#
#   OUT=gs://BUCKET/build deploy/flink/run.sh [first-stage [last-stage]]
#
# Needs: kubectl access to the cluster (the job server is port-forwarded to localhost), and
# credentials on this machine for OUT (the launcher lists inputs and reads _stats/ itself).
set -euo pipefail
: "${OUT:?set OUT (gs://... or another filesystem all pods and this machine can reach)}"
OPENMSD="${OPENMSD:-.venv/bin/openmsd-build}"
FETCH="${FETCH:-http}"; SEED="${SEED:-7}"; CONTACT="${CONTACT:-}"
INPUT_UNPAYWALL="${INPUT_UNPAYWALL:?}"; INPUT_CROSSREF="${INPUT_CROSSREF:?}"; INPUT_OPENCITATIONS="${INPUT_OPENCITATIONS:?}"

kubectl port-forward svc/beam-flink-job-server 8099:8099 8098:8098 >/dev/null &
PF=$!
trap 'kill $PF' EXIT
sleep 3

beam=(
  --runner=PortableRunner --job_endpoint=localhost:8099 --artifact_endpoint=localhost:8098
  --environment_type=EXTERNAL --environment_config=localhost:50000   # the TaskManager's sidecar
  --parallelism=256
)
# Per-stage parallelism (Flink slots used); the text stage is I/O bound and benefits from
# more host keys in flight than slots, which the per-host sharding provides.
stage_beam() {
  case "$1" in
    split) echo --parallelism=32 ;;
    *) echo ;;
  esac
}

STAGES=(papers text citations split pairs contexts release)
FIRST="${1:-papers}"; LAST="${2:-release}"; started=0
for stage in "${STAGES[@]}"; do
  [[ "$stage" == "$FIRST" ]] && started=1
  [[ $started == 1 ]] || continue
  echo "== $stage ($(date -u +%H:%M:%S))"
  # shellcheck disable=SC2046
  case "$stage" in
    papers)    "$OPENMSD" papers --out "$OUT" --unpaywall "$INPUT_UNPAYWALL" --crossref "$INPUT_CROSSREF" "${beam[@]}" ;;
    text)      "$OPENMSD" text --out "$OUT" --fetch "$FETCH" ${CONTACT:+--contact "$CONTACT"} --host-shards 8 "${beam[@]}" ;;
    citations) "$OPENMSD" citations --out "$OUT" --opencitations "$INPUT_OPENCITATIONS" "${beam[@]}" ;;
    split)     "$OPENMSD" split --out "$OUT" --seed "$SEED" "${beam[@]}" $(stage_beam split) ;;
    pairs)     "$OPENMSD" pairs --out "$OUT" "${beam[@]}" ;;
    contexts)  "$OPENMSD" contexts --out "$OUT" --crossref "$INPUT_CROSSREF" "${beam[@]}" ;;
    release)   "$OPENMSD" release "$OUT" "${beam[@]}" ;;
  esac
  [[ "$stage" == "$LAST" ]] && break
done
