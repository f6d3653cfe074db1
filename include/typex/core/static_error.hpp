// typex/core/static_error.hpp — the compile-error classes: see <typex/core/sentence.hpp>.
#pragma once

#include <typex/core/sentence.hpp>
