#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "kbench/error.hpp"
#include "kbench/file_io.hpp"
#include "temp_files.hpp"

using namespace kbench;
using namespace kbench::testing;
namespace fs = std::filesystem;

TEST_CASE("an output replaces its file only when committed", "[file_io]") {
  TempDir dir;
  const std::string path = dir.file("out.csv");
  write_bytes(path, "old\n");
  {
    OutputFile out(path);
    CHECK_FALSE(out.in_place());
    out.write("new\n");
    out.finish();
    // Written and closed, but not yet committed: the old file is intact beside the temporary.
    CHECK(read_bytes(path) == "old\n");
    const auto names = dir.entries();
    REQUIRE(names.size() == 2);
    CHECK(names[1].rfind("out.csv.partial-" + std::to_string(::getpid()), 0) == 0);
    out.commit();
  }
  CHECK(read_bytes(path) == "new\n");
  CHECK(dir.entries() == std::vector<std::string>{"out.csv"});
  {
    OutputFile abandoned(path);
    abandoned.write("never\n");
  }
  CHECK(read_bytes(path) == "new\n");
  CHECK(dir.entries() == std::vector<std::string>{"out.csv"});
  write_file(dir.file("text.txt"), "text");
  CHECK(read_bytes(dir.file("text.txt")) == "text");
}

TEST_CASE("an output through a symbolic link keeps the link, and a file keeps its mode",
          "[file_io]") {
  TempDir dir;
  write_bytes(dir.file("real.txt"), "old");
  ::chmod(dir.file("real.txt").c_str(), 0640);
  fs::create_symlink("real.txt", dir.file("link.txt"));
  write_file(dir.file("link.txt"), "new");
  CHECK(fs::is_symlink(dir.file("link.txt")));
  CHECK(read_bytes(dir.file("real.txt")) == "new");
  CHECK((fs::status(dir.file("real.txt")).permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
  CHECK(dir.entries() == std::vector<std::string>{"link.txt", "real.txt"});
}

TEST_CASE("devices are written in place and bad targets refused before writing", "[file_io]") {
  TempDir dir;
  CHECK(writes_in_place("-"));
  CHECK(writes_in_place("/dev/null"));
  CHECK_FALSE(writes_in_place(dir.file("plain.txt")));
  {
    OutputFile null("/dev/null");
    CHECK(null.in_place());
    null.write("discarded");
    null.commit();
  }
  struct stat info {};
  REQUIRE(::stat("/dev/null", &info) == 0);
  CHECK(S_ISCHR(info.st_mode));
  CHECK_THROWS_WITH(OutputFile(dir.file("missing/out.txt")),
                    Catch::Contains("cannot write") && Catch::Contains("missing/out.txt"));
  fs::create_directory(dir.file("folder"));
  CHECK_THROWS_AS(OutputFile(dir.file("folder")), UsageError);
  CHECK_NOTHROW(OutputFile::check_writable(dir.file("fine.txt")));
  CHECK_THROWS_AS(OutputFile::check_writable(dir.file("missing/out.txt")), Error);
  CHECK(dir.entries() == std::vector<std::string>{"folder"});
  if (::geteuid() != 0) {  // root writes anywhere
    fs::create_directory(dir.file("locked"));
    fs::permissions(dir.file("locked"), fs::perms::owner_read | fs::perms::owner_exec);
    CHECK_THROWS_WITH(OutputFile(dir.file("locked/out.txt")), Catch::Contains("Permission"));
  }
}

TEST_CASE("outputs written together are all committed or none", "[file_io]") {
  TempDir dir;
  write_bytes(dir.file("a.txt"), "old a");
  write_bytes(dir.file("b.txt"), "old b");
  {
    OutputFile a(dir.file("a.txt")), b(dir.file("b.txt"));
    const auto fails = [](OutputFile&) { throw Error("the second output failed"); };
    CHECK_THROWS_WITH(
        write_and_commit({{&a, [](OutputFile& f) { f.write("new a"); }}, {&b, fails}}),
        "the second output failed");
  }
  CHECK(read_bytes(dir.file("a.txt")) == "old a");
  CHECK(read_bytes(dir.file("b.txt")) == "old b");
  CHECK(dir.entries() == std::vector<std::string>{"a.txt", "b.txt"});
  {
    OutputFile a(dir.file("a.txt")), b(dir.file("b.txt")), null("/dev/null");
    // Streams are written after the files, whatever the order given.
    std::vector<std::string> order;
    write_and_commit({{&null, [&](OutputFile& f) { order.push_back("stream"), f.write("x"); }},
                      {&a, [&](OutputFile& f) { order.push_back("a"), f.write("new a"); }},
                      {&b, [&](OutputFile& f) { order.push_back("b"), f.write("new b"); }}});
    CHECK(order == std::vector<std::string>{"a", "b", "stream"});
  }
  CHECK(read_bytes(dir.file("a.txt")) == "new a");
  CHECK(read_bytes(dir.file("b.txt")) == "new b");
}

TEST_CASE("an output equal to an input or another output is refused", "[file_io]") {
  TempDir dir;
  write_bytes(dir.file("in.png"), "image");
  fs::create_hard_link(dir.file("in.png"), dir.file("hard.png"));
  fs::create_symlink("in.png", dir.file("soft.png"));
  fs::create_directory(dir.file("sub"));
  const std::vector<NamedPath> inputs{{dir.file("in.png"), "the input image"}};
  for (const std::string& same : {dir.file("in.png"), dir.file("hard.png"), dir.file("soft.png"),
                                  dir.file("sub/../in.png")}) {
    INFO(same);
    CHECK_THROWS_WITH(check_distinct_paths(inputs, {{same, "the output image"}}),
                      Catch::Contains("is the input image"));
    CHECK_THROWS_AS(check_distinct_paths(inputs, {{same, "the output image"}}), UsageError);
  }
  // Two outputs that do not exist yet, spelt differently.
  CHECK_THROWS_WITH(check_distinct_paths(
                        {}, {{dir.file("a.csv"), "-o"}, {dir.file("sub/../a.csv"), "--all-pairs"}}),
                    Catch::Contains("--all-pairs") && Catch::Contains("is also -o"));
  CHECK_THROWS_WITH(check_distinct_paths({}, {{"-", "-o"}, {"-", "--hist"}}),
                    Catch::Contains("standard output"));
  CHECK_THROWS_WITH(check_distinct_paths({}, {{dir.file("sub"), "-o"}}),
                    Catch::Contains("is a folder"));
  // Different files, empty paths and standard input beside standard output pass.
  CHECK_NOTHROW(check_distinct_paths({{"-", "the input"}, {dir.file("in.png"), "the query"}},
                                     {{"-", "-o"}, {"", "--hist"}, {dir.file("b.csv"), "-m"}}));
  CHECK(lower_extension("dir.d/photo.PNG") == "png");
  CHECK(lower_extension("dir.d/photo") == "");
  CHECK(output_name("-") == "standard output");
}
