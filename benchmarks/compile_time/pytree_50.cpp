// A 50-leaf pytree of distinct tensor types: flattened, respecified and unflattened.
#include <typex/core.hpp>

#include <boost/hana/adapt_struct.hpp>

#include <utility>

using batch = typex::sym<"batch", 1, 1024>;
template <int I>
using leaf = typex::tensor<typex::f32, batch, typex::fix<I + 1>>;

template <int B>
struct block {
  leaf<B + 0> a;
  leaf<B + 1> b;
  std::tuple<leaf<B + 2>, leaf<B + 3>, leaf<B + 4>> c;
  std::array<leaf<B + 5>, 3> d;
  std::pair<leaf<B + 6>, leaf<B + 7>> e;
};
BOOST_HANA_ADAPT_STRUCT(block<0>, a, b, c, d, e);
BOOST_HANA_ADAPT_STRUCT(block<10>, a, b, c, d, e);
BOOST_HANA_ADAPT_STRUCT(block<20>, a, b, c, d, e);
BOOST_HANA_ADAPT_STRUCT(block<30>, a, b, c, d, e);
BOOST_HANA_ADAPT_STRUCT(block<40>, a, b, c, d, e);

using tree = std::tuple<block<0>, block<10>, block<20>, block<30>, block<40>>;
static_assert(typex::static_leaf_count_v<tree> == 50);

int main() {
  const tree t{};
  const auto leaves = typex::flatten(t);
  const tree back = typex::unflatten<tree>(leaves);
  return typex::spec_of(back).num_leaves() == 50 ? 0 : 1;
}
