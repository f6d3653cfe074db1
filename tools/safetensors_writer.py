#!/usr/bin/env python3
"""A dependency-free safetensors writer (standard library + torch only), and a tiny reader.

Use: getting a PyTorch model's weights to typex without Hugging Face's `safetensors` package (not in
Debian, and not always installable where torch is). typex loads .safetensors files (load_safetensors
/ typex::load); this script writes them from anything torch can produce:

    from safetensors_writer import save_file          # with tools/ on sys.path
    save_file(model.state_dict(), "model.safetensors", metadata={"format": "pt"})

or, from the command line, for a state dict saved with torch.save(model.state_dict(), "model.pt"):

    python3 tools/safetensors_writer.py model.pt model.safetensors [--metadata key=value ...]
    python3 tools/safetensors_writer.py --self-test

The file is written exactly as the format specifies: 8 bytes, a little-endian u64 N; N bytes of a
JSON header {"<name>": {"dtype": ..., "shape": [...], "data_offsets": [begin, end]}, ...,
"__metadata__": {str: str}} (optional), padded with spaces to a multiple of 8 bytes; then the data
buffer, every tensor's bytes contiguous, row-major and little-endian, at [begin, end) relative to the
start of the buffer, with no gaps. Tensors are laid out as the `safetensors` package lays them out
(by dtype, widest first, then by name: every tensor aligned to its element size), so a file is
byte-identical to safetensors.torch.save_file's (the self-test checks this on the package-written
files in tests/data/safetensors/). dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL.

Tensors that share storage (tied weights, e.g. lm_head.weight = wte.weight in a state dict) are
written once per name: each name gets its own copy of its own contiguous bytes, as safetensors'
save_file does with a cloned dict (safetensors' save_file would refuse shared tensors; typex's
loader is fine with either). Views (non-contiguous, offset into a larger storage) are written as
their own elements only.

read_file(path) is a tiny reader (json + struct) used by the self-test and by tools/zoo_reference.py
to check what was written: it validates the header and returns the tensors.
"""
import json
import os
import struct
import sys

import torch

# torch dtype -> (safetensors name, element size in bytes, numpy dtype string of the little-endian
# bytes written; bf16 is written through its int16 bit pattern)
_DTYPES = {
    torch.float64: ("F64", 8, "<f8"),
    torch.float32: ("F32", 4, "<f4"),
    torch.float16: ("F16", 2, "<f2"),
    torch.bfloat16: ("BF16", 2, "<i2"),
    torch.int64: ("I64", 8, "<i8"),
    torch.int32: ("I32", 4, "<i4"),
    torch.int16: ("I16", 2, "<i2"),
    torch.int8: ("I8", 1, "i1"),
    torch.uint8: ("U8", 1, "u1"),
    torch.bool: ("BOOL", 1, "?"),
}
_BY_NAME = {name: (dtype, size) for dtype, (name, size, _) in _DTYPES.items()}
# safetensors' own layout order: dtype descending in its Dtype enum, then name; so every tensor
# starts at a multiple of its element size, and files match the `safetensors` package byte for byte
_ORDER = ["I64", "F64", "F32", "I32", "BF16", "F16", "I16", "I8", "U8", "BOOL"]


def tensor_bytes(t):
    """The tensor's own elements, row-major, little-endian (a fresh bytes object)."""
    if t.dtype not in _DTYPES:
        raise TypeError(f"dtype {t.dtype} is not supported (supported: "
                        f"{', '.join(v[0] for v in _DTYPES.values())})")
    le = _DTYPES[t.dtype][2]
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)  # numpy has no bfloat16: write its bit pattern
    return t.numpy().astype(le, copy=False).tobytes()  # a no-op conversion on little-endian hosts


def save_file(tensors, path, metadata=None):
    """Writes `tensors` (a mapping name -> torch.Tensor) to `path` in the safetensors format.

    metadata: an optional mapping str -> str, stored under "__metadata__". The file is written to a
    temporary next to `path` and renamed into place, so a reader never sees a half-written file.
    """
    if metadata is not None:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise TypeError("metadata must map str to str")
    header = {}
    blobs = []
    offset = 0
    for name, t in tensors.items():
        if not isinstance(name, str) or name == "__metadata__" or name == "":
            raise ValueError(f"invalid tensor name {name!r}")
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name}: not a tensor ({type(t).__name__})")
        if t.dtype not in _DTYPES:
            raise TypeError(f"{name}: dtype {t.dtype} is not supported")
    for name in sorted(tensors, key=lambda n: (_ORDER.index(_DTYPES[tensors[n].dtype][0]), n)):
        t = tensors[name]
        if t.is_sparse or (hasattr(t, "is_quantized") and t.is_quantized):
            raise TypeError(f"{name}: sparse and quantized tensors are not supported")
        data = tensor_bytes(t)
        expected = t.numel() * _DTYPES[t.dtype][1]
        assert len(data) == expected, (name, len(data), expected)
        header[name] = {"dtype": _DTYPES[t.dtype][0], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata is not None:
        header = dict([("__metadata__", dict(metadata))] + list(header.items()))
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-(8 + len(text)) % 8)  # data starts at a multiple of 8 bytes
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)
    os.replace(tmp, path)


def read_raw(path):
    """Parses a safetensors file: returns (metadata or None, {name: (dtype name, shape, bytes)}).

    Checks the layout as strictly as typex's loader: header length within the file, JSON object,
    known dtypes, offsets matching dtype x shape, tensors covering the data buffer without gaps or
    overlaps."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError("file shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        raise ValueError(f"header length {n} runs past the end of the file ({len(blob)} bytes)")
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    if not isinstance(header, dict):
        raise ValueError("header is not a JSON object")
    data = blob[8 + n:]
    metadata = header.pop("__metadata__", None)
    if metadata is not None and not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise ValueError("__metadata__ must map str to str")
    out = {}
    spans = []
    for name, info in header.items():
        dtype, shape, (begin, end) = info["dtype"], info["shape"], info["data_offsets"]
        if dtype not in _BY_NAME:
            raise ValueError(f"{name}: unknown dtype {dtype}")
        numel = 1
        for d in shape:
            numel *= d
        if end - begin != numel * _BY_NAME[dtype][1] or begin < 0 or end > len(data):
            raise ValueError(f"{name}: data_offsets {[begin, end]} do not match {dtype} {shape}")
        spans.append((begin, end, name))
        out[name] = (dtype, list(shape), data[begin:end])
    pos = 0
    for begin, end, name in sorted(spans):
        if begin != pos:
            raise ValueError(f"{name}: gap or overlap in the data buffer at {pos}")
        pos = end
    if pos != len(data):
        raise ValueError(f"{len(data) - pos} bytes after the last tensor")
    return metadata, out


def read_file(path):
    """Reads a safetensors file: returns (metadata or None, {name: torch.Tensor})."""
    metadata, raw = read_raw(path)
    tensors = {}
    for name, (dtype, shape, data) in raw.items():
        torch_dtype = _BY_NAME[dtype][0]
        if len(data) == 0:
            tensors[name] = torch.empty(shape, dtype=torch_dtype)
            continue
        t = torch.frombuffer(bytearray(data), dtype=torch_dtype).reshape(shape)
        if sys.byteorder != "little" and _BY_NAME[dtype][1] > 1:
            t = torch.from_numpy(t.numpy().byteswap())  # stored little-endian
        tensors[name] = t.clone()
    return metadata, tensors


def self_test():
    """Writes a file with every dtype (and scalars, empty tensors, views, shared storage), parses it
    back with read_raw / read_file and compares bytes and values. Returns 0 on success."""
    import tempfile
    g = torch.Generator().manual_seed(7)
    base = torch.randn(4, 6, generator=g)
    tensors = {
        "f64": torch.randn(3, 2, generator=g, dtype=torch.float64),
        "f32": torch.randn(2, 3, 4, generator=g),
        "f16": torch.randn(5, generator=g).half(),
        "bf16": torch.randn(3, 3, generator=g).bfloat16(),
        "i64": torch.tensor([[-1, 2 ** 40], [3, -2 ** 62]], dtype=torch.int64),
        "i32": torch.tensor([-7, 0, 2 ** 30], dtype=torch.int32),
        "i16": torch.tensor([-300, 300], dtype=torch.int16),
        "i8": torch.tensor([-128, 127, 0], dtype=torch.int8),
        "u8": torch.tensor([0, 255, 17], dtype=torch.uint8),
        "bool": torch.tensor([True, False, True, True]),
        "scalar": torch.tensor(3.5),
        "empty": torch.zeros(0, 3),
        "view.transposed": base.t(),                 # non-contiguous
        "view.slice": base[1:3, 2:],                 # offset into a larger storage
        "tied.a": base,
        "tied.b": base,                              # same storage, written once per name
    }
    meta = {"format": "pt", "note": "self-test ✓"}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.safetensors")
        save_file(tensors, path, metadata=meta)
        with open(path, "rb") as f:
            blob = f.read()
        (n,) = struct.unpack("<Q", blob[:8])
        assert (8 + n) % 8 == 0, "header not padded to a multiple of 8"
        assert blob[8:8 + n].rstrip(b" ").endswith(b"}")
        got_meta, raw = read_raw(path)
        assert got_meta == meta, got_meta
        assert set(raw) == set(tensors), set(raw) ^ set(tensors)
        for name, t in tensors.items():
            dtype, shape, data = raw[name]
            assert dtype == _DTYPES[t.dtype][0], (name, dtype)
            assert shape == list(t.shape), (name, shape)
            c = t.contiguous()
            want = (c.view(torch.int16) if c.dtype == torch.bfloat16 else c).numpy().astype(
                _DTYPES[t.dtype][2]).tobytes()
            assert data == want, f"{name}: bytes differ"
        # known little-endian encodings, independent of numpy
        assert raw["i32"][2] == struct.pack("<3i", -7, 0, 2 ** 30)
        assert raw["f64"][2] == struct.pack("<6d", *tensors["f64"].flatten().tolist())
        assert raw["bool"][2] == b"\x01\x00\x01\x01"
        assert raw["bf16"][2] == b"".join(struct.pack("<I", struct.unpack("<I", struct.pack("<f", v))[0])[2:]
                                          for v in tensors["bf16"].float().flatten().tolist())
        _, back = read_file(path)
        for name, t in tensors.items():
            assert back[name].dtype == t.dtype and torch.equal(back[name], t), f"{name}: values differ"
        # the CLI path: a torch.save'd state dict
        pt = os.path.join(d, "m.pt")
        model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
        torch.save(model.state_dict(), pt)
        out = os.path.join(d, "m.safetensors")
        main([pt, out, "--metadata", "format=pt"])
        got_meta, back = read_file(out)
        assert got_meta == {"format": "pt"}
        sd = model.state_dict()
        assert set(back) == set(sd) and all(torch.equal(back[k], v) for k, v in sd.items())
        assert back["1.num_batches_tracked"].dtype == torch.int64
        # files written by the `safetensors` package (tools/safetensors_reference.py): read and
        # rewritten, they come out byte for byte the same
        ref_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "safetensors")
        refs = sorted(f for f in os.listdir(ref_dir) if f.endswith(".safetensors")) if os.path.isdir(ref_dir) else []
        for f in refs:
            meta_ref, t = read_file(os.path.join(ref_dir, f))
            save_file(t, os.path.join(d, f), metadata=meta_ref)
            with open(os.path.join(ref_dir, f), "rb") as a, open(os.path.join(d, f), "rb") as b:
                assert a.read() == b.read(), f"{f}: not byte-identical to the safetensors package's file"
    print(f"safetensors_writer self-test passed ({len(tensors)} tensors; {len(refs)} files of the safetensors "
          f"package rewritten byte-identically; torch {torch.__version__})")
    return 0


def _state_dict_of(obj, source):
    if isinstance(obj, torch.nn.Module):
        return obj.state_dict()
    if isinstance(obj, dict):
        if obj and all(isinstance(v, torch.Tensor) for v in obj.values()):
            return obj
        for key in ("state_dict", "model_state_dict", "model"):  # common checkpoint layouts
            if key in obj:
                return _state_dict_of(obj[key], f"{source}[{key!r}]")
    raise SystemExit(f"{source}: expected a state dict (a dict of tensors) or an nn.Module, "
                     f"got {type(obj).__name__}")


def main(argv):
    import argparse
    p = argparse.ArgumentParser(description="Write a torch.save'd state dict as a .safetensors file "
                                            "(no safetensors package needed).")
    p.add_argument("input", nargs="?", help="a file written by torch.save (a state dict)")
    p.add_argument("output", nargs="?", help="the .safetensors file to write")
    p.add_argument("--metadata", action="append", default=[], metavar="KEY=VALUE",
                   help="a __metadata__ entry (repeatable)")
    p.add_argument("--self-test", action="store_true", help="write and read back a test file")
    args = p.parse_args(argv)
    if args.self_test:
        return self_test()
    if not args.input or not args.output:
        p.error("input and output are required (or --self-test)")
    metadata = {}
    for kv in args.metadata:
        if "=" not in kv:
            p.error(f"--metadata {kv!r}: expected KEY=VALUE")
        k, v = kv.split("=", 1)
        metadata[k] = v
    obj = torch.load(args.input, map_location="cpu")
    sd = _state_dict_of(obj, args.input)
    save_file(dict(sd), args.output, metadata=metadata or None)
    print(f"{args.output}: {len(sd)} tensors, {os.path.getsize(args.output)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
