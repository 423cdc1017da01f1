#include "broker/run/public_suffix.h"

#include <libpsl.h>

#include <string>

namespace skillmcp {
namespace {

const psl_ctx_t* g_list = nullptr;
bool g_loaded = false;

}  // namespace

bool LoadPublicSuffixes() {
  if (g_loaded) return g_list != nullptr;
  g_loaded = true;
  // The newest of the system's file and the library's copy; the context lives as long as
  // the process.
  g_list = psl_latest(nullptr);
  if (g_list == nullptr) g_list = psl_builtin();
  return g_list != nullptr;
}

bool IsPublicSuffix(std::string_view name) {
  // why true without a list: a wildcard that cannot be checked is not kept (fail closed).
  if (!LoadPublicSuffixes()) return true;
  const std::string text(name);
  return psl_is_public_suffix2(g_list, text.c_str(), PSL_TYPE_ANY | PSL_TYPE_NO_STAR_RULE) != 0;
}

std::string_view PublicSuffixUnder(std::string_view name, std::string_view base) {
  if (name.size() <= base.size() || !name.ends_with(base) ||
      name[name.size() - base.size() - 1] != '.')
    return {};
  std::string_view shortest;
  for (std::string_view d = name; d.size() > base.size();) {
    if (IsPublicSuffix(d)) shortest = d;
    d.remove_prefix(d.find('.') + 1);
  }
  return shortest;
}

}  // namespace skillmcp
