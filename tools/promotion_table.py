#!/usr/bin/env python3
"""Prints torch.promote_types for every pair of typex's dtypes, as the C++ table in
tests/unit/core/dtype.cpp spells it. Run with any PyTorch (Debian's python3-torch 1.13 or 2.x from
PyPI): `python3 tools/promotion_table.py`. The test suite itself never needs PyTorch."""
import torch

names = ["b8", "u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"]
dtypes = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64]
back = dict(zip(dtypes, names))

print(f"// torch {torch.__version__}")
for n, a in zip(names, dtypes):
    row = ", ".join(back[torch.promote_types(a, b)] for b in dtypes)
    print(f"      /* {n:<4} */ {{{row}}},")
