// The lab and the build a grader binary grades: the one part of the kit's main() (test_main.cpp)
// that differs from one grader to the next. grader_identity.cpp defines them, compiled into each
// grader with that grader's KIT_LAB_ID and KIT_VARIANT (common/cmake/KitLab.cmake), so that
// test_main.cpp itself is compiled once for every judge and once for every other grader.
#pragma once

namespace kit::identity {

/// The lab id, e.g. "01_indexing".
extern const char kLabId[];
/// The build a grader that is no judge was made from ("student", "reference"); a judge is told
/// its worker's (--kit_variant).
extern const char kVariant[];

}  // namespace kit::identity
