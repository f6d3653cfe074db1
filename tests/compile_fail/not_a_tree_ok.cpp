// Compile-fail pair "not_a_tree": this twin must build. See not_a_tree_ko.cpp.
#include <typex/typex.hpp>

int main() {
  (void)typex::leaf_count(std::tuple<int, float>{});
}
