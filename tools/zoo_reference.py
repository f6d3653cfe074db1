#!/usr/bin/env python3
"""Reference data for the model zoo: seven small PyTorch models with real architectures (torchvision's
and Hugging Face's structures and module names, small widths), one safetensors file each:
    tests/data/zoo/<name>.safetensors
written with tools/safetensors_writer.py (no `safetensors` package, no torchvision; runs on torch
1.13 and 2.x). Run from the repository root:
    /usr/bin/python3 tools/zoo_reference.py [name ...]      (names: those files only)
no_bias needs torch >= 2.1 (its layers' bias= arguments): /tmp/t2/bin/python tools/zoo_reference.py no_bias
It prints one line per model (name, parameter count, file size) and reads every file back to check it.

Every file holds
  <fqn>               the model's full state_dict() under torch's keys: parameters and persistent
                      buffers, float32; BatchNorm's num_batches_tracked int64; a tied weight under
                      each of its names
  ref.input           the model input (float32, or int64 token ids)
  ref.output          model(ref.input) in eval mode
  ref.input_b         a second input with another batch size (and, for gpt2 / llama, another
  ref.output_b        sequence length) and its output, for dynamic shapes
  ref.r               a random tensor of ref.output's shape
  ref.grad.<fqn>      for every entry of model.named_parameters() (a tied weight once, under its
                      first name): the gradient of loss = (model(ref.input) * ref.r).sum() in eval mode
and __metadata__ {"generator": "tools/zoo_reference.py", "torch": <version>, "model": <name>}.

Each model starts from torch.manual_seed(20261126); then every LayerNorm / RMSNorm / GroupNorm /
BatchNorm weight is drawn from uniform(0.5, 1.5) and its bias from uniform(-0.5, 0.5), so that no norm
is the identity; models with BatchNorm then run 3 forward passes in train() mode under no_grad on
random inputs of ref.input's shape (running statistics not 0 / 1, num_batches_tracked 3) before
eval(). Then, in this order: ref.input, ref.input_b, ref.r are drawn, and the outputs and gradients
computed (with autograd enabled, so that nn.TransformerEncoder takes its ordinary, not its fused
inference, path).

The models and their FQN conventions (module attribute names exactly as below):
  resnet18      torchvision ResNet-18, widths 4/8/16/32: conv1 (7x7/2, no bias), bn1, relu, maxpool,
                layer1..layer4 (nn.Sequential of two BasicBlock: conv1, bn1, relu, conv2, bn2, and
                downsample.0 (1x1 conv) / downsample.1 (BatchNorm2d) in layer2.0, layer3.0, layer4.0
                only), avgpool, fc (32 -> 10). [2, 3, 32, 32] -> [2, 10]; input_b batch 3.
  mobilenet_v2  torchvision MobileNetV2: features.0 = ConvBNReLU (features.0.0 conv, .1 BN, .2 ReLU6,
                3 -> 8, stride 2); features.1..5 InvertedResidual for (t, c, n, s) = (1, 8, 1, 1),
                (6, 12, 2, 2), (6, 16, 2, 2), each with conv = nn.Sequential([ConvBNReLU 1x1 expand if
                t != 1], ConvBNReLU 3x3 depthwise, Conv2d 1x1, BatchNorm2d), so features.1.conv.{0,1,2}
                and features.2..5.conv.{0,1,2,3} (e.g. features.2.conv.1.0.weight is a depthwise conv);
                residual when stride 1 and inp == oup (features.1, .3, .5); features.6 = ConvBNReLU
                16 -> 32 1x1; classifier.0 Dropout(0.2), classifier.1 Linear(32, 10). Forward:
                features, adaptive_avg_pool2d(1), flatten(1), classifier. [2, 3, 32, 32] -> [2, 10];
                input_b batch 1.
  vit           patch_embed (Conv2d 3 -> 16, 4x4/4), cls_token [1, 1, 16], pos_embed [1, 65, 16],
                encoder = nn.TransformerEncoder of 2 pre-norm nn.TransformerEncoderLayer (d_model 16,
                2 heads, ff 32, gelu, batch_first): encoder.layers.{0,1}.self_attn.in_proj_weight /
                in_proj_bias / out_proj.weight / out_proj.bias, linear1, linear2, norm1, norm2; norm
                (LayerNorm 16), head (Linear 16 -> 10) on the cls token. [2, 3, 32, 32] -> [2, 10];
                input_b batch 3.
  gpt2          Hugging Face / nanoGPT GPT-2: wte (Embedding 32 x 16), wpe (16 x 16), h.{0,1} blocks of
                ln_1, attn.c_attn (16 -> 48: q, k, v), attn.c_proj, attn.bias (the [1, 1, 16, 16] causal
                tril buffer, persistent), ln_2, mlp.c_fc (16 -> 64), mlp.act (tanh GELU), mlp.c_proj;
                ln_f; lm_head (no bias) tied to wte: the state dict holds both wte.weight and
                lm_head.weight, the gradients ref.grad.wte.weight only. 2 heads of 8. int64 ids in
                [0, 32) [2, 7] -> logits [2, 7, 32]; input_b [3, 11].
  llama         Llama: embed_tokens (32 x 16), layers.{0,1} of input_layernorm (RMSNorm, eps 1e-6,
                weight only), self_attn.{q,k,v,o}_proj (no bias; 4 query heads, 2 kv heads, head_dim 4,
                rotary embeddings with rotate_half, grouped-query attention by expand + reshape,
                additive causal mask), post_attention_layernorm, mlp.{gate,up,down}_proj (SwiGLU,
                32 hidden); norm (RMSNorm); lm_head (no bias, untied); rope_cos / rope_sin [16, 4]
                buffers (persistent) on the top-level model. int64 ids [2, 6] -> [2, 6, 32]; input_b
                [1, 9].
  audio_stem    wav2vec-style stem: conv1 (Conv1d 1 -> 8, k 9, stride 2, pad 4), norm1 (GroupNorm 2
                groups), conv2 (Conv1d 8 -> 16, k 5, stride 2, pad 2, no bias), norm2 (GroupNorm 4),
                GELU after each norm, mean over time, fc (16 -> 4). [2, 1, 64] -> [2, 4]; input_b batch 3.
  seq2seq       embed (Embedding 20 x 16), encoder = nn.TransformerEncoder (1 post-norm layer, 2 heads,
                ff 32, batch_first, norm=LayerNorm), decoder = nn.TransformerDecoder (2 layers, norm=LayerNorm)
                over the same tokens under a causal bool buffer `causal` sliced to the length, head
                (Linear 16 -> 20). int64 ids [2, 5] -> [2, 5, 20]; input_b [3, 9].
  unet          a small UNet: enc1, enc2, bottleneck, dec2, dec1 are DoubleConv whose `block` is
                nn.Sequential(Conv2d 3x3 no bias, BatchNorm2d, ReLU, Conv2d 3x3 no bias, BatchNorm2d,
                ReLU), so e.g. enc1.block.0.weight, enc1.block.1.running_mean, enc1.block.3.weight,
                enc1.block.4.bias; up2 / up1 ConvTranspose2d (2x2/2, bias); out Conv2d 1x1 (8 -> 2).
                Skip connections concatenate [upsampled, encoder] on channels. [2, 3, 16, 16] ->
                [2, 2, 16, 16]; input_b batch 1.
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_writer import read_file, save_file  # noqa: E402

SEED = 20261126
OUT_DIR = os.path.join("tests", "data", "zoo")


# --------------------------------------------------------------------------- resnet18

class BasicBlock(nn.Module):
    def __init__(self, inp, out, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(inp, out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(out, out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out)
        if stride != 1 or inp != out:
            self.downsample = nn.Sequential(nn.Conv2d(inp, out, 1, stride=stride, bias=False), nn.BatchNorm2d(out))
        else:
            self.downsample = None  # torchvision's convention: no parameters, no state dict entries

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + identity)


class ResNet18(nn.Module):
    WIDTHS = (4, 8, 16, 32)

    def __init__(self, num_classes=10):
        super().__init__()
        w = self.WIDTHS
        self.conv1 = nn.Conv2d(3, w[0], 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(w[0])
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        inp = w[0]
        for i, (width, stride) in enumerate(zip(w, (1, 2, 2, 2))):
            setattr(self, f"layer{i + 1}", nn.Sequential(BasicBlock(inp, width, stride), BasicBlock(width, width, 1)))
            inp = width
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(w[3], num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


# --------------------------------------------------------------------------- mobilenet_v2

class ConvBNReLU(nn.Sequential):
    def __init__(self, inp, out, kernel_size=3, stride=1, groups=1):
        super().__init__(nn.Conv2d(inp, out, kernel_size, stride, (kernel_size - 1) // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(out), nn.ReLU6(inplace=True))


class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride, expand_ratio):
        super().__init__()
        hidden = inp * expand_ratio
        self.use_res_connect = stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(ConvBNReLU(inp, hidden, kernel_size=1))
        layers += [ConvBNReLU(hidden, hidden, stride=stride, groups=hidden),
                   nn.Conv2d(hidden, oup, 1, bias=False), nn.BatchNorm2d(oup)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        features = [ConvBNReLU(3, 8, stride=2)]
        inp = 8
        for t, c, n, s in ((1, 8, 1, 1), (6, 12, 2, 2), (6, 16, 2, 2)):
            for i in range(n):
                features.append(InvertedResidual(inp, c, s if i == 0 else 1, t))
                inp = c
        features.append(ConvBNReLU(inp, 32, kernel_size=1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(32, num_classes))

    def forward(self, x):
        x = self.features(x)
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.classifier(x)


# --------------------------------------------------------------------------- vit

class ViT(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, 16, 4, stride=4)
        self.cls_token = nn.Parameter(torch.randn(1, 1, 16) * 0.5)
        self.pos_embed = nn.Parameter(torch.randn(1, 65, 16) * 0.5)
        layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(16)
        self.head = nn.Linear(16, num_classes)

    def forward(self, x):
        p = self.patch_embed(x).flatten(2).transpose(1, 2)
        t = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), p], 1) + self.pos_embed
        h = self.norm(self.encoder(t))
        return self.head(h[:, 0])


# --------------------------------------------------------------------------- gpt2

class GPT2Attention(nn.Module):
    def __init__(self, d=16, heads=2, max_pos=16):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.register_buffer("bias", torch.tril(torch.ones(max_pos, max_pos)).view(1, 1, max_pos, max_pos))

    def forward(self, x):
        B, T, C = x.shape
        hd = C // self.heads
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, hd).transpose(1, 2) for t in (q, k, v))
        w = q @ k.transpose(-2, -1) / math.sqrt(hd)
        w = w.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        y = torch.softmax(w, -1) @ v
        y = y.transpose(1, 2).reshape(B, T, C)
        return self.c_proj(y)


class GPT2MLP(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.c_fc = nn.Linear(d, 4 * d)
        self.act = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * d, d)

    def forward(self, x):
        return self.c_proj(self.act(self.c_fc(x)))


class GPT2Block(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = GPT2Attention(d)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = GPT2MLP(d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    def __init__(self, vocab=32, d=16, max_pos=16, layers=2):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(max_pos, d)
        self.h = nn.ModuleList([GPT2Block(d) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied

    def forward(self, idx):
        T = idx.shape[1]
        pos = torch.arange(T, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


# --------------------------------------------------------------------------- llama

class RMSNorm(nn.Module):  # written out: nn.RMSNorm is torch >= 2.4
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], -1)


class LlamaAttention(nn.Module):
    def __init__(self, d=16, heads=4, kv_heads=2):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.q_proj = nn.Linear(d, heads * self.hd, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(heads * self.hd, d, bias=False)

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        H, KV, hd = self.heads, self.kv_heads, self.hd
        q = self.q_proj(x).view(B, T, H, hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, KV, hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, KV, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = H // KV
        k = k[:, :, None].expand(B, KV, rep, T, hd).reshape(B, H, T, hd)
        v = v[:, :, None].expand(B, KV, rep, T, hd).reshape(B, H, T, hd)
        mask = torch.triu(torch.full((T, T), float("-inf"), device=x.device), 1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(hd) + mask
        y = torch.softmax(scores, -1) @ v
        y = y.transpose(1, 2).reshape(B, T, H * hd)
        return self.o_proj(y)


class LlamaMLP(nn.Module):
    def __init__(self, d=16, hidden=32):
        super().__init__()
        self.gate_proj = nn.Linear(d, hidden, bias=False)
        self.up_proj = nn.Linear(d, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.input_layernorm = RMSNorm(d)
        self.self_attn = LlamaAttention(d)
        self.post_attention_layernorm = RMSNorm(d)
        self.mlp = LlamaMLP(d)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class Llama(nn.Module):
    def __init__(self, vocab=32, d=16, layers=2, head_dim=4, max_pos=16):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([LlamaDecoderLayer(d) for _ in range(layers)])
        self.norm = RMSNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
        freqs = torch.outer(torch.arange(max_pos).float(), inv_freq)
        emb = torch.cat([freqs, freqs], -1)
        self.register_buffer("rope_cos", emb.cos())
        self.register_buffer("rope_sin", emb.sin())

    def forward(self, idx):
        T = idx.shape[1]
        cos, sin = self.rope_cos[:T], self.rope_sin[:T]
        x = self.embed_tokens(idx)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.lm_head(self.norm(x))


# --------------------------------------------------------------------------- audio_stem

class AudioStem(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(1, 8, 9, stride=2, padding=4)
        self.norm1 = nn.GroupNorm(2, 8)
        self.conv2 = nn.Conv1d(8, 16, 5, stride=2, padding=2, bias=False)
        self.norm2 = nn.GroupNorm(4, 16)
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        x = F.gelu(self.norm1(self.conv1(x)))
        x = F.gelu(self.norm2(self.conv2(x)))
        return self.fc(x.mean(-1))


# --------------------------------------------------------------------------- unet

class DoubleConv(nn.Module):
    def __init__(self, inp, out):
        super().__init__()
        self.block = nn.Sequential(nn.Conv2d(inp, out, 3, padding=1, bias=False), nn.BatchNorm2d(out), nn.ReLU(inplace=True),
                                   nn.Conv2d(out, out, 3, padding=1, bias=False), nn.BatchNorm2d(out), nn.ReLU(inplace=True))

    def forward(self, x):
        return self.block(x)


class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc1 = DoubleConv(3, 8)
        self.enc2 = DoubleConv(8, 16)
        self.bottleneck = DoubleConv(16, 32)
        self.up2 = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.dec2 = DoubleConv(32, 16)
        self.up1 = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.dec1 = DoubleConv(16, 8)
        self.out = nn.Conv2d(8, 2, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        b = self.bottleneck(F.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(b), e2], 1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], 1))
        return self.out(d1)


# --------------------------------------------------------------------------- seq2seq

class Seq2Seq(nn.Module):
    """A tiny encoder-decoder transformer over one token sequence: the encoder reads it, the decoder
    reads it again under a causal mask (a bool buffer sliced to the length) and attends to the
    encoder's output; post-norm layers, each stack with its final LayerNorm."""

    def __init__(self, vocab=20, d=16, max_len=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        enc = nn.TransformerEncoderLayer(d, 2, 32, dropout=0.0, batch_first=True)
        dec = nn.TransformerDecoderLayer(d, 2, 32, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(enc, 1, norm=nn.LayerNorm(d), enable_nested_tensor=False)
        self.decoder = nn.TransformerDecoder(dec, 2, norm=nn.LayerNorm(d))
        self.head = nn.Linear(d, vocab)
        self.register_buffer("causal", torch.triu(torch.ones(max_len, max_len, dtype=torch.bool), 1))

    def forward(self, ids):
        T = ids.shape[1]
        x = self.embed(ids)
        memory = self.encoder(x)
        return self.head(self.decoder(x, memory, tgt_mask=self.causal[:T, :T]))


# --------------------------------------------------------------------------- no_bias (torch >= 2.1)

class NoBias(nn.Module):
    """Layers without biases, as recent models build them: a pre-norm TransformerEncoderLayer with
    bias=False (its attention, linears and norms), a MultiheadAttention with bias=False, a LayerNorm
    with elementwise_affine=False. Needs torch >= 2.1 (the bias= arguments)."""

    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, activation="gelu", batch_first=True, norm_first=True,
                                                bias=False)
        self.attn = nn.MultiheadAttention(16, 2, bias=False, batch_first=True)
        self.norm = nn.LayerNorm(16, elementwise_affine=False)

    def forward(self, x):
        h = self.layer(x)
        h = h + self.attn(h, h, h, need_weights=False)[0]
        return self.norm(h)


# --------------------------------------------------------------------------- generation

def float_input(shape):
    return lambda: torch.randn(*shape)


def ids_input(shape, vocab=32):
    return lambda: torch.randint(0, vocab, shape, dtype=torch.int64)


# name, constructor, ref.input, ref.input_b
MODELS = [
    ("resnet18", ResNet18, float_input((2, 3, 32, 32)), float_input((3, 3, 32, 32))),
    ("mobilenet_v2", MobileNetV2, float_input((2, 3, 32, 32)), float_input((1, 3, 32, 32))),
    ("vit", ViT, float_input((2, 3, 32, 32)), float_input((3, 3, 32, 32))),
    ("gpt2", GPT2, ids_input((2, 7)), ids_input((3, 11))),
    ("llama", Llama, ids_input((2, 6)), ids_input((1, 9))),
    ("audio_stem", AudioStem, float_input((2, 1, 64)), float_input((3, 1, 64))),
    ("unet", UNet, float_input((2, 3, 16, 16)), float_input((1, 3, 16, 16))),
    ("seq2seq", Seq2Seq, ids_input((2, 5), 20), ids_input((3, 9), 20)),
    ("no_bias", NoBias, float_input((2, 5, 16)), float_input((3, 7, 16))),  # (torch >= 2.1)
]

NORMS = (nn.LayerNorm, nn.GroupNorm, RMSNorm, nn.modules.batchnorm._BatchNorm)


def randomize_norms(model):
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, NORMS):
                if getattr(m, "weight", None) is not None:
                    m.weight.uniform_(0.5, 1.5)
                if getattr(m, "bias", None) is not None:
                    m.bias.uniform_(-0.5, 0.5)


def build(name, ctor, make_input, make_input_b):
    torch.manual_seed(SEED)
    model = ctor()
    randomize_norms(model)
    if any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules()):
        model.train()
        with torch.no_grad():
            for _ in range(3):
                model(make_input())
    model.eval()

    x, x_b = make_input(), make_input_b()
    y_b = model(x_b).detach()
    y = model(x)
    r = torch.randn(y.shape)
    params = dict(model.named_parameters())  # a tied weight once, under its first name
    grads = torch.autograd.grad((y * r).sum(), list(params.values()))

    tensors = {}
    for k, v in model.state_dict().items():
        assert v.dtype in (torch.float32, torch.int64, torch.bool), (k, v.dtype)
        tensors[k] = v.detach().clone()
    tensors.update({"ref.input": x, "ref.output": y.detach(), "ref.input_b": x_b, "ref.output_b": y_b, "ref.r": r})
    for (k, _), g in zip(params.items(), grads):
        tensors[f"ref.grad.{k}"] = g
    assert not any(k.startswith("ref.") for k in model.state_dict())
    return model, tensors


def check(path, tensors, model):
    meta, back = read_file(path)
    assert set(back) == set(tensors), sorted(set(back) ^ set(tensors))
    for k, v in tensors.items():
        assert back[k].dtype == v.dtype and back[k].shape == v.shape and torch.equal(back[k], v.cpu()), k
    # the file alone reproduces the reference: load it into a fresh model and rerun the forward
    fresh = type(model)()
    fresh.load_state_dict({k: v for k, v in back.items() if not k.startswith("ref.")}, strict=True)
    fresh.eval()
    with torch.no_grad():
        for suffix in ("", "_b"):
            out = fresh(back[f"ref.input{suffix}"])
            assert torch.allclose(out, back[f"ref.output{suffix}"], rtol=1e-5, atol=1e-6), (path, suffix)
    return meta


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    only = set(sys.argv[1:])  # (names: regenerate those files only)
    for name, ctor, make_input, make_input_b in MODELS:
        if only and name not in only:
            continue
        model, tensors = build(name, ctor, make_input, make_input_b)
        path = os.path.join(OUT_DIR, f"{name}.safetensors")
        meta = {"generator": "tools/zoo_reference.py", "torch": torch.__version__, "model": name}
        save_file(tensors, path, metadata=meta)
        assert check(path, tensors, model) == meta
        n_params = sum(p.numel() for p in model.parameters())
        print(f"{name:13s} {n_params:7d} parameters  {os.path.getsize(path):8d} bytes  {path}")


if __name__ == "__main__":
    main()
