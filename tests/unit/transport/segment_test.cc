// shm::open_map_of: a replacement PE maps its peers' segments through the descriptors they hold open
// (pgas/resilient.h), with the checks of a mapping by name.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "transport/shm/segment.h"

namespace tessera::transport::shm {
namespace {

TEST(Segment, MapsAnObjectThroughTheDescriptorItsOwnerHolds) {
  const std::string name = segment_name("unit" + std::to_string(::getpid()), "by-fd");
  int fd = -1;
  Result<void*> mine = create(name, 1 << 16, 0, 0, &fd);
  ASSERT_TRUE(mine.is_ok()) << mine.status().message();
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(unlink(name).is_ok());  // the name is gone, as after a job's start-up
  std::memcpy(mine.value(), "hello", 6);
  Result<void*> other = open_map_of(::getpid(), fd, 1 << 16);
  ASSERT_TRUE(other.is_ok()) << other.status().message();
  EXPECT_STREQ(static_cast<const char*>(other.value()), "hello") << "the same memory";
  std::memcpy(other.value(), "world", 6);
  EXPECT_STREQ(static_cast<const char*>(mine.value()), "world");

  Result<void*> wrong = open_map_of(::getpid(), fd, 1 << 17);
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_NE(wrong.status().message().find("has 65536 bytes, expected 131072"), std::string::npos)
      << wrong.status().message();
  Result<void*> none = open_map_of(::getpid(), 1000000, 1 << 16);
  ASSERT_FALSE(none.is_ok());
  EXPECT_NE(none.status().message().find("/proc/"), std::string::npos) << none.status().message();
  unmap(other.value(), 1 << 16);
  unmap(mine.value(), 1 << 16);
  ::close(fd);
}

TEST(Segment, RefusesAnObjectOpenToOtherUsers) {
  const std::string name = segment_name("unit" + std::to_string(::getpid()), "by-fd-open");
  int fd = -1;
  Result<void*> mine = create(name, 4096, 0, 0, &fd);
  ASSERT_TRUE(mine.is_ok()) << mine.status().message();
  ASSERT_TRUE(unlink(name).is_ok());
  ASSERT_EQ(::fchmod(fd, 0644), 0);
  Result<void*> other = open_map_of(::getpid(), fd, 4096);
  ASSERT_FALSE(other.is_ok());
  EXPECT_NE(other.status().message().find("mode 644"), std::string::npos) << other.status().message();
  unmap(mine.value(), 4096);
  ::close(fd);
}

}  // namespace
}  // namespace tessera::transport::shm
