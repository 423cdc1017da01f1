#include "shared/lazy_icu.h"

#include <dlfcn.h>
#include <unicode/uvernum.h>

#include "shared/log.h"

// ICU renames every entry point with its major version (ucol_open is ucol_open_72);
// these spell the renamed symbol as a string.
#define SKILLMCP_ICU_NAME2(x) #x
#define SKILLMCP_ICU_NAME(x) SKILLMCP_ICU_NAME2(x)

namespace skillmcp::lazy_icu {
namespace {

bool loaded = false;

template <typename Fn>
bool Bind(void* lib, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(lib, name));
  return *out != nullptr;
}

// The sonames of the ICU the headers describe: a newer ICU is another soname, so a
// mismatch fails here instead of calling functions with other layouts. A test build
// names a library that does not exist, to check the path where ICU cannot be loaded.
#ifndef SKILLMCP_ICU_UC_SONAME
#define SKILLMCP_ICU_UC_SONAME "libicuuc.so." U_ICU_VERSION_SHORT
#endif

const Api* Load() {
  static Api api;
  void* uc = dlopen(SKILLMCP_ICU_UC_SONAME, RTLD_NOW | RTLD_LOCAL);
  void* i18n = uc ? dlopen("libicui18n.so." U_ICU_VERSION_SHORT, RTLD_NOW | RTLD_LOCAL) : nullptr;
  if (i18n == nullptr) {
    LOG_WARN("cannot load ICU %s (%s)", U_ICU_VERSION_SHORT, dlerror());
    return nullptr;
  }
  if (!Bind(i18n, SKILLMCP_ICU_NAME(ucol_open), &api.ucol_open) ||
      !Bind(i18n, SKILLMCP_ICU_NAME(ucol_close), &api.ucol_close) ||
      !Bind(i18n, SKILLMCP_ICU_NAME(ucol_setStrength), &api.ucol_setStrength) ||
      !Bind(i18n, SKILLMCP_ICU_NAME(ucol_strcollUTF8), &api.ucol_strcollUTF8) ||
      !Bind(uc, SKILLMCP_ICU_NAME(u_errorName), &api.u_errorName) ||
      !Bind(uc, SKILLMCP_ICU_NAME(u_charType), &api.u_charType) ||
      !Bind(uc, SKILLMCP_ICU_NAME(u_hasBinaryProperty), &api.u_hasBinaryProperty)) {
    LOG_WARN("ICU %s lacks a function the broker uses (%s)", U_ICU_VERSION_SHORT, dlerror());
    return nullptr;
  }
  loaded = true;
  return &api;
}

}  // namespace

const Api* Get() {
  static const Api* api = Load();
  return api;
}

bool Loaded() { return loaded; }

}  // namespace skillmcp::lazy_icu
