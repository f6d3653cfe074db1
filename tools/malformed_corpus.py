#!/usr/bin/env python3
"""The corpus of malformed safetensors files and program archives (tests/data/malformed/), and the
fuzz target's seeds (tests/robustness/files_corpus/, the same files plus valid ones).

Each file breaks one rule the readers enforce; EXPECTED lists, one file a line,
    <file> <exception> <what the message must contain>
and tests/robustness/files.cpp asserts each. The program archives are written here, in Python, from
the format docs/saving_and_loading.md documents (tests/golden/archive_small.json's description) -
which is also the proof that a reader written elsewhere can produce files typex loads: `valid.typex`
must load and run. Standard library only. Run from the repository root:
    python3 tools/malformed_corpus.py
"""
import json
import os
import shutil
import struct

OUT = os.path.join("tests", "data", "malformed")
SEEDS = os.path.join("tests", "robustness", "files_corpus")
expected = []


def header_file(header_bytes, data=b""):
    return struct.pack("<Q", len(header_bytes)) + header_bytes + data


def st(entries, data, metadata=None, pad=True):
    """A safetensors file from {name: (dtype, shape, [b, e])} and the data bytes."""
    h = {}
    if metadata is not None:
        h["__metadata__"] = metadata
    for k, (dt, shape, offs) in entries.items():
        h[k] = {"dtype": dt, "shape": shape, "data_offsets": offs}
    text = json.dumps(h, separators=(",", ":")).encode()
    if pad:
        text += b" " * ((-(8 + len(text))) % 8)
    return header_file(text, data)


def emit(name, content, exc, message):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(content)
    expected.append(f"{name} {exc} {message}")


f32x4 = struct.pack("<4f", 1.0, 2.0, 3.0, 4.0)

# ---- safetensors: the container
emit("empty.safetensors", b"", "format", "too short for a safetensors file")
emit("short_length.safetensors", b"\x10\x00\x00", "format", "too short for a safetensors file")
emit("header_past_end.safetensors", struct.pack("<Q", 4096) + b"{}", "format", "only 2 follow the length")
emit("header_absurd.safetensors", struct.pack("<Q", 1 << 62) + b"{}", "format", "more than the format's limit")
emit("header_not_object.safetensors", header_file(b"[1, 2]"), "format", "does not start with '{'")
emit("bad_json.safetensors", header_file(b'{"a": {"dtype": "F32",'), "format", "the header is not valid JSON")
emit("bad_utf8.safetensors", header_file(b'{"\xff\xfe": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}}', f32x4[:4]),
     "format", "the header is not valid JSON")
emit("deep.safetensors", header_file(b'{"a": {"b": {"c": [[1]]}}}'), "format", "nests deeper")
emit("duplicate_name.safetensors",
     header_file(b'{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}',
                 f32x4[:8]), "format", "the header names 'w' twice")
emit("metadata_not_strings.safetensors", st({}, b"", metadata={"n": 1}), "format", "is not a string")
emit("entry_not_object.safetensors", header_file(b'{"w": [1, 2]}'), "format", "its entry is not an object")
emit("no_dtype.safetensors", header_file(b'{"w": {"shape": [1], "data_offsets": [0, 4]}}', f32x4[:4]), "format", "no dtype string")
emit("unknown_dtype.safetensors", st({"w": ("F33", [1], [0, 4])}, f32x4[:4]), "format", "unknown dtype 'F33'")
emit("negative_extent.safetensors", st({"w": ("F32", [-1], [0, 4])}, f32x4[:4]), "format", "not a non-negative integer")
emit("float_extent.safetensors", st({"w": ("F32", [1.5], [0, 4])}, f32x4[:4]), "format", "not a non-negative integer")
emit("absurd_shape.safetensors", st({"w": ("F64", [1 << 40, 1 << 40], [0, 8])}, f32x4[:8]), "format", "more elements than memory can hold")
emit("size_wraps.safetensors", st({"w": ("F64", [1 << 61], [0, 8])}, f32x4[:8]), "format", "needs more bytes than memory can hold")
emit("offsets_not_pair.safetensors", st({"w": ("F32", [1], [0])}, f32x4[:4]), "format", "data_offsets is not a list of two")
emit("offsets_reversed.safetensors", st({"w": ("F32", [0], [4, 0])}, f32x4[:4]), "format", "ends before it begins")
emit("offsets_past_data.safetensors", st({"w": ("F32", [4], [0, 16])}, f32x4[:8]), "format", "reach past the data, which holds 8 bytes")
emit("offsets_wrong_size.safetensors", st({"w": ("F32", [3], [0, 16])}, f32x4), "format", "hold 16 bytes, but F32 [3] needs 12")
emit("overlap.safetensors", st({"a": ("F32", [2], [0, 8]), "b": ("F32", [2], [4, 12])}, f32x4[:12] + b"\0" * 0), "format", "overlap")
emit("gap.safetensors", st({"a": ("F32", [1], [0, 4]), "b": ("F32", [1], [8, 12])}, f32x4[:12]), "format", "belong to no tensor")
emit("trailing.safetensors", st({"a": ("F32", [2], [0, 8])}, f32x4), "format", "trailing bytes belong to no tensor")
emit("truncated.safetensors", st({"a": ("F32", [4], [0, 16])}, f32x4)[:-5], "format", "reach past the data")
emit("sub_byte.safetensors", st({"a": ("F4", [3], [0, 1])}, b"\x00"), "format", "do not fill whole bytes")
emit("bool_byte.safetensors", st({"m": ("BOOL", [4], [0, 4])}, b"\x00\x01\x02\x01"), "format", "its element 2 is the byte 2")
emit("f8_tensor.safetensors", st({"q": ("F8_E4M3", [4], [0, 4])}, b"\x00\x01\x02\x03"), "unsupported", "a safetensors dtype typex does not hold")

# ---- program archives: a valid one written from the documented format, then one rule broken each
with open(os.path.join("tests", "golden", "archive_small.json")) as f:
    program = json.load(f)
tensors = {}
sizes = {"fc1.weight": [8, 4], "fc1.bias": [8], "fc2.weight": [3, 8], "fc2.bias": [3]}
for k, shape in sizes.items():
    n = 1
    for d in shape:
        n *= d
    tensors[k] = ("F32", shape, struct.pack(f"<{n}f", *[((i * 37) % 11 - 5) / 8.0 for i in range(n)]))


def archive(prog, version="1.0", fmt="typex.exported_program", tensors=tensors, extra_meta=None):
    entries, data = {}, b""
    for k, (dt, shape, raw) in tensors.items():
        entries[k] = (dt, shape, [len(data), len(data) + len(raw)])
        data += raw
    meta = {"format": fmt, "typex.format_version": version, "typex.program": json.dumps(prog)}
    if extra_meta:
        meta.update(extra_meta)
    return st(entries, data, metadata=meta)


def edited(path, value):
    p = json.loads(json.dumps(program))
    node = p
    for k in path[:-1]:
        node = node[k]
    if value is None:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return p


valid = archive(program)
with open(os.path.join(OUT, "valid.typex"), "wb") as f:
    f.write(valid)
emit("archive_not_archive.typex", st({"w": ("F32", [1], [0, 4])}, f32x4[:4], metadata={"format": "pt"}), "format",
     "not a typex program archive")
emit("archive_newer_major.typex", archive(program, version="2.3"), "unsupported", "newer than this typex reads")
emit("archive_bad_version.typex", archive(program, version="1"), "format", "expected \"major.minor\"")
emit("archive_program_not_json.typex", st({}, b"", metadata={"format": "typex.exported_program", "typex.format_version": "1.0",
                                                              "typex.program": "{\"graph\": "}), "format", "typex.program: not valid JSON")
emit("archive_no_graph.typex", archive(edited(["graph"], None)), "format", "no 'graph' field")
emit("archive_unknown_op.typex", archive(edited(["graph", "nodes", 6, "target"], "aten.no_such_op.default")), "format",
     "op 'aten.no_such_op.default' is not one this program knows")
emit("archive_forward_ref.typex", archive(edited(["graph", "nodes", 5, "args", 0], {"node": "relu", "output": 0})), "format",
     "reads 'relu', which no earlier node defines")
emit("archive_bad_output_index.typex", archive(edited(["graph", "nodes", 6, "args", 0], {"node": "linear", "output": 7})), "format",
     "reads output 7 of 'linear'")
emit("archive_wrong_arg_kind.typex", archive(edited(["graph", "nodes", 6, "args", 0], {"str": "linear"})), "format",
     "the program it describes is not valid")
emit("archive_missing_tensor.typex", archive(program, tensors={k: v for k, v in tensors.items() if k != "fc2.bias"}), "format",
     "names the tensor 'fc2.bias', which the file does not hold")
emit("archive_weight_shape.typex", archive(program, tensors=dict(tensors, **{"fc2.bias": ("F32", [4], struct.pack("<4f", 0, 0, 0, 0))})),
     "format", "the program it describes is not valid")
emit("archive_weight_dtype.typex", archive(program, tensors=dict(tensors, **{"fc2.bias": ("F64", [3], struct.pack("<3d", 0, 0, 0))})),
     "format", "the program it describes is not valid")
emit("archive_bad_sym.typex", archive(edited(["graph", "nodes", 4, "vals", 0, "shape", 0], {"op": "pow", "lhs": 1, "rhs": 2})), "format",
     "'pow' is none of add sub mul")
emit("archive_empty_range.typex", archive(edited(["range_constraints", 0, "min"], 99)), "format", "has an empty range")
emit("archive_huge_int.typex", archive(edited(["range_constraints", 0, "max"], 1 << 64 - 1)), "format", "expected an integer")
emit("archive_dup_name.typex", archive(edited(["graph", "nodes", 6, "name"], "linear")), "format", "is not a unique identifier")
emit("archive_no_output.typex", archive(edited(["graph", "nodes"], program["graph"]["nodes"][:-1])), "format", "no output node")
emit("archive_signature_mismatch.typex", archive(edited(["signature", "inputs", 0, "arg"], "p_nope")), "format",
     "the program it describes is not valid")
deep = {"op": "add", "lhs": 1, "rhs": 1}
for _ in range(300):
    deep = {"op": "add", "lhs": deep, "rhs": 1}
emit("archive_deep.typex", archive(edited(["graph", "nodes", 4, "vals", 0, "shape", 0], deep)), "format", "nests deeper than 256 levels")

with open(os.path.join(OUT, "EXPECTED"), "w") as f:
    f.write("# <file> <exception: format | unsupported> <message contains>  (tools/malformed_corpus.py; do not edit)\n")
    f.write("\n".join(expected) + "\n")

# the fuzz target's seeds: every malformed file, the valid archive, and valid safetensors files
if os.path.isdir(SEEDS):
    shutil.rmtree(SEEDS)
os.makedirs(SEEDS)
for name in sorted(os.listdir(OUT)):
    if name != "EXPECTED":
        shutil.copy(os.path.join(OUT, name), os.path.join(SEEDS, name))
for name in ["cnn_bn.safetensors", "cnn_bn_bf16.safetensors"]:
    shutil.copy(os.path.join("tests", "data", "safetensors", name), os.path.join(SEEDS, name))
print(f"wrote {len(expected)} malformed files and valid.typex to {OUT}, {len(os.listdir(SEEDS))} seeds to {SEEDS}")
