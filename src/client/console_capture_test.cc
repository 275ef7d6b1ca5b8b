// ConsoleCapture on its own: lines reach the sink, and Stop() gives fds 1 and 2 back, every time.
#include "client/console_capture.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "core/mutex.h"

namespace cohort::client {
namespace {

struct FdIdentity {
  dev_t dev;
  ino_t ino;
  bool operator==(const FdIdentity&) const = default;
};

FdIdentity Identify(int fd) {
  struct stat st {};
  EXPECT_EQ(fstat(fd, &st), 0);
  return {st.st_dev, st.st_ino};
}

// Repeated captures, each stopped right after its output: the capture thread sees end of file
// while Stop() is still restoring the descriptors and waking it. It used to close the saved
// descriptors and its wake pipe under Stop (a race ThreadSanitizer reports; the wake byte could
// land in a descriptor another thread had just opened with the same number).
TEST(ConsoleCapture, EveryStopRestoresTheDescriptorsAndKeepsTheLines) {
  const FdIdentity out = Identify(1), err = Identify(2);
  for (int i = 0; i < 50; ++i) {
    Mutex mu;
    std::vector<std::string> lines;
    auto capture = ConsoleCapture::Start([&](bool is_stderr, int64_t, std::string line) {
      MutexLock lock(&mu);
      lines.push_back(std::string(is_stderr ? "err:" : "out:") + line);
    });
    ASSERT_TRUE(capture.ok()) << capture.status().ToString();
    EXPECT_FALSE(Identify(1) == out);  // a pipe now
    printf("line %d\n", i);
    fflush(stdout);
    fprintf(stderr, "warn %d\n", i);
    (*capture)->Stop(5000);
    EXPECT_TRUE(Identify(1) == out);
    EXPECT_TRUE(Identify(2) == err);
    MutexLock lock(&mu);
    EXPECT_EQ(lines, (std::vector<std::string>{"out:line " + std::to_string(i),
                                               "err:warn " + std::to_string(i)}))
        << "capture " << i;
  }
}

TEST(ConsoleCapture, CapturesDoNotNest) {
  auto first = ConsoleCapture::Start([](bool, int64_t, std::string) {});
  ASSERT_TRUE(first.ok());
  auto second = ConsoleCapture::Start([](bool, int64_t, std::string) {});
  EXPECT_FALSE(second.ok());
  (*first)->Stop();
  auto third = ConsoleCapture::Start([](bool, int64_t, std::string) {});
  EXPECT_TRUE(third.ok());
}

}  // namespace
}  // namespace cohort::client
