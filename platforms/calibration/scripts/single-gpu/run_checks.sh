#!/bin/sh
# run_checks.sh: the single-GPU measurements of the kernel-set, decode-step and memory issues in one
# go, on the device machine (see extend_small.py, graph_gap.py, engine_checks.py).
#
#   sh platforms/calibration/scripts/single-gpu/run_checks.sh OUT [smoke]
#
# Each part runs under its own time limit; a part that fails is logged and the others run.  Every
# output lands in OUT/checks/ and is packed into OUT/checks.tar.gz.
set -u
out=$1
mode=${2:-full}
here=$(cd "$(dirname "$0")" && pwd)
d="$out/checks"
mkdir -p "$d"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export NVSHMEM_DISABLE_NVLS=1
smoke=""
[ "$mode" = smoke ] && smoke="--smoke"
python3 "$here/../machine_info.py" --out "$d" 2>/dev/null || nvidia-smi >"$d/nvidia-smi.txt" 2>&1
timeout 120 python3 "$here/graph_gap.py" --out "$d" $smoke ||
    echo "graph_gap exited $?"
if [ "$mode" = smoke ]; then
    timeout 120 python3 "$here/extend_small.py" --out "$d" $smoke --budget-s 40 ||
        echo "extend_small exited $?"
    timeout 200 python3 "$here/engine_checks.py" --out "$d" $smoke --budget-s 60 ||
        echo "engine_checks exited $?"
else
    timeout 210 python3 "$here/extend_small.py" --out "$d" --budget-s 180 ||
        echo "extend_small exited $?"
    timeout 330 python3 "$here/engine_checks.py" --out "$d" --budget-s 280 ||
        echo "engine_checks exited $?"
fi
(cd "$out" && tar czf checks.tar.gz checks && ls -la checks checks/* | head -60)
