// One job per run directory: the lock a training job holds on its --run-dir for its whole life.
// See Note [one job per run directory].
#pragma once

#include <string>

namespace pix2pix::metrics {

// Note [one job per run directory]
// Two jobs in one run directory end with one run's checkpoints beside another's config and
// metrics, or with one deleting the other's files (--overwrite). Rank 0 of a job therefore takes
// an advisory fcntl lock on DIR/.pix2pix.lock before it writes anything there, and holds it until
// the process ends; the kernel (or the NFS lock manager) releases it when the process dies in any
// way, so a killed job never leaves a stale lock behind. It is an open-file-description lock
// (F_OFD_SETLK): a second open of the file, even in the same process, conflicts, and closing
// another descriptor of the file cannot drop it (a classic POSIX lock is dropped by any close).
// The holder writes who it is (host, PID, start time, command line) into the file, so that a
// refused job can name it. The file stays when the job ends (and in a folder a new run was
// refused, since the lock comes before that check): it is the directory's lock, not a run's
// output, and deleting it would let a job that opened it just before lock a file nobody else sees. Where the filesystem
// has no locks (ENOLCK, or a Lustre mount with -o noflock), the job warns and runs unprotected rather than refusing a
// whole filesystem.
class RunLock {
 public:
  static constexpr const char* kFileName = ".pix2pix.lock";

  // Creates `dir` when missing and locks it. Error "--run-dir DIR is in use by another job (host
  // H, PID P, started T, command pix2pix train ...): ..." when another process holds it; Error
  // naming the directory when it cannot be created or written.
  explicit RunLock(const std::string& dir);
  ~RunLock();  // releases the lock
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

  bool held() const { return fd_ >= 0; }  // false: the filesystem has no locks (warned)

 private:
  int fd_ = -1;
};

// "host H, PID P, started T, command C" from the lock file of `dir`, or "" when none is recorded.
std::string run_lock_holder(const std::string& dir);

}  // namespace pix2pix::metrics
