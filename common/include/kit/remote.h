/// @file remote.h
/// @brief The judge and the worker: the grader's checks and verdicts live in one process (the
/// judge), the student's code runs in another (the worker), and the judge calls it remotely.
///
/// Why: a verdict computed in the process that runs the student's code can be forged by that
/// code (a static initialiser, a scan of its own memory, a patched result), and no secret helps,
/// because the student's code can read everything its process holds. So the grader binary of a
/// lab (the judge) is built *without* the student's code: every student function the tests call is
/// a proxy that sends its arguments over a socket to a worker process, built from the student's
/// files, which calls the real function and sends back the result. Device buffers are the judge's
/// own allocations, shared with the worker as file descriptors of driver allocations (mapped by the
/// worker before the call that names them), so the judge poisons outputs, checks
/// guards and reads results in its own CUDA context. A crash, hang, `exit()` or sticky CUDA error
/// in student code ends the worker, never the judge: the test in flight gets its verdict and the
/// next call starts a fresh worker.
///
/// A lab opts in with grader/NN_name/remote.h, which includes the lab's interface headers and
/// lists every student function the tests call, with its exact signature:
///
/// @code
/// #define KIT_LAB_REMOTE(X)
///   X(lab01, saxpy, kit::Launch,
///     (unsigned, float, const float*, const float*, float*, cudaStream_t))
///   X(lab01, grid_size_1d, unsigned, (unsigned, unsigned))
/// @endcode
/// (with a backslash at the end of each line of the macro).
///
/// The judge's build defines each listed function as a proxy (common/src/remote_judge_table.cpp);
/// the worker's build registers the student's real function under the same key
/// (common/src/remote_worker_table.cpp), and the compiler checks there that the student's function
/// has exactly the listed signature. Student headers (`.cuh` files a student edits) are replaced
/// in the judge's include path by grader/NN_name/judge/ copies that only declare them.
///
/// Arguments and results travel by value: arithmetic types, enums and plain structs as their
/// bytes, std::string and std::vector by content, device pointers as the judge's buffer number plus offset,
/// streams by identity. A struct holding pointers needs a Codec specialisation (see lab 03).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <istream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace kit::remote {

// ---- Wire -----------------------------------------------------------------------------------

/// Bytes of one message being built.
class Writer {
 public:
  void raw(const void* data, std::size_t n) {
    buffer_.append(static_cast<const char*>(data), n);
  }
  template <class T>
  void pod(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    raw(&value, sizeof value);
  }
  void text(const std::string& s) {
    pod<std::uint64_t>(s.size());
    raw(s.data(), s.size());
  }
  const std::string& bytes() const { return buffer_; }

 private:
  std::string buffer_;
};

/// Thrown when a message is shorter than what its reader expects (a malformed message).
struct Malformed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Reads one received message in order.
class Reader {
 public:
  explicit Reader(const std::string& data) : data_(data) {}
  void raw(void* out, std::size_t n) {
    if (n > data_.size() - at_) throw Malformed("kit::remote: message too short");
    std::memcpy(out, data_.data() + at_, n);
    at_ += n;
  }
  template <class T>
  T pod() {
    static_assert(std::is_trivially_copyable_v<T>);
    T value;
    raw(&value, sizeof value);
    return value;
  }
  std::string text() {
    const auto n = pod<std::uint64_t>();
    if (n > data_.size() - at_) throw Malformed("kit::remote: string longer than the message");
    std::string s = data_.substr(at_, n);
    at_ += n;
    return s;
  }
  bool done() const { return at_ == data_.size(); }
  /// How many bytes were read so far.
  std::size_t position() const { return at_; }
  /// How many bytes are left to read.
  std::size_t left() const { return data_.size() - at_; }

 private:
  const std::string& data_;
  std::size_t at_ = 0;
};

/// The kernels named in the output of `cuobjdump -symbols` (one "STT_FUNC ... STO_ENTRY name"
/// line per kernel and architecture): the judge's list of the kernels compiled into a worker.
inline std::set<std::string> kernels_in_cuobjdump(std::istream& in) {
  std::set<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("STO_ENTRY") == std::string::npos) continue;
    std::istringstream words(line);
    std::string word, last;
    while (words >> word) last = word;
    if (!last.empty()) names.insert(last);
  }
  return names;
}

/// Request kinds (judge to worker) and reply kinds (worker to judge).
enum class Request : std::uint8_t { call = 1, timed_call = 2, forget = 3 };
enum class Reply : std::uint8_t { ok = 1, exception = 2, cuda_error = 3, refused = 4, forbidden = 5 };

/// Standard exception types a student function may throw, rebuilt with the same type in the judge
/// so that EXPECT_THROW(f(), std::invalid_argument) means what it says.
enum class ExceptionType : std::uint8_t {
  invalid_argument = 1, out_of_range, length_error, domain_error, logic_error,
  range_error, overflow_error, underflow_error, runtime_error, bad_alloc, other
};

// ---- Pointers and streams: the two sides translate them differently ---------------------------

namespace detail {
/// Judge: writes a device pointer as (number of its kit::DeviceBuffer, offset); null as null. Throws
/// std::invalid_argument for a host pointer (a kit bug: host memory cannot be shared this way).
void put_pointer(Writer& w, const void* p);
/// Worker: the same pointer in this process (the allocation is opened once and cached).
void* get_pointer(Reader& r);
/// Judge: a stream by identity (0 is the default stream); worker: a stream of its own per identity.
void put_stream(Writer& w, cudaStream_t s);
cudaStream_t get_stream(Reader& r);
/// Worker: called after a call's arguments are decoded and before the student's function runs
/// (a timed call starts its clock here, on the stream the call was given).
void before_call();
}  // namespace detail

// ---- Codecs ---------------------------------------------------------------------------------

/// How a value of type T travels. The default copies the bytes of a plain value; a struct that
/// holds pointers must specialise this (its pointers would arrive meaningless otherwise).
template <class T, class Enable = void>
struct Codec {
  static_assert(std::is_trivially_copyable_v<T> && !std::is_pointer_v<T>,
                "kit::remote: no codec for this type (add a kit::remote::Codec specialisation)");
  static void put(Writer& w, const T& v) { w.pod(v); }
  static T get(Reader& r) { return r.pod<T>(); }
};

template <class T>
struct Codec<T*, std::enable_if_t<!std::is_same_v<std::remove_cv_t<T>, CUstream_st>>> {
  static void put(Writer& w, T* p) { detail::put_pointer(w, p); }
  static T* get(Reader& r) { return static_cast<T*>(detail::get_pointer(r)); }
};

template <>
struct Codec<cudaStream_t> {
  static void put(Writer& w, cudaStream_t s) { detail::put_stream(w, s); }
  static cudaStream_t get(Reader& r) { return detail::get_stream(r); }
};

template <>
struct Codec<std::string> {
  static void put(Writer& w, const std::string& s) { w.text(s); }
  static std::string get(Reader& r) { return r.text(); }
};

template <class T>
struct Codec<std::vector<T>> {
  // Numbers travel as one block of bytes (the same bytes as one by one): a test's 2^26 floats
  // in a fraction of a second rather than seconds.
  static constexpr bool kBlock = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;
  static void put(Writer& w, const std::vector<T>& v) {
    w.pod<std::uint64_t>(v.size());
    if constexpr (kBlock) {
      w.raw(v.data(), v.size() * sizeof(T));
    } else {
      for (const auto& item : v) Codec<T>::put(w, item);
    }
  }
  static std::vector<T> get(Reader& r) {
    const auto n = r.pod<std::uint64_t>();
    std::vector<T> v;
    if constexpr (kBlock) {
      if (n > r.left() / sizeof(T)) throw Malformed("kit::remote: array longer than the message");
      v.resize(n);
      r.raw(v.data(), n * sizeof(T));
    } else {
      for (std::uint64_t i = 0; i < n; ++i) v.push_back(Codec<T>::get(r));
    }
    return v;
  }
};

template <class T>
using Plain = std::remove_cv_t<std::remove_reference_t<T>>;

// ---- Judge side -------------------------------------------------------------------------------

/// Sends one call and waits for its reply (common/src/remote_judge.cpp). Returns the result bytes;
/// rethrows a student exception with its type; when the worker dies, hangs or leaves a sticky
/// CUDA error, records the verdict in the running test and throws WorkerLost.
std::string exchange(const char* key, const std::string& args);

/// Thrown by a proxy when the worker is gone (crashed, timed out, exited, sticky CUDA error): the
/// failure is already recorded in the test. Deliberately not a std::exception, so no
/// EXPECT_THROW(..., std::exception) in a test can mistake it for the student's own exception.
struct WorkerLost {
  std::string reason;
};

/// The proxy body of a listed function: encode, exchange, decode.
template <class R, class... P>
R call(const char* key, const P&... args) {
  Writer w;
  (Codec<Plain<P>>::put(w, args), ...);
  const std::string reply = exchange(key, w.bytes());
  if constexpr (!std::is_void_v<R>) {
    Reader r(reply);
    return Codec<Plain<R>>::get(r);
  }
}

/// Arms the next remote call on this thread as a timed call: the worker times it with CUDA events
/// (as the judge times a ceiling), and the judge checks that time against its own clock around the
/// call. Used by kit::compare_throughput() (where it is defined, so every build has it); nothing
/// happens in a build without remote calls.
class TimedScope {
 public:
  TimedScope();
  ~TimedScope();
  /// The innermost scope of this thread, or nullptr.
  static TimedScope* current();
  TimedScope(const TimedScope&) = delete;
  TimedScope& operator=(const TimedScope&) = delete;
  /// True when a remote call ran in this scope: then ms() is its time and ran_locally() is moot.
  bool used() const { return calls_ > 0; }
  /// The call's duration in milliseconds: the worker's event time when the judge's clock agrees
  /// with it, otherwise the judge's own measurement (and mismatch() is true).
  double ms() const { return ms_; }
  bool mismatch() const { return mismatch_; }

  // Filled in by exchange().
  int calls_ = 0;
  double ms_ = 0.0;
  bool mismatch_ = false;
  TimedScope* previous_ = nullptr;
};

/// The most bytes of an output that queued_on_stream() compares (its start).
constexpr std::size_t kHoldMaxBytes = std::size_t{1} << 16;

/// Judge: whether a student call queues its GPU work on the stream it is given. Calls
/// `call(stream)` with a stream of the judge's own; in the worker, that stream first runs a kit
/// kernel that keeps it busy for `hold_ms` milliseconds and then copies the first `bytes` (at most
/// kHoldMaxBytes) of the device buffer `out`. Work the call queues on the stream runs after that
/// copy, so the copy still holds what `out` held before the call; work queued anywhere else (the
/// default stream, a stream of the student's own) does not wait, and shows in the copy. Returns
/// the empty string when the copy is unchanged, otherwise why that means another stream. Only
/// a wrong launch can fail it: work on the stream cannot reach the copy, however slow the machine.
/// Under compute-sanitizer (the sanitizer steps, which judge memory and races) or in a counter
/// test (which holds every kernel it profiles to its bars) it only calls.
std::string queued_on_stream(const void* out, std::size_t bytes,
                             const std::function<void(cudaStream_t)>& call, double hold_ms = 20);

/// Judge: queued_on_stream(out, bytes, call), then waits for the device (the call's work is done
/// when this returns) and, when the work ran on another stream, adds a failure to the running
/// test with the reason, after the name of the case and a colon when `what` names one. The labs'
/// helpers use it.
void expect_queued_on_stream(const void* out, std::size_t bytes,
                             const std::function<void(cudaStream_t)>& call,
                             const std::string& what = "");

/// Judge: the worker binary, per-test time limit and the worker's hardware work queues ("": the
/// default), from the judge's command line (test_main).
void configure_judge(const std::string& worker_path, double timeout_s,
                     const std::string& worker_queues = "");

/// Judge: starts the worker now, if none is running, so that its start (the CUDA context above
/// all) overlaps the judge's own before the first call needs it. A worker that dies at once is
/// found by that call, as one started by it would be.
void start_worker_early();

/// Judge: ends the worker, if one is running (at exit, or to start the next test afresh).
void shut_down_worker();

// ---- Worker side ------------------------------------------------------------------------------

/// One entry of the worker's table: the key the judge sends, and the function that decodes the
/// arguments, calls the student's function and encodes its result.
struct Entry {
  const char* key;
  void (*serve)(Reader&, Writer&);
};

template <class R, class... P>
struct Serve {
  template <R (*F)(P...)>
  static void run(Reader& r, Writer& w) {
    // Braced initialisation decodes the arguments left to right.
    std::tuple<Plain<P>...> args{Codec<Plain<P>>::get(r)...};
    detail::before_call();
    if constexpr (std::is_void_v<R>) {
      std::apply([](auto&... a) { F(a...); }, args);
    } else {
      Codec<Plain<R>>::put(w, std::apply([](auto&... a) { return F(a...); }, args));
    }
  }
};

}  // namespace kit::remote

// ---- Macros that turn a lab's KIT_LAB_REMOTE(X) list into proxies and table entries ------------

#define KIT_REMOTE_NTH_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, N, ...) N
#define KIT_REMOTE_COUNT_(...) KIT_REMOTE_NTH_(__VA_ARGS__, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define KIT_REMOTE_CAT_(a, b) KIT_REMOTE_CAT2_(a, b)
#define KIT_REMOTE_CAT2_(a, b) a##b

// (A, B, C) -> A p0, B p1, C p2
#define KIT_REMOTE_PARAMS(...) \
  KIT_REMOTE_CAT_(KIT_REMOTE_P, KIT_REMOTE_COUNT_(__VA_ARGS__))(__VA_ARGS__)
#define KIT_REMOTE_P1(a) a p0
#define KIT_REMOTE_P2(a, b) a p0, b p1
#define KIT_REMOTE_P3(a, b, c) a p0, b p1, c p2
#define KIT_REMOTE_P4(a, b, c, d) a p0, b p1, c p2, d p3
#define KIT_REMOTE_P5(a, b, c, d, e) a p0, b p1, c p2, d p3, e p4
#define KIT_REMOTE_P6(a, b, c, d, e, f) a p0, b p1, c p2, d p3, e p4, f p5
#define KIT_REMOTE_P7(a, b, c, d, e, f, g) a p0, b p1, c p2, d p3, e p4, f p5, g p6
#define KIT_REMOTE_P8(a, b, c, d, e, f, g, h) a p0, b p1, c p2, d p3, e p4, f p5, g p6, h p7
#define KIT_REMOTE_P9(a, b, c, d, e, f, g, h, i) \
  a p0, b p1, c p2, d p3, e p4, f p5, g p6, h p7, i p8
#define KIT_REMOTE_P10(a, b, c, d, e, f, g, h, i, j) \
  a p0, b p1, c p2, d p3, e p4, f p5, g p6, h p7, i p8, j p9
#define KIT_REMOTE_P11(a, b, c, d, e, f, g, h, i, j, k) \
  a p0, b p1, c p2, d p3, e p4, f p5, g p6, h p7, i p8, j p9, k p10
#define KIT_REMOTE_P12(a, b, c, d, e, f, g, h, i, j, k, l) \
  a p0, b p1, c p2, d p3, e p4, f p5, g p6, h p7, i p8, j p9, k p10, l p11

// (A, B, C) -> , p0, p1, p2
#define KIT_REMOTE_ARGS(...) \
  KIT_REMOTE_CAT_(KIT_REMOTE_A, KIT_REMOTE_COUNT_(__VA_ARGS__))
#define KIT_REMOTE_A1 , p0
#define KIT_REMOTE_A2 , p0, p1
#define KIT_REMOTE_A3 , p0, p1, p2
#define KIT_REMOTE_A4 , p0, p1, p2, p3
#define KIT_REMOTE_A5 , p0, p1, p2, p3, p4
#define KIT_REMOTE_A6 , p0, p1, p2, p3, p4, p5
#define KIT_REMOTE_A7 , p0, p1, p2, p3, p4, p5, p6
#define KIT_REMOTE_A8 , p0, p1, p2, p3, p4, p5, p6, p7
#define KIT_REMOTE_A9 , p0, p1, p2, p3, p4, p5, p6, p7, p8
#define KIT_REMOTE_A10 , p0, p1, p2, p3, p4, p5, p6, p7, p8, p9
#define KIT_REMOTE_A11 , p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10
#define KIT_REMOTE_A12 , p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11

// (A, B, C) -> , A, B, C
#define KIT_REMOTE_TYPES(...) , __VA_ARGS__

/// The key both sides use for a listed function: its qualified name and parameter list as written.
#define KIT_REMOTE_KEY(ns, name, params) #ns "::" #name #params

/// Judge: the proxy definition of one listed function.
#define KIT_REMOTE_JUDGE_PROXY(ns, name, R, params)                                       \
  R ns::name(KIT_REMOTE_PARAMS params) {                                                  \
    return ::kit::remote::call<R KIT_REMOTE_TYPES params>(KIT_REMOTE_KEY(ns, name, params) \
                                                              KIT_REMOTE_ARGS params);     \
  }

/// Worker: the table entry of one listed function.
#define KIT_REMOTE_WORKER_ENTRY(ns, name, R, params)                             \
  ::kit::remote::Entry{KIT_REMOTE_KEY(ns, name, params),                         \
                       &::kit::remote::Serve<R KIT_REMOTE_TYPES params>::template \
                           run<&ns::name>},
