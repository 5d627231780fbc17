// main() of every grader binary. Besides the usual GoogleTest flags it answers two questions for
// the runner (grader/kit.py) without running any test:
//   --kit_list    the tests with their lab step, kind, points and title, as JSON
//   --kit_device  the GPU this binary would run on, as JSON
// Compiled into each grader executable, so KIT_LAB_ID and KIT_VARIANT are that binary's.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>

#include "kit/device_info.h"
#include "kit/random.h"
#include "kit/test.h"

#ifndef KIT_LAB_ID
#define KIT_LAB_ID "unknown"
#endif
#ifndef KIT_VARIANT
#define KIT_VARIANT "student"
#endif

namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
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
    case kit::Kind::perf: return "perf";
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
  out << "{\"lab\": " << json_string(KIT_LAB_ID) << ", \"variant\": " << json_string(KIT_VARIANT)
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
          << "\", \"points\": " << meta->points << ", \"title\": " << json_string(title) << "}";
      first = false;
    }
  }
  out << "]}";
  std::cout << out.str() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  kit::set_build_variant(KIT_VARIANT);
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--kit_list") == 0) return list_tests();
    if (std::strcmp(argv[i], "--kit_device") == 0) {
      std::cout << kit::to_json(kit::query_device()) << std::endl;
      return 0;
    }
  }
  try {
    std::printf("[ kit      ] lab %s (%s build), %s\n", KIT_LAB_ID, KIT_VARIANT,
                kit::seed_note().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kit: %s\n", e.what());
    return 2;
  }
  return RUN_ALL_TESTS();
}
