// Load time against file size (1 MiB .. 1 GiB): typex's safetensors reader and program archives
// against reading the file once (the physical limit: read(2) into one buffer). Files are made in
// $TYPEX_BENCH_DIR (default /tmp/typex_load_bench) on first use and kept, so that
// benchmarks/load/torch_load.py times PyTorch's safetensors on the very same files in the same run
// (benchmarks/load/run_load.sh). Warm page cache: every file is read once before it is timed.
//
//   read_file        read(2) of the whole file into an aligned buffer
//   typex_map        safetensors_file::open (mapped) + tensors(): tensors usable, pages not touched
//   typex_map_touch  the same, then one read per 4 KiB page of every tensor (all data in memory)
//   typex_copy       read_mode::copy + tensors(): the file read into memory, tensors view it
//   typex_into_module  mapped, then copied into existing tensors (load_state_dict's path)
//   typex_archive    typex::load of a program archive whose weights are this size (mapped)
#include <typex/export/archive.hpp>
#include <typex/ops/all.hpp>

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <fcntl.h>
#include <unistd.h>

namespace {
using namespace typex;

std::filesystem::path bench_dir() {
  const char* d = std::getenv("TYPEX_BENCH_DIR");
  std::filesystem::path p = d ? d : "/tmp/typex_load_bench";
  std::filesystem::create_directories(p);
  return p;
}

constexpr int tensors_per_file = 16;

// A state dict of `mib` MiB in 16 f32 tensors (a model's layers), values that are not all zero.
named_tensors weights(index_t mib) {
  named_tensors sd;
  const index_t per = mib * 1024 * 1024 / 4 / tensors_per_file;
  for (int k = 0; k < tensors_per_file; ++k) {
    any_tensor t(dtype::f32, {per});
    float* p = t.data<float>();
    for (index_t i = 0; i < per; ++i) p[i] = static_cast<float>((i * 7 + k) % 1000) * 1e-3f;
    sd.insert("layers." + std::to_string(k) + ".weight", t);
  }
  return sd;
}

void warm(const std::filesystem::path& p) {
  std::vector<char> buf(1 << 20);
  const int fd = ::open(p.c_str(), O_RDONLY);
  while (::read(fd, buf.data(), buf.size()) > 0) {
  }
  ::close(fd);
}

std::filesystem::path safetensors_path(index_t mib) {
  const auto p = bench_dir() / ("weights_" + std::to_string(mib) + "MiB.safetensors");
  if (!std::filesystem::exists(p)) save_safetensors(p, weights(mib));
  warm(p);
  return p;
}

// A program reading every weight: out = x + w_0 + ... + w_15 (each w a lifted parameter).
std::filesystem::path archive_path(index_t mib) {
  const auto p = bench_dir() / ("program_" + std::to_string(mib) + "MiB.typex");
  if (!std::filesystem::exists(p)) {
    const named_tensors sd = weights(mib);
    const index_t per = sd.begin()->second.numel();
    ir::graph g;
    std::vector<input_spec> ins;
    std::vector<ir::node_id> ws;
    for (const auto& [fqn, t] : sd) {
      const std::string ph = placeholder_name(input_kind::parameter, fqn);
      ws.push_back(g.add_placeholder(ph, {dtype::f32, {per}}));
      ins.push_back({input_kind::parameter, ph, fqn});
    }
    ir::node_id acc = g.add_placeholder("x", {dtype::f32, {per}});
    ins.push_back({input_kind::user_input, "x", ""});
    for (const ir::node_id w : ws)
      acc = g.add_call({.target = op_id_of<add_op>, .args = {ir::value_ref{acc}, ir::value_ref{w}}, .vals = {{dtype::f32, {per}}}});
    g.set_output({ir::value_ref{acc}});
    const std::string out = g[acc].name;
    const tree_spec leaf = tree_spec::leaf();
    const exported_program ep(std::move(g), graph_signature(ins, {{output_kind::user_output, out, ""}}), sd, {}, {},
                              {{"", module_call_signature{{"x"}, {out}, tree_spec::node(node_kind::tuple, "", {}, {leaf}), leaf}}});
    save(ep, p);
  }
  warm(p);
  return p;
}

void set_bytes(benchmark::State& state, const std::filesystem::path& p) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(std::filesystem::file_size(p)));
  state.counters["MiB"] = static_cast<double>(state.range(0));
}

void read_file(benchmark::State& state) {
  const auto p = safetensors_path(state.range(0));
  const std::size_t n = std::filesystem::file_size(p);
  storage buf(n);  // (allocated once: the limit is the copy out of the page cache)
  for (auto _ : state) {
    const int fd = ::open(p.c_str(), O_RDONLY);
    std::size_t done = 0;
    while (done < n) {
      const ::ssize_t r = ::read(fd, buf.data() + done, n - done);
      if (r <= 0) break;
      done += static_cast<std::size_t>(r);
    }
    ::close(fd);
    benchmark::DoNotOptimize(buf.data());
  }
  set_bytes(state, p);
}

void typex_map(benchmark::State& state) {
  const auto p = safetensors_path(state.range(0));
  for (auto _ : state) {
    named_tensors sd = load_safetensors(p);
    benchmark::DoNotOptimize(sd.begin()->second.raw_data());
  }
  set_bytes(state, p);
}

float touch(const named_tensors& sd) {
  float s = 0;
  for (const auto& [n, t] : sd) {
    const float* d = t.data<float>();
    for (index_t i = 0; i < t.numel(); i += 1024) s += d[i];
  }
  return s;
}

void typex_map_touch(benchmark::State& state) {
  const auto p = safetensors_path(state.range(0));
  for (auto _ : state) {
    named_tensors sd = load_safetensors(p);
    benchmark::DoNotOptimize(touch(sd));
  }
  set_bytes(state, p);
}

void typex_copy(benchmark::State& state) {
  const auto p = safetensors_path(state.range(0));
  for (auto _ : state) {
    named_tensors sd = load_safetensors(p, read_mode::copy);
    benchmark::DoNotOptimize(sd.begin()->second.raw_data());
  }
  set_bytes(state, p);
}

void typex_into_module(benchmark::State& state) {
  const auto p = safetensors_path(state.range(0));
  std::vector<std::pair<std::string, any_tensor>> dst;
  for (const auto& [n, t] : load_safetensors(p, read_mode::copy)) dst.emplace_back(n, any_tensor(t.scalar_type(), t.extents()));
  for (auto _ : state) {
    const load_result r = detail::load_named(dst, load_safetensors(p), load_options{}, "bench");
    benchmark::DoNotOptimize(r.missing_keys.data());
  }
  set_bytes(state, p);
}

void typex_archive(benchmark::State& state) {
  const auto p = archive_path(state.range(0));
  for (auto _ : state) {
    exported_program ep = load(p);
    benchmark::DoNotOptimize(ep.state_dict().begin()->second.raw_data());
  }
  set_bytes(state, p);
}

void sizes(benchmark::internal::Benchmark* b) {
  for (const index_t mib : {1, 16, 128, 1024}) b->Arg(mib);
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}
}  // namespace

BENCHMARK(read_file)->Apply(sizes);
BENCHMARK(typex_map)->Apply(sizes);
BENCHMARK(typex_map_touch)->Apply(sizes);
BENCHMARK(typex_copy)->Apply(sizes);
BENCHMARK(typex_into_module)->Apply(sizes);
BENCHMARK(typex_archive)->Apply(sizes);
BENCHMARK_MAIN();
