// The judge's proxies for one lab: compiled into the lab's judge with grader/NN_name/ on the
// include path, it defines every function that the lab's remote.h lists as a call to the worker
// (kit/remote.h). The judge's include path replaces the lab's student headers with
// grader/NN_name/judge/ declarations, so no student code is compiled here.
#include "remote.h"

#include "kit/remote.h"

KIT_LAB_REMOTE(KIT_REMOTE_JUDGE_PROXY)
