// Compile-fail pair "copy_into_traced": this twin must build. See copy_into_traced_ko.cpp.
#include <typex/typex.hpp>

struct model {
  typex::buffer<typex::f32, typex::fix<3>> state;
  template <class X>
  auto operator()(const X& x) const {
    typex::copy_(state, x);  // writes the module's buffer: a buffer mutation
    return x;
  }
};

int main() {
  using S = typex::shape_c<3>;
  typex::tracing_context ctx;
  const model m;
  (void)m(typex::traced<typex::f32, S>(ctx, typex::ir::value_ref{0}, S{}));
}
