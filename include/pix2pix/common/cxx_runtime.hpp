// Whether this process runs one C++ runtime. See Note [two C++ runtimes in one process].
#pragma once

#include <string>

namespace pix2pix {

struct CxxRuntime {
  std::string library;  // the libstdc++.so.6 loaded ("" where none is: a static runtime)
  std::string split;    // "" when whole; else which part of it binds to which other object
};
CxxRuntime inspect_cxx_runtime();

// The warning a split runtime deserves ("" when whole), with the preload that mends it.
std::string cxx_runtime_warning(const CxxRuntime& runtime);

}  // namespace pix2pix
