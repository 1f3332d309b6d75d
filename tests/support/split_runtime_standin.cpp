// A stand-in for pip's LibTorch in the C++ runtime test (tests/common/cxx_runtime_test.cpp): it
// defines one of libstdc++'s own symbols, as such a LibTorch exports its copies, so that a process
// that preloads it binds that symbol here. See Note [two C++ runtimes in one process].
#include <filesystem>

int std::filesystem::recursive_directory_iterator::depth() const noexcept {
  return -1;
}
