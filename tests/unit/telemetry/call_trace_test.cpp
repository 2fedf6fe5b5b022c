#include "telemetry/call_trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace toolbridge::telemetry {
namespace {

namespace fs = std::filesystem;

class CallTraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tb-trace-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  config::Trace options(std::size_t max_bytes = 1u << 20, std::size_t files = 2,
                        std::size_t buffer = 1000) {
    return config::Trace{(dir_ / "calls.jsonl").string(), max_bytes, files, buffer};
  }
  static std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  fs::path dir_;
};

TEST_F(CallTraceTest, LinesAreAppendedInOrder) {
  {
    CallTrace trace(options());
    for (int i = 0; i < 100; ++i) EXPECT_TRUE(trace.write("{\"n\":" + std::to_string(i) + "}"));
    trace.flush();
    EXPECT_EQ(trace.written(), 100u);
    EXPECT_EQ(trace.dropped(), 0u);
  }
  const std::string text = read(dir_ / "calls.jsonl");
  std::istringstream lines(text);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) EXPECT_EQ(line, "{\"n\":" + std::to_string(n++) + "}");
  EXPECT_EQ(n, 100);
}

TEST_F(CallTraceTest, AFullBufferDropsAndCountsInsteadOfBlocking) {
  CallTrace trace(options(1u << 20, 2, 10), /*start_writer=*/false);
  for (int i = 0; i < 25; ++i) trace.write("line");  // returns at once even with no writer
  EXPECT_EQ(trace.dropped(), 15u);
  trace.start_writer();
  trace.flush();
  EXPECT_EQ(trace.written(), 10u);
}

TEST_F(CallTraceTest, TheFileIsRotatedBySizeKeepingFilesRotatedOnes) {
  const std::string line(1000, 'x');
  {
    CallTrace trace(options(4096, 2));
    for (int i = 0; i < 20; ++i) {
      trace.write(line);
      trace.flush();  // one line per batch, so rotation is checked before each
    }
    EXPECT_GE(trace.rotations(), 4u);
  }
  EXPECT_TRUE(fs::exists(dir_ / "calls.jsonl"));
  EXPECT_TRUE(fs::exists(dir_ / "calls.jsonl.1"));
  EXPECT_TRUE(fs::exists(dir_ / "calls.jsonl.2"));
  EXPECT_FALSE(fs::exists(dir_ / "calls.jsonl.3"));
  for (const char* name : {"calls.jsonl", "calls.jsonl.1", "calls.jsonl.2"})
    EXPECT_LE(fs::file_size(dir_ / name), 4096u) << name;
}

TEST_F(CallTraceTest, AFileThatCannotBeOpenedIsReportedAndLinesAreDropped) {
  config::Trace o = options();
  o.file = (dir_ / "missing" / "calls.jsonl").string();
  CallTrace trace(o);
  EXPECT_NE(trace.error().find("missing/calls.jsonl"), std::string::npos) << trace.error();
  EXPECT_FALSE(trace.write("x"));
  trace.flush();  // returns: nothing can be written
  EXPECT_EQ(trace.dropped(), 1u);
}

}  // namespace
}  // namespace toolbridge::telemetry
