// The exception types of the library, and the rank tag every error message carries.
// Library code throws Error with the file/option/rank and the reason; main() turns it into one line.
#pragma once

#include <stdexcept>
#include <string>

namespace pix2pix {

// A failure caused by the files or the machine (missing, damaged, incompatible input; a full
// disk; not enough memory): exit status 1.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// A command line or config file that is wrong on its own (unknown option, malformed or
// out-of-range value, conflicting options), whichever component notices: exit status 2.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& what) : Error(what) {}
};

// The MPI rank of this process, or -1 before (or without) MPI. Set once by dist::MpiSession so
// that components which must not know about MPI (data/, the HDF5 checks) can still name the rank.
int process_rank();
void set_process_rank(int rank);

// "rank 3: " when the rank is known, "" otherwise.
std::string rank_prefix();

// Builds the message of a failed C-library call: "<lib> call `<call>` failed at file:line (rank r): detail".
std::string describe_failed_call(const char* library, const char* call, const char* file, int line,
                                 const std::string& detail);

}  // namespace pix2pix
