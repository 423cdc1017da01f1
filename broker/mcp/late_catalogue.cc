#include "broker/mcp/late_catalogue.h"

#include <utility>

namespace skillmcp {

LateCatalogue::LateCatalogue(EventLoop& loop, std::function<void()> load)
    : loop_(loop), load_(std::move(load)) {}

LateCatalogue::~LateCatalogue() {
  if (armed_) loop_.CancelTimer(timer_);
}

void LateCatalogue::Start() { Arm(kCatalogueIdleScanMs); }

void LateCatalogue::Soon() { Arm(0); }

void LateCatalogue::Arm(int64_t delay_ms) {
  if (loaded_ || loading_) return;
  if (armed_) loop_.CancelTimer(timer_);
  armed_ = true;
  timer_ = loop_.AddTimer(delay_ms, [this] {
    armed_ = false;
    Ensure();
  });
}

void LateCatalogue::Ensure() {
  if (loaded_ || loading_) return;
  loading_ = true;  // a re-entrant call during the load does nothing
  if (armed_) {
    loop_.CancelTimer(timer_);
    armed_ = false;
  }
  load_();
  loaded_ = true;  // only now: a Then() during the load waits for its end
  std::vector<std::function<void()>> then = std::move(then_);
  then_.clear();
  for (auto& f : then) f();
}

void LateCatalogue::Then(std::function<void()> then) {
  if (loaded_) return then();
  then_.push_back(std::move(then));
}

}  // namespace skillmcp
