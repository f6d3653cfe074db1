// Compile-fail pair "reshape_symbolic": this twin must build. See reshape_symbolic_ko.cpp.
#include <typex/typex.hpp>
using batch = typex::sym<"batch", 1, 64>;
int main() {
  (void)typex::reshape_shape(typex::shape<batch, typex::fix<28>, typex::fix<28>>{}, typex::reshape_to(batch(1), typex::fix<784>{}));
}
