// The catalogue scanned after start (docs/architecture.md, "Start"): the broker answers
// `initialize` first and scans right after it, so a client's first answer does not wait
// for the disk. Whatever needs the catalogue before then loads it on the spot, and a
// client that sends nothing still gets it scanned once the loop has been idle briefly.
#pragma once

#include <functional>
#include <vector>

#include "broker/loop/event_loop.h"

namespace skillmcp {

// How long after start an idle broker waits before scanning anyway.
inline constexpr int64_t kCatalogueIdleScanMs = 20;

class LateCatalogue {
 public:
  // `load` scans and settles everything that depends on the catalogue; it runs once.
  LateCatalogue(EventLoop& loop, std::function<void()> load);
  ~LateCatalogue();
  LateCatalogue(const LateCatalogue&) = delete;
  LateCatalogue& operator=(const LateCatalogue&) = delete;

  // Arms the idle scan; call once the loop is about to run.
  void Start();
  // Loads now unless already loaded. Everything that reads the catalogue calls this first.
  void Ensure();
  // Loads on the loop's next turn, after what is being answered now has been written.
  void Soon();
  // Runs `then` once the catalogue is loaded (at once when it is).
  void Then(std::function<void()> then);
  bool loaded() const { return loaded_; }

 private:
  void Arm(int64_t delay_ms);

  EventLoop& loop_;
  std::function<void()> load_;
  std::vector<std::function<void()>> then_;
  EventLoop::TimerId timer_ = 0;
  bool armed_ = false;
  bool loading_ = false;
  bool loaded_ = false;
};

}  // namespace skillmcp
