// The text side of the exec strategy: placeholders, `run --exec`'s splitting, finding the
// program.
#include "harness/experiment/command.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace loadbench {
namespace {

using Words = std::vector<std::string>;

TEST(FillCommand, FillsEveryPlaceholderAndLeavesOtherBraces) {
  ExecCommand c;
  c.argv = {"loader",       "--model={file}", "{dir}",       "{bytes}",
            "{peers}/x.py", "{print $1}",     "{file}{file}"};
  const ExecPlaces places = {"/m/a.gguf", "/m", 4096, "/src/loaders/peers"};
  EXPECT_EQ(FillCommand(c, places),
            (Words{"loader", "--model=/m/a.gguf", "/m", "4096", "/src/loaders/peers/x.py",
                   "{print $1}", "/m/a.gguf/m/a.gguf"}));
  c.shell = true;
  c.argv = {"cat {file} | wc -c"};
  EXPECT_EQ(FillCommand(c, places), (Words{"/bin/sh", "-c", "cat /m/a.gguf | wc -c"}));
}

TEST(ParseExecFlag, SplitsAtSpacesWithQuotes) {
  ExecCommand c;
  ASSERT_TRUE(ParseExecFlag("np=python3  -c 'import x; x.run()' \"a b\" {file}", false, &c).ok());
  EXPECT_EQ(c.label, "np");
  EXPECT_EQ(c.argv, (Words{"python3", "-c", "import x; x.run()", "a b", "{file}"}));
  EXPECT_FALSE(c.shell);
  ASSERT_TRUE(ParseExecFlag("e=x ''", false, &c).ok());
  EXPECT_EQ(c.argv, (Words{"x", ""}));  // an empty quoted word is a word
  ASSERT_TRUE(ParseExecFlag("sh=cat {file} | wc -c", true, &c).ok());
  EXPECT_EQ(c.argv, (Words{"cat {file} | wc -c"}));
  EXPECT_TRUE(c.shell);
}

TEST(ParseExecFlag, RefusesWhatIsNotLabelEqualsCommand) {
  ExecCommand c;
  EXPECT_EQ(ParseExecFlag("cat", false, &c).message(), "--exec 'cat': expected LABEL=COMMAND");
  EXPECT_EQ(ParseExecFlag("a=  ", false, &c).message(), "--exec 'a=  ': no command after '='");
  EXPECT_EQ(ParseExecFlag("a=", true, &c).message(), "--exec-shell 'a=': no command after '='");
  EXPECT_EQ(ParseExecFlag("a=x \"y", false, &c).message(),
            "--exec 'a=x \"y': an unclosed \" quote");
}

TEST(ResolveProgram, FindsOnPathOrSaysWhatToInstall) {
  ExecCommand c;
  std::string path;
  ASSERT_TRUE(ResolveProgram(c, "sh", &path).ok());
  EXPECT_TRUE(path.ends_with("/sh")) << path;
  ASSERT_TRUE(ResolveProgram(c, "/bin/sh", &path).ok());
  EXPECT_EQ(path, "/bin/sh");
  c.package = "fio";
  const Status s = ResolveProgram(c, "no-such-fio-xyz", &path);
  EXPECT_EQ(s.code(), Status::Code::kUnsupported);
  EXPECT_EQ(s.message(), "command not found: no-such-fio-xyz (not on PATH); install Debian's fio");
  EXPECT_EQ(ResolveProgram(c, "/nonexistent/fio", &path).message(),
            "command not found: /nonexistent/fio; install Debian's fio");
}

}  // namespace
}  // namespace loadbench
