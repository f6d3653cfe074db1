#!/usr/bin/env python3
"""PyTorch-trained models as safetensors files, for the "PyTorch weights in" tests.

Trains two small models with PyTorch (a few optimizer steps on fixed random data, so the weights are
a trained model's, not an initializer's), then writes with Hugging Face's `safetensors` package:
  tests/data/safetensors/tiny_lm.safetensors      an embedding, a transformer encoder block, a layer
                                                  norm and a head tied to the embedding, written with
                                                  safetensors.torch.save_model (the tied weight once)
  tests/data/safetensors/cnn_bn.safetensors       conv, batch norm (running statistics and the i64
                                                  num_batches_tracked), max-pool, linear: save_file
  tests/data/safetensors/cnn_bn_bf16.safetensors  the same state dict in bfloat16 (floating tensors)
  tests/data/safetensors/<model>_io.safetensors   an input and PyTorch's output in eval mode (for the
                                                  bf16 file: the output of the bf16-rounded weights)
tests/unit/tensor/safetensors.cpp loads each into the typex model with the same module names and
compares outputs. Needs torch >= 2 and safetensors (pip, in a venv; never needed by the tests):
    python3 -m venv /tmp/t2 && /tmp/t2/bin/pip install torch safetensors
    /tmp/t2/bin/python tools/safetensors_reference.py
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file, save_model

torch.manual_seed(20261124)
out_dir = os.path.join("tests", "data", "safetensors")
os.makedirs(out_dir, exist_ok=True)


class TinyLM(nn.Module):  # tokens [B, T] in [0, 50) -> logits [B, T, 50]
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.block = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=0.1,
                                                activation="gelu", batch_first=True)
        self.norm = nn.LayerNorm(16)
        self.head = nn.Linear(16, 50, bias=False)
        self.head.weight = self.emb.weight  # tied

    def forward(self, tokens):
        return self.head(self.norm(self.block(self.emb(tokens))))


class CNN(nn.Module):  # [B, 1, 10, 10] -> [B, 3]
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        return self.fc(torch.flatten(F.max_pool2d(F.relu(self.bn(self.conv(x))), 2), 1))


def train(model, inputs, targets, loss_fn, steps=25):
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        opt.step()
    model.eval()


def save_io(name, x, y):
    save_file({"input": x.contiguous(), "output": y.detach().contiguous()}, os.path.join(out_dir, f"{name}_io.safetensors"),
              metadata={"generator": "tools/safetensors_reference.py", "torch": torch.__version__})


lm = TinyLM()
tokens = torch.randint(0, 50, (8, 6))
train(lm, tokens[:, :-1], tokens[:, 1:], lambda logits, t: F.cross_entropy(logits.reshape(-1, 50), t.reshape(-1)))
x = torch.randint(0, 50, (2, 6))
with torch.no_grad():
    save_io("tiny_lm", x, lm(x))
save_model(lm, os.path.join(out_dir, "tiny_lm.safetensors"), metadata={"format": "pt"})

cnn = CNN()
images, labels = torch.randn(16, 1, 10, 10), torch.randint(0, 3, (16,))
train(cnn, images, labels, F.cross_entropy)
x = torch.randn(2, 1, 10, 10)
with torch.no_grad():
    save_io("cnn_bn", x, cnn(x))
sd = {k: v.contiguous() for k, v in cnn.state_dict().items()}
save_file(sd, os.path.join(out_dir, "cnn_bn.safetensors"), metadata={"format": "pt"})
half = {k: (v.to(torch.bfloat16) if v.is_floating_point() else v) for k, v in sd.items()}
save_file(half, os.path.join(out_dir, "cnn_bn_bf16.safetensors"), metadata={"format": "pt"})
cnn.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in half.items()})
with torch.no_grad():
    save_io("cnn_bn_bf16", x, cnn(x))
for f in sorted(os.listdir(out_dir)):
    print(f"wrote {os.path.join(out_dir, f)} ({os.path.getsize(os.path.join(out_dir, f))} bytes)")
