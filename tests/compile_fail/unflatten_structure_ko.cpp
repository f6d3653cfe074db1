// Compile-fail pair "unflatten_structure": this twin must fail; the diagnostic's first line must match:
// expect: typex::unflatten: the structure std::tuple<float, std::pair<int, double> ?> has 3 leaves, but 2 leaves were given
#include <typex/typex.hpp>

int main() {
  (void)typex::unflatten<std::tuple<float, std::pair<int, double>>>(std::tuple<float, int>{});
}
