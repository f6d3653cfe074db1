// typex demo: a picture of an exported program.
//
// Exports a stack of four transformer encoder blocks (the block the tests export: d_model 32, 4
// heads, feed-forward 64, GELU, batch first), writes its graph as Graphviz DOT twice — every node,
// and the four identical layers drawn once — and, where Graphviz's `dot` is on PATH, renders both
// as SVG. Checks what it wrote; exit status 1 when something is missing.
//   program_picture [OUTPUT_DIR]   (default: the current directory)
#include <typex/export/dot.hpp>
#include <typex/typex.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace demo {
using batch = typex::sym<"batch", 1, 64>;
using seq = typex::sym<"seq", 1, 128>;
using block = typex::nn::TransformerEncoderLayer<32, 4, 64, typex::nn::activation::gelu, false, true>;
using encoder = typex::nn::TransformerEncoder<block, 4>;  // layers.0 .. layers.3
}  // namespace demo

namespace {
int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "FAILED: %s\n", what.c_str());
    ++failures;
  }
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A path as one word of a POSIX shell command.
std::string shell_quoted(const std::filesystem::path& p) {
  std::string s = "'";
  for (char c : p.string()) s += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return s + "'";
}
}  // namespace

int main(int argc, char** argv) try {
  using namespace typex;
  namespace fs = std::filesystem;
  const fs::path dir = argc > 1 ? fs::path(argv[1]) : fs::current_path();
  fs::create_directories(dir);

  demo::encoder model;
  init_module(model, /*seed=*/11);
  using in_t = shape<demo::batch, demo::seq, fix<32>>;
  const auto program = export_program(model, input<"src">(tensor_spec<f32, in_t>(in_t(demo::batch(2), demo::seq(5), {}))));
  const ir::graph& g = program.graph();

  // 1. the DOT text: every node, and the repeated layers once
  const std::string full = to_dot(program);
  const std::string collapsed = to_dot(program, {.collapse_repeated = true});
  const fs::path full_dot = dir / "transformer.dot", collapsed_dot = dir / "transformer_collapsed.dot";
  std::ofstream(full_dot, std::ios::binary) << full;
  std::ofstream(collapsed_dot, std::ios::binary) << collapsed;
  std::printf("%zu nodes; wrote %s (%zu bytes) and %s (%zu bytes)\n", g.size(), full_dot.string().c_str(), full.size(),
              collapsed_dot.string().c_str(), collapsed.size());

  for (const std::string* text : {&full, &collapsed}) {
    check(text->starts_with("digraph \"typex\" {\n") && text->ends_with("}\n"), "a DOT digraph");
    check(text->find("subgraph cluster_") != std::string::npos, "module clusters");
    check(text->find("PARAMETER layers.0.self_attn.in_proj_weight") != std::string::npos, "parameters named by the signature");
    check(text->find("label=\"USER_OUTPUT\"") != std::string::npos, "the user output's edge");
  }
  for (ir::node_id i = 0; i < g.size(); ++i)
    check(full.find("  n" + std::to_string(i) + " [label=\"") != std::string::npos, "node " + g[i].name + " drawn");
  check(full.find("label=\"layers.3 (TransformerEncoderLayer)\";") != std::string::npos, "layers.3 drawn");
  check(collapsed.find("label=\"layers.0 .. layers.3 (x4, TransformerEncoderLayer)\";") != std::string::npos,
        "the four layers drawn once");
  check(collapsed.find("label=\"layers.1") == std::string::npos, "layers.1 .. layers.3 not drawn on their own");
  check(collapsed.size() * 2 < full.size(), "the collapsed picture is smaller");

  // 2. SVG, where Graphviz is installed (Debian: apt-get install graphviz)
  if (std::system("command -v dot >/dev/null 2>&1") == 0) {
    for (const fs::path& dot : {full_dot, collapsed_dot}) {
      fs::path svg = dot;
      svg.replace_extension(".svg");
      const std::string command = "dot -Tsvg " + shell_quoted(dot) + " -o " + shell_quoted(svg);
      check(std::system(command.c_str()) == 0, command);
      const std::string text = read_file(svg);
      check(!text.empty() && (text.starts_with("<?xml") || text.starts_with("<svg")), svg.string() + " is an SVG file");
      check(text.find("</svg>") != std::string::npos, svg.string() + " is complete");
      std::printf("rendered %s (%zu bytes)\n", svg.string().c_str(), text.size());
    }
  } else {
    std::printf("Graphviz's dot is not on PATH: the DOT files are written and checked, not rendered "
                "(apt-get install graphviz; then dot -Tsvg %s -o transformer.svg)\n",
                full_dot.string().c_str());
  }
  if (failures == 0) std::printf("ok\n");
  return failures == 0 ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
