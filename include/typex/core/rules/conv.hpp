// typex/core/rules/conv.hpp — conv2d_shape and pool2d_shape: sliding-window output sizes.
//
//   out = floor((in + 2*padding - dilation*(kernel - 1) - 1) / stride) + 1     (ceil with ceil_mode)
//
// Options are structural values, so they are template arguments and the arithmetic stays static
// for static inputs: conv2d_shape<conv2d_options{.stride = {2, 2}, .padding = {1, 1}}>(x, w).
// A symbolic height gives a derived dim ((h - 1)//2 + 1). Inputs are [N, C, H, W] or [C, H, W];
// conv2d weights are [out_channels, in_channels / groups, kH, kW]. An input smaller than the
// dilated kernel is a compile error when static, a constraint violation when the declared range
// allows no fitting value, and a run-time shape_error otherwise.
#pragma once

#include <typex/core/rules/broadcast.hpp>

#include <array>

namespace typex {

struct conv2d_options {
  std::array<index_t, 2> stride{1, 1};
  std::array<index_t, 2> padding{0, 0};
  std::array<index_t, 2> dilation{1, 1};
  index_t groups = 1;
  // nn::Conv2d only (torch.nn.Conv2d's bias=False: no bias parameter, as every convolution before a
  // batch norm in ResNet and MobileNet); the functional conv2d takes its bias as an argument
  bool bias = true;
};

// torch.nn.Conv1d's arguments (as conv2d_options, one extent each).
struct conv1d_options {
  index_t stride = 1;
  index_t padding = 0;
  index_t dilation = 1;
  index_t groups = 1;
  bool bias = true;
};

// torch.nn.ConvTranspose2d's arguments (square: one extent for both spatial dims; groups 1,
// dilation 1).
struct conv_transpose2d_options {
  index_t stride = 1;
  index_t padding = 0;
  index_t output_padding = 0;
  bool bias = true;
};

struct pool2d_options {
  std::array<index_t, 2> kernel{1, 1};
  std::array<index_t, 2> stride{0, 0};  // 0: the kernel size (PyTorch's default)
  std::array<index_t, 2> padding{0, 0};
  std::array<index_t, 2> dilation{1, 1};
  bool ceil_mode = false;
};

namespace detail {
// PyTorch's pooling_output_shape with ceil_mode: the last window may hang over the end, but must
// start inside the input or the left padding. Below 1 the op is invalid.
constexpr index_t ceil_window_out(index_t in, index_t kernel, index_t stride, index_t pad, index_t dil) noexcept {
  index_t o = ceildiv(in + 2 * pad - dil * (kernel - 1) - 1, stride) + 1;
  if ((o - 1) * stride >= in + pad) --o;
  return o;
}

// Output extent of one spatial dim. K is the kernel dim (a dim value), the rest static.
// Floor mode (conv, and pools by default): the dilated kernel must fit the padded input.
template <fixed_string Op, class S, std::size_t At, index_t Stride, index_t Pad, index_t Dil, class In, class K>
constexpr auto window_out(const S& s, const In& in, const K& k) {
  const auto padded = in + fix<2 * Pad>{};
  const auto span = fix<Dil>{} * (k - fix<1>{}) + fix<1>{};  // the dilated kernel
  using P = std::remove_cvref_t<decltype(padded)>;
  using E = std::remove_cvref_t<decltype(span)>;
  constexpr bool fits_static = is_static_dim_v<P> && is_static_dim_v<E>;
  constexpr bool too_small_static = [] {
    if constexpr (fits_static) return P::value < E::value;
    else return false;
  }();
  if constexpr (too_small_static) {
    TYPEX_STATIC_FAIL(static_shape_error, [](auto& w) {
      put_op(w, Op.view()); w.put(": input "); S::write_type(w); w.put(" is too small at dim "); w.put_int(At);
      w.put(": "); w.put_int(P::value - 2 * Pad); w.put(" + 2*"); w.put_int(Pad); w.put(" padding < ");
      w.put_int(E::value); w.put(" (the dilated kernel); pad the input or use a smaller kernel");
    });
    return dyn{};  // (after the error: an extent no later op checks statically, so no cascade)
  } else if constexpr (!fits_static && P::hi < E::lo) {
    TYPEX_STATIC_FAIL(static_constraint_violation, [](auto& w) {
      put_op(w, Op.view()); w.put(": input "); S::write_type(w); w.put(" is too small at dim "); w.put_int(At);
      w.put(" for every value in the declared range: "); write_dim_with_range<In>(w); w.put(" + 2*"); w.put_int(Pad);
      w.put(" padding < "); write_dim_with_range<E>(w); w.put(" (the dilated kernel); raise the declared minimum");
    });
    return dyn{};
  } else {
    if constexpr (!fits_static) {
      if (padded.get() < span.get()) {
        raise<shape_error>([&](auto& w) {
          put_op(w, Op.view()); w.put(": input "); s.write_values(w); w.put(" is too small at dim ");
          w.put_int(At); w.put(": "); w.put_int(in.get()); w.put(" + 2*"); w.put_int(Pad); w.put(" padding < ");
          w.put_int(span.get()); w.put(" (the dilated kernel)");
        });
      }
      if (!std::is_constant_evaluated()) record_requirement(Op.view(), relation::at_least, padded, span, At);
    }
    return floordiv(padded - span, fix<Stride>{}) + fix<1>{};
  }
}

// Ceil mode (pools only; the kernel is static). The result is static for a static input, a dyn
// otherwise (the rounding rule has no closed form as a dim expression).
template <fixed_string Op, class S, std::size_t At, index_t Kernel, index_t Stride, index_t Pad, index_t Dil, class In>
constexpr auto window_out_ceil(const S& s, const In& in) {
  if constexpr (is_static_dim_v<In>) {
    constexpr index_t o = ceil_window_out(In::value, Kernel, Stride, Pad, Dil);
    if constexpr (o < 1) {
      TYPEX_STATIC_FAIL(static_shape_error, [](auto& w) {
        put_op(w, Op.view()); w.put(": input "); S::write_type(w); w.put(" is too small at dim "); w.put_int(At);
        w.put(": a window of "); w.put_int(Kernel); w.put(" (dilation "); w.put_int(Dil); w.put(", padding ");
        w.put_int(Pad); w.put(") leaves no output even with ceil_mode; pad the input or use a smaller kernel");
      });
      return dyn{};
    } else {
      return fix<o>{};
    }
  } else if constexpr (ceil_window_out(In::hi >= int_oo ? int_oo / 4 : In::hi, Kernel, Stride, Pad, Dil) < 1) {
    TYPEX_STATIC_FAIL(static_constraint_violation, [](auto& w) {
      put_op(w, Op.view()); w.put(": input "); S::write_type(w); w.put(" is too small at dim "); w.put_int(At);
      w.put(" for every value in the declared range of "); write_dim_with_range<In>(w);
      w.put(": no output even with ceil_mode; raise the declared minimum");
    });
    return dyn(1);
  } else {
    const index_t o = ceil_window_out(in.get(), Kernel, Stride, Pad, Dil);
    if (o < 1) {
      raise<shape_error>([&](auto& w) {
        put_op(w, Op.view()); w.put(": input "); s.write_values(w); w.put(" is too small at dim ");
        w.put_int(At); w.put(": a window of "); w.put_int(Kernel); w.put(" leaves no output even with ceil_mode");
      });
    }
    return dyn(o);
  }
}

template <fixed_string Op, class S>
constexpr auto require_nchw() {
  if constexpr (S::rank != 3 && S::rank != 4) {
    TYPEX_STATIC_FAIL(static_shape_error, [](auto& w) {
      put_op(w, Op.view()); w.put(": input "); S::write_type(w); w.put(" has rank "); w.put_int(S::rank);
      w.put("; expected [N, C, H, W] or [C, H, W]");
    });
  }
}
}  // namespace detail

template <conv2d_options Opt = conv2d_options{}, class... X, class... W, fixed_string Op = "conv2d">
constexpr auto conv2d_shape(const shape<X...>& x, const shape<W...>& w, op_name_t<Op> = {}) {
  using SX = shape<X...>;
  using SW = shape<W...>;
  static_assert(Opt.groups >= 1 && Opt.stride[0] >= 1 && Opt.stride[1] >= 1 && Opt.dilation[0] >= 1 &&
                    Opt.dilation[1] >= 1 && Opt.padding[0] >= 0 && Opt.padding[1] >= 0,
                "typex::conv2d: stride, dilation and groups must be >= 1 and padding >= 0");
  detail::require_nchw<Op, SX>();
  if constexpr (SW::rank != 4) {
    TYPEX_STATIC_FAIL(static_shape_error, [](auto& out) {
      detail::put_op(out, Op.view()); out.put(": weight "); SW::write_type(out);
      out.put(" must have rank 4: [out_channels, in_channels / groups, kH, kW]");
    });
    return x;
  } else if constexpr (SX::rank == 3 || SX::rank == 4) {
    constexpr std::size_t c = SX::rank - 3;  // channel dim of the input
    using C = typename SX::template dim_t<c>;
    using O = typename SW::template dim_t<0>;
    const auto cin = w.template get<1>() * fix<Opt.groups>{};
    using CW = std::remove_cvref_t<decltype(cin)>;
    constexpr verdict v = equal_verdict<C, CW>();
    // (after a static failure the output shape is computed as if the channels fitted: the next
    // layer sees the right channel count, so the mistake is one error)
    if constexpr (v == verdict::never) {
      TYPEX_STATIC_FAIL(static_shape_error, [](auto& out) {
        detail::put_op(out, Op.view()); out.put(": input "); SX::write_type(out); out.put(" has ");
        detail::write_dim_with_range<C>(out); out.put(" channels, but weight "); SW::write_type(out);
        out.put(" with groups="); out.put_int(Opt.groups); out.put(" expects "); detail::write_dim_with_range<CW>(out);
      });
    } else if constexpr (is_static_dim_v<O> && O::value % Opt.groups != 0) {
      TYPEX_STATIC_FAIL(static_shape_error, [](auto& out) {
        detail::put_op(out, Op.view()); out.put(": weight "); SW::write_type(out); out.put(" has ");
        out.put_int(O::value); out.put(" output channels, not divisible by groups="); out.put_int(Opt.groups);
      });
    } else {
      detail::require_equal<v>(Op.view(), x.template get<c>(), cin, static_cast<int>(c), [&] {
          detail::raise<shape_error>([&](auto& out) {
            detail::put_op(out, Op.view()); out.put(": input "); x.write_values(out); out.put(" has ");
            out.put_int(x.template get<c>().get()); out.put(" channels, but weight "); w.write_values(out);
            out.put(" with groups="); out.put_int(Opt.groups); out.put(" expects "); out.put_int(cin.get());
          });
        });
      if constexpr (!is_static_dim_v<O>) {
        if (w.template get<0>().get() % Opt.groups != 0)
          detail::raise<shape_error>([&](auto& out) {
            detail::put_op(out, Op.view()); out.put(": weight "); w.write_values(out);
            out.put(" has output channels not divisible by groups="); out.put_int(Opt.groups);
          });
      }
    }
    {
      const auto h = detail::window_out<Op, SX, c + 1, Opt.stride[0], Opt.padding[0], Opt.dilation[0]>(
          x, x.template get<c + 1>(), w.template get<2>());
      const auto wd = detail::window_out<Op, SX, c + 2, Opt.stride[1], Opt.padding[1], Opt.dilation[1]>(
          x, x.template get<c + 2>(), w.template get<3>());
      return detail::join(detail::take<0, c>(x), shape(w.template get<0>(), h, wd));
    }
  } else {
    return x;
  }
}

template <pool2d_options Opt, class... X, fixed_string Op = "pool2d">
constexpr auto pool2d_shape(const shape<X...>& x, op_name_t<Op> = {}) {
  using SX = shape<X...>;
  constexpr index_t sh = Opt.stride[0] == 0 ? Opt.kernel[0] : Opt.stride[0];
  constexpr index_t sw = Opt.stride[1] == 0 ? Opt.kernel[1] : Opt.stride[1];
  static_assert(Opt.kernel[0] >= 1 && Opt.kernel[1] >= 1 && sh >= 1 && sw >= 1 && Opt.dilation[0] >= 1 &&
                    Opt.dilation[1] >= 1 && Opt.padding[0] >= 0 && Opt.padding[1] >= 0,
                "typex::pool2d: kernel, stride and dilation must be >= 1 and padding >= 0");
  static_assert(2 * Opt.padding[0] <= Opt.kernel[0] && 2 * Opt.padding[1] <= Opt.kernel[1],
                "typex::pool2d: padding must be at most half the kernel size (as in PyTorch)");
  detail::require_nchw<Op, SX>();
  if constexpr (SX::rank == 3 || SX::rank == 4) {
    constexpr std::size_t c = SX::rank - 3;
    const auto one = [&]<std::size_t D, index_t K, index_t St, index_t P, index_t Di>() {
      if constexpr (Opt.ceil_mode) return detail::window_out_ceil<Op, SX, D, K, St, P, Di>(x, x.template get<D>());
      else return detail::window_out<Op, SX, D, St, P, Di>(x, x.template get<D>(), fix<K>{});
    };
    const auto h = one.template operator()<c + 1, Opt.kernel[0], sh, Opt.padding[0], Opt.dilation[0]>();
    const auto wd = one.template operator()<c + 2, Opt.kernel[1], sw, Opt.padding[1], Opt.dilation[1]>();
    return detail::join(detail::take<0, c + 1>(x), shape(h, wd));
  } else {
    return x;
  }
}

}  // namespace typex
