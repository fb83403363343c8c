// main() for GoogleTest programs run by tessera-run: every PE runs the same tests in the same order, so a
// test may use collective calls. Each PE reports its own failures; the launcher's exit status is the
// first failing PE's.
#pragma once
#include <gtest/gtest.h>
#include <shmem.h>

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  shmem_init();
  // Only PE 0 prints the progress listing; every PE prints its failures.
  if (shmem_my_pe() != 0) {
    auto& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    struct FailurePrinter : testing::EmptyTestEventListener {
      void OnTestPartResult(const testing::TestPartResult& r) override {
        if (r.failed())
          fprintf(stderr, "PE %d: %s:%d: %s\n", shmem_my_pe(), r.file_name() ? r.file_name() : "?", r.line_number(),
                  r.summary());
      }
    };
    listeners.Append(new FailurePrinter);
  }
  int rc = RUN_ALL_TESTS();
  shmem_finalize();
  return rc;
}
