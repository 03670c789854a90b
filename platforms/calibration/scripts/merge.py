"""Join the per-group-size tables of run.sh (DIR/P2/nccl.csv, DIR/P4/nccl.csv, ...) into
one table per kind in DIR (DIR/nccl.csv, ...), rows by group size: the form cpsim reads
(platforms/calibration/<profile>/, the nranks column)."""
import csv
import glob
import os
import sys


def main(out):
    kinds = ["nccl", "nccl_graph", "nccl_groups", "ep_alltoall", "overlap"]
    dirs = sorted(glob.glob(os.path.join(out, "P*")), key=lambda d: int(d.rsplit("P", 1)[1]))
    for kind in kinds:
        rows, fields = [], None
        for d in dirs:
            path = os.path.join(d, kind + ".csv")
            if not os.path.exists(path):
                continue
            with open(path, newline="") as f:
                rd = csv.DictReader(f)
                fields = fields or rd.fieldnames
                rows.extend(rd)
        if not rows:
            continue
        with open(os.path.join(out, kind + ".csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            w.writerows(rows)
        print("%s.csv: %d rows from %d group sizes" % (kind, len(rows), len(dirs)))


if __name__ == "__main__":
    main(sys.argv[1])
