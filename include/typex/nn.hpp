// typex/nn.hpp — the standard modules (torch.nn's names, parameter names, shapes and defaults).
#pragma once

#include <typex/nn/activation.hpp>
#include <typex/nn/attention.hpp>
#include <typex/nn/container.hpp>
#include <typex/nn/conv.hpp>
#include <typex/nn/embedding.hpp>
#include <typex/nn/linear.hpp>
#include <typex/nn/normalization.hpp>
