// Lab 06's student functions as the judge calls them (kit/remote.h): every function of
// occupancy_model.cpp that a test calls, with its exact signature, the codec of DeviceSpec (it
// holds a std::string and a std::vector), and the grader's probe that runs the student's chooser
// of step 3 beside it (probes.cpp).
//
// The functions of device_spec.cpp (known_gpus, architecture_rules, device_spec_from_device,
// kernel_resources, to_string) are the kit's, not the student's: the judge compiles its own copy
// (CMakeLists.txt), so they are not listed here.
//
// choose_block_size is not listed either: its two arguments dynamic_shared and blocks_per_sm are
// std::function callbacks of the judge (the toolkit's calculator, the driver's occupancy API, a
// test's own lambda), which cannot travel to the worker. The judge calls it through the probe
// below instead, which feeds the student's chooser the judge's answers to its questions
// (chooser_judge.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kit/remote.h"
#include "occupancy.h"

namespace lab06_probe {

/// Which callback of choose_block_size a question is for.
enum class Callback : std::uint8_t { dynamic_shared = 0, blocks_per_sm = 1 };

/// One call of a callback by the student's chooser, and the judge's answer to it: `block_size`
/// (and `dynamic_shared` for blocks_per_sm) are its arguments; `value` is what the callback
/// returns (the bytes of dynamic_shared, or the blocks of blocks_per_sm).
struct Call {
  Callback callback = Callback::dynamic_shared;
  int block_size = 0;
  std::size_t dynamic_shared = 0;  ///< blocks_per_sm only; 0 for dynamic_shared
  std::int64_t value = 0;
  std::uint64_t index = 0;  ///< in a question: which call of the chooser's it was (0 = the first)
};

/// What one run of the student's chooser came to.
struct ChooserRun {
  bool complete = false;      ///< every question was answered: `choice` is the chooser's result
  lab06::BlockChoice choice;  ///< when complete
  Call question;              ///< when not: the first call the judge has no answer for yet
};

/// Runs the student's lab06::choose_block_size(device, kernel, dynamic_shared, blocks_per_sm,
/// block_size_limit) with callbacks that answer from the judge's answers: the chooser's i-th call
/// gets script[i] when i < script.size() (when its arguments are the same), else the entry of
/// `table` with the same callback and arguments (table sorted by callback, block_size,
/// dynamic_shared). The first call that neither answers stops the chooser (an exception of the
/// probe's own, not a std::exception) and is returned as the question; the judge adds the answer
/// and runs the chooser again. An exception of the student's own, thrown while every question was
/// answered, reaches the judge as it is.
ChooserRun choose_block_size(const lab06::DeviceSpec& device, const lab06::KernelResources& kernel,
                             int block_size_limit, const std::vector<Call>& script,
                             const std::vector<Call>& table);

}  // namespace lab06_probe

namespace kit::remote {

// The plain fields of DeviceSpec, in declaration order (every field but name and
// shared_configs_kib), for its codec.
#define LAB06_DEVICE_SPEC_PLAIN_FIELDS(F)                                                     \
  F(cc_major) F(cc_minor) F(sm_count) F(warp_size) F(max_threads_per_block)                   \
  F(max_threads_per_sm) F(max_blocks_per_sm) F(registers_per_sm) F(registers_per_block)       \
  F(shared_per_sm) F(shared_per_block) F(shared_per_block_optin) F(reserved_shared_per_block) \
  F(register_allocation_unit) F(register_sub_partitions) F(shared_allocation_unit)

namespace lab06_detail {
// DeviceSpec's members as the codec knows them: a field added to DeviceSpec changes its size
// (short of one that fits in padding), and this assertion asks for it to be added to the codec.
struct DeviceSpecFields {
  std::string name;
  int ints_a[9];
  std::size_t sizes[4];
  int ints_b[3];
  std::vector<int> shared_configs_kib;
};
static_assert(sizeof(lab06::DeviceSpec) == sizeof(DeviceSpecFields),
              "lab06::DeviceSpec changed: update Codec<lab06::DeviceSpec> in grader/06_occupancy/remote.h");
}  // namespace lab06_detail

/// DeviceSpec holds a std::string (its name) and a std::vector (its shared-memory
/// configurations): each travels by content, the other fields as their bytes.
template <>
struct Codec<lab06::DeviceSpec> {
  static void put(Writer& w, const lab06::DeviceSpec& d) {
    Codec<std::string>::put(w, d.name);
#define LAB06_PUT_FIELD(f) w.pod(d.f);
    LAB06_DEVICE_SPEC_PLAIN_FIELDS(LAB06_PUT_FIELD)
#undef LAB06_PUT_FIELD
    Codec<std::vector<int>>::put(w, d.shared_configs_kib);
  }
  static lab06::DeviceSpec get(Reader& r) {
    lab06::DeviceSpec d;
    d.name = Codec<std::string>::get(r);
#define LAB06_GET_FIELD(f) d.f = r.pod<decltype(d.f)>();
    LAB06_DEVICE_SPEC_PLAIN_FIELDS(LAB06_GET_FIELD)
#undef LAB06_GET_FIELD
    d.shared_configs_kib = Codec<std::vector<int>>::get(r);
    return d;
  }
};

}  // namespace kit::remote

#define KIT_LAB_REMOTE(X)                                                                      \
  X(lab06, simple_occupancy, lab06::Occupancy, (const lab06::SimpleSm&, const lab06::SimpleKernel&)) \
  X(lab06, registers_per_warp, int, (const lab06::DeviceSpec&, int))                           \
  X(lab06, shared_per_block, std::size_t,                                                      \
    (const lab06::DeviceSpec&, const lab06::KernelResources&, std::size_t))                    \
  X(lab06, shared_per_sm, std::size_t, (const lab06::DeviceSpec&, int, std::size_t))           \
  X(lab06, occupancy, lab06::Occupancy,                                                        \
    (const lab06::DeviceSpec&, const lab06::KernelResources&, int, std::size_t))               \
  X(lab06_probe, choose_block_size, lab06_probe::ChooserRun,                                   \
    (const lab06::DeviceSpec&, const lab06::KernelResources&, int,                             \
     const std::vector<lab06_probe::Call>&, const std::vector<lab06_probe::Call>&))
