// Note [two C++ runtimes in one process]: pip's LibTorch exports parts of a libstdc++ linked into
// it (pytorch/pytorch#133437). In a program whose loader finds those before the system's
// libstdc++.so.6, some std symbols bind to LibTorch's copies and the rest to the system's, and
// runs that open files, use locales or throw die of SIGSEGV (docs/performance.md, "The first GPU
// node": 179 of 401 tests). A link option (src/CMakeLists.txt) and gpu-node-build.sh's preload
// prevent it where they apply; this check says so in any other build instead of leaving a crash
// to explain: for a few of libstdc++'s own (not template) symbols it compares what the process
// binds (the global lookup) with libstdc++'s definition. See Note [one C++ runtime].
#include "pix2pix/common/cxx_runtime.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>

namespace pix2pix {
namespace {

struct Probe {
  const char* symbol;
  const char* what;
};
// Locale, stream start-up, file streams and filesystem: the families pip's wheels export.
constexpr Probe kProbes[] = {
    {"_ZNSt6locale7classicEv", "std::locale::classic()"},
    {"_ZNSt8ios_base4InitC1Ev", "std::ios_base::Init::Init()"},
    {"_ZNSt12__basic_fileIcE4openEPKcSt13_Ios_Openmodei", "std::__basic_file<char>::open()"},
    {"_ZNSt10filesystem7__cxx114path14_M_split_cmptsEv", "std::filesystem::path::_M_split_cmpts()"},
    {"_ZNKSt10filesystem28recursive_directory_iterator5depthEv",
     "std::filesystem::recursive_directory_iterator::depth()"},
    {"_ZNKSt10filesystem7__cxx1128recursive_directory_iterator5depthEv",
     "std::filesystem::__cxx11::recursive_directory_iterator::depth()"},
};

std::string object_of(void* address) {
  Dl_info info{};
  return dladdr(address, &info) != 0 && info.dli_fname != nullptr ? info.dli_fname : "an unnamed object";
}

}  // namespace

CxxRuntime inspect_cxx_runtime() {
  CxxRuntime runtime;
  void* own = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD);
  if (own == nullptr) return runtime;
  for (const Probe& probe : kProbes) {
    void* defined = dlsym(own, probe.symbol);
    if (defined == nullptr) continue;
    if (runtime.library.empty()) runtime.library = object_of(defined);
    void* bound = dlsym(RTLD_DEFAULT, probe.symbol);
    if (bound != nullptr && bound != defined) {
      runtime.split = std::string(probe.what) + " binds to " + object_of(bound) + ", not to " + object_of(defined);
      break;
    }
  }
  dlclose(own);
  return runtime;
}

std::string cxx_runtime_warning(const CxxRuntime& runtime) {
  if (runtime.split.empty()) return "";
  return "warning: two C++ runtimes in this process: " + runtime.split +
         "; runs that open files or throw may crash. Run with LD_PRELOAD=" + runtime.library +
         " (a bundle's env.sh does; docs/platforms.md)";
}

// Note [a program that mends its own runtime]: where the link order did not take (the second GPU
// node; See Note [one C++ runtime]) and no env.sh preloads libstdc++ (a user's own job script), a
// split runtime would crash the first run that opens a file. The program is the one place that
// always knows: at the start of main, before MPI, CUDA or a thread of ours starts, it re-executes itself
// once with the system's libstdc++ first in LD_PRELOAD (what env.sh does), so no launcher has to.
// PIX2PIX_RUNTIME_MENDED marks the second start: it never loops, and where the preload did not
// help the warning is printed as before. exec keeps the process id, so a launcher that watches the
// process (mpirun, srun) sees one task.
void restart_with_whole_runtime(const CxxRuntime& runtime, char** argv) {
  if (runtime.split.empty() || runtime.library.empty() || std::getenv(kRuntimeMendedVariable) != nullptr) return;
  const char* preloaded = std::getenv("LD_PRELOAD");
  const std::string preload =
      runtime.library + (preloaded != nullptr && *preloaded != '\0' ? ":" + std::string(preloaded) : "");
  if (::setenv("LD_PRELOAD", preload.c_str(), 1) != 0 || ::setenv(kRuntimeMendedVariable, kRuntimeRestarted, 1) != 0)
    return;
  ::execv("/proc/self/exe", argv);
  // Not restarted: the environment as it was, and the caller warns.
  if (preloaded != nullptr)
    ::setenv("LD_PRELOAD", preloaded, 1);
  else
    ::unsetenv("LD_PRELOAD");
  ::unsetenv(kRuntimeMendedVariable);
}

bool restarted_with_whole_runtime() {
  const char* mended = std::getenv(kRuntimeMendedVariable);
  return mended != nullptr && std::string(mended) == kRuntimeRestarted;
}

}  // namespace pix2pix
