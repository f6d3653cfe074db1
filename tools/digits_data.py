#!/usr/bin/env python3
"""Converts the 8x8 handwritten-digits data set that Debian's python3-sklearn ships
(sklearn/datasets/data/digits.csv.gz: 1,797 images, 64 pixels in 0..16, then the label) into
  examples/data/digits.txt
one image a line, `<label> <64 pixels>`, read by examples/train_digits_mlp.cpp and
examples/train_digits_cnn.cpp. The data's provenance and license are in examples/data/DIGITS_LICENSE.
Needs no sklearn import (only the CSV it ships):
    apt-get install python3-sklearn && python3 tools/digits_data.py
"""
import gzip
import os

SOURCE = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"

rows = []
with gzip.open(SOURCE, "rt") as f:
    for line in f:
        v = [int(float(x)) for x in line.strip().split(",") if x != ""]
        if len(v) != 65:
            continue
        assert all(0 <= p <= 16 for p in v[:64]) and 0 <= v[64] <= 9
        rows.append(f"{v[64]} " + " ".join(str(p) for p in v[:64]))
assert len(rows) == 1797, len(rows)
out = os.path.join(os.path.dirname(__file__), "..", "examples", "data", "digits.txt")
with open(out, "w") as f:
    f.write("# UCI optical recognition of handwritten digits (test set), via scikit-learn; see DIGITS_LICENSE\n")
    f.write("\n".join(rows) + "\n")
print(f"wrote {out}: {len(rows)} images")
