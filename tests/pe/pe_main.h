// main() for GoogleTest programs run by tessera-run: every PE runs the same tests in the same order, so a
// test may use collective calls. Each PE reports its own failures; the launcher's exit status is the
// first failing PE's. PE 0 prints each skip with its reason (GoogleTest's printer); when every test that
// ran was skipped (and none failed) the program exits with kExitSkipped, which ctest reports as a skip
// (SKIP_RETURN_CODE, tests/CMakeLists.txt), not as a pass.
#pragma once
#include <gtest/gtest.h>
#include <shmem.h>

constexpr int kExitSkipped = 77;

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  shmem_init();
  // Only PE 0 prints the progress listing; every PE prints its failures.
  auto& listeners = testing::UnitTest::GetInstance()->listeners();
  if (shmem_my_pe() != 0) {
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
  const testing::UnitTest& u = *testing::UnitTest::GetInstance();
  const bool all_skipped = rc == 0 && u.test_to_run_count() > 0 && u.skipped_test_count() == u.test_to_run_count();
  if (all_skipped && shmem_my_pe() == 0) printf("every test of this program was skipped\n");
  shmem_finalize();
  return all_skipped ? kExitSkipped : rc;
}
