// typex demo: the compile-time core at work on an MNIST-sized CNN and a transformer block.
//
// Every shape below is computed from types. Static extents are checked by the compiler (the
// commented-out lines at the end do not compile, and say why); symbolic dims (batch, seq) carry
// their declared ranges and are checked against real extents when tensors are bound.
#include <typex/typex.hpp>

#include <boost/hana/adapt_struct.hpp>

#include <cstdio>
#include <string>

namespace demo {
using batch = typex::sym<"batch", 1, 1024>;
using seq = typex::sym<"seq", 1, 512>;
using image_t = typex::tensor<typex::f32, batch, typex::fix<1>, typex::fix<28>, typex::fix<28>>;
using tokens_t = typex::tensor<typex::i64, batch, seq>;
using mask_t = typex::tensor<typex::b8, batch, seq>;

struct inputs {
  image_t image;
  tokens_t tokens;
  std::optional<mask_t> mask;
};
}  // namespace demo
BOOST_HANA_ADAPT_STRUCT(demo::inputs, image, tokens, mask);

namespace {
template <class S>
void row(const char* what, const S& s) {
  std::printf("  %-34s %-30s %s\n", what, S::type_string().c_str(), s.to_string().c_str());
}
}  // namespace

int main() try {
  using namespace typex;
  std::printf("typex %d.%d.%d: the compile-time core\n\n", version_major, version_minor, version_patch);

  // 1. A CNN's shapes, batch symbolic: conv 3x3 1->32, conv 3x3 32->64, max-pool 2, flatten, linear.
  const demo::image_t x({32, 1, 28, 28}, "input 'image'");
  std::printf("CNN (batch bound to %lld; type on the left, values on the right):\n",
              static_cast<long long>(x.shape().extent(0)));
  row("input", x.shape());
  const auto c1 = conv2d_shape(x.shape(), shape_c<32, 1, 3, 3>{}, op_name<"conv1">);
  row("conv1 3x3, 1->32", c1);
  const auto c2 = conv2d_shape(c1, shape_c<64, 32, 3, 3>{}, op_name<"conv2">);
  row("conv2 3x3, 32->64", c2);
  const auto p = pool2d_shape<pool2d_options{.kernel = {2, 2}}>(c2, op_name<"max_pool2d">);
  row("max_pool2d 2", p);
  const auto f = flatten_shape<1>(p);
  row("flatten(1)", f);
  const auto fc1 = matmul_shape(f, shape_c<9216, 128>{}, op_name<"fc1">);
  row("fc1 9216->128", fc1);
  const auto logits = matmul_shape(fc1, shape_c<128, 10>{}, op_name<"fc2">);
  row("fc2 128->10", logits);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(logits)>, shape<demo::batch, fix<10>>>);

  // 2. Attention's shapes with batch and seq symbolic; the run-time facts are recorded.
  struct printer : requirement_recorder {
    void record(shape_requirement r) override {
      std::printf("    recorded: %s %s %s (seen %lld vs %lld) for %s\n", r.lhs.c_str(), std::string(to_string(r.rel)).c_str(),
                  r.rhs.c_str(), r.lhs_value, r.rhs_value, r.op.c_str());
    }
  } rec;
  scoped_requirement_recorder guard(rec);
  std::printf("\nattention, d_model 256, 4 heads (batch 8, seq 128):\n");
  const shape<demo::batch, demo::seq, fix<256>> h(demo::batch(8), demo::seq(128), {});
  row("hidden", h);
  const auto qkv = matmul_shape(h, shape_c<256, 768>{}, op_name<"in_proj">);
  row("in_proj", qkv);
  const auto heads = reshape_shape(
      matmul_shape(h, shape_c<256, 256>{}, op_name<"q_proj">),
      reshape_to(h.get<0>(), h.get<1>(), fix<4>{}, fix<64>{}), op_name<"view">);
  row("view as heads", heads);
  const auto q = transpose_shape<1, 2>(heads);
  row("transpose(1, 2)", q);
  const auto scores = matmul_shape(q, transpose_shape<-2, -1>(q), op_name<"q @ k^T">);
  row("q @ k^T", scores);
  const shape<demo::seq, demo::seq> causal(demo::seq(128), demo::seq(128));
  const auto masked = broadcast_shapes(scores, causal, op_name<"masked_fill">);
  row("+ causal mask [seq, seq]", masked);
  const auto probs = reduce_shape<true, -1>(masked, op_name<"amax">);
  row("amax(-1, keepdim)", probs);
  const shape<fix<128>, dyn> other({}, dyn(256));
  const auto mixed = matmul_shape(h, transpose_shape<0, 1>(other), op_name<"h @ other^T">);
  row("h @ other^T (a dyn inner dim)", mixed);

  // 3. Pytrees: structure as a type, flatten and unflatten.
  std::printf("\npytree inputs:\n");
  const demo::inputs in{x, demo::tokens_t({32, 16}, "input 'tokens'"), std::nullopt};
  std::printf("  spec   %s\n", spec_of(in).to_string().c_str());
  std::printf("  leaves %zu:", leaf_count(in));
  for_each_leaf(in, [](const auto& t) { std::printf(" %s", t.to_string().c_str()); });
  std::printf("\n");

  // 4. Run-time checks name the input, the dim and what was expected.
  std::printf("\nrun-time errors:\n");
  symbol_table symbols;
  (void)demo::image_t::bind(x.erase(), symbols, "input 'image'");
  try {
    (void)demo::tokens_t::bind(any_tensor(dtype::i64, {16, 8}), symbols, "input 'tokens'");
  } catch (const constraint_violation& e) {
    std::printf("  constraint_violation: %s\n", e.what());
  }
  try {
    (void)demo::image_t::bind(any_tensor(dtype::f32, {32, 3, 28, 28}), "input 'image'");
  } catch (const shape_error& e) {
    std::printf("  shape_error: %s\n", e.what());
  }
  try {
    (void)demo::tokens_t::bind(any_tensor(dtype::i64, {4, 600}), "input 'tokens'");
  } catch (const constraint_violation& e) {
    std::printf("  constraint_violation: %s\n", e.what());
  }

  // 5. Static mistakes do not compile. Uncomment one to see its message, e.g.:
  //   typex::matmul: inner extents differ (lhs [batch, 9216], rhs [9000, 128]): 9216 vs 9000; ...
  // (void)matmul_shape(f, shape_c<9000, 128>{});
  //   typex::add: shapes [batch, 10] and [batch, 11] are not broadcastable at dim 1 (10 vs 11); ...
  // (void)broadcast_shapes(logits, shape<demo::batch, fix<11>>{}, op_name<"add">);
  std::printf("\nok\n");
  return 0;
} catch (const typex::error& e) {
  std::fprintf(stderr, "unexpected typex error: %s\n", e.what());
  return 1;
}
