"""y = 2x, with an offset that depends on the seed; 20 train rows, 10 validate, 10 test."""

import argparse
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("--public", type=Path, required=True)
parser.add_argument("--private", type=Path, required=True)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()
rows = [(i, i % 7, 2 * (i % 7) + (args.seed % 3)) for i in range(40)]
(args.public / "train.csv").write_text(
    "id,x,y\n" + "".join(f"{i},{x},{y}\n" for i, x, y in rows[:20])
)
(args.public / "test.csv").write_text("id,x\n" + "".join(f"{i},{x}\n" for i, x, _ in rows[20:]))
(args.public / "sample_submission.csv").write_text(
    "id,y\n" + "".join(f"{i},100\n" for i, _, _ in rows[20:])
)
(args.private / "validate.csv").write_text(
    "id,y\n" + "".join(f"{i},{y}\n" for i, _, y in rows[20:30])
)
(args.private / "test.csv").write_text("id,y\n" + "".join(f"{i},{y}\n" for i, _, y in rows[30:]))
