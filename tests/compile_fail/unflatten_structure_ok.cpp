// Compile-fail pair "unflatten_structure": this twin must build. See unflatten_structure_ko.cpp.
#include <typex/typex.hpp>

int main() {
  (void)typex::unflatten<std::tuple<float, std::pair<int, double>>>(std::tuple<float, int, double>{});
}
