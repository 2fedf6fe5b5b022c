// The recorder's writer thread: flush() returns once what was queued is in the file, however
// often it is called and whether or not anything waits.
#include "replay/recorder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "replay/cassette.h"

namespace {

using namespace toolbridge;
using namespace toolbridge::replay;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

CallEntry echo_call(std::string_view trajectory, std::uint64_t occurrence) {
  CallEntry c;
  c.trajectory = trajectory;
  c.server = "fx";
  c.tool = "echo";
  c.arguments = R"({"text":"hi"})";
  c.occurrence = occurrence;
  c.answer = R"({"content":[{"type":"text","text":"hi"}]})";
  c.fingerprint = "0000000000000000";
  return c;
}

class RecorderFlush : public testing::Test {
 protected:
  void SetUp() override {
    root_ = testing::TempDir() + "recorder-test-" + std::to_string(::getpid());
    std::filesystem::remove_all(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::string root_;
  telemetry::Metrics metrics_;
};

TEST_F(RecorderFlush, WritesWhatWasQueuedAndReturnsAgainWithNothingQueued) {
  Recorder recorder(config::Record{root_, 1 << 20}, metrics_, base::steady_clock());
  ASSERT_EQ(recorder.error(), "");
  recorder.start_writer();
  const std::string file = recorder.run_dir() + "/calls.jsonl";
  recorder.record(echo_call("t1", 1));
  recorder.flush();  // it once spun in the writer, holding the lock this needs to return
  auto cassette = Cassette::load(recorder.run_dir());
  ASSERT_TRUE(cassette) << cassette.error();
  ASSERT_EQ((*cassette)->calls().size(), 1u);
  EXPECT_EQ((*cassette)->calls()[0].trajectory, "t1");

  recorder.flush();  // nothing waits
  recorder.flush();
  recorder.record(echo_call("t1", 2));
  recorder.record(echo_call("t2", 1));
  recorder.flush();
  cassette = Cassette::load(recorder.run_dir());
  ASSERT_TRUE(cassette) << cassette.error();
  ASSERT_EQ((*cassette)->calls().size(), 3u);
  EXPECT_EQ((*cassette)->calls()[2].trajectory, "t2");
  EXPECT_FALSE((*cassette)->torn_tail());
  EXPECT_EQ(read_file(file).back(), '\n');
}

}  // namespace
