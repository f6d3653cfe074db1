// The random stream random ops draw from (core/random.hpp): Philox4x32-10 against Random123's
// published known answers, the thread's (seed, offset) state, a draw's independence from how its
// elements are split, and the Eigen kernels that draw (dropout, dropout_mask, attention's dropout):
// one draw per call, dropout(x) == x * dropout_mask(x) bit for bit, per-thread streams.
#include "../support.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/core/random.hpp>

#include <array>
#include <cstdint>
#include <thread>
#include <vector>

using namespace typex;

TEST_CASE("random: Philox4x32-10 gives Random123's known answers") {
  using words = std::array<std::uint32_t, 4>;
  CHECK(philox4x32_10({0, 0, 0, 0}, {0, 0}) == words{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}) ==
        words{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  CHECK(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}) ==
        words{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
  static_assert(philox4x32_10({0, 0, 0, 0}, {0, 0})[0] == 0x6627e8d5);  // (constexpr)
}

TEST_CASE("random: the thread's state, draws, and the keep threshold") {
  manual_seed(11);
  CHECK(get_rng_state() == rng_state{11, 0});
  const rng_state d0 = take_draw();
  const rng_state d1 = take_draw();
  CHECK(d0 == rng_state{11, 0});
  CHECK(d1 == rng_state{11, 1});
  CHECK(get_rng_state() == rng_state{11, 2});
  set_rng_state(d1);
  CHECK(take_draw() == d1);
  // seeds and offsets above 32 bits reach the counter and the key
  CHECK(draw_block({1, 0}, 0) != draw_block({1ULL << 32 | 1, 0}, 0));
  CHECK(draw_block({1, 0}, 0) != draw_block({1, 1ULL << 32}, 0));
  CHECK(draw_block({1, 0}, 0) != draw_block({1, 0}, 1ULL << 32));
  CHECK(keep_threshold(0.0) == 1ULL << 32);  // every word kept
  CHECK(keep_threshold(1.0) == 0);           // none
  CHECK(keep_threshold(0.25) == 3ULL << 30);
  // a draw's elements do not depend on where a range starts
  std::vector<bool> whole, split;
  for_each_kept({5, 3}, keep_threshold(0.5), 0, 103, [&](std::uint64_t, bool k) { whole.push_back(k); });
  for (std::uint64_t b : {0, 1, 6, 7, 50, 103})
    if (b != 103) {
      const std::uint64_t e = b == 0 ? 1 : b == 1 ? 6 : b == 6 ? 7 : b == 7 ? 50 : 103;
      for_each_kept({5, 3}, keep_threshold(0.5), b, e, [&](std::uint64_t i, bool k) {
        CHECK(i == split.size());
        split.push_back(k);
      });
    }
  CHECK(whole == split);
}

TEST_CASE("random: dropout takes one draw, and equals the input times dropout_mask from the same state") {
  tensor<f32, fix<37>, fix<53>> x;
  for (index_t i = 0; i < x.numel(); ++i) x.data()[i] = 0.25f + 0.001f * static_cast<float>(i % 997);
  manual_seed(3);
  const auto y = dropout(x, 0.3, true);
  CHECK(get_rng_state() == rng_state{3, 1});
  manual_seed(3);
  const auto m = dropout_mask(x, 0.3);
  const auto xm = mul(x, m);
  index_t dropped = 0;
  for (index_t i = 0; i < x.numel(); ++i) {
    REQUIRE(y.data()[i] == xm.data()[i]);  // bit for bit
    REQUIRE((m.data()[i] == 0.0f || m.data()[i] == static_cast<float>(1.0 / 0.7)));
    dropped += m.data()[i] == 0.0f;
  }
  // 0.3 of 1961: 588 expected, sd 20
  CHECK(dropped > 588 - 120);
  CHECK(dropped < 588 + 120);
  // the next draw differs; eval mode and p = 0 take none
  const auto again = dropout(x, 0.3, true);
  index_t same = 0;
  for (index_t i = 0; i < x.numel(); ++i) same += again.data()[i] == y.data()[i];
  CHECK(same < x.numel() - 200);
  const rng_state before = get_rng_state();
  (void)dropout(x, 0.3, false);
  (void)dropout(x, 0.0, true);
  CHECK(get_rng_state() == before);
  // p = 1 zeroes everything (and still takes its draw)
  const auto none = dropout(x, 1.0, true);
  for (index_t i = 0; i < x.numel(); ++i) REQUIRE(none.data()[i] == 0.0f);
  CHECK(get_rng_state().offset == before.offset + 1);
  // f64 and f16 draw the same mask
  manual_seed(3);
  const auto y64 = dropout(to<f64>(x), 0.3, true);
  manual_seed(3);
  const auto y16 = dropout(to<f16>(x), 0.3, true);
  for (index_t i = 0; i < x.numel(); ++i) {
    REQUIRE((y64.data()[i] == 0.0) == (y.data()[i] == 0.0f));
    REQUIRE((static_cast<float>(y16.data()[i]) == 0.0f) == (y.data()[i] == 0.0f));
  }
  CHECK_THROWS_AS((void)dropout_mask(x, -0.5), argument_error);
}

TEST_CASE("random: each thread has its own stream, the same from the same seed") {
  tensor<f32, fix<64>, fix<64>> x;
  x.fill(1.0f);
  std::vector<float> a, b;
  auto run = [&](std::vector<float>& out) {
    manual_seed(21);
    for (int k = 0; k < 3; ++k) {
      const auto y = dropout(x, 0.5, true);
      out.insert(out.end(), y.data(), y.data() + y.numel());
    }
  };
  manual_seed(99);
  std::thread t1(run, std::ref(a)), t2(run, std::ref(b));
  t1.join();
  t2.join();
  CHECK(a == b);
  CHECK(get_rng_state() == rng_state{99, 0});  // (this thread's stream untouched)
  // eigen::manual_seed is the same stream under its earlier name
  eigen::manual_seed(21);
  const auto y = dropout(x, 0.5, true);
  CHECK(std::equal(y.data(), y.data() + y.numel(), a.begin()));
}
