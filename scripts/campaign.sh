#!/usr/bin/env bash
# A fuzz campaign of TOTAL cases (default 1,000,000) on one commit, in shards of SECONDS, resumable after any stop:
#   scripts/campaign.sh SEED COMMIT [SECONDS] [TOTAL] [fuzz.py options...]
# The cases run in a worktree of COMMIT (../fuzz-COMMIT), so later commits do not change the code fuzzed;
# each shard's report goes to tests/fuzzing/campaigns/SEED-K.json of this checkout and starts where the
# last one ended. Between shards it waits while the file .campaign-pause exists here (for benchmarks that
# need the cores idle). Merge with: python3 scripts/fuzz.py --merge tests/fuzzing/campaigns/SEED-*.json
set -euo pipefail
seed=$1; commit=$2; secs=${3:-600}; total=${4:-1000000}
here=$(cd "$(dirname "$0")/.." && pwd); out=$here/tests/fuzzing/campaigns; tree=$here/../fuzz-$commit
[ -d "$tree" ] || git -C "$here" worktree add --detach "$tree" "$commit" >/dev/null
while :; do
  while [ -e "$here/.campaign-pause" ]; do sleep 5; done
  read -r k start < <(python3 - "$out" "$seed" <<'PY'
import glob, json, sys
shards = [json.load(open(p)) for p in glob.glob(f"{sys.argv[1]}/{sys.argv[2]}-*.json")]
print(len(shards), max((s["end_case"] for s in shards), default=0))
PY
)
  [ "$start" -ge "$total" ] && { echo "campaign $seed: $total cases"; exit 0; }
  echo "$(date -u +%T) shard $k from case $start"
  (cd "$tree" && nice -n 19 python3 scripts/fuzz.py --seed "$seed" --start "$start" --cases $((total - start)) \
     --seconds "$secs" --workers 2 --out "$out/$seed-$k.json" "${@:5}") || true  # exit 1: the shard found failures
  [ -f "$out/$seed-$k.json" ] || { echo "shard $k wrote no report; stopping" >&2; exit 1; }
done
