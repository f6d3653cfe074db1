// The cost of the full umbrella header (core, graphs, tracing, exported programs) and nothing else.
#include <typex/typex.hpp>
int main() { return 0; }
