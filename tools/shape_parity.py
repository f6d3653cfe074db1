#!/usr/bin/env python3
"""Shape rules checked against what PyTorch computes for the same ops. Writes
  tests/static/torch_shape_parity.cpp           static shapes: one static_assert per case;
  tests/unit/core/rules/torch_parity.cpp        the same conv/pool cases with symbolic height and width
                                                (derived dims evaluated at run time), as doctest CHECKs.
Run from the repository root with PyTorch (Debian's python3-torch 1.13 or 2.x):
`python3 tools/shape_parity.py`. Cases are drawn with a fixed seed; cases PyTorch rejects are skipped."""
import random

import torch
import torch.nn.functional as F

random.seed(1234)
out = []
sym_out = []


def sc(shape):
    return "shape_c<" + ", ".join(str(int(d)) for d in shape) + ">"


def case(expr, result):
    out.append(f"static_assert(same<decltype({expr}), {sc(result)}>);")


def sym_case(call, xshape, rest, result):
    """The same op on an input whose height and width are symbolic dims bound to the case's values."""
    lead = ", ".join(f"fix<{int(d)}>" for d in xshape[:-2])
    h, w = int(xshape[-2]), int(xshape[-1])
    ctor = ", ".join(["{}"] * (len(xshape) - 2) + [f"h_dim({h})", f"w_dim({w})"])
    want = "[" + ", ".join(str(int(d)) for d in result) + "]"
    sym_out.append(f'  CHECK({call}(shape<{lead}, h_dim, w_dim>({ctor}){rest}).to_string() == "{want}");')


# conv2d: stride, padding, dilation, groups, batched and unbatched
n = 0
while n < 40:
    groups = random.choice([1, 1, 2, 4])
    cin = groups * random.randint(1, 3)
    cout = groups * random.randint(1, 3)
    k = (random.randint(1, 5), random.randint(1, 5))
    s = (random.randint(1, 3), random.randint(1, 3))
    p = (random.randint(0, 2), random.randint(0, 2))
    d = (random.randint(1, 2), random.randint(1, 2))
    hw = (random.randint(1, 30), random.randint(1, 30))
    batched = random.random() < 0.7
    x = torch.zeros(((2,) if batched else ()) + (cin,) + hw)
    w = torch.zeros((cout, cin // groups) + k)
    try:
        y = F.conv2d(x, w, stride=s, padding=p, dilation=d, groups=groups)
    except RuntimeError:
        continue
    opts = (f"conv2d_options{{.stride = {{{s[0]}, {s[1]}}}, .padding = {{{p[0]}, {p[1]}}}, "
            f".dilation = {{{d[0]}, {d[1]}}}, .groups = {groups}}}")
    case(f"conv2d_shape<{opts}>({sc(x.shape)}{{}}, {sc(w.shape)}{{}})", y.shape)
    sym_case(f"conv2d_shape<{opts}>", x.shape, f", {sc(w.shape)}{{}}", y.shape)
    n += 1

# max_pool2d (with dilation, ceil_mode) and avg_pool2d (ceil_mode)
n = 0
while n < 40:
    k = (random.randint(1, 4), random.randint(1, 4))
    s = (random.randint(1, 3), random.randint(1, 3))
    p = (random.randint(0, k[0] // 2), random.randint(0, k[1] // 2))
    ceil = random.random() < 0.5
    use_max = random.random() < 0.6
    d = (random.randint(1, 2), random.randint(1, 2)) if use_max else (1, 1)
    x = torch.zeros((1, 2, random.randint(1, 20), random.randint(1, 20)))
    try:
        if use_max:
            y = F.max_pool2d(x, k, stride=s, padding=p, dilation=d, ceil_mode=ceil)
        else:
            y = F.avg_pool2d(x, k, stride=s, padding=p, ceil_mode=ceil)
    except RuntimeError:
        continue
    if min(y.shape) <= 0:
        continue
    opts = (f"pool2d_options{{.kernel = {{{k[0]}, {k[1]}}}, .stride = {{{s[0]}, {s[1]}}}, "
            f".padding = {{{p[0]}, {p[1]}}}, .dilation = {{{d[0]}, {d[1]}}}, .ceil_mode = {str(ceil).lower()}}}")
    case(f"pool2d_shape<{opts}>({sc(x.shape)}{{}})", y.shape)
    sym_case(f"pool2d_shape<{opts}>", x.shape, "", y.shape)
    n += 1

# slicing with negative and out-of-range bounds and steps
for _ in range(30):
    size = random.randint(0, 12)
    start = random.randint(-15, 15)
    end = random.randint(-15, 15)
    step = random.randint(1, 4)
    x = torch.zeros((3, size))
    y = x[:, start:end:step]
    case(f"slice_shape<1, {start}, {end}, {step}>({sc(x.shape)}{{}})", y.shape)

# matmul over ranks 1..4 with batch broadcasting
for _ in range(30):
    ra, rb = random.randint(1, 4), random.randint(1, 4)
    m, k, nn = random.randint(1, 5), random.randint(1, 5), random.randint(1, 5)
    batch = [random.choice([1, 2, 3]) for _ in range(4)]
    a = ([random.choice([1, b]) for b in batch[: max(ra - 2, 0)]] + ([m] if ra >= 2 else []) + [k])
    b = ([random.choice([1, bb]) for bb in batch[: max(rb - 2, 0)]] + [k] + ([nn] if rb >= 2 else []))
    try:
        y = torch.matmul(torch.zeros(a), torch.zeros(b))
    except RuntimeError:
        continue
    case(f"matmul_shape({sc(a)}{{}}, {sc(b)}{{}})", y.shape)

# broadcasting
for _ in range(20):
    r = random.randint(1, 4)
    a = [random.choice([1, 2, 3]) for _ in range(r)]
    b = [random.choice([1, d]) for d in a][random.randint(0, r - 1):]
    y = torch.broadcast_shapes(tuple(a), tuple(b))
    case(f"broadcast_shapes({sc(a)}{{}}, {sc(b)}{{}})", y)

# flatten and reshape with -1
for _ in range(15):
    shp = [random.randint(1, 4) for _ in range(random.randint(1, 4))]
    s0 = random.randint(-len(shp), len(shp) - 1)
    s1 = random.randint(s0 % len(shp), len(shp) - 1)
    y = torch.zeros(shp).flatten(s0, s1)
    case(f"flatten_shape<{s0}, {s1}>({sc(shp)}{{}})", y.shape)
for _ in range(15):
    shp = [random.randint(1, 4) for _ in range(random.randint(1, 4))]
    total = 1
    for d in shp:
        total *= d
    divisors = [d for d in range(1, total + 1) if total % d == 0]
    last = random.choice(divisors)
    y = torch.zeros(shp).reshape(-1, last)
    case(f"reshape_shape({sc(shp)}{{}}, reshape_to(infer, fix<{last}>{{}}))", y.shape)

static_file = open("tests/static/torch_shape_parity.cpp", "w")
print(f"""// Generated by tools/shape_parity.py with torch {torch.__version__}; do not edit.
// Each line: a typex shape rule on static shapes, and the shape PyTorch computed for the same op.
// Compiling this file is the test.
#include <typex/typex.hpp>

namespace {{
using namespace typex;
template <class A, class B>
constexpr bool same = std::is_same_v<std::remove_cvref_t<A>, std::remove_cvref_t<B>>;
""", file=static_file)
print("\n".join(out), file=static_file)
print("}  // namespace", file=static_file)

with open("tests/unit/core/rules/torch_parity.cpp", "w") as f:
    print(f"""// Generated by tools/shape_parity.py with torch {torch.__version__}; do not edit.
// conv2d and pool2d with symbolic height and width: the derived dims (or ceil-mode dyn dims) are
// evaluated at run time and must give the shapes PyTorch computed.
#include "../../support.hpp"

using namespace typex;
using h_dim = sym<"h", 1, 4096>;
using w_dim = sym<"w", 1, 4096>;

TEST_CASE("conv2d and pool2d with symbolic spatial dims match PyTorch") {{""", file=f)
    print("\n".join(sym_out), file=f)
    print("}", file=f)
