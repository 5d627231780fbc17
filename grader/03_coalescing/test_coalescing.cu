// Grader of lab 03, memory coalescing.
//
//   python3 grader/kit.py grade 03          every test, each in its own process, with a score
//   build/bin/grade_03_coalescing           the same tests in one process (quick, no score)
//   build/bin/grade_03_coalescing --gtest_filter='*Model*'   the access-model checks: no GPU needed
//
// Steps: 1 array of structs to struct of arrays, 2 the thread mapping of a matrix multiply,
// 3 transpose (naive, shared-memory tile, padded tile), perf the padded transpose against
// cudaMemcpy and against a naive transpose, and the fixed matmul mapping against the bad one.
//
// Steps 2 to 4 and the perf tests are in test_transpose.cu; what both files use is in
// coalescing_checks.h.
//
// The index mappings of coalescing_math.cuh are plain host code too. The "Model" tests replay
// warps of each kernel through access_model.h (a host model of 32-byte sectors and shared-memory
// banks) and report how many sectors each load and store touches, so a correct but uncoalesced
// kernel loses the points of its access pattern while keeping those of its results.
// The CoalescingCounters tests read the same on the hardware: the runner runs them under Nsight
// Compute (a plain run of this binary skips them), which counts the sectors and shared-memory
// wavefronts the kernels themselves took.

#include "coalescing_checks.h"

namespace {

using namespace lab03_judge;

// ---- Arrays of more than 2^32 elements (kit/huge.h) --------------------------------------------
// Each step has one test on data past 2^32 elements, where an offset kept in 32 bits
// (`unsigned`) wraps. The inputs are filled and the outputs checked here on the GPU, from each
// element's index (kit::index_value): copying 16 GiB to the host would take seconds. Kind
// `timed`: such a test runs alone, after the other correctness tests, so its 17 to 33 GiB are free.

// aos_to_soa's four arrays, one after the other in `soa` (x, y, vx, vy of n particles each), must
// hold field f of particle p of an AoS filled with index_value: the value of float 4p + f.
__global__ void check_huge_soa(const float* soa, std::size_t n, std::uint32_t seed,
                               unsigned long long* wrong) {
  for (std::size_t j = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; j < 4 * n;
       j += std::size_t{gridDim.x} * blockDim.x) {
    const std::size_t field = j / n, p = j % n;
    if (!(soa[j] == kit::index_value(4 * p + field, seed))) kit::note_wrong(wrong, j);  // NaN too
  }
}

// ---- Step 1: array of structs to struct of arrays ----------------------------------------------


std::uint64_t field_base(unsigned field) { return kArrayBase * (field + 2); }

KIT_TEST(CoalescingHost, AosLayoutDecodesFieldAndParticle, "coalescing.1", host, 2,
         "aos_field and aos_particle: float 4p + f of the AoS array is field f of particle p") {
  EXPECT_EQ(lab03::aos_field(9), 1u) << "float 9 is y (field 1) of particle 2";
  EXPECT_EQ(lab03::aos_particle(9), 2u) << "float 9 is y (field 1) of particle 2";
  EXPECT_EQ(lab03::aos_field(0), 0u);
  EXPECT_EQ(lab03::aos_particle(3), 0u) << "floats 0..3 are particle 0";
  EXPECT_EQ(lab03::aos_field(3), 3u) << "float 3 is vy (field 3) of particle 0";
  EXPECT_EQ(lab03::aos_particle(4), 1u) << "float 4 starts particle 1";
  auto rng = kit::test_random();
  for (int i = 0; i < 1000; ++i) {
    const auto p = static_cast<std::size_t>(rng.uniform_int(0, 1ll << 33));
    const auto f = static_cast<unsigned>(rng.uniform_int(0, 3));
    ASSERT_EQ(lab03::aos_field(4 * p + f), f) << "float " << 4 * p + f << "\n" << kit::seed_note();
    ASSERT_EQ(lab03::aos_particle(4 * p + f), p) << "float " << 4 * p + f << "\n" << kit::seed_note();
  }
}

KIT_TEST(CoalescingHost, AosToSoaCopiesEveryFloatOnce, "coalescing.1", host, 2,
         "aos_to_soa_source gives each of the 4n floats exactly one thread (n = 1, 33, 1000, 4097 "
         "and one n drawn from the seed)") {
  auto rng = kit::test_random();
  for (unsigned n : {1u, 33u, 1000u, 4097u, static_cast<unsigned>(rng.uniform_int(2, 5000))}) {
    const kit::Launch launch = lab03::aos_to_soa_config(n);
    const std::size_t floats = std::size_t(lab03::kParticleFields) * n;
    std::vector<int> copies(floats, 0);
    // The worker answers for up to 2^20 threads a call (lab03_probe::aos_to_soa_sources).
    const std::uint64_t per_call = std::max<std::uint64_t>(1, (1u << 20) / std::max(1u, launch.block.x));
    for (std::uint64_t b = 0; b < launch.grid.x; b += per_call) {
      const std::vector<std::uint64_t> sources =
          lab03_probe::aos_to_soa_sources(launch.grid.x, launch.block, n, b, per_call);
      const std::uint64_t blocks = std::min<std::uint64_t>(per_call, launch.grid.x - b);
      ASSERT_EQ(sources.size(), blocks * launch.block.x) << "the worker's answer for blocks " << b
                                                         << " on has the wrong length";
      for (const std::uint64_t f : sources)
        if (f < floats) ++copies[f];
    }
    const auto missing = std::count(copies.begin(), copies.end(), 0);
    const auto twice = std::count_if(copies.begin(), copies.end(), [](int c) { return c > 1; });
    EXPECT_TRUE(missing == 0 && twice == 0)
        << "n = " << n << " particles (" << floats << " floats, " << launch.grid.x << " blocks of "
        << launch.block.x << "): " << missing << " floats copied by no thread, " << twice
        << " by several; first uncopied float: "
        << (std::find(copies.begin(), copies.end(), 0) - copies.begin()) << "\n"
        << kit::seed_note();
  }
}

KIT_TEST(CoalescingHost, GlobalIndicesPass32Bits, "coalescing.1", host, 1,
         "aos_to_soa_source and particle_of_thread compute in 64 bits: thread 5 of block 2^22 "
         "(blocks of 1024) is number 2^32 + 5") {
  // 2^31 particles are 2^33 floats (32 GiB): a size the functions' std::size_t results are for.
  const unsigned n = 1u << 31;
  const dim3 block(1024);
  auto rng = kit::test_random();
  const unsigned blocks[] = {1u << 22, static_cast<unsigned>(rng.uniform_int(1u << 22, (1u << 23) - 1))};
  for (const unsigned b : blocks) {
    const unsigned t = static_cast<unsigned>(rng.uniform_int(0, 1023));
    const std::size_t want = std::size_t(b) * 1024 + t;
    const std::size_t f = lab03::aos_to_soa_source(make_uint3(b, 0, 0), block, make_uint3(t, 0, 0), n);
    const std::size_t i = lab03::particle_of_thread(make_uint3(b, 0, 0), block, make_uint3(t, 0, 0));
    const char* why = "\nblock_idx.x * block_dim.x multiplies two unsigned values in 32 bits and\n"
                      "wraps past 2^32 - 1; cast one of them to std::size_t first";
    EXPECT_EQ(f, want) << "aos_to_soa_source, thread " << t << " of block " << b
                       << " (blocks of 1024)" << (f == (want & 0xFFFFFFFFu) ? why : "") << "\n"
                       << kit::seed_note();
    EXPECT_EQ(i, want) << "particle_of_thread, thread " << t << " of block " << b
                       << " (blocks of 1024)" << (i == (want & 0xFFFFFFFFu) ? why : "") << "\n"
                       << kit::seed_note();
  }
}

KIT_TEST(CoalescingHost, ModelAosToSoaLoadIsCoalesced, "coalescing.1", host, 2,
         "model: a warp of aos_to_soa_kernel loads 32 neighbouring floats (4 sectors, not 16)") {
  const unsigned n = 1u << 20;
  const kit::Launch launch = lab03::aos_to_soa_config(n);
  const auto samples = sample_warps(launch, kArrayBase, [&](am::Coord b, am::Coord t) -> Index {
    const std::size_t f = lab03::aos_to_soa_source(as_uint3(b), launch.block, as_uint3(t), n);
    if (f >= std::size_t(lab03::kParticleFields) * n) return std::nullopt;
    return f;
  });
  EXPECT_TRUE(global_access("the load of aos[f] in aos_to_soa_kernel (n = 2^20)", samples, kCoalesced));
}

KIT_TEST(CoalescingHost, ModelAosToSoaStoreIsCoalesced, "coalescing.1", host, 1,
         "model: a warp of aos_to_soa_kernel stores 128 bytes in 4 sectors over the 4 field arrays") {
  const unsigned n = 1u << 20;
  const kit::Launch launch = lab03::aos_to_soa_config(n);
  std::vector<WarpSample> samples;
  const am::Coord block_dim = coord(launch.block);
  for (const am::Coord& b : sample_blocks(launch.grid))
    for (unsigned w = 0; w < am::warps_per_block(block_dim); ++w) {
      am::WarpAddresses lanes{};
      const auto threads = am::warp_threads(block_dim, w);
      for (unsigned lane = 0; lane < am::kWarpSize; ++lane) {
        const std::size_t f = lab03::aos_to_soa_source(as_uint3(b), launch.block, as_uint3(*threads[lane]), n);
        if (f < std::size_t(lab03::kParticleFields) * n)
          lanes[lane] = field_base(lab03::aos_field(f)) + 4 * lab03::aos_particle(f);
      }
      samples.push_back({"warp " + std::to_string(w) + " of block " + show(b), lanes, field_base(0)});
    }
  EXPECT_TRUE(global_access("the store into the field arrays in aos_to_soa_kernel (n = 2^20)",
                            samples, kCoalesced));
}

KIT_TEST(CoalescingHost, ModelIntegrateSoaLoadIsCoalesced, "coalescing.1", host, 1,
         "model: integrate_soa_kernel loads x[i] in 4 sectors per warp (the AoS kernel needs 16)") {
  const unsigned n = 1u << 20;
  const kit::Launch launch = lab03::integrate_config(n);
  const auto samples = sample_warps(launch, field_base(0), [&](am::Coord b, am::Coord t) -> Index {
    const std::size_t i = lab03::particle_of_thread(as_uint3(b), launch.block, as_uint3(t));
    if (i >= n) return std::nullopt;
    return i;
  });
  // For comparison in the message: the given AoS kernel's load of p[i].x (16-byte stride).
  const auto aos = am::global_request(
      am::warp_addresses(coord(launch.block), 0, kArrayBase, 16,
                         [](am::Coord t) -> Index { return t.x; }),
      4);
  EXPECT_TRUE(global_access("the load of x[i] in integrate_soa_kernel (n = 2^20)", samples, kCoalesced))
      << "\n  (the given integrate_aos_kernel's load of p[i].x: " << am::describe(aos) << ")";
}

class AosToSoa : public kit::GpuTestWithParam<unsigned> {};

std::string size_name(const ::testing::TestParamInfo<unsigned>& info) {
  return "n_" + std::to_string(info.param);
}

// Random particles: positions in [-1, 1], velocities in [-1, 1].
std::vector<lab03::Particle> random_particles(kit::Random& rng, unsigned n) {
  const auto f = rng.floats(std::size_t(4) * n, -1, 1);
  std::vector<lab03::Particle> p(n);
  for (unsigned i = 0; i < n; ++i) p[i] = {f[4 * i], f[4 * i + 1], f[4 * i + 2], f[4 * i + 3]};
  return p;
}

}  // namespace

// Runs aos_to_soa on n random particles and checks the four arrays exactly, and that the AoS
// input comes back unchanged. `input` places the AoS array at the start or at the end of its
// allocation (step 4, under memcheck: a read past its end leaves the allocation).
void lab03_judge::check_aos_to_soa(unsigned n, kit::Placement input) {
  auto rng = kit::test_random();
  const auto particles = random_particles(rng, n);
  std::vector<float> x(n), y(n), vx(n), vy(n);
  for (unsigned i = 0; i < n; ++i) {
    x[i] = particles[i].x;
    y[i] = particles[i].y;
    vx[i] = particles[i].vx;
    vy[i] = particles[i].vy;
  }
  kit::DeviceBuffer<lab03::Particle> d_aos(particles, input);
  kit::GuardedBuffer<float> d_x(n), d_y(n), d_vx(n), d_vy(n);
  // The stream it is given is busy when it is called: its kernel must queue behind that work.
  kit::remote::expect_queued_on_stream(
      d_x.data(), std::size_t{n} * sizeof(float), [&](cudaStream_t stream) {
        lab03::aos_to_soa(n, d_aos.data(), {d_x.data(), d_y.data(), d_vx.data(), d_vy.data()},
                          stream);
      });
  const auto exact = kit::Tolerance::exact("a copy changes no bit");
  EXPECT_TRUE(matches("x", x, d_x, exact, kit::Shape::d1(n)));
  EXPECT_TRUE(matches("y", y, d_y, exact, kit::Shape::d1(n)));
  EXPECT_TRUE(matches("vx", vx, d_vx, exact, kit::Shape::d1(n)));
  EXPECT_TRUE(matches("vy", vy, d_vy, exact, kit::Shape::d1(n)));
  const auto after = d_aos.download();
  EXPECT_EQ(std::memcmp(after.data(), particles.data(), particles.size() * sizeof(lab03::Particle)), 0)
      << "the AoS input was modified by the kernel (inputs are read-only)\n" << kit::seed_note();
}

namespace {

KIT_TEST_P(AosToSoa, CopiesEveryFieldToItsArray, "coalescing.1", gpu, 1,
           "aos_to_soa puts each particle's x, y, vx, vy at its index in the four arrays") {
  check_aos_to_soa(GetParam());
}

// Sizes around the warp and block sizes, and one large odd size.
INSTANTIATE_TEST_SUITE_P(Sizes, AosToSoa,
                         ::testing::Values(1u, 31u, 32u, 33u, 1000u, (1u << 20) + 7), size_name);

// On the hardware: the counter tests run the kernels under Nsight Compute (kit::CounterTest),
// which counts the 32-byte sectors each warp's loads and stores touched against the fewest their
// bytes fill. The model tests replay the functions of coalescing_math.cuh; these see the kernels
// themselves, whatever index they compute. Shapes are whole warps, and every array starts
// 256-byte aligned, so a coalesced kernel touches exactly the ideal sectors.

KIT_TEST(CoalescingCounters, AosToSoaTouchesOnlyTheSectorsItNeeds, "coalescing.1", counter, 2,
         "on the GPU (Nsight Compute): aos_to_soa of 2^16 particles touches no more global "
         "sectors than its bytes fill") {
  check_aos_to_soa(1u << 16);
  expect_counters({"coalescing.global_sectors_vs_ideal"});
}

// x + vx * dt with |x|, |vx| <= 1 and dt <= 0.1 is below 1.1 in magnitude: a separate multiply
// and add round twice (2 x 2^-24 x 1.1 < 1.4e-7), a fused multiply-add once. 2e-7 admits both; a
// wrong velocity or a missing update is off by ~dt / 2 ~ 0.03 on average.
const kit::Tolerance kEulerTolerance{2e-7, 0.0,
                                     "x + vx*dt below 1.1 in magnitude: at most 2 roundings of "
                                     "2^-24 x 1.1, fused or not"};

class IntegrateSoa : public kit::GpuTestWithParam<unsigned> {};

}  // namespace

// Runs integrate_soa on n random particles and checks x and y, and that vx and vy come back
// unchanged; `inputs` places vx and vy as in check_aos_to_soa.
void lab03_judge::check_integrate_soa(unsigned n, kit::Placement inputs) {
  auto rng = kit::test_random();
  const float dt = rng.uniform(0.01f, 0.1f);
  const auto x = rng.floats(n, -1, 1), y = rng.floats(n, -1, 1), vx = rng.floats(n, -1, 1),
             vy = rng.floats(n, -1, 1);
  std::vector<float> want_x(n), want_y(n);
  for (unsigned i = 0; i < n; ++i) {
    want_x[i] = static_cast<float>(double(x[i]) + double(vx[i]) * dt);
    want_y[i] = static_cast<float>(double(y[i]) + double(vy[i]) * dt);
  }
  kit::GuardedBuffer<float> d_x(n), d_y(n);  // updated in place: load the positions into them
  KIT_CUDA_CHECK(cudaMemcpy(d_x.data(), x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  KIT_CUDA_CHECK(cudaMemcpy(d_y.data(), y.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  kit::DeviceBuffer<float> d_vx(vx, inputs), d_vy(vy, inputs);
  kit::Launch launch;
  kit::remote::expect_queued_on_stream(
      d_x.data(), std::size_t{n} * sizeof(float), [&](cudaStream_t stream) {
        launch = lab03::integrate_soa(n, dt, {d_x.data(), d_y.data(), d_vx.data(), d_vy.data()},
                                      stream);
      });
  EXPECT_TRUE(kit::output_matches("x", want_x, d_x, kEulerTolerance, kit::Shape::d1(n), launch));
  EXPECT_TRUE(kit::output_matches("y", want_y, d_y, kEulerTolerance, kit::Shape::d1(n), launch));
  EXPECT_TRUE(kit::input_unchanged("vx", d_vx, vx));
  EXPECT_TRUE(kit::input_unchanged("vy", d_vy, vy));
}

namespace {

KIT_TEST_P(IntegrateSoa, MovesEveryParticleByItsVelocity, "coalescing.1", gpu, 1,
           "integrate_soa adds vx*dt to x and vy*dt to y of every particle, in place") {
  check_integrate_soa(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Sizes, IntegrateSoa,
                         ::testing::Values(1u, 31u, 32u, 33u, 1000u, (1u << 20) + 7), size_name);

// 2^30 + 2^20 + 3 particles: 2^32 + 2^22 + 12 floats, so a float's index passes 2^32 - 1.
constexpr unsigned kHugeParticles = (1u << 30) + (1u << 20) + 3;

class AosToSoaHuge : public kit::GpuTest {};

KIT_TEST(AosToSoaHuge, FloatIndexPasses2To32, "coalescing.1", timed, 1,
         "aos_to_soa of 2^30 + 2^20 + 3 particles (2^32 + 2^22 + 12 floats, 2 x 16 GiB): the "
         "floats past 2^32 reach their arrays too") {
  const std::size_t n = kHugeParticles, floats = 4 * n;
  KIT_NEEDS_DEVICE_MEMORY(2 * floats * sizeof(float));
  auto rng = kit::test_random();
  const auto seed = static_cast<std::uint32_t>(rng.next_u64());
  kit::DeviceBuffer<lab03::Particle> d_aos(n);
  kit::DeviceBuffer<float> d_soa(floats);
  kit::fill_index_values(reinterpret_cast<float*>(d_aos.data()), floats, seed);
  kit::poison_floats(d_soa.data(), floats);
  float* soa = d_soa.data();
  const kit::Launch launch =
      lab03::aos_to_soa(kHugeParticles, d_aos.data(), {soa, soa + n, soa + 2 * n, soa + 3 * n});
  const kit::WrongCount wrong = kit::count_wrong([&](unsigned long long* w) {
    check_huge_soa<<<kit::kHugeBlocks, kit::kHugeThreads>>>(soa, n, seed, w);
  });
  EXPECT_EQ(wrong.count, 0ull)
      << wrong.count << " of " << floats << " floats of the four arrays wrong, the first: "
      << std::array<const char*, 4>{"x", "y", "vx", "vy"}[wrong.first / n % 4] << "["
      << wrong.first % n << "] (launch: " << kit::describe_launch(launch) << ").\n"
      << "The floats from index 2^32 on are particles 2^30 and above. " << kWrapAdvice << "\n"
      << kit::seed_note();
}

}  // namespace
