// Lab 06's probe: grader code that runs in the worker (kit/remote.h), because it calls the
// student's chooser of step 3 with callbacks, which cannot cross to another process. The probe
// only passes the judge's answers to the chooser's questions and reports what the chooser
// returns; every answer (the toolkit's calculator, the driver) and every verdict is the judge's
// (chooser_judge.cpp).
#include <algorithm>
#include <tuple>

#include "remote.h"

namespace {

using lab06_probe::Call;
using lab06_probe::Callback;

// Thrown through the student's chooser to stop it at a question the judge has not answered yet:
// deliberately not a std::exception, so a chooser that catches std::exception does not swallow it.
struct Unanswered {};

auto key(const Call& c) { return std::make_tuple(c.callback, c.block_size, c.dynamic_shared); }

struct Answers {
  const std::vector<Call>& script;
  std::vector<Call> table;  // sorted by key()
  std::uint64_t calls = 0;
  bool stopped = false;
  Call question;

  std::int64_t answer(Callback callback, int block_size, std::size_t dynamic_shared) {
    Call asked;
    asked.callback = callback;
    asked.block_size = block_size;
    asked.dynamic_shared = dynamic_shared;
    asked.index = calls++;
    if (!stopped) {
      if (asked.index < script.size()) {
        const Call& expected = script[asked.index];
        if (key(expected) == key(asked)) return expected.value;
      } else {
        const auto found = std::lower_bound(
            table.begin(), table.end(), asked,
            [](const Call& a, const Call& b) { return key(a) < key(b); });
        if (found != table.end() && key(*found) == key(asked)) return found->value;
      }
      stopped = true;
      question = asked;
    }
    // Unanswered, or asked after an earlier question stopped the chooser (it caught the stop).
    throw Unanswered{};
  }
};

}  // namespace

lab06_probe::ChooserRun lab06_probe::choose_block_size(const lab06::DeviceSpec& device,
                                                       const lab06::KernelResources& kernel,
                                                       int block_size_limit,
                                                       const std::vector<Call>& script,
                                                       const std::vector<Call>& table) {
  Answers answers{script, table};
  std::sort(answers.table.begin(), answers.table.end(),
            [](const Call& a, const Call& b) { return key(a) < key(b); });
  const lab06::DynamicSharedFn dynamic_shared = [&answers](int block_size) {
    return static_cast<std::size_t>(answers.answer(Callback::dynamic_shared, block_size, 0));
  };
  const lab06::BlocksPerSmFn blocks_per_sm = [&answers](int block_size, std::size_t dynamic) {
    return static_cast<int>(answers.answer(Callback::blocks_per_sm, block_size, dynamic));
  };
  ChooserRun run;
  try {
    run.choice =
        lab06::choose_block_size(device, kernel, dynamic_shared, blocks_per_sm, block_size_limit);
  } catch (...) {
    if (!answers.stopped) throw;  // the student's own exception, with every question answered
  }
  run.complete = !answers.stopped;
  if (answers.stopped) {
    run.choice = lab06::BlockChoice{};
    run.question = answers.question;
  }
  return run;
}
