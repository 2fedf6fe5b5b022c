// The recorder's writer thread: flush() returns once what was queued is in the file, however
// often it is called and whether or not anything waits.
#include "replay/recorder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>
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

TEST_F(RecorderFlush, EveryLineOfEveryBatchIsSealedByTheWriter) {
  // More calls than wake the writer early (512), with flushes between uneven runs of them: each
  // batch's lines are sealed by the writer, and every one verifies in order.
  Recorder recorder(config::Record{root_, 1 << 24}, metrics_, base::steady_clock());
  ASSERT_EQ(recorder.error(), "");
  recorder.start_writer();
  std::vector<std::string> names;
  for (int i = 0; i < 1300; ++i) names.push_back("t" + std::to_string(i % 7));
  for (int i = 0; i < 1300; ++i) {
    CallEntry c = echo_call(names[static_cast<std::size_t>(i)], static_cast<std::uint64_t>(i) + 1);
    c.duration_ms = 1.5 + i;
    c.queued_ms = 0.0004;  // rounds to 0.000
    recorder.record(c);
    if (i % 97 == 0) recorder.flush();
  }
  recorder.flush();
  auto cassette = Cassette::load(recorder.run_dir());
  ASSERT_TRUE(cassette) << cassette.error();
  EXPECT_EQ((*cassette)->damaged(), 0u);
  EXPECT_FALSE((*cassette)->torn_tail());
  ASSERT_EQ((*cassette)->calls().size(), 1300u);
  for (std::size_t i = 0; i < 1300; ++i) {
    const CallRecord& rec = (*cassette)->calls()[i];
    ASSERT_EQ(rec.seq, i);
    ASSERT_EQ(rec.occurrence, i + 1);
    ASSERT_EQ(rec.trajectory, names[i]);
    ASSERT_DOUBLE_EQ(rec.duration_ms, 1.5 + static_cast<double>(i));
  }
  const std::string text = read_file(recorder.run_dir() + "/calls.jsonl");
  EXPECT_NE(text.find(R"("queued_ms":0.000,"duration_ms":1.500,)"), std::string::npos);
  EXPECT_NE(text.find(R"("duration_ms":1300.500,)"), std::string::npos);
}

TEST_F(RecorderFlush, AnAnswerLaidOutOnSeveralLinesStaysOneRecord) {
  Recorder recorder(config::Record{root_, 1 << 20}, metrics_, base::steady_clock());
  ASSERT_EQ(recorder.error(), "");
  recorder.start_writer();
  CallEntry c = echo_call("t", 1);
  c.answer = "{\n  \"content\": [\r\n    {\"type\": \"text\", \"text\": \"a\\nb\"}\n  ]\n}";
  recorder.record(c);
  recorder.record(echo_call("t", 2));
  recorder.flush();
  auto cassette = Cassette::load(recorder.run_dir());
  ASSERT_TRUE(cassette) << cassette.error();
  EXPECT_EQ((*cassette)->damaged(), 0u);
  ASSERT_EQ((*cassette)->calls().size(), 2u);
  // The same JSON value: only whitespace changed; the escaped "\n" inside the string stays.
  EXPECT_EQ(boost::json::parse((*cassette)->calls()[0].payload),
            boost::json::parse(R"({"content":[{"type":"text","text":"a\nb"}]})"));
}

// The gateway's way: writes from its own thread, every 100 ms.
TEST(Recorder, WritesFromTheExecutorsThreadOnItsInterval) {
  const std::string root = testing::TempDir() + "recorder-here-" + std::to_string(::getpid());
  std::filesystem::remove_all(root);
  telemetry::Metrics metrics;
  boost::asio::io_context io;
  {
    Recorder recorder(config::Record{root, 1 << 24}, metrics, base::steady_clock());
    ASSERT_EQ(recorder.error(), "");
    recorder.start(io.get_executor(), std::chrono::seconds(10));
    for (std::uint64_t i = 1; i <= 3; ++i) recorder.record(echo_call("t", i));
    const std::string file = recorder.run_dir() + "/calls.jsonl";
    EXPECT_EQ(read_file(file), "");  // nothing before the interval
    io.run_for(std::chrono::milliseconds(250));
    auto cassette = Cassette::load(recorder.run_dir());
    ASSERT_TRUE(cassette) << cassette.error();
    EXPECT_EQ((*cassette)->calls().size(), 3u);
    EXPECT_FALSE(recorder.writes_on_thread());
    // 512 lines waiting are written soon after, not at the interval.
    for (std::uint64_t i = 4; i <= 515; ++i) recorder.record(echo_call("t", i));
    io.poll();
    cassette = Cassette::load(recorder.run_dir());
    ASSERT_TRUE(cassette) << cassette.error();
    EXPECT_EQ((*cassette)->calls().size(), 515u);
    // So are 1 MiB of lines, however few (large results).
    const std::string big =
        R"({"content":[{"type":"text","text":")" + std::string(400'000, 'x') + R"("}]})";
    for (std::uint64_t i = 516; i <= 518; ++i) {
      CallEntry c = echo_call("t", i);
      c.answer = big;
      recorder.record(c);
    }
    io.poll();
    cassette = Cassette::load(recorder.run_dir());
    ASSERT_TRUE(cassette) << cassette.error();
    EXPECT_EQ((*cassette)->calls().size(), 518u);
  }
  io.run_for(std::chrono::milliseconds(50));  // the cancelled timer's handler touches nothing
  std::filesystem::remove_all(root);
}

TEST(Recorder, ASlowWriteHandsTheWritesToAThread) {
  const std::string root = testing::TempDir() + "recorder-slow-" + std::to_string(::getpid());
  std::filesystem::remove_all(root);
  telemetry::Metrics metrics;
  boost::asio::io_context io;
  std::string run;
  {
    Recorder recorder(config::Record{root, 1 << 20}, metrics, base::steady_clock());
    ASSERT_EQ(recorder.error(), "");
    run = recorder.run_dir();
    recorder.start(io.get_executor(), std::chrono::milliseconds(0));  // every write is slow
    recorder.record(echo_call("t", 1));
    recorder.flush();  // written here, then the thread starts
    EXPECT_TRUE(recorder.writes_on_thread());
    recorder.record(echo_call("t", 2));
    recorder.flush();  // by the thread
    auto cassette = Cassette::load(run);
    ASSERT_TRUE(cassette) << cassette.error();
    EXPECT_EQ((*cassette)->calls().size(), 2u);
    recorder.record(echo_call("t", 3));
  }
  auto cassette = Cassette::load(run);  // the last, written as the recorder ends
  ASSERT_TRUE(cassette) << cassette.error();
  EXPECT_EQ((*cassette)->calls().size(), 3u);
  std::filesystem::remove_all(root);
}

TEST(Recorder, AWriterNeverStartedSealsAndWritesWhatWasQueuedAtTheEnd) {
  const std::string root = testing::TempDir() + "recorder-unstarted-" + std::to_string(::getpid());
  std::filesystem::remove_all(root);
  telemetry::Metrics metrics;
  std::string run;
  {
    Recorder recorder(config::Record{root, 1 << 20}, metrics, base::steady_clock());
    ASSERT_EQ(recorder.error(), "");
    run = recorder.run_dir();
    for (std::uint64_t i = 1; i <= 3; ++i) recorder.record(echo_call("t", i));
  }
  auto cassette = Cassette::load(run);
  ASSERT_TRUE(cassette) << cassette.error();
  EXPECT_EQ((*cassette)->damaged(), 0u);
  EXPECT_EQ((*cassette)->calls().size(), 3u);
  std::filesystem::remove_all(root);
}

}  // namespace
