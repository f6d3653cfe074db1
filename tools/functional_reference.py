#!/usr/bin/env python3
"""PyTorch reference for typex's padding and upsampling (include/typex/nn/functional.hpp): one
safetensors file, tests/data/zoo/functional.safetensors, written with tools/safetensors_writer.py.
For each case <name>: "<name>.x" the input, "<name>.y" = f(x), "<name>.r" a random tensor of y's
shape, "<name>.grad" = d sum(f(x) * r) / dx. tests/unit/nn/functional.cpp runs the same calls
eagerly, exported and differentiated. Run from the repository root (torch 1.13 or 2.x):
    /usr/bin/python3 tools/functional_reference.py
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from safetensors_writer import save_file  # noqa: E402

torch.manual_seed(20261126)
CASES = {
    "pad_constant": ((2, 3, 4, 5), lambda x: F.pad(x, (1, 2, 0, 1), value=0.5)),
    "pad_reflect": ((2, 3, 4, 5), lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect")),
    "pad_replicate": ((2, 3, 4, 5), lambda x: F.pad(x, (1, 2, 2, 1), mode="replicate")),
    "pad_reflect_1d": ((2, 3, 6), lambda x: F.pad(x, (2, 3), mode="reflect")),
    "nearest_2": ((2, 3, 4, 5), lambda x: F.interpolate(x, scale_factor=2, mode="nearest")),
    "nearest_2_3": ((1, 2, 3, 4), lambda x: F.interpolate(x, scale_factor=(2, 3), mode="nearest")),
    "bilinear_7_9": ((2, 3, 4, 5), lambda x: F.interpolate(x, size=(7, 9), mode="bilinear", align_corners=False)),
    "bilinear_7_9_corners": ((2, 3, 4, 5), lambda x: F.interpolate(x, size=(7, 9), mode="bilinear", align_corners=True)),
    "bilinear_down_3_2": ((1, 2, 6, 5), lambda x: F.interpolate(x, size=(3, 2), mode="bilinear", align_corners=False)),
}


def main():
    tensors = {}
    for name, (shape, f) in CASES.items():
        x = torch.randn(*shape, requires_grad=True)
        y = f(x)
        r = torch.randn(y.shape)
        (g,) = torch.autograd.grad((y * r).sum(), x)
        tensors.update({f"{name}.x": x.detach(), f"{name}.y": y.detach(), f"{name}.r": r, f"{name}.grad": g})
    out = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "zoo", "functional.safetensors")
    save_file(tensors, out, metadata={"generator": "tools/functional_reference.py", "torch": torch.__version__})
    print("wrote", os.path.normpath(out), len(CASES), "cases")


if __name__ == "__main__":
    main()
