#include "broker/catalogue/watch_set.h"

#include <dirent.h>
#include <sys/stat.h>

#include <set>

#include "broker/catalogue/roots.h"
#include "shared/small_file.h"

namespace skillmcp {
namespace {

class DirList {
 public:
  explicit DirList(std::vector<std::string>* out) : out_(out) {}
  // Adds `path`'s real path when it is a directory; returns that path ("" when not).
  std::string Add(const std::string& path) {
    std::string real = RealPath(path);
    struct stat st {};
    if (real.empty() || stat(real.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return "";
    if (seen_.insert(real).second) out_->push_back(real);
    return real;
  }
  // Adds each entry of `dir` that is (or links to) a directory, dot entries included: a
  // directory named `.x` becomes a problem the moment it holds a SKILL.md.
  void AddEntries(const std::string& dir) {
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) return;
    size_t examined = 0;
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      if (++examined > kMaxRootEntries) break;
      if (e->d_type == DT_DIR || e->d_type == DT_LNK || e->d_type == DT_UNKNOWN)
        Add(dir + "/" + name);
    }
    closedir(d);
  }

 private:
  std::vector<std::string>* out_;
  std::set<std::string> seen_;
};

}  // namespace

std::vector<std::string> WatchedDirs(const std::vector<std::string>& roots,
                                     const Catalogue& catalogue) {
  std::vector<std::string> out;
  DirList list(&out);
  for (const std::string& root : roots) {
    const std::string real = list.Add(root);
    if (real.empty()) continue;
    list.AddEntries(real);
    if (!list.Add(real + "/skills").empty()) list.AddEntries(real + "/skills");
  }
  for (const Skill& s : catalogue.skills) {
    list.Add(s.source);
    std::set<std::string> dirs;
    for (const ManifestFile& f : s.files) {
      for (size_t slash = f.path.find('/'); slash != std::string::npos;
           slash = f.path.find('/', slash + 1))
        dirs.insert(f.path.substr(0, slash));
    }
    for (const std::string& d : dirs) list.Add(s.source + "/" + d);
  }
  return out;
}

}  // namespace skillmcp
