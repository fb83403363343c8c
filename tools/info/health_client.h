// tessera-info --health [--job PID] [--overdue S] [--json] (health_client.cc).
#pragma once

namespace tessera::info {

// Prints the job's health view; returns the exit status: 0 healthy, 1 not healthy, 2 no answer.
int health_main(long job_pid, double overdue_s, bool json);

}  // namespace tessera::info
