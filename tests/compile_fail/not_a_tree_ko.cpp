// Compile-fail pair "not_a_tree": this twin must fail; the diagnostic's first line must match:
// expect: typex: (main\(\)::)?opaque is not a pytree: adapt a struct with BOOST_HANA_ADAPT_STRUCT
#include <typex/typex.hpp>

int main() {
  struct opaque {};
  (void)typex::leaf_count(std::tuple<int, opaque>{});
}
