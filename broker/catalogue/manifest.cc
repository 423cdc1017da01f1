#include "broker/catalogue/manifest.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "broker/catalogue/collate.h"
#include "broker/catalogue/fsutil.h"
#include "broker/catalogue/reasons.h"
#include "shared/relpath.h"
#include "shared/utf8.h"

namespace skillmcp {
namespace {

using InodeId = std::pair<dev_t, ino_t>;

struct Frame {
  UniqueFd owned;  // empty for the skill directory itself
  int fd = -1;
  std::string rel;
  std::vector<std::string> names;
  bool listed = false;
  size_t next = 0;
  std::vector<InodeId> ancestors;  // this directory and every directory above it
};

class Walker {
 public:
  Walker(int skill_dir, const std::string& source) : skill_dir_(skill_dir), source_(source) {}

  ManifestResult Run() {
    struct stat st {};
    if (fstat(skill_dir_, &st) != 0) return std::move(result_);
    Frame root;
    root.fd = skill_dir_;
    root.ancestors.push_back({st.st_dev, st.st_ino});
    stack_.push_back(std::move(root));
    while (!stack_.empty() && !stopped_) Step();
    CollateSort(result_.files, [](const ManifestFile& f) -> std::string_view { return f.path; });
    return std::move(result_);
  }

 private:
  // Every problem of the walk names the skill directory; the detail names the entry.
  void Report(const std::string& rel, const char* reason, std::string detail) {
    if (!rel.empty()) detail = "'" + DisplaySafe(rel) + "': " + detail;
    result_.problems.push_back({DisplaySafe(source_), reason, std::move(detail)});
  }

  void Limit(const std::string& what) {
    Report("", reason::kFileLimit,
           "the skill has more than " + what +
               "; the walk stopped there and the manifest "
               "lists only what was walked. Split the bundle or remove files");
    stopped_ = true;
    result_.stopped = true;
  }

  void Step() {
    Frame& frame = stack_.back();
    if (!frame.listed) {
      frame.listed = true;
      bool more = false;
      if (!ReadDirNames(frame.fd, kMaxFilesPerSkill + kMaxDirsPerSkill + 1, &frame.names, &more)) {
        Report(frame.rel, reason::kUnusablePath,
               std::string("the directory could not be read (") + std::strerror(errno) +
                   "); its files are left out of the manifest");
        stack_.pop_back();
        return;
      }
      if (more) {
        Limit("entries in one directory than can be listed");
        return;
      }
    }
    if (frame.next == frame.names.size()) {
      stack_.pop_back();
      return;
    }
    std::string name = frame.names[frame.next++];
    std::string rel = frame.rel.empty() ? name : frame.rel + "/" + name;
    Visit(stack_.back(), name, rel);
  }

  void Visit(Frame& parent, const std::string& name, const std::string& rel) {
    struct stat st {};
    if (fstatat(parent.fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;  // raced
    // Why every symlink is skipped, in the skill or out, before its name is judged: the
    // manifest lists only what the walk sees without following anything (one lstat per
    // entry). A link inside the skill is still readable through skill_file.
    if (S_ISLNK(st.st_mode)) return;
    // Why: a path the read tools would refuse must not be advertised as readable.
    PathRefusal refusal = CheckRelativePath(rel);
    if (!IsValidUtf8(name) || refusal != PathRefusal::kNone) {
      Report(rel, reason::kUnusablePath,
             std::string("this name cannot be requested through skill_file: ") +
                 (refusal != PathRefusal::kNone ? DescribePathRefusal(refusal)
                                                : "it is not valid UTF-8") +
                 ". It is left out of the manifest; rename it to use it");
      return;
    }
    if (S_ISREG(st.st_mode)) return AddFile(rel, st);
    if (S_ISDIR(st.st_mode)) {
      UniqueFd child(
          openat(parent.fd, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (child) Descend(parent, std::move(child), st, rel);
      return;
    }
    // FIFOs, sockets and devices are not files the read tools serve: left out.
  }

  void AddFile(const std::string& rel, const struct stat& st) {
    if (result_.files.size() >= kMaxFilesPerSkill) {
      return Limit(std::to_string(kMaxFilesPerSkill) + " files");
    }
    result_.files.push_back({rel, static_cast<uint64_t>(st.st_size)});
    result_.bytes += static_cast<uint64_t>(st.st_size);
  }

  void Descend(const Frame& parent, UniqueFd fd, const struct stat& st, const std::string& rel) {
    InodeId id{st.st_dev, st.st_ino};
    // Why: a bind mount of a directory above it would make the walk endless.
    if (std::find(parent.ancestors.begin(), parent.ancestors.end(), id) != parent.ancestors.end()) {
      return;
    }
    if (dirs_ >= kMaxDirsPerSkill) return Limit(std::to_string(kMaxDirsPerSkill) + " directories");
    ++dirs_;
    Frame child;
    child.fd = fd.get();
    child.owned = std::move(fd);
    child.rel = rel;
    child.ancestors = parent.ancestors;
    child.ancestors.push_back(id);
    stack_.push_back(std::move(child));
  }

  int skill_dir_;
  const std::string& source_;
  std::vector<Frame> stack_;
  ManifestResult result_;
  size_t dirs_ = 0;
  bool stopped_ = false;
};

}  // namespace

ManifestResult WalkManifest(int skill_dir, const std::string& source) {
  return Walker(skill_dir, source).Run();
}

std::string DisplaySafe(std::string_view s) {
  if (IsValidUtf8(s)) return std::string(s);
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    // Take the character starting here whole, or show its first byte.
    const size_t len = Utf8SequenceLength(s, i);
    if (len > 0) {
      out.append(s.substr(i, len));
      i += len - 1;
    } else {
      static const char kHex[] = "0123456789abcdef";
      const auto b = static_cast<unsigned char>(s[i]);
      out += "\\x";
      out.push_back(kHex[b >> 4]);
      out.push_back(kHex[b & 0xF]);
    }
  }
  return out;
}

}  // namespace skillmcp
