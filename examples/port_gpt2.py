#!/usr/bin/env python3
"""The PyTorch half of examples/port_gpt2.cpp: a GPT-2-style causal LM (nanoGPT's / Hugging Face's
module names, learned positions, tanh GELU, head tied to the token embedding) trained for a few
seconds to continue counting (each token is the previous one + 1, mod 32), then written with
tools/safetensors_writer.py (no `safetensors` package needed) to examples/data/gpt2_counting.safetensors:
its state dict under torch's names, plus a prompt and what PyTorch generates from it greedily
("ref.prompt", "ref.generated") and its logits for the prompt ("ref.logits").
Run from the repository root (Debian's python3-torch 1.13 or torch 2.x):
    /usr/bin/python3 examples/port_gpt2.py
"""
import math
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
from safetensors_writer import save_file  # noqa: E402

VOCAB, D, HEADS, MAX_POS, LAYERS = 32, 32, 4, 16, 2


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(D, 3 * D)
        self.c_proj = nn.Linear(D, D)
        self.register_buffer("bias", torch.tril(torch.ones(MAX_POS, MAX_POS)).view(1, 1, MAX_POS, MAX_POS))

    def forward(self, x):
        B, T, C = x.shape
        hd = C // HEADS
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, HEADS, hd).transpose(1, 2) for t in (q, k, v))
        w = q @ k.transpose(-2, -1) / math.sqrt(hd)
        w = w.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        y = torch.softmax(w, -1) @ v
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_fc = nn.Linear(D, 4 * D)
        self.act = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * D, D)

    def forward(self, x):
        return self.c_proj(self.act(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.attn, self.ln_2, self.mlp = nn.LayerNorm(D), Attention(), nn.LayerNorm(D), MLP()

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, D)
        self.wpe = nn.Embedding(MAX_POS, D)
        self.h = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(D)
        self.lm_head = nn.Linear(D, VOCAB, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def main():
    torch.manual_seed(0)
    model = GPT()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step in range(300):
        start = torch.randint(0, VOCAB, (32, 1))
        seq = (start + torch.arange(MAX_POS)) % VOCAB
        logits = model(seq[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), seq[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    print(f"final loss {loss.item():.4f}")
    prompt = torch.tensor([[7, 8, 9]])
    with torch.no_grad():
        logits = model(prompt)
        ids = prompt
        while ids.shape[1] < MAX_POS:
            nxt = model(ids)[:, -1].argmax(-1, keepdim=True)
            ids = torch.cat([ids, nxt], 1)
    print("generated", ids.tolist())
    tensors = {k: v.detach().clone() for k, v in model.state_dict().items()}
    tensors.update({"ref.prompt": prompt, "ref.logits": logits, "ref.generated": ids})
    out = os.path.join(os.path.dirname(__file__), "data", "gpt2_counting.safetensors")
    save_file(tensors, out, metadata={"generator": "examples/port_gpt2.py", "torch": torch.__version__})
    print("wrote", os.path.normpath(out))


if __name__ == "__main__":
    main()
