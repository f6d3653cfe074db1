// Compile-fail pair "copy_into_traced": this twin must fail; the diagnostic's first line must match:
// expect: typex::copy_: the destination is a traced value \(a user input or an op.?.s result\), which an exported program cannot write to
#include <typex/typex.hpp>

struct model {
  typex::buffer<typex::f32, typex::fix<3>> state;
  template <class X>
  auto operator()(const X& x) const {
    typex::copy_(x, typex::as_traced(state, x));  // writes the input: not expressible in a program
    return x;
  }
};

int main() {
  using S = typex::shape_c<3>;
  typex::tracing_context ctx;
  const model m;
  (void)m(typex::traced<typex::f32, S>(ctx, typex::ir::value_ref{0}, S{}));
}
