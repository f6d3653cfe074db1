#!/usr/bin/env python3
"""Reference data for nn.LSTM and nn.GRU: four small recurrent modules, one safetensors file each:
    tests/data/rnn/<name>.safetensors
written with tools/safetensors_writer.py (no `safetensors` package; runs on torch 1.13 and 2.x). Run
from the repository root:
    /usr/bin/python3 tools/rnn_reference.py [name ...]      (names: those files only)
It prints one line per model (name, parameter count, file size, and the largest difference between
torch's module and this script's own re-implementation of it) and reads every file back to check it.

The models (each built right after torch.manual_seed(20261126): float32, torch's default init, i.e.
every weight and bias uniform(-1/sqrt(hidden), 1/sqrt(hidden)); eval() mode, dropout 0; every call
passes no initial state, so h_0 (and c_0) are zeros, torch's default):
  lstm_bi   nn.LSTM(input_size=5, hidden_size=4, num_layers=2, batch_first=True, bidirectional=True)
            input [2, 7, 5] -> output [2, 7, 8], h_n / c_n [4, 2, 4]; input_b [3, 4, 5]
  gru_bi    nn.GRU(input_size=5, hidden_size=4, num_layers=2, batch_first=True, bidirectional=True)
            input [2, 7, 5] -> output [2, 7, 8], h_n [4, 2, 4]; input_b [3, 4, 5]
  lstm_seq  nn.LSTM(input_size=3, hidden_size=6, num_layers=1, batch_first=False, bidirectional=False)
            input [5, 2, 3] (seq-first: [T, N, C]) -> output [5, 2, 6], h_n / c_n [1, 2, 6];
            input_b [9, 2, 3]
  gru_seq   nn.GRU(input_size=3, hidden_size=6, num_layers=1, batch_first=False, bidirectional=False)
            input [5, 2, 3] -> output [5, 2, 6], h_n [1, 2, 6]; input_b [9, 2, 3]

Every file holds (all float32)
  <key>               the module's state_dict() under torch's keys, for every layer k and direction
                      (suffix "" forward, "_reverse" backward, the latter only when bidirectional):
                        weight_ih_l<k>[_reverse]  [G*H, I_k]   I_0 = input_size, I_k = D*H for k > 0
                        weight_hh_l<k>[_reverse]  [G*H, H]
                        bias_ih_l<k>[_reverse]    [G*H]
                        bias_hh_l<k>[_reverse]    [G*H]
                      with H = hidden_size, G = 4 (LSTM) or 3 (GRU), D = 2 if bidirectional else 1
  ref.input           the input (batch_first: [N, T, C]; otherwise [T, N, C])
  ref.output          output, (h_n[, c_n]) = module(ref.input): output is the last layer's h_t for every
  ref.h_n             t ([N, T, D*H] or [T, N, D*H]; for bidirectional [forward, backward] on the last
  ref.c_n             axis: the backward half at t is the reverse direction's state after reading
                      x_{T-1} .. x_t); h_n / c_n [num_layers*D, N, H] (never batch-first) are the final
                      states, ordered [layer0_fwd, layer0_bwd, layer1_fwd, layer1_bwd] (index
                      k*D + d); the backward direction's final state is its state after x_0.
                      c_n (and ref.c_n_b, ref.rc) only for LSTMs.
  ref.input_b         a second input with another sequence length (and batch size for *_bi), and
  ref.output_b        the same outputs for it
  ref.h_n_b
  ref.c_n_b
  ref.r               torch.randn of ref.output's shape
  ref.rh              torch.randn of ref.h_n's shape
  ref.rc              torch.randn of ref.c_n's shape (LSTM only)
  ref.grad.<key>      for every parameter (every state_dict key): the gradient of
                        loss = (output * r).sum() + (h_n * rh).sum() [+ (c_n * rc).sum()]
                      for ref.input, in eval mode
  ref.grad.input      the gradient of that loss with respect to ref.input
and __metadata__ {"generator": "tools/rnn_reference.py", "torch": <version>, "model": <name>}.
Draw order, after building the module: ref.input, ref.input_b, ref.r, ref.rh, ref.rc (LSTM only);
then the outputs and gradients are computed (the forward passes draw no random numbers).

torch's gate order and equations (as torch's nn.LSTM / nn.GRU documentation gives them; x_t the
layer's input at t, h / c the direction's previous state, sigma the logistic sigmoid, * elementwise):
  LSTM: the G*H = 4H rows of weight_ih / weight_hh / bias_ih / bias_hh are the gates [i, f, g, o]
        (rows [0, H) input gate, [H, 2H) forget, [2H, 3H) cell candidate, [3H, 4H) output):
          i  = sigma(W_ii x_t + b_ii + W_hi h + b_hi)
          f  = sigma(W_if x_t + b_if + W_hf h + b_hf)
          g  = tanh (W_ig x_t + b_ig + W_hg h + b_hg)
          o  = sigma(W_io x_t + b_io + W_ho h + b_ho)
          c' = f * c + i * g
          h' = o * tanh(c')
  GRU:  the 3H rows are [r, z, n] (reset, update, new):
          r  = sigma(W_ir x_t + b_ir + W_hr h + b_hr)
          z  = sigma(W_iz x_t + b_iz + W_hz h + b_hz)
          n  = tanh (W_in x_t + b_in + r * (W_hn h + b_hn))     (b_hn inside the reset product)
          h' = (1 - z) * n + z * h
  Directions and layers: the forward direction reads t = 0 .. T-1, the backward ("_reverse") one
  t = T-1 .. 0, both from zero state, with their own weights and the same layer input. For layer
  k > 0 the input at t is the previous layer's output at t: for bidirectional the concatenation
  [forward h_t, backward h_t] (size 2*H, so weight_ih_l1 is [G*H, 2*H], its first H columns acting
  on the forward half). Dropout between layers is 0 here (and torch applies none in eval mode).

Before writing, the script checks its own pure-torch re-implementation of both cells from these
equations (reference_rnn below: a loop over layers, directions and time) against nn.LSTM / nn.GRU,
outputs, final states and gradients, to 1e-5.
"""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_writer import read_file, save_file  # noqa: E402

SEED = 20261126
OUT_DIR = os.path.join("tests", "data", "rnn")
TOL = 1e-5

# name, class, constructor keyword arguments, ref.input shape, ref.input_b shape
MODELS = [
    ("lstm_bi", nn.LSTM, dict(input_size=5, hidden_size=4, num_layers=2, batch_first=True, bidirectional=True),
     (2, 7, 5), (3, 4, 5)),
    ("gru_bi", nn.GRU, dict(input_size=5, hidden_size=4, num_layers=2, batch_first=True, bidirectional=True),
     (2, 7, 5), (3, 4, 5)),
    ("lstm_seq", nn.LSTM, dict(input_size=3, hidden_size=6, num_layers=1, batch_first=False, bidirectional=False),
     (5, 2, 3), (9, 2, 3)),
    ("gru_seq", nn.GRU, dict(input_size=3, hidden_size=6, num_layers=1, batch_first=False, bidirectional=False),
     (5, 2, 3), (9, 2, 3)),
]


# --------------------------------------------------------------------------- independent re-implementation

def lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh):
    """One LSTM step from the documented equations; rows of the weights are [i, f, g, o]."""
    H = h.shape[-1]
    gx = x @ w_ih.t() + b_ih
    gh = h @ w_hh.t() + b_hh
    i = torch.sigmoid(gx[:, 0:H] + gh[:, 0:H])
    f = torch.sigmoid(gx[:, H:2 * H] + gh[:, H:2 * H])
    g = torch.tanh(gx[:, 2 * H:3 * H] + gh[:, 2 * H:3 * H])
    o = torch.sigmoid(gx[:, 3 * H:4 * H] + gh[:, 3 * H:4 * H])
    c2 = f * c + i * g
    h2 = o * torch.tanh(c2)
    return h2, c2


def gru_cell(x, h, w_ih, w_hh, b_ih, b_hh):
    """One GRU step from the documented equations; rows of the weights are [r, z, n]."""
    H = h.shape[-1]
    gx = x @ w_ih.t() + b_ih
    gh = h @ w_hh.t() + b_hh
    r = torch.sigmoid(gx[:, 0:H] + gh[:, 0:H])
    z = torch.sigmoid(gx[:, H:2 * H] + gh[:, H:2 * H])
    n = torch.tanh(gx[:, 2 * H:3 * H] + r * gh[:, 2 * H:3 * H])
    return (1 - z) * n + z * h


def reference_rnn(kind, params, x, hidden_size, num_layers, batch_first, bidirectional):
    """output, h_n[, c_n] of nn.LSTM / nn.GRU (kind "lstm" / "gru") with zero initial state, computed
    step by step from `params` (a dict under torch's state_dict keys)."""
    if batch_first:
        x = x.transpose(0, 1)  # -> [T, N, C]
    T, N = x.shape[0], x.shape[1]
    suffixes = ["", "_reverse"] if bidirectional else [""]
    layer_in = [x[t] for t in range(T)]
    h_n, c_n = [], []
    for k in range(num_layers):
        dir_outs = []
        for suffix in suffixes:
            w_ih, w_hh = params[f"weight_ih_l{k}{suffix}"], params[f"weight_hh_l{k}{suffix}"]
            b_ih, b_hh = params[f"bias_ih_l{k}{suffix}"], params[f"bias_hh_l{k}{suffix}"]
            h = x.new_zeros(N, hidden_size)
            c = x.new_zeros(N, hidden_size)
            outs = [None] * T
            steps = range(T - 1, -1, -1) if suffix == "_reverse" else range(T)
            for t in steps:
                if kind == "lstm":
                    h, c = lstm_cell(layer_in[t], h, c, w_ih, w_hh, b_ih, b_hh)
                else:
                    h = gru_cell(layer_in[t], h, w_ih, w_hh, b_ih, b_hh)
                outs[t] = h
            dir_outs.append(outs)
            h_n.append(h)
            c_n.append(c)
        layer_in = [torch.cat([d[t] for d in dir_outs], dim=1) for t in range(T)]  # [forward, backward]
    output = torch.stack(layer_in, dim=0)  # [T, N, D*H]
    if batch_first:
        output = output.transpose(0, 1)
    results = [output, torch.stack(h_n, dim=0)]
    if kind == "lstm":
        results.append(torch.stack(c_n, dim=0))
    return results


# --------------------------------------------------------------------------- generation

def run(module, x):
    """[output, h_n(, c_n)] of module(x) with no initial state."""
    output, state = module(x)
    return [output] + (list(state) if isinstance(state, tuple) else [state])


def loss_of(results, rands):
    return sum((y * r).sum() for y, r in zip(results, rands))


def build(name, cls, kwargs, shape, shape_b):
    torch.manual_seed(SEED)
    module = cls(**kwargs, dropout=0.0)
    module.eval()
    is_lstm = cls is nn.LSTM
    kind = "lstm" if is_lstm else "gru"

    x = torch.randn(*shape)
    x_b = torch.randn(*shape_b)
    x_req = x.clone().requires_grad_(True)
    results = run(module, x_req)
    results_b = [y.detach() for y in run(module, x_b)]
    rands = [torch.randn(y.shape) for y in results]  # ref.r, ref.rh(, ref.rc) in this order

    params = dict(module.named_parameters())
    assert list(params) == list(module.state_dict()), (list(params), list(module.state_dict()))
    grads = torch.autograd.grad(loss_of(results, rands), list(params.values()) + [x_req])

    # the independent re-implementation, on the same parameters and inputs
    opts = dict(hidden_size=kwargs["hidden_size"], num_layers=kwargs["num_layers"],
                batch_first=kwargs["batch_first"], bidirectional=kwargs["bidirectional"])
    ref_params = {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}
    ref_x = x.clone().requires_grad_(True)
    mine = reference_rnn(kind, ref_params, ref_x, **opts)
    mine_grads = torch.autograd.grad(loss_of(mine, rands), list(ref_params.values()) + [ref_x])
    with torch.no_grad():
        mine_b = reference_rnn(kind, ref_params, x_b, **opts)
    diff_fwd = 0.0
    for a, b in zip(mine + mine_b, results + results_b):
        assert a.shape == b.shape, (name, a.shape, b.shape)
        diff_fwd = max(diff_fwd, (a.detach() - b.detach()).abs().max().item())
    diff_grad = max((a - b).abs().max().item() for a, b in zip(mine_grads, grads))
    assert diff_fwd <= TOL, (name, "forward", diff_fwd)
    assert diff_grad <= TOL, (name, "gradient", diff_grad)

    suffixes = ["output", "h_n", "c_n"][:len(results)]
    tensors = {}
    for k, v in module.state_dict().items():
        assert v.dtype == torch.float32, (k, v.dtype)
        tensors[k] = v.detach().clone()
    tensors["ref.input"] = x
    tensors["ref.input_b"] = x_b
    for s, y, y_b in zip(suffixes, results, results_b):
        tensors[f"ref.{s}"] = y.detach().clone()
        tensors[f"ref.{s}_b"] = y_b.clone()
    for s, r in zip(["r", "rh", "rc"], rands):
        tensors[f"ref.{s}"] = r
    for k, g in zip(list(params) + ["input"], grads):
        tensors[f"ref.grad.{k}"] = g
    assert not any(k.startswith("ref.") for k in module.state_dict())
    return module, tensors, diff_fwd, diff_grad


def check(path, tensors, cls, kwargs):
    meta, back = read_file(path)
    assert set(back) == set(tensors), sorted(set(back) ^ set(tensors))
    for k, v in tensors.items():
        assert back[k].dtype == v.dtype and back[k].shape == v.shape and torch.equal(back[k], v.cpu()), k
    # the file alone reproduces the reference: load it into a fresh module and rerun the forward
    fresh = cls(**kwargs)
    fresh.load_state_dict({k: v for k, v in back.items() if not k.startswith("ref.")}, strict=True)
    fresh.eval()
    names = ["output", "h_n", "c_n"] if cls is nn.LSTM else ["output", "h_n"]
    with torch.no_grad():
        for suffix in ("", "_b"):
            for n, y in zip(names, run(fresh, back[f"ref.input{suffix}"])):
                assert torch.allclose(y, back[f"ref.{n}{suffix}"], rtol=1e-5, atol=1e-6), (path, n, suffix)
    return meta


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    only = set(sys.argv[1:])  # (names: regenerate those files only)
    unknown = only - {m[0] for m in MODELS}
    if unknown:
        raise SystemExit(f"unknown model(s): {', '.join(sorted(unknown))}")
    for name, cls, kwargs, shape, shape_b in MODELS:
        if only and name not in only:
            continue
        module, tensors, diff_fwd, diff_grad = build(name, cls, kwargs, shape, shape_b)
        path = os.path.join(OUT_DIR, f"{name}.safetensors")
        meta = {"generator": "tools/rnn_reference.py", "torch": torch.__version__, "model": name}
        save_file(tensors, path, metadata=meta)
        assert check(path, tensors, cls, kwargs) == meta
        n_params = sum(p.numel() for p in module.parameters())
        print(f"{name:9s} {n_params:5d} parameters  {os.path.getsize(path):6d} bytes  {path}  "
              f"re-implementation max |diff|: forward {diff_fwd:.3g}, gradients {diff_grad:.3g}")


if __name__ == "__main__":
    main()
