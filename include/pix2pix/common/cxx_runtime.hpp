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

// See Note [a program that mends its own runtime]. When `runtime` is split and this process was
// not started that way already, re-executes this program (/proc/self/exe, the same arguments and
// environment) with runtime.library first in LD_PRELOAD and kRuntimeMendedVariable set to
// kRuntimeRestarted; returns only when it does not (whole, the variable set already: restarted
// once, or a caller that wants the program as linked; or exec failed).
inline constexpr const char* kRuntimeMendedVariable = "PIX2PIX_RUNTIME_MENDED";
inline constexpr const char* kRuntimeRestarted = "restarted";
void restart_with_whole_runtime(const CxxRuntime& runtime, char** argv);
// Whether this process is the restart above (not merely run with the variable set).
bool restarted_with_whole_runtime();

}  // namespace pix2pix
