// The committed generated code must be exactly what tools/codegen/gen.py produces from the
// schemas in the pinned kafka-clients jar (tools/codegen/kafka-clients.pin; make test's set-up
// fetches it from Maven Central): regenerate into a temp dir and compare file by file. A
// missing jar fails the test: it must never silently stop checking.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::set<std::string> names(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

void expect_same_dir(const fs::path& committed, const fs::path& fresh) {
  ASSERT_EQ(names(committed), names(fresh)) << committed;
  for (const auto& n : names(fresh)) {
    EXPECT_TRUE(slurp(committed / n) == slurp(fresh / n))
        << (committed / n) << " differs from the generator's output; re-run tools/codegen/gen.py";
  }
}

TEST(Codegen, CommittedFilesMatchGenerator) {
  const fs::path schemas = SHALE_KAFKA_CLIENTS_JAR;
  ASSERT_TRUE(fs::is_regular_file(schemas))
      << "no kafka-clients jar at " << schemas
      << ": run scripts/setup --test (scripts/setup.d/kafka-schemas.sh fetches it)";
  const fs::path root = SHALE_SOURCE_DIR;
  const fs::path tmp = fs::temp_directory_path() / ("shale_codegen_" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  const std::string cmd = "python3 " + (root / "tools/codegen/gen.py").string() + " --schemas " +
                          schemas.string() + " --out " + (tmp / "src").string() + " --test-out " +
                          (tmp / "tests").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  expect_same_dir(root / "src/protocol/generated", tmp / "src");
  expect_same_dir(root / "tests/unit/protocol/generated", tmp / "tests");
  fs::remove_all(tmp);
}

}  // namespace
