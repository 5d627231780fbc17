// main() of every grader binary. Besides the usual GoogleTest flags it answers two questions for
// the runner (grader/kit.py) without running any test:
//   --kit_list    the tests with their lab step, kind, points, title and whether each is hidden
//                 (instructor only, KIT_HIDDEN_TEST), as JSON
//   --kit_device  the GPU this binary would run on, as JSON
// and, when the runner grades tests, writes the verdicts it trusts:
//   --kit_verdicts=DIR   as each test ends, write its result to DIR/NNNNNN.json (NNNNNN counts
//                        from 0), signed with the run key
//   --kit_counters=ncu   the runner started this process under Nsight Compute: counter tests
//                        run (kit/test.h, CounterTest); without it they skip themselves
//   --kit_sanitized=1    the runner started this process under compute-sanitizer, which may
//                        follow only the worker (kit::under_compute_sanitizer)
//   --kit_wait_fd=N      started ahead of its turn: get ready, then wait for a byte on N
//                        (wait_for_turn); with --kit_wait_cold=1, make no context before it
//
// One process runs many tests (the runner's filter names those still to grade). The runner reads
// each verdict as it appears, so a crash or a hang costs only the test in flight: the runner gives
// that test its verdict and starts the binary again on the tests left. A test that leaves this
// process's CUDA context broken (a sticky error, such as an illegal address) is failed, and the
// process ends right after its verdict ("kit_context_lost"), so the next test gets a fresh one.
//
// Why signed verdicts: in a grader that is not a judge, the student's code runs in this process.
// It can read argv, so it could write a passing result where the runner reads results and exit(0).
// So the runner sends a fresh random key through a pipe (its file descriptor number in
// KIT_NONCE_FD); main() reads it and closes the pipe before any test runs, then signs each verdict
// it builds from GoogleTest's own in-memory results with HMAC-SHA-256 under that key. The runner
// rejects a file without the right signature. Limits (docs/grading.md, "Authentic results"):
// static initialisers of the student's code run before main() and could take the key first (main
// then finds the pipe empty and refuses to sign), and code that reads this process's memory
// while a test runs could find it; the judges (kit/remote.h) close that gap by running student
// code in another process.
//
// Compiled once for the judges (KIT_JUDGE) and once for every other grader: the lab and build a
// binary grades come from grader_identity.cpp, compiled into each with its own.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "grader_identity.h"
#include "kit/device_info.h"
#include "kit/random.h"
#include "kit/test.h"
#include "kit/timing.h"
#ifdef KIT_JUDGE
#include "kit/remote.h"
#endif

namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20) out += c;
    }
  }
  return out + "\"";
}

const char* kind_name(kit::Kind kind) {
  switch (kind) {
    case kit::Kind::host: return "host";
    case kit::Kind::gpu: return "gpu";
    case kit::Kind::timed: return "timed";
    case kit::Kind::perf: return "perf";
    case kit::Kind::memcheck: return "memcheck";
    case kit::Kind::racecheck: return "racecheck";
    case kit::Kind::synccheck: return "synccheck";
    case kit::Kind::initcheck: return "initcheck";
    case kit::Kind::counter: return "counter";
  }
  return "host";
}

// "Prefix/Suite" -> "Suite", "Name/3" -> "Name": how gtest names parameterized instances.
std::string strip_prefix(const std::string& s) {
  const auto slash = s.find('/');
  return slash == std::string::npos ? s : s.substr(slash + 1);
}
std::string strip_suffix(const std::string& s) {
  const auto slash = s.find('/');
  return slash == std::string::npos ? s : s.substr(0, slash);
}

// Prints the tests of this binary. Every gtest test must have metadata: a test without points
// could never count, so it is a build mistake, reported with exit code 2.
int list_tests() {
  const auto& metas = kit::registered_tests();
  const auto* unit = ::testing::UnitTest::GetInstance();
  std::ostringstream out;
  out << "{\"lab\": " << json_string(kit::identity::kLabId)
      << ", \"variant\": " << json_string(kit::build_variant())
      << ", \"tests\": [";
  bool first = true;
  for (int s = 0; s < unit->total_test_suite_count(); ++s) {
    const auto* suite = unit->GetTestSuite(s);
    for (int t = 0; t < suite->total_test_count(); ++t) {
      const auto* info = suite->GetTestInfo(t);
      const std::string suite_name = suite->name(), test_name = info->name();
      const kit::TestMeta* meta = nullptr;
      for (const auto& m : metas)
        if (m.suite == strip_prefix(suite_name) && m.name == strip_suffix(test_name)) meta = &m;
      if (!meta) {
        std::cerr << "test " << suite_name << "." << test_name
                  << " has no KIT_TEST metadata (step, kind, points, title)\n";
        return 2;
      }
      std::string title = meta->title;
      if (test_name.find('/') != std::string::npos && info->value_param())
        title += " [" + test_name.substr(test_name.find('/') + 1) + "]";
      out << (first ? "" : ", ") << "{\"id\": " << json_string(suite_name + "." + test_name)
          << ", \"step\": " << json_string(meta->step) << ", \"kind\": \"" << kind_name(meta->kind)
          << "\", \"points\": " << meta->points << ", \"title\": " << json_string(title)
          << ", \"hidden\": " << (meta->hidden ? "true" : "false") << "}";
      first = false;
    }
  }
  out << "]}";
  std::cout << out.str() << std::endl;
  return 0;
}


// ---- Signed verdicts --------------------------------------------------------------------------

// SHA-256 (FIPS 180-4), just enough for HMAC over a verdict of a few kilobytes.
class Sha256 {
 public:
  void update(const std::string& data) {
    for (unsigned char byte : data) {
      block_[fill_++] = byte;
      if (fill_ == 64) compress();
    }
    length_ += data.size();
  }
  std::string digest() {  // raw 32 bytes; the object is spent afterwards
    const std::uint64_t bits = length_ * 8;
    block_[fill_++] = 0x80;
    if (fill_ > 56) {
      while (fill_ < 64) block_[fill_++] = 0;
      compress();
    }
    while (fill_ < 56) block_[fill_++] = 0;
    for (int i = 7; i >= 0; --i) block_[fill_++] = static_cast<unsigned char>(bits >> (8 * i));
    compress();
    std::string out;
    for (std::uint32_t word : state_)
      for (int i = 3; i >= 0; --i) out += static_cast<char>(word >> (8 * i));
    return out;
  }

 private:
  static std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

  void compress() {
    // First 32 bits of the fractional parts of the cube roots of the first 64 primes.
    static constexpr std::array<std::uint32_t, 64> k = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2};
    std::array<std::uint32_t, 64> w{};
    for (int i = 0; i < 16; ++i)
      w[i] = std::uint32_t(block_[4 * i]) << 24 | std::uint32_t(block_[4 * i + 1]) << 16 |
             std::uint32_t(block_[4 * i + 2]) << 8 | std::uint32_t(block_[4 * i + 3]);
    for (int i = 16; i < 64; ++i) {
      const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    std::array<std::uint32_t, 8> v = state_;  // a, b, c, d, e, f, g, h
    for (int i = 0; i < 64; ++i) {
      const std::uint32_t s1 = rotr(v[4], 6) ^ rotr(v[4], 11) ^ rotr(v[4], 25);
      const std::uint32_t choose = (v[4] & v[5]) ^ (~v[4] & v[6]);
      const std::uint32_t t1 = v[7] + s1 + choose + k[i] + w[i];
      const std::uint32_t s0 = rotr(v[0], 2) ^ rotr(v[0], 13) ^ rotr(v[0], 22);
      const std::uint32_t majority = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
      for (int j = 7; j > 0; --j) v[j] = v[j - 1];
      v[4] += t1;
      v[0] = t1 + s0 + majority;
    }
    for (int i = 0; i < 8; ++i) state_[i] += v[i];
    fill_ = 0;
  }

  // First 32 bits of the fractional parts of the square roots of the first 8 primes.
  std::array<std::uint32_t, 8> state_ = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                         0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::array<unsigned char, 64> block_{};
  std::size_t fill_ = 0;
  std::uint64_t length_ = 0;
};

// HMAC-SHA-256 (RFC 2104) of `message` under `key`, as 64 lowercase hex digits.
std::string hmac_sha256_hex(std::string key, const std::string& message) {
  if (key.size() > 64) {
    Sha256 h;
    h.update(key);
    key = h.digest();
  }
  key.resize(64, '\0');
  std::string inner_pad = key, outer_pad = key;
  for (int i = 0; i < 64; ++i) {
    inner_pad[i] = static_cast<char>(inner_pad[i] ^ 0x36);
    outer_pad[i] = static_cast<char>(outer_pad[i] ^ 0x5c);
  }
  Sha256 inner;
  inner.update(inner_pad);
  inner.update(message);
  Sha256 outer;
  outer.update(outer_pad);
  outer.update(inner.digest());
  const std::string mac = outer.digest();
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char byte : mac) {
    out += hex[byte >> 4];
    out += hex[byte & 15];
  }
  return out;
}

// The runner's key for this process: read to the end from the pipe named by KIT_NONCE_FD, which is
// then closed and the variable removed, so test code finds neither. Empty when there is none.
std::string take_run_key() {
  const char* fd_text = std::getenv("KIT_NONCE_FD");
  if (fd_text == nullptr) return "";
  const int fd = std::atoi(fd_text);
  std::string key;
  char buffer[256];
  while (key.size() < 4096) {
    const ssize_t got = read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    key.append(buffer, static_cast<std::size_t>(got));
  }
  close(fd);
  unsetenv("KIT_NONCE_FD");
  return key;
}

// Removes "<flag>VALUE" (flag ends in '=') from argv and returns VALUE ("" when absent).
std::string take_flag(int& argc, char** argv, const char* flag) {
  const std::size_t length = std::strlen(flag);
  std::string value;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], flag, length) == 0)
      value = argv[i] + length;
    else
      argv[kept++] = argv[i];
  }
  argc = kept;
  argv[argc] = nullptr;
  return value;
}

bool reserved_key(const std::string& key) {
  static const char* reserved[] = {"name",      "classname", "status", "result", "failures",
                                   "timestamp", "time",      "file",   "line",   "value_param",
                                   "type_param", "skipped"};
  for (const char* r : reserved)
    if (key == r) return true;
  return false;
}

// One test's result, in the shape of GoogleTest's JSON report (what the runner already parses),
// built from GoogleTest's memory rather than from any file test code could touch. Recorded
// properties come first, so a property cannot pose as one of GoogleTest's own keys; `extra` is
// a property of the kit's own (already JSON: "key": "value", ...), added last.
std::string verdict_json(const ::testing::TestInfo& info, const std::string& extra) {
  const ::testing::TestResult& result = *info.result();
  std::ostringstream entry;
  entry << "{";
  for (int p = 0; p < result.test_property_count(); ++p) {
    const auto& property = result.GetTestProperty(p);
    if (!reserved_key(property.key()))
      entry << json_string(property.key()) << ": " << json_string(property.value()) << ", ";
  }
  entry << "\"name\": " << json_string(info.name())
        << ", \"classname\": " << json_string(info.test_suite_name())
        << ", \"status\": \"RUN\", \"result\": \"" << (result.Skipped() ? "SKIPPED" : "COMPLETED")
        << "\"";
  std::string failures;
  for (int p = 0; p < result.total_part_count(); ++p) {
    const auto& part = result.GetTestPartResult(p);
    if (!part.failed()) continue;
    std::string where = part.file_name() ? part.file_name() : "unknown file";
    if (part.file_name() && part.line_number() >= 0) where += ":" + std::to_string(part.line_number());
    failures += (failures.empty() ? "" : ", ") + std::string("{\"failure\": ") +
                json_string(where + "\n" + part.message()) + ", \"type\": \"\"}";
  }
  if (!failures.empty()) entry << ", \"failures\": [" << failures << "]";
  if (!extra.empty()) entry << ", " << extra;
  entry << "}";
  return "{\"testsuites\": [{\"name\": " + json_string(info.test_suite_name()) +
         ", \"testsuite\": [" + entry.str() + "]}]}";
}

// Why this process's CUDA context can no longer be trusted after a test ("" when it can, or when
// the process never used CUDA: the driver library is loaded only once the runtime starts). A
// sticky error (an illegal address, a trap, an assert) stays with the context, so every later
// test would fail with it. Other errors (no device, a failed allocation) are read and cleared.
std::string context_lost() {
  if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) == nullptr) return "";
  const cudaError_t error = cudaDeviceSynchronize();
  switch (error) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorContextIsDestroyed:
    case cudaErrorECCUncorrectable:
      return cudaGetErrorString(error);
    default:
      cudaGetLastError();
      return "";
  }
}

// Exit status after a test broke the context: the runner starts the binary again on the tests
// left, without blaming the next one.
constexpr int kContextLostExit = 75;

// Writes each test's signed verdict to DIR/NNNNNN.json as the test ends (renamed into place,
// so the runner never reads half a file).
class VerdictWriter : public ::testing::EmptyTestEventListener {
 public:
  VerdictWriter(std::string dir, std::string key) : dir_(std::move(dir)), key_(std::move(key)) {}

  void OnTestStart(const ::testing::TestInfo& info) override {
    kit::trace(std::string("start ") + info.test_suite_name() + "." + info.name());
  }

  void OnTestEnd(const ::testing::TestInfo& info) override {
    kit::trace(std::string("end ") + info.test_suite_name() + "." + info.name());
    const std::string lost = context_lost();
    const std::string extra = lost.empty() ? "" : "\"kit_context_lost\": " + json_string(lost);
    const std::string payload = verdict_json(info, extra);
    char name[32];
    std::snprintf(name, sizeof name, "/%06d.json", count_++);
    const std::string path = dir_ + name, partial = path + ".partial";
    {
      std::ofstream file(partial, std::ios::binary | std::ios::trunc);
      file << payload << "\nkit-hmac-sha256 " << hmac_sha256_hex(key_, payload) << "\n";
      file.close();
      if (!file || std::rename(partial.c_str(), path.c_str()) != 0) {
        std::fprintf(stderr, "kit: cannot write the verdict to %s\n", path.c_str());
        std::_Exit(2);
      }
    }
    if (!lost.empty()) {
      std::fprintf(stderr, "kit: the CUDA context is broken (%s): ending this process\n",
                   lost.c_str());
      std::fflush(nullptr);
      std::_Exit(kContextLostExit);
    }
  }

 private:
  std::string dir_, key_;
  int count_ = 0;
};

constexpr const char* kReadyFile = "ready";  // kitgrade.protocol.READY_FILE

// Says the process is ready: an empty file READY_FILE in the verdict folder.
void say_ready(const std::string& verdict_dir) {
  if (!verdict_dir.empty()) std::ofstream(verdict_dir + "/" + kReadyFile);
}

// Started ahead of its turn (--kit_wait_fd=N, kitgrade.protocol.StartSignal): makes this
// process's CUDA context now, while another lab's tests run, does the setup of its suites that
// may come first (kit::run_before_turn), says it is ready (the runner gives no timed or perf test
// its turn before every early process is ready), then waits for the runner's byte on descriptor
// N. With `cold` (--kit_wait_cold: Nsight Compute's processes, started while the timed tests run)
// it only starts the driver before that byte, which loads ncu's library into the process but
// makes no context, and once its turn has come starts its worker, makes its context and says it
// is ready: the runner starts the perf processes, whose contexts would wait behind theirs, then. False
// when the pipe ends instead: the runner will not need these tests.
bool wait_for_turn(int fd, bool cold, const std::string& filter, const std::string& verdict_dir) {
  int devices = 0;
  const bool device = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  if (!device) cudaGetLastError();
  if (!cold) {
    if (device) {
      cudaFree(nullptr);
      if (kit::run_before_turn(filter) > 0) kit::trace("set up ahead of the turn");
    }
    say_ready(verdict_dir);
  }
  kit::trace("waiting for the runner");
  char go = 0;
  ssize_t got = 0;
  do {
    got = read(fd, &go, 1);
  } while (got < 0 && errno == EINTR);
  close(fd);
  if (got == 1 && cold) {
#ifdef KIT_JUDGE
    if (!verdict_dir.empty()) kit::remote::start_worker_early();
#endif
    if (device) cudaFree(nullptr);
    say_ready(verdict_dir);
  }
  return got == 1;
}

#ifdef KIT_JUDGE
// The student's own worker, worker_<lab> in this binary's folder (the build puts every program
// in one). Found when the judge starts rather than compiled in: a path of the build directory in
// the object would make every new build directory compile it again, past the compiler cache.
std::string default_worker() {
  std::string path(4096, '\0');
  const ssize_t n = readlink("/proc/self/exe", path.data(), path.size() - 1);
  path.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  const std::size_t slash = path.rfind('/');
  return (slash == std::string::npos ? std::string() : path.substr(0, slash + 1)) + "worker_" +
         kit::identity::kLabId;
}
#endif

// The runner's key is 64 characters; anything much shorter means it was not (all) there.
constexpr std::size_t kMinRunKeyBytes = 32;

}  // namespace

int main(int argc, char** argv) {
  kit::trace("main");
  // First of all, before any test code runs: take the key and the verdict path.
  const std::string run_key = take_run_key();
  const std::string verdict_dir = take_flag(argc, argv, "--kit_verdicts=");
  // The runner started this process under Nsight Compute for its counter tests (kit/test.h).
  // Under ncu a judge starts its worker so that ncu can profile it (kit/test.h).
  kit::set_counters_profiled(!take_flag(argc, argv, "--kit_counters=").empty());
  // The runner started this process under compute-sanitizer, which may follow the worker alone.
  kit::set_sanitized(!take_flag(argc, argv, "--kit_sanitized=").empty());
  const std::string wait_fd = take_flag(argc, argv, "--kit_wait_fd=");
  const bool wait_cold = !take_flag(argc, argv, "--kit_wait_cold=").empty() && !wait_fd.empty();
#ifdef KIT_JUDGE
  // A judge (kit/remote.h): the student's code runs in the worker it starts, by default the
  // student's own build next to this binary; the runner names the worker and the time limit.
  std::string worker = take_flag(argc, argv, "--kit_worker=");
  const std::string timeout = take_flag(argc, argv, "--kit_timeout=");
  // The lab's worker_queues (lab.json), when it needs more than the default.
  const std::string worker_queues = take_flag(argc, argv, "--kit_worker_queues=");
  // Which build the worker is (student, reference, ...): its thresholds and its listing.
  const std::string variant = take_flag(argc, argv, "--kit_variant=");
  if (worker.empty()) worker = default_worker();
  ::testing::InitGoogleTest(&argc, argv);
  kit::remote::configure_judge(worker, timeout.empty() ? 0.0 : std::atof(timeout.c_str()),
                               worker_queues);
#else
  ::testing::InitGoogleTest(&argc, argv);
#endif
#ifdef KIT_JUDGE
  kit::set_build_variant(variant.empty() ? "student" : variant);
#else
  kit::set_build_variant(kit::identity::kVariant);
#endif
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--kit_list") == 0) return list_tests();
    if (std::strcmp(argv[i], "--kit_device") == 0) {
      std::cout << kit::to_json(kit::query_device()) << std::endl;
      return 0;
    }
  }
  if (!verdict_dir.empty() && run_key.size() < kMinRunKeyBytes) {
    std::fprintf(stderr, "kit: --kit_verdicts needs the runner's key on KIT_NONCE_FD, and it was %s\n",
                 run_key.empty() ? "empty (read by code that ran before main()?)" : "too short");
    return 2;
  }
  try {
    std::printf("[ kit      ] lab %s (%s build), %s\n", kit::identity::kLabId,
                kit::build_variant().c_str(), kit::seed_note().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kit: %s\n", e.what());
    return 2;
  }
  if (!verdict_dir.empty())
    ::testing::UnitTest::GetInstance()->listeners().Append(new VerdictWriter(verdict_dir, run_key));
#ifdef KIT_JUDGE
  // A grading run: the worker starts while the judge sets up its first test (a cold wait starts
  // it once the turn has come).
  if (!verdict_dir.empty() && !wait_cold) kit::remote::start_worker_early();
#endif
  // The judge's context is made here and the worker's in the worker started above, both while
  // the process waits for its turn.
  if (!wait_fd.empty() &&
      !wait_for_turn(std::atoi(wait_fd.c_str()), wait_cold, GTEST_FLAG_GET(filter), verdict_dir)) {
#ifdef KIT_JUDGE
    kit::remote::shut_down_worker();
#endif
    return 0;
  }
  const int status = RUN_ALL_TESTS();
#ifdef KIT_JUDGE
  kit::remote::shut_down_worker();
#endif
  std::fflush(stdout);
  return status;
}
