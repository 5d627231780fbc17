// The judge's side of the student's chooser (step 3), compiled into the judge only. The chooser
// takes two callbacks, dynamic_shared and blocks_per_sm, that the tests write in the judge (the
// toolkit's calculator, the driver's occupancy API, a lambda that counts its calls); a callback
// cannot travel to the worker, so the student's chooser runs there under the probe
// lab06_probe::choose_block_size (probes.cpp), which answers each of its calls from the answers
// the judge sent. When the chooser asks something the judge has not answered, the probe stops it
// and returns the question; the judge calls its own callback, adds the answer and runs the chooser
// again, until a run asks nothing new. Its result is then what the chooser returns when every call
// gets the judge's answer, as if it had called the judge's callbacks itself.
#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "occupancy_checks.h"
#include "remote.h"

namespace {

using lab06_probe::Call;
using lab06_probe::Callback;

// The most block sizes the judge answers up front (no GPU allows blocks of more than 1024 threads).
constexpr int kMostAnswered = 4096;

std::string describe_call(const Call& c) {
  return c.callback == Callback::dynamic_shared
             ? "dynamic_shared(" + std::to_string(c.block_size) + ")"
             : "blocks_per_sm(" + std::to_string(c.block_size) + ", " +
                   std::to_string(c.dynamic_shared) + ")";
}

std::int64_t ask_judge(const Call& c, const lab06::DynamicSharedFn& dynamic_shared,
                       const lab06::BlocksPerSmFn& blocks_per_sm) {
  if (c.callback == Callback::dynamic_shared)
    return static_cast<std::int64_t>(dynamic_shared(c.block_size));
  return blocks_per_sm(c.block_size, c.dynamic_shared);
}

// `up_front`: the callbacks have no side effects, so the judge answers, before the first run,
// every question a chooser is expected to ask (block sizes 1 .. the largest allowed, each with its
// dynamic_shared), and the student's chooser usually runs once. Otherwise the judge answers only
// the questions the chooser asks, in the order it asks them (a script): the callbacks are called
// exactly once per call of the chooser, in its order, as they were when the chooser ran in the
// grader's process (a test that counts the calls, or records the sizes asked, sees the same).
lab06::BlockChoice run_chooser(const lab06::DeviceSpec& device,
                               const lab06::KernelResources& kernel,
                               const lab06::DynamicSharedFn& dynamic_shared,
                               const lab06::BlocksPerSmFn& blocks_per_sm, int block_size_limit,
                               bool up_front) {
  std::vector<Call> script;
  std::map<std::tuple<Callback, int, std::size_t>, std::int64_t> table;
  // Up front: block sizes 1 .. `answered`, each with its dynamic_shared. A callback that throws
  // here is left unanswered: only a chooser that asks it gets its exception, as before.
  int answered = 0;
  const auto answer_sizes_up_to = [&](int largest) {
    for (int block = answered + 1; block <= std::min(largest, kMostAnswered); ++block) {
      try {
        const std::size_t bytes = dynamic_shared(block);
        table[{Callback::dynamic_shared, block, 0}] = static_cast<std::int64_t>(bytes);
        table[{Callback::blocks_per_sm, block, bytes}] = blocks_per_sm(block, bytes);
      } catch (const std::exception&) {
      }
    }
    answered = std::max(answered, std::min(largest, kMostAnswered));
  };
  if (up_front) {
    int largest = std::min(device.max_threads_per_block, kernel.max_threads_per_block);
    if (block_size_limit > 0) largest = std::min(largest, block_size_limit);
    answer_sizes_up_to(largest);
  }
  for (;;) {
    std::vector<Call> answers;
    answers.reserve(table.size());
    for (const auto& [k, value] : table) {
      Call c;
      std::tie(c.callback, c.block_size, c.dynamic_shared) = k;
      c.value = value;
      answers.push_back(c);
    }
    const lab06_probe::ChooserRun run =
        lab06_probe::choose_block_size(device, kernel, block_size_limit, script, answers);
    if (run.complete) return run.choice;

    Call question = run.question;
    const auto k = std::make_tuple(question.callback, question.block_size, question.dynamic_shared);
    if (question.index < script.size() || (up_front && table.count(k)))
      throw std::runtime_error(
          "lab06::choose_block_size asked " + describe_call(question) + " as its call " +
          std::to_string(question.index + 1) +
          " when run again with the same answers as before (does it keep state between calls?)");
    question.value = ask_judge(question, dynamic_shared, blocks_per_sm);
    if (up_front) {
      table[k] = question.value;
      // A chooser that asks beyond the sizes answered, or for blocks_per_sm with another dynamic
      // size than dynamic_shared gave (a mistake), would otherwise cost a run per question: answer
      // the questions like it at once (the callbacks have no side effects).
      if (question.block_size > answered) {
        answer_sizes_up_to(question.block_size);
      } else if (question.callback == Callback::blocks_per_sm) {
        for (int block = 1; block <= answered; ++block) {
          try {
            table.try_emplace({Callback::blocks_per_sm, block, question.dynamic_shared},
                              blocks_per_sm(block, question.dynamic_shared));
          } catch (const std::exception&) {
          }
        }
      }
    } else {
      if (question.index != script.size())
        throw std::logic_error("kit judge: the chooser's probe skipped a question");
      script.push_back(question);
    }
  }
}

}  // namespace

// The student's chooser as the tests call it: the judge's stand-in for the proxy that kit/remote.h
// cannot generate (see remote.h).
lab06::BlockChoice lab06::choose_block_size(const DeviceSpec& device, const KernelResources& kernel,
                                            const DynamicSharedFn& dynamic_shared,
                                            const BlocksPerSmFn& blocks_per_sm,
                                            int block_size_limit) {
  return run_chooser(device, kernel, dynamic_shared, blocks_per_sm, block_size_limit, false);
}

lab06::BlockChoice lab06_grader::choose_block_size_pure(
    const lab06::DeviceSpec& device, const lab06::KernelResources& kernel,
    const lab06::DynamicSharedFn& dynamic_shared, const lab06::BlocksPerSmFn& blocks_per_sm,
    int block_size_limit) {
  return run_chooser(device, kernel, dynamic_shared, blocks_per_sm, block_size_limit, true);
}
