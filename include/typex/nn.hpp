// typex/nn.hpp — the standard modules (torch.nn's names, parameter names, shapes and defaults),
// and the optimizers (typex::optim: torch.optim's SGD, Adam, AdamW; clip_grad_norm_).
#pragma once

#include <typex/nn/activation.hpp>
#include <typex/nn/attention.hpp>
#include <typex/nn/container.hpp>
#include <typex/nn/conv.hpp>
#include <typex/nn/embedding.hpp>
#include <typex/nn/functional.hpp>
#include <typex/nn/linear.hpp>
#include <typex/nn/normalization.hpp>
#include <typex/nn/optim.hpp>
#include <typex/nn/rnn.hpp>
