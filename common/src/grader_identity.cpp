// See grader_identity.h: compiled into each grader with its own KIT_LAB_ID and KIT_VARIANT.
#include "grader_identity.h"

#ifndef KIT_LAB_ID
#error "a grader is compiled with KIT_LAB_ID, its lab id (common/cmake/KitLab.cmake)"
#endif
#ifndef KIT_VARIANT
#error "a grader is compiled with KIT_VARIANT, the build it grades (common/cmake/KitLab.cmake)"
#endif

namespace kit::identity {

extern const char kLabId[] = KIT_LAB_ID;
extern const char kVariant[] = KIT_VARIANT;

}  // namespace kit::identity
