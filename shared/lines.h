// The lines of a text, for the parsers of small files (/proc texts, frontmatter).
#pragma once

#include <cstddef>
#include <iterator>
#include <string_view>

namespace skillmcp {

// The lines of `text`, each without its '\n', as views into it: "a\nb" and "a\nb\n" both
// hold "a" and "b" (a final '\n' ends the last line, it does not start an empty one),
// "a\n\nb" holds an empty line between them, and "" holds none. A '\r' stays on its
// line. Allocates nothing.
//   for (std::string_view line : Lines(text)) ...
class Lines {
 public:
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using pointer = const std::string_view*;
    using reference = const std::string_view&;

    iterator() = default;
    reference operator*() const { return line_; }
    pointer operator->() const { return &line_; }
    iterator& operator++() {
      Take();
      return *this;
    }
    iterator operator++(int) {
      iterator before = *this;
      Take();
      return before;
    }
    // Two iterators are equal when the same text is left after them (the end: none).
    friend bool operator==(const iterator& a, const iterator& b) {
      return a.at_end_ == b.at_end_ && (a.at_end_ || a.rest_.data() == b.rest_.data());
    }
    friend bool operator!=(const iterator& a, const iterator& b) { return !(a == b); }

   private:
    friend class Lines;
    explicit iterator(std::string_view text) : rest_(text), at_end_(false) { Take(); }
    void Take() {
      if (rest_.empty()) {
        at_end_ = true;
        line_ = {};
        return;
      }
      const size_t nl = rest_.find('\n');
      line_ = rest_.substr(0, nl);
      rest_.remove_prefix(nl == std::string_view::npos ? rest_.size() : nl + 1);
    }

    std::string_view rest_;
    std::string_view line_;
    bool at_end_ = true;
  };

  explicit Lines(std::string_view text) : text_(text) {}
  iterator begin() const { return iterator(text_); }
  iterator end() const { return iterator(); }

 private:
  std::string_view text_;
};

}  // namespace skillmcp
