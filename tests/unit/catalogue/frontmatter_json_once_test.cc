// ParseSkillMd renders the skills extension's frontmatter JSON from its own strict parse
// (one parse per SKILL.md at boot): the text must be what FrontmatterJsonText gives for
// the same frontmatter, in every case, the refused ones included.
#include <gtest/gtest.h>

#include <string>

#include "broker/catalogue/frontmatter.h"
#include "broker/catalogue/yaml_json.h"

namespace skillmcp {
namespace {

TEST(FrontmatterJsonOnce, SameTextAsASecondParse) {
  const char* frontmatters[] = {
      "name: x\ndescription: An x.\n",
      "description: yes\nname: x\nmetadata:\n  b: 2\n  a: [1, 'two', null, 0x1F]\n",
      "name: x\ndescription: d\nlimit: .inf\n",        // JSON cannot carry it: ""
      "",                                               // null document: ""
      "name: x\ndescription: d\nmcp-host:\n  version: 1\n  run: [\n",  // block refused: ""
      ("name: x\ndescription: d\nmcp-host:\n  version: 1\n  run:\n    - script: s.js\n"
       "      interpreter: node\n"),
      "name: \"\\u00e9t\\u00e9\"\ndescription: 'quote '' and \\\\'\n",
  };
  for (const char* fm : frontmatters) {
    const std::string text = std::string("---\n") + fm + "---\n# Body\n";
    ParsedSkillMd parsed = ParseSkillMd(text, false);
    EXPECT_EQ(parsed.frontmatter_json, FrontmatterJsonText(fm).value_or("")) << fm;
  }
}

TEST(FrontmatterJsonOnce, KeepsTheAuthorsOrderAndTypes) {
  ParsedSkillMd parsed = ParseSkillMd("---\nname: x\ndescription: yes\nn: 3\n---\n", false);
  EXPECT_EQ(parsed.frontmatter_json, "{\"name\":\"x\",\"description\":\"yes\",\"n\":3}");
}

}  // namespace
}  // namespace skillmcp
