#include "broker/harden/env_store.h"

#include <sodium.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace skillmcp {
namespace {

// sodium_init() is idempotent but not free; call it once per process. A failure means
// no guarded allocator: abort rather than keep secrets in ordinary heap memory.
void EnsureSodium() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (sodium_init() < 0) std::abort();  // why: fail closed, never unguarded secrets
  });
}

bool IsBlankChar(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

}  // namespace

struct EnvStore::Impl {
  // One value in guarded memory: sodium_malloc places it against a guard page with a
  // canary, and the page is PROT_NONE except while WithValue or a copy reads it. (Declared
  // in Impl, whose linkage is external, rather than in an anonymous namespace.)
  class GuardedValue {
   public:
    explicit GuardedValue(std::string_view value) : size_(value.size()) {
      EnsureSodium();
      // why: size 0 still gets its own guarded block, so every value is handled alike.
      data_ = static_cast<char*>(sodium_malloc(size_ == 0 ? 1 : size_));
      if (data_ == nullptr) std::abort();  // why: out of locked memory; never fall back
      if (size_ > 0) std::memcpy(data_, value.data(), size_);
      sodium_mprotect_noaccess(data_);  // why: no read of the value outside an accessor
    }
    ~GuardedValue() {
      // sodium_free wipes the block (it needs write access to do so) and unmaps it.
      sodium_free(data_);
    }
    GuardedValue(const GuardedValue&) = delete;
    GuardedValue& operator=(const GuardedValue&) = delete;

    template <typename Fn>
    void Read(Fn&& fn) const {
      sodium_mprotect_readonly(data_);
      // why: the page goes back to no-access even when fn throws.
      struct Relock {
        char* p;
        ~Relock() { sodium_mprotect_noaccess(p); }
      } relock{data_};
      fn(std::string_view(data_, size_));
    }

   private:
    char* data_ = nullptr;
    size_t size_ = 0;
  };

  // std::less<> lets string_view look-ups avoid a copy of the name.
  std::map<std::string, std::unique_ptr<GuardedValue>, std::less<>> values;
  // Whether the value is usable, computed once at Set time, so IsSet never has to
  // open the guarded page.
  std::map<std::string, bool, std::less<>> usable;
};

bool IsUsableValue(std::string_view value) {
  // Blank (empty or whitespace only) counts as unset: docs/wire.md.
  if (std::all_of(value.begin(), value.end(), IsBlankChar)) return false;
  // An unexpanded placeholder such as "${MCP_SKILLS_PATH}" counts as unset: a
  // launcher that failed to substitute must not hand the literal text to a script.
  size_t b = value.find_first_not_of(" \t\n\r\v\f");
  size_t e = value.find_last_not_of(" \t\n\r\v\f");
  std::string_view t = value.substr(b, e - b + 1);
  if (t.size() >= 3 && t.substr(0, 2) == "${" && t.back() == '}' && t.find('}') == t.size() - 1) {
    return false;
  }
  return true;
}

EnvStore::EnvStore() : impl_(std::make_unique<Impl>()) { EnsureSodium(); }
EnvStore::~EnvStore() = default;
EnvStore::EnvStore(EnvStore&&) noexcept = default;
EnvStore& EnvStore::operator=(EnvStore&&) noexcept = default;

EnvStore EnvStore::Capture(char** envp) {
  EnvStore store;
  if (envp == nullptr) return store;
  for (char** p = envp; *p != nullptr; ++p) {
    std::string_view entry(*p);
    size_t eq = entry.find('=');
    // An entry without '=' or with an empty name is not a variable; skip it.
    if (eq == std::string_view::npos || eq == 0) continue;
    store.Set(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return store;
}

void EnvStore::Set(std::string_view name, std::string_view value) {
  if (!impl_) impl_ = std::make_unique<Impl>();
  auto guarded = std::make_unique<Impl::GuardedValue>(value);
  bool usable = IsUsableValue(value);
  auto it = impl_->values.find(name);
  if (it != impl_->values.end()) {
    it->second = std::move(guarded);  // the old block is wiped by its destructor
    impl_->usable.find(name)->second = usable;
    return;
  }
  impl_->values.emplace(std::string(name), std::move(guarded));
  impl_->usable.emplace(std::string(name), usable);
}

bool EnvStore::IsSet(std::string_view name) const {
  if (!impl_) return false;
  auto it = impl_->usable.find(name);
  return it != impl_->usable.end() && it->second;
}

std::optional<std::string> EnvStore::GetConfig(std::string_view name) const {
  std::optional<std::string> out;
  WithValue(name, [&](std::string_view v) { out.emplace(v); });
  return out;
}

bool EnvStore::WithValue(std::string_view name,
                         const std::function<void(std::string_view)>& fn) const {
  if (!IsSet(name)) return false;
  auto it = impl_->values.find(name);
  it->second->Read(fn);
  return true;
}

std::vector<std::string> EnvStore::Names() const {
  std::vector<std::string> names;
  if (!impl_) return names;
  names.reserve(impl_->values.size());
  for (const auto& [name, value] : impl_->values) names.push_back(name);
  return names;  // std::map keeps them sorted
}

}  // namespace skillmcp
