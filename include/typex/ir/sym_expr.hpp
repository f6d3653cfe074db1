// typex/ir/sym_expr.hpp — ir::sym_expr, the symbolic integer expressions of the IR's dims: defined
// in the core layer (core/sym_expr.hpp), where the ops' run-time rules can use them too.
#pragma once

#include <typex/core/sym_expr.hpp>
