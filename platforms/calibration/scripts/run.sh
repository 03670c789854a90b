#!/bin/bash
# Re-measure the NCCL, expert all-to-all and interference tables of a profile on one
# node of 2, 4 or 8 GPUs: one torchrun per group size P that the node has.
# Usage: OUT=/some/dir bash run.sh [full|smoke|cpu] [P list, default: 2 4 8 up to the GPUs]
#   cpu: the same logic on CPU processes with gloo (a test of the scripts, no numbers)
# Each P writes $OUT/P<P>/{nccl,nccl_graph,nccl_groups,ep_alltoall,overlap}.csv;
# merge.py joins them into one table per kind (the nranks column tells them apart).
set -u
# NVLink multicast off: it can take a shared host's GPUs out of service
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/calib_out}
HERE=$(cd "$(dirname "$0")" && pwd)
MODE=${1:-full}
shift || true
EXTRA=""
[ "$MODE" = smoke ] && EXTRA="--smoke"
[ "$MODE" = cpu ] && EXTRA="--smoke --backend gloo --device cpu"
GPUS=$(python3 -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
if [ $# -gt 0 ]; then
    PS="$*"
else
    PS=""
    for p in 2 4 8; do
        if [ "$MODE" = cpu ] || [ "$p" -le "$GPUS" ]; then PS="$PS $p"; fi
    done
fi
[ -n "$PS" ] || { echo "run.sh: no group size to measure ($GPUS GPUs)" >&2; exit 1; }
for p in $PS; do
    mkdir -p "$OUT/P$p"
    timeout 580 python3 -m torch.distributed.run --standalone --nproc_per_node="$p" \
        "$HERE/calib_nccl.py" --out "$OUT/P$p" $EXTRA --budget-s 400 || echo "P=$p exited $?"
done
python3 "$HERE/merge.py" "$OUT" && ls -la "$OUT"
