// The cost of including typex's umbrella header and nothing else.
#include <typex/typex.hpp>
int main() { return 0; }
