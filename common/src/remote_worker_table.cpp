// The worker's table for one lab: compiled into each of the lab's workers (the student's files,
// the reference, a known-wrong submission) with the student's include path, it registers the
// student's real function behind every key that the lab's remote.h lists. The compiler checks
// here that each student function has exactly the listed signature.
#include "remote.h"

#include "kit/remote.h"

namespace {
const kit::remote::Entry kEntries[] = {KIT_LAB_REMOTE(KIT_REMOTE_WORKER_ENTRY)};
}  // namespace

const kit::remote::Entry* kit_remote_entries(std::size_t* count) {
  *count = sizeof kEntries / sizeof kEntries[0];
  return kEntries;
}
