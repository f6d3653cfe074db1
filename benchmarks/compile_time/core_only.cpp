// The cost of <typex/core.hpp> (dims, shapes, rules, dtypes, pytrees, tensors) and nothing else.
#include <typex/core.hpp>
int main() { return 0; }
