// The judge/worker wire format (kit/remote.h): what one side writes, the other reads back, and a
// message cut short is refused rather than read past its end.
#include "kit/remote.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kit/launch.h"

namespace {

using kit::remote::Codec;
using kit::remote::Reader;
using kit::remote::Writer;

template <class T>
T round_trip(const T& value) {
  Writer w;
  Codec<T>::put(w, value);
  Reader r(w.bytes());
  T back = Codec<T>::get(r);
  EXPECT_TRUE(r.done());
  return back;
}

TEST(RemoteCodec, PlainValuesTravelAsTheirBytes) {
  EXPECT_EQ(round_trip(42u), 42u);
  EXPECT_EQ(round_trip(-2.5), -2.5);
  const dim3 d = round_trip(dim3(33, 7, 2));
  EXPECT_EQ(d.x, 33u);
  EXPECT_EQ(d.y, 7u);
  EXPECT_EQ(d.z, 2u);
  kit::Launch launch{dim3(4, 2, 1), dim3(256, 1, 1)};
  launch.items_per_thread = 4;
  const kit::Launch back = round_trip(launch);
  EXPECT_EQ(back.grid.x, 4u);
  EXPECT_EQ(back.block.x, 256u);
  EXPECT_EQ(back.items_per_thread, 4u);
}

TEST(RemoteCodec, StringsAndVectorsTravelByContent) {
  EXPECT_EQ(round_trip(std::string("H100 \0 name", 11)), std::string("H100 \0 name", 11));
  EXPECT_EQ(round_trip(std::string()), std::string());
  const std::vector<float> v = {1.0f, -2.0f, 3.5f};
  EXPECT_EQ(round_trip(v), v);
  const std::vector<std::string> names = {"a", "", "ccc"};
  EXPECT_EQ(round_trip(names), names);
}

TEST(RemoteCodec, NumbersTravelAsOneBlockWithTheBytesOfOneByOne) {
  const std::vector<int> v = {7, -1, 1 << 30, 0};
  Writer block, one_by_one;
  Codec<std::vector<int>>::put(block, v);
  one_by_one.pod<std::uint64_t>(v.size());
  for (const int x : v) one_by_one.pod(x);
  EXPECT_EQ(block.bytes(), one_by_one.bytes());
  Writer lying;
  lying.pod<std::uint64_t>(1ull << 61);  // far more floats than the message holds
  lying.pod(1.0f);
  Reader r(lying.bytes());
  EXPECT_THROW(Codec<std::vector<float>>::get(r), kit::remote::Malformed);
}

TEST(RemoteCodec, AShortMessageIsRefused) {
  Writer w;
  Codec<std::vector<float>>::put(w, std::vector<float>(10, 1.0f));
  const std::string cut = w.bytes().substr(0, w.bytes().size() - 1);
  Reader r(cut);
  EXPECT_THROW(Codec<std::vector<float>>::get(r), kit::remote::Malformed);
  Writer huge;
  huge.pod<std::uint64_t>(1ull << 40);  // a string "longer" than the message
  Reader s(huge.bytes());
  EXPECT_THROW(s.text(), kit::remote::Malformed);
}

TEST(RemoteCodec, BothSidesUseTheSameKeyForAListedFunction) {
  EXPECT_STREQ(KIT_REMOTE_KEY(lab01, saxpy, (unsigned, float)), "lab01::saxpy(unsigned, float)");
}

}  // namespace

TEST(RemoteKernelList, TakesEachKernelOnceFromCuobjdumpOutput) {
  std::istringstream text(
      "Fatbin elf code:\n================\narch = sm_90\n\nsymbols:\n"
      "STT_FUNC         STB_GLOBAL STO_ENTRY      _Z6kernelPf\n"
      "STT_OBJECT       STB_WEAK   STV_DEFAULT  U .nv.reservedSmem.offset0\n"
      "STT_FUNC         STB_LOCAL  STO_ENTRY      _ZN12_GLOBAL__N_14tileEv\n"
      "Fatbin elf code:\narch = sm_75\n"
      "STT_FUNC         STB_GLOBAL STO_ENTRY      _Z6kernelPf\n");
  const std::set<std::string> names = kit::remote::kernels_in_cuobjdump(text);
  EXPECT_EQ(names, (std::set<std::string>{"_Z6kernelPf", "_ZN12_GLOBAL__N_14tileEv"}));
  std::istringstream empty("");
  EXPECT_TRUE(kit::remote::kernels_in_cuobjdump(empty).empty());
}
