#include "broker/run/data_dir.h"

#include <cerrno>
#include <cstring>

#include "shared/log.h"
#include "shared/path_prefix.h"
#include "shared/small_file.h"

namespace skillmcp {

std::string DataDirRulePath(std::string_view value) {
  if (value.empty() || value[0] != '/') return "";
  // why the real path: the worker compares rules with each other and opens named ones
  // without following symlinks; "/usr/local/", "/usr//local" or a link must name the
  // directory it is.
  std::string real = RealPath(std::string(value));
  if (!real.empty()) return real;
  const int err = errno;
  // why as it is: realpath runs as the broker's user, who may not search the directory's
  // parents although the run's user can; the worker opens the path and judges what it finds.
  if (IsNormalisedAbsolutePath(value)) return std::string(value);
  // why no value in the log: it is the operator's environment; the name and reason suffice.
  LOG_WARN("MCP_DATA_DIR is not a normalised path and cannot be resolved (%s): runs get no "
           "rule for it",
           std::strerror(err));
  return "";
}

}  // namespace skillmcp
