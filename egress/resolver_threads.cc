#include "egress/resolver_threads.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <mutex>
#include <system_error>
#include <thread>

#include "shared/unique_fd.h"

namespace skillmcp::egress {

struct ResolverThreads::Shared {
  UniqueFd event;
  std::mutex mu;
  std::vector<std::pair<uint64_t, Resolution>> done;  // guarded by mu
};

ResolverThreads::ResolverThreads() : shared_(std::make_shared<Shared>()) {
  shared_->event.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
}

int ResolverThreads::fd() const { return shared_->event.get(); }

bool ResolverThreads::Start(uint64_t key, std::string host, uint16_t port) {
  try {
    std::thread([shared = shared_, key, host = std::move(host), port] {
      Resolution r = ResolveName(host, port);
      {
        std::lock_guard<std::mutex> lock(shared->mu);
        shared->done.emplace_back(key, std::move(r));
      }
      const uint64_t one = 1;
      // The counter only says "look"; a full counter (never, at 2^64-1) still says it.
      (void)!write(shared->event.get(), &one, sizeof one);
    }).detach();
  } catch (const std::system_error&) {
    return false;  // no thread (EAGAIN: the task limit): the request is answered EAGAIN
  }
  return true;
}

std::vector<std::pair<uint64_t, Resolution>> ResolverThreads::Take() {
  uint64_t count = 0;
  (void)!read(shared_->event.get(), &count, sizeof count);
  std::lock_guard<std::mutex> lock(shared_->mu);
  return std::exchange(shared_->done, {});
}

}  // namespace skillmcp::egress
