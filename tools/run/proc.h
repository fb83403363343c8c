// Process helpers shared by the launcher's paths (job.cc on one host; hosts_job.cc and agent.cc across
// hosts): starting a PE's program; how a PE ended, in words and as the launcher's exit status; writing whole
// buffers; removing a job's shared-memory objects; and cutting a PE's output into lines.
#pragma once
#include <cstdint>
#include <string>

namespace tessera::run {

// Ending a job's PEs: PEs that wait in Tessera see the abort and end themselves, flushing what they
// printed, so SIGTERM (whose default action drops buffered output) comes only after kSelfEndSeconds;
// SIGKILL after a further kGraceSeconds. On one host (job.cc) the launcher can tell a PE that will end itself
// from one that is outside the library: a thread parked in a Tessera wait counts itself in its PE's sleeper
// word in the job control segment (sync/wait.h); the launcher's doorbell wakes it, and once the job is
// ending it leaves the count only to exit (or, its wait satisfied meanwhile, to go on). A PE with no thread
// counted kUnparkedEndSeconds after the abort is outside the library (a waiter not yet parked checks the
// abort word within its spin and yield phases, a thread parked on a word of its own, word_wait.h, between
// slices of at most ~51 ms), so it gets SIGTERM then instead of after the full kSelfEndSeconds.
inline constexpr double kSelfEndSeconds = 0.3;
inline constexpr double kUnparkedEndSeconds = 0.1;
inline constexpr double kGraceSeconds = 2.0;

// Called in a PE's process before exec: turns off UCX's handlers for SIGSEGV, SIGBUS, SIGILL and SIGFPE
// (UCX_HANDLE_ERRORS=none) unless the user set UCX_HANDLE_ERRORS. UCX, linked for the transports between
// hosts, installs them when it is loaded; on such a signal, even one sent with kill(2), the handler prints a
// backtrace before the process dies. That delays the death the launcher reports and ends the job on
// (resolving symbols is slow on a loaded host), runs code that is not async-signal-safe in a handler (it can
// hang when the signal lands inside malloc), and repeats in UCX's words what the launcher says. A user who
// wants UCX's backtraces sets UCX_HANDLE_ERRORS=bt.
void no_ucx_error_handlers();

// Called in a PE's process before exec when `pes_on_host` PEs share its host: one OpenBLAS thread per PE
// (OPENBLAS_NUM_THREADS=1) unless the user set OPENBLAS_NUM_THREADS, GOTO_NUM_THREADS or OMP_NUM_THREADS (the
// variables OpenBLAS reads), as torchrun sets OMP_NUM_THREADS=1. Tessera links OpenBLAS for its fused matrix
// products, and the pthread build Debian ships starts a pool of one thread per CPU, less one, when it is
// loaded, in every PE: with a PE per CPU those threads can only take a CPU from another PE, and one process
// per CPU carrying idle BLAS threads is what a careful user turns off by hand.
void one_blas_thread_per_pe(int pes_on_host);

// Called in a PE's process before exec, on one host and across hosts alike: what torch.distributed's env://
// start-up reads (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT; as torchrun sets
// them), each unless the user set it, so that a PyTorch program runs under tessera-run unchanged; and
// tessera_torch's directory (python_dir()) in front of PYTHONPATH. An empty master_port is left unset.
void torch_environment(int rank, int size, int local_rank, int local_size, const std::string& master_addr,
                       const std::string& master_port);
// Where tessera_torch lies relative to this binary: build/python in the build tree, <prefix>/lib/tessera/python
// once installed (cmake/TesseraInstall.cmake). Empty when the backend was not built.
std::string python_dir();

// Called in a PE's process in place of execvp(argv[0], argv): a name without a '/' is looked up on PATH and,
// when PATH has no such program, in the working directory, as mpirun and oshrun find `a.out` there; a name
// with a '/' is a path. The program's argv[0] stays as given. Returns only on failure, with the reason in
// words for "cannot start NAME: <reason>".
std::string exec_program(char* const argv[]);

// "SIGKILL" (or the number when the signal has no name).
std::string signal_name(int sig);
// A waitpid status as an exit status: the code, 128 + the signal, or 1.
int exit_status_of(int status);
// "killed by signal 9 (SIGKILL)", "exited with status 3", "exited with status 0".
std::string describe_status(int status);

// Writes all of s unless fd fails (then gives up silently: the reader is gone).
void write_all(int fd, const std::string& s);

// Removes every object of the job still named in this host's /dev/shm (after a crash during start-up; a
// job that started has unlinked them all already).
void remove_job_segments(const std::string& job_id);
// The inode of this process's pid namespace (0 if unknown): a launcher pid means something only in it.
uint64_t pid_namespace();
// A launcher killed by SIGKILL cleans up nothing: its control segment stays in /dev/shm, and so do the heaps
// of PEs that died (they die with it) before they removed their names. Removes the segments of every job of
// this user whose control segment names a launcher of this pid namespace that no longer exists; returns how
// many jobs. Run by every launcher before it makes its own.
int remove_segments_of_dead_jobs();

// A PE's output stream cut into whole lines: feed() what a read brought, take() the complete lines so far
// (all of it, a partial last line ended by '\n', when `all`). A line longer than kMaxLine is passed on in
// pieces, so that a PE that never prints a newline cannot grow the buffer without bound.
class LineBuffer {
 public:
  static constexpr size_t kMaxLine = 64 * 1024;
  void feed(const char* data, size_t n) { buf_.append(data, n); }
  std::string take(bool all);
  bool empty() const { return buf_.empty(); }

 private:
  std::string buf_;
};

}  // namespace tessera::run
