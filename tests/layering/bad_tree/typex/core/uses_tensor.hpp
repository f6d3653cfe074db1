// Fixture for the layering checker: a core header that includes a tensor header (upward).
#pragma once
#include <typex/tensor/host_tensor.hpp>
