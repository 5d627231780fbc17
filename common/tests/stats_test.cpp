// Unit tests of the summary statistics, the median's confidence interval, the threshold decision
// and sample_ratio's stopping rule (host only: sample_ratio takes any sample function).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <utility>
#include <vector>

#include "kit/stats.h"
#include "kit/timing.h"

namespace {

TEST(Summarize, ComputesMedianAndQuartiles) {
  const auto s = kit::summarize({5, 1, 4, 2, 3});
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.q1, 2);
  EXPECT_DOUBLE_EQ(s.q3, 4);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(kit::quantile({1, 2}, 0.5), 1.5);
}

TEST(Decide, PassesWhenTheLowerQuartileClears) {
  EXPECT_EQ(kit::decide(kit::summarize({0.90, 0.91, 0.92, 0.93}), 0.6, 0.05), kit::Decision::pass);
}

TEST(Decide, FailsWhenTheUpperQuartileMisses) {
  EXPECT_EQ(kit::decide(kit::summarize({0.40, 0.41, 0.42, 0.43}), 0.6, 0.05), kit::Decision::fail);
}

TEST(Decide, AsksForMoreSamplesWhenNoisyAndStraddling) {
  EXPECT_EQ(kit::decide(kit::summarize({0.3, 0.5, 0.7, 0.9}), 0.6, 0.05), kit::Decision::undecided);
}

TEST(Decide, UsesTheMedianWhenTightButStraddling) {
  EXPECT_EQ(kit::decide(kit::summarize({0.598, 0.600, 0.601, 0.602}), 0.6, 0.05), kit::Decision::pass);
  EXPECT_EQ(kit::decide(kit::summarize({0.597, 0.598, 0.599, 0.601}), 0.6, 0.05), kit::Decision::fail);
}

TEST(MedianInterval, SevenValuesGiveMinToMaxAt984Percent) {
  const auto iv = kit::median_interval({3, 7, 1, 5, 2, 6, 4}, 0.95);
  ASSERT_TRUE(iv.bounded());
  EXPECT_EQ(iv.lo_rank, 1u);
  EXPECT_EQ(iv.hi_rank, 7u);
  EXPECT_DOUBLE_EQ(iv.lo, 1);
  EXPECT_DOUBLE_EQ(iv.hi, 7);
  EXPECT_DOUBLE_EQ(iv.coverage, 1.0 - 2.0 / 128);  // 98.4%
  // At 99% even [min, max] falls short: no bounded interval.
  EXPECT_FALSE(kit::median_interval({3, 7, 1, 5, 2, 6, 4}, 0.99).bounded());
}

TEST(MedianInterval, TwentyOneValuesGiveTheQuartiles) {
  std::vector<double> v;
  for (int i = 0; i < 21; ++i) v.push_back((i * 8) % 21);  // 0..20, shuffled
  const auto iv = kit::median_interval(v, 0.95);
  EXPECT_EQ(iv.lo_rank, 6u);
  EXPECT_EQ(iv.hi_rank, 16u);
  // 1 - 2 P(Binomial(21, 1/2) <= 5) = 1 - 2 (1 + 21 + 210 + 1330 + 5985 + 20349) / 2^21
  EXPECT_DOUBLE_EQ(iv.coverage, 1.0 - 2.0 * 27896 / 2097152);
  EXPECT_DOUBLE_EQ(iv.lo, 5);
  EXPECT_DOUBLE_EQ(iv.hi, 15);
  const kit::Summary s = kit::summarize(v);
  EXPECT_DOUBLE_EQ(iv.lo, s.q1);
  EXPECT_DOUBLE_EQ(iv.hi, s.q3);
}

TEST(MedianInterval, KnownRanksForOtherSizes) {
  auto ranks = [](std::size_t n, double confidence) {
    std::vector<double> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<double>(n - i);
    const auto iv = kit::median_interval(v, confidence);
    EXPECT_GE(iv.coverage, confidence);
    if (!iv.bounded()) return std::make_pair(iv.lo_rank, iv.hi_rank);
    EXPECT_DOUBLE_EQ(iv.lo, static_cast<double>(iv.lo_rank));
    EXPECT_DOUBLE_EQ(iv.hi, static_cast<double>(iv.hi_rank));
    return std::make_pair(iv.lo_rank, iv.hi_rank);
  };
  EXPECT_EQ(ranks(5, 0.95), std::make_pair(std::size_t{0}, std::size_t{0}));  // 93.75% at best
  EXPECT_EQ(ranks(5, 0.90), std::make_pair(std::size_t{1}, std::size_t{5}));
  EXPECT_EQ(ranks(6, 0.95), std::make_pair(std::size_t{1}, std::size_t{6}));      // 96.9%
  EXPECT_EQ(ranks(14, 0.95), std::make_pair(std::size_t{3}, std::size_t{12}));    // 98.7%
  EXPECT_EQ(ranks(100, 0.95), std::make_pair(std::size_t{40}, std::size_t{61}));  // 96.5%
  EXPECT_EQ(ranks(42, 0.95), std::make_pair(std::size_t{15}, std::size_t{28}));   // 95.6%
  // Large n (2^-10000 underflows a double; the sum does not): 95.1%, as exact integers give.
  EXPECT_EQ(ranks(10000, 0.95), std::make_pair(std::size_t{4902}, std::size_t{5099}));
  EXPECT_FALSE(kit::median_interval({}, 0.95).bounded());
}

// A shuffled pattern of 21 offsets, -10..10: sample i is value(offset of i).
double offset(int i) {
  return static_cast<double>((i * 2) % 21 - 10);
}

struct Stream {
  std::function<double(int)> value;
  int calls = 0;
  std::function<double()> sampler() {
    return [this] { return value(calls++); };
  }
};

TEST(SampleRatio, ClearPassStopsAfterSevenPairs) {
  Stream s{[](int i) { return 1.5 + 0.01 * offset(i); }};
  const auto r = kit::sample_ratio(s.sampler(), 1.0);
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.stop, kit::SampleStop::clear);
  EXPECT_EQ(r.pairs, 7);
  EXPECT_EQ(s.calls, 7);
  EXPECT_EQ(r.ratio.n, 7u);
  EXPECT_EQ(r.batches, 1);
  EXPECT_EQ(r.stopped, "clear after 7 pairs");
}

TEST(SampleRatio, ClearFailStopsAfterSevenPairs) {
  Stream s{[](int i) { return 0.5 + 0.01 * offset(i); }};
  const auto r = kit::sample_ratio(s.sampler(), 1.0);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.stop, kit::SampleStop::clear);
  EXPECT_EQ(s.calls, 7);
  EXPECT_EQ(r.stopped, "clear after 7 pairs");
  EXPECT_EQ(kit::describe_stop(r, "rounds"), "clear after 7 rounds");
}

TEST(SampleRatio, WithinTheMarginRunsAWholeBatchAndTheQuartilesDecide) {
  // 1.0..1.01: every ratio at or above the bar, but not by 1% (threshold * (1 + clear_margin)).
  Stream s{[](int i) { return 1.005 + 0.0005 * offset(i); }};
  const auto r = kit::sample_ratio(s.sampler(), 1.0);
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.stop, kit::SampleStop::quartiles);
  EXPECT_EQ(s.calls, 21);
  EXPECT_EQ(r.stopped, "quartiles after 21 pairs");
}

TEST(SampleRatio, KitPerfClearMarginNarrowsTheMarginOfTheEarlyStop) {
  // 1.015..1.035 at a bar of 1.0: its first 7 (1.015..1.027) are clear of the default 1% margin
  // and within a 3% one.
  auto margin_with = [](const char* value) {
    if (value != nullptr)
      setenv("KIT_PERF_CLEAR_MARGIN", value, 1);
    else
      unsetenv("KIT_PERF_CLEAR_MARGIN");
    const double margin = kit::TimingOptions{}.clear_margin;
    unsetenv("KIT_PERF_CLEAR_MARGIN");
    return margin;
  };
  EXPECT_EQ(margin_with(nullptr), 0.01);
  EXPECT_EQ(margin_with("0.03"), 0.03);
  for (const char* refused : {"", "abc", "0.03x", "-0.01", "0.6"})
    EXPECT_EQ(margin_with(refused), 0.01) << "KIT_PERF_CLEAR_MARGIN=" << refused;

  Stream s{[](int i) { return 1.025 + 0.001 * offset(i); }};
  const auto r = kit::sample_ratio(s.sampler(), 1.0);
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.stop, kit::SampleStop::clear);
  EXPECT_EQ(s.calls, 7);

  kit::TimingOptions wide;
  wide.clear_margin = margin_with("0.03");
  Stream w{[](int i) { return 1.025 + 0.001 * offset(i); }};
  EXPECT_EQ(kit::sample_ratio(w.sampler(), 1.0, wide).stop, kit::SampleStop::quartiles);
  EXPECT_EQ(w.calls, 21);
}

TEST(SampleRatio, NearTheBarTheTightMedianDecidesAfterABatch) {
  // Quartiles 0.997 and 1.007 straddle the bar; spread 0.010 <= 0.05: the median (1.002) decides.
  Stream s{[](int i) { return 1.002 + 0.001 * offset(i); }};
  const auto r = kit::sample_ratio(s.sampler(), 1.0);
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.stop, kit::SampleStop::median_tight);
  EXPECT_EQ(s.calls, 21);
  EXPECT_EQ(r.stopped, "median after 21 pairs (spread 0.010)");

  Stream below{[](int i) { return 0.998 + 0.001 * offset(i); }};
  const auto f = kit::sample_ratio(below.sampler(), 1.0);
  EXPECT_FALSE(f.passed);
  EXPECT_EQ(f.stop, kit::SampleStop::median_tight);
  EXPECT_EQ(below.calls, 21);
}

TEST(SampleRatio, NoisyAndStraddlingRunsAllBatchesThenTheMedianDecides) {
  // 0.805..1.205 around the bar: spread 0.2, the median's interval always contains the bar.
  Stream above{[](int i) { return 1.005 + 0.02 * offset(i); }};
  const auto p = kit::sample_ratio(above.sampler(), 1.0);
  EXPECT_TRUE(p.passed);
  EXPECT_EQ(p.stop, kit::SampleStop::median_last);
  EXPECT_EQ(above.calls, 63);
  EXPECT_EQ(p.batches, 3);
  EXPECT_EQ(p.stopped, "median after 63 pairs (spread 0.199, undecided)");

  Stream below{[](int i) { return 0.995 + 0.02 * offset(i); }};
  const auto f = kit::sample_ratio(below.sampler(), 1.0);
  EXPECT_FALSE(f.passed);
  EXPECT_EQ(f.stop, kit::SampleStop::median_last);
  EXPECT_EQ(below.calls, 63);
}

TEST(SampleRatio, AfterAnUndecidedBatchAClearChunkStops) {
  // 6 low ratios among the first 21 leave the quartiles straddling (undecided at 21); with 7 more
  // high ones the median's interval, [x(9), x(20)] of 28, lies above the bar.
  Stream s{[](int i) { return i < 6 ? 0.5 : 1.5; }};
  const auto r = kit::sample_ratio(s.sampler(), 1.0);
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.stop, kit::SampleStop::clear);
  EXPECT_EQ(s.calls, 28);
  EXPECT_EQ(r.batches, 2);
  EXPECT_EQ(r.stopped, "clear after 28 pairs");
}

TEST(SampleRatio, MinSamplesZeroIsTheRuleWithoutEarlyStop) {
  kit::TimingOptions options;
  options.min_samples = 0;
  Stream s{[](int i) { return 1.5 + 0.01 * offset(i); }};
  const auto r = kit::sample_ratio(s.sampler(), 1.0, options);
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.stop, kit::SampleStop::quartiles);
  EXPECT_EQ(s.calls, 21);
}

// The loop as it was before the early stop: batches of `samples`, decide(), then the median.
std::pair<int, bool> batches_only(const std::function<double()>& sample, double threshold,
                                  const kit::TimingOptions& o) {
  std::vector<double> ratios;
  for (int batch = 1;; ++batch) {
    for (int i = 0; i < o.samples; ++i) ratios.push_back(sample());
    const kit::Summary s = kit::summarize(ratios);
    const kit::Decision d = kit::decide(s, threshold, o.max_spread);
    if (d != kit::Decision::undecided || batch >= o.max_batches)
      return {static_cast<int>(ratios.size()),
              d == kit::Decision::pass || (d == kit::Decision::undecided && s.median >= threshold)};
  }
}

TEST(SampleRatio, EveryStopButAClearOneIsTheOldRuleExactly) {
  // Random streams around the bar: lognormal noise of 1% to 30% on a true ratio within 20% of it,
  // each measured with the default margin (1%) and with 3%. Whenever the early stop did not fire,
  // the pairs measured and the verdict are the old rule's; when it fired, it measured no more
  // than the old rule would have. At 3% a clear stop never contradicted the true ratio; at 1% it
  // may where the noise is far above any GPU's (an old rule's verdict is wrong there too), and
  // over all the streams it is wrong no more often than the old rule.
  std::mt19937_64 rng(12345);
  auto uniform = [&] { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };
  auto normal = [&] {
    const double u = uniform() + 1e-300, v = uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
  };
  int clear = 0, same_verdict = 0, wrong_new = 0, wrong_old = 0;
  double quietest_wrong_clear = 1.0;
  for (int trial = 0; trial < 2000; ++trial) {
    const double truth = 0.8 + 0.4 * uniform(), sigma = 0.01 + 0.29 * uniform();
    std::vector<double> stream;
    for (int i = 0; i < 63; ++i) stream.push_back(truth * std::exp(sigma * normal()));
    std::size_t next_old = 0;
    const auto old = batches_only([&] { return stream.at(next_old++); }, 1.0, {});
    wrong_old += old.second != (truth >= 1.0);
    for (const bool narrow : {true, false}) {
      kit::TimingOptions options;  // the default margin, or 3%
      if (!narrow) options.clear_margin = 0.03;
      std::size_t next_new = 0;
      const auto r = kit::sample_ratio([&] { return stream.at(next_new++); }, 1.0, options);
      ASSERT_EQ(static_cast<int>(next_new), r.pairs);
      ASSERT_LE(r.pairs, old.first) << "trial " << trial;
      if (narrow) wrong_new += r.passed != (truth >= 1.0);
      if (r.stop == kit::SampleStop::clear) {
        if (narrow) {
          ++clear;
          same_verdict += r.passed == old.second;
          if (r.passed != (truth >= 1.0))
            quietest_wrong_clear = std::min(quietest_wrong_clear, sigma);
          EXPECT_TRUE(r.passed == (truth >= 1.0) || sigma > 0.1)
              << "trial " << trial << ": truth " << truth << ", sigma " << sigma << ", "
              << r.stopped;
        } else {
          EXPECT_EQ(r.passed, truth >= 1.0)
              << "trial " << trial << ": truth " << truth << ", sigma " << sigma << ", "
              << r.stopped << " (3%)";
        }
      } else {
        ASSERT_EQ(r.pairs, old.first) << "trial " << trial;
        ASSERT_EQ(r.passed, old.second) << "trial " << trial;
      }
    }
  }
  std::printf("[ sample_ratio ] %d of 2000 random streams stopped clear at 1%%, %d with the old "
              "verdict; verdicts against the true ratio wrong: %d (old rule %d); each clear stop against the "
              "true ratio had %.0f%% noise or more\n",
              clear, same_verdict, wrong_new, wrong_old, 100 * quietest_wrong_clear);
  EXPECT_GT(clear, 500);
  EXPECT_LE(wrong_new, wrong_old);
}

// remeasure_while_clocks_disagree: a failing verdict whose judge's clock contradicted the
// worker's on most runs is measured again; a pass, or a failure with the clocks agreeing, is not.
kit::ThroughputComparison comparison(bool passed, int mismatches) {
  kit::ThroughputComparison c;
  c.passed = passed;
  c.timing_mismatches = mismatches;
  c.student_runs = 10;
  return c;
}

TEST(RemeasureWhileClocksDisagree, AMomentaryDisagreementIsMeasuredAgain) {
  std::vector<kit::ThroughputComparison> results{comparison(false, 10), comparison(true, 0)};
  int made = 0, pauses = 0;
  const auto r = kit::remeasure_while_clocks_disagree([&] { return results.at(made++); }, 3,
                                                      [&] { ++pauses; });
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.timing_mismatches, 0);
  EXPECT_EQ(r.measurements, 2);
  EXPECT_EQ(made, 2);
  EXPECT_EQ(pauses, 1);
}

TEST(RemeasureWhileClocksDisagree, HiddenWorkFailsEveryAttempt) {
  int made = 0;
  const auto r = kit::remeasure_while_clocks_disagree([&] { ++made; return comparison(false, 10); });
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.timing_mismatches, 10);
  EXPECT_EQ(made, kit::kClockMeasurements);
  EXPECT_EQ(r.measurements, kit::kClockMeasurements);
}

TEST(RemeasureWhileClocksDisagree, APassOrAnAgreedFailureIsMeasuredOnce) {
  for (const auto& first : {comparison(true, 4), comparison(false, 0), comparison(true, 0)}) {
    int made = 0;
    const auto r = kit::remeasure_while_clocks_disagree([&] { ++made; return first; });
    EXPECT_EQ(made, 1);
    EXPECT_EQ(r.measurements, 1);
    EXPECT_EQ(r.passed, first.passed);
  }
}

TEST(RemeasureWhileClocksDisagree, AFewContradictedRunsEarnNoSecondAttempt) {
  // A student's code can make a run or two disagree on purpose; that must not buy another try.
  int made = 0;
  const auto r = kit::remeasure_while_clocks_disagree([&] { ++made; return comparison(false, 4); });
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(made, 1);
  EXPECT_EQ(r.measurements, 1);
}

}  // namespace
