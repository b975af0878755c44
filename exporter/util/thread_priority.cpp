#include "util/thread_priority.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace lse::util {

void step_below_probes(const char* name) {
  int policy = SCHED_OTHER;
  sched_param param{};
  if (pthread_getschedparam(pthread_self(), &policy, &param) == 0 &&
      (policy == SCHED_FIFO || policy == SCHED_RR)) {
    sched_param other{};
    other.sched_priority = 0;
    pthread_setschedparam(pthread_self(), SCHED_OTHER, &other);
  }
  // Nice values are per thread on Linux.
  setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 10);
  pthread_setname_np(pthread_self(), name);
}

}  // namespace lse::util
