// typex-inspect: what a saved program or a safetensors file holds, from the command line.
//
//   typex-inspect model.typex                 the program, as typex prints it (torch.export's form)
//   typex-inspect --signature model.typex     its graph signature
//   typex-inspect --ranges model.typex        its range constraints
//   typex-inspect --json model.typex          the archive's JSON description
//   typex-inspect --dot model.typex           its graph as Graphviz DOT (`| dot -Tsvg -o model.svg`)
//   typex-inspect --dot --collapse model.typex  the same, repeated identical layers drawn once
//   typex-inspect --tensors any.safetensors   every tensor: name, dtype, shape, bytes, offsets
//   typex-inspect --metadata any.safetensors  the __metadata__ entries
//
// Without an option, an archive prints its program and any other safetensors file its tensors.
// Exit status: 0, or 1 when the file cannot be read or is malformed (the reason on stderr), 2 for
// a usage error. Installed with the package (bin/typex-inspect).
#include <typex/export/archive.hpp>
#include <typex/export/dot.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

namespace {
constexpr std::string_view usage =
    "usage: typex-inspect [--program | --signature | --ranges | --json | --dot [--collapse] | --tensors | --metadata] FILE\n"
    "  FILE  a program archive (typex::save) or any safetensors file\n"
    "  --program    the program, as typex prints it (the default for an archive)\n"
    "  --signature  the graph signature: inputs (user inputs, parameters, buffers, constants), outputs\n"
    "  --ranges     the range constraints of the program's symbols\n"
    "  --json       the archive's JSON description of the program\n"
    "  --dot        the program's graph as Graphviz DOT, coloured by its signature (dot -Tsvg draws it)\n"
    "  --collapse   with --dot: runs of identical layers (layers.0 .. layers.11) drawn once\n"
    "  --tensors    every tensor: name, dtype, shape, bytes, data offsets (the default for other files)\n"
    "  --metadata   the file's __metadata__\n";

void print(std::string_view s) { std::fwrite(s.data(), 1, s.size(), stdout); }

std::string shape_text(const typex::safetensors_entry& e) {
  std::string s = "[";
  for (std::size_t i = 0; i < e.shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(e.shape[i]);
  }
  return s + "]";
}
}  // namespace

int main(int argc, char** argv) {
  std::string_view mode, path;
  bool collapse = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "-h" || a == "--help") {
      print(usage);
      return 0;
    }
    if (a == "--collapse") {
      collapse = true;
    } else if (a.starts_with("--")) {
      if (!mode.empty()) {
        std::fprintf(stderr, "typex-inspect: one option at a time\n%s", usage.data());
        return 2;
      }
      mode = a;
    } else if (path.empty()) {
      path = a;
    } else {
      std::fprintf(stderr, "typex-inspect: one file at a time\n%s", usage.data());
      return 2;
    }
  }
  constexpr std::string_view modes[] = {"--program", "--signature", "--ranges", "--json", "--dot", "--tensors", "--metadata"};
  bool known = mode.empty();
  for (const auto m : modes) known = known || m == mode;
  if (path.empty() || !known) {
    std::fprintf(stderr, "typex-inspect: %s\n%s", path.empty() ? "no file given" : "unknown option", usage.data());
    return 2;
  }
  if (collapse && mode.empty()) mode = "--dot";  // (--collapse alone: the collapsed picture)
  if (collapse && mode != "--dot") {
    std::fprintf(stderr, "typex-inspect: --collapse goes with --dot\n%s", usage.data());
    return 2;
  }
  try {
    const typex::safetensors_file file = typex::safetensors_file::open(std::string(path));
    const bool archive = file.metadata("format") == std::optional<std::string_view>("typex.exported_program");
    if (mode.empty()) mode = archive ? "--program" : "--tensors";
    if (mode == "--tensors") {
      std::printf("%s: %zu tensors, %llu bytes (header %llu)\n", file.source().c_str(), file.entries().size(),
                  static_cast<unsigned long long>(file.size()), static_cast<unsigned long long>(file.header_bytes()));
      for (const auto& e : file.entries()) {
        std::printf("  %s  %s%s  %llu bytes  [%llu, %llu)\n", e.name.c_str(), e.dtype_name.c_str(), shape_text(e).c_str(),
                    static_cast<unsigned long long>(e.end - e.begin), static_cast<unsigned long long>(e.begin),
                    static_cast<unsigned long long>(e.end));
      }
      return 0;
    }
    if (mode == "--metadata") {
      for (const auto& [k, v] : file.metadata()) std::printf("%s: %s\n", k.c_str(), v.c_str());
      return 0;
    }
    if (!archive) {
      std::fprintf(stderr, "typex-inspect: %s is a safetensors file but not a program archive; --tensors and --metadata read it\n",
                   file.source().c_str());
      return 1;
    }
    const typex::exported_program p = typex::detail::read_archive(file).program;
    if (mode == "--program") print(p.to_string());
    else if (mode == "--signature") print(p.signature().to_string());
    else if (mode == "--ranges") print(p.ranges().to_string() + "\n");
    else if (mode == "--dot") print(typex::to_dot(p, {.collapse_repeated = collapse}));
    else print(typex::describe_archive(p) + "\n");
    return 0;
  } catch (const typex::error& e) {
    std::fprintf(stderr, "typex-inspect: %s\n", e.what());
    return 1;
  }
}
