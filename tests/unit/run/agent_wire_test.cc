// The launcher <-> agent channel (tools/run/agent_wire.h) and the output line buffer (tools/run/proc.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include "agent_wire.h"
#include "bootstrap/tcp_wire.h"
#include "proc.h"

namespace tessera::run {
namespace {

JobSpec sample() {
  JobSpec j;
  j.job_id = "0123456789abcdef";
  j.host = "h2";
  j.host_index = 1;
  j.first_rank = 2;
  j.n_ranks = 2;
  j.size = 4;
  j.bootstrap_host = "h1";
  j.cwd = "/work dir";
  j.argv = {"prog", "", "an arg with spaces"};
  j.env = {"A=1", "TESSERA_JOB_SECRET=00ff"};
  return j;
}

TEST(AgentWire, JobRoundTrips) {
  const JobSpec j = sample();
  auto back = decode_job(encode_job(j));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->job_id, j.job_id);
  EXPECT_EQ(back->host, j.host);
  EXPECT_EQ(back->host_index, 1u);
  EXPECT_EQ(back->first_rank, 2u);
  EXPECT_EQ(back->n_ranks, 2u);
  EXPECT_EQ(back->size, 4u);
  EXPECT_EQ(back->bootstrap_host, "h1");
  EXPECT_EQ(back->cwd, j.cwd);
  EXPECT_EQ(back->argv, j.argv);
  EXPECT_EQ(back->env, j.env);
}

TEST(AgentWire, MalformedJobsAreRefused) {
  std::vector<char> bytes = encode_job(sample());
  for (size_t cut = 0; cut < bytes.size(); ++cut)
    EXPECT_FALSE(decode_job(std::vector<char>(bytes.begin(), bytes.begin() + static_cast<long>(cut)))) << cut;
  std::vector<char> longer = bytes;
  longer.push_back(0);
  EXPECT_FALSE(decode_job(longer)) << "trailing bytes";
  JobSpec beyond = sample();
  beyond.first_rank = 3;  // ranks 3..4 of a job of 4
  EXPECT_FALSE(decode_job(encode_job(beyond)));
  JobSpec no_program = sample();
  no_program.argv.clear();
  EXPECT_FALSE(decode_job(encode_job(no_program)));
}

TEST(AgentWire, FramesCrossAPipe) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  ASSERT_TRUE(write_frame(p[1], AgentMsg::kExit, Writer().u32(3).i32(-7).u32(1).bytes()).is_ok());
  ASSERT_TRUE(write_frame(p[1], AgentMsg::kDone).is_ok());
  ::close(p[1]);
  bootstrap::tcp::FrameReader reader(1 << 20);
  char buf[256];
  ssize_t n;
  while ((n = ::read(p[0], buf, sizeof buf)) > 0) reader.feed(buf, static_cast<size_t>(n));
  ::close(p[0]);
  bootstrap::tcp::Frame f;
  ASSERT_EQ(reader.next(&f), bootstrap::tcp::FrameReader::Next::kFrame);
  EXPECT_EQ(static_cast<AgentMsg>(f.type), AgentMsg::kExit);
  Reader r(f.payload);
  EXPECT_EQ(r.u32(), 3u);
  EXPECT_EQ(r.i32(), -7);
  EXPECT_EQ(r.u32(), 1u);
  EXPECT_TRUE(r.ok_and_done());
  ASSERT_EQ(reader.next(&f), bootstrap::tcp::FrameReader::Next::kFrame);
  EXPECT_EQ(static_cast<AgentMsg>(f.type), AgentMsg::kDone);
  EXPECT_TRUE(f.payload.empty());
  EXPECT_EQ(reader.next(&f), bootstrap::tcp::FrameReader::Next::kMore);
}

TEST(AgentWire, WritingToAClosedPipeIsAnErrorNotADeath) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  ::close(p[0]);
  auto old = signal(SIGPIPE, SIG_IGN);  // as both ends of the channel have it
  EXPECT_FALSE(write_frame(p[1], AgentMsg::kDone).is_ok());
  signal(SIGPIPE, old);
  ::close(p[1]);
}

TEST(LineBuffer, PassesWholeLines) {
  LineBuffer b;
  b.feed("a\nb", 3);
  EXPECT_EQ(b.take(false), "a\n");
  b.feed("c\nd\n", 4);
  EXPECT_EQ(b.take(false), "bc\nd\n");
  EXPECT_TRUE(b.empty());
  b.feed("tail", 4);
  EXPECT_EQ(b.take(false), "");
  EXPECT_EQ(b.take(true), "tail\n") << "a partial last line ends with the stream";
  EXPECT_EQ(b.take(true), "");
}

TEST(LineBuffer, AnOverlongLineGoesOnInPieces) {
  LineBuffer b;
  std::string big(LineBuffer::kMaxLine, 'x');
  b.feed(big.data(), big.size());
  EXPECT_EQ(b.take(false), big + "\n");
  EXPECT_TRUE(b.empty());
}

}  // namespace
}  // namespace tessera::run
